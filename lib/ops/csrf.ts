/**
 * CSRF tokens of the status page's forms (docs/policy.md › Approving › The status page): a form's
 * POST must carry a token this process issued in the page, within {@link CSRF_TOKEN_TTL_MS}. A
 * token is `<expiry ms>.<nonce>.<HMAC-SHA256(secret, expiry.nonce)>` (base64url), the secret random
 * per process, so another site cannot forge one (it cannot read the page: same-origin policy) and a
 * token dies with the process or its expiry. Pure of Fastify.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

/** How long a page's token is accepted, ms (the page refreshes its forms every few seconds). */
export const CSRF_TOKEN_TTL_MS = 60 * 60 * 1000

/** Issues and checks tokens. */
export interface CsrfTokens {
  /** A fresh token. Never throws. */
  issue: (nowMs?: number) => string
  /** Whether `token` is one this process issued, not expired. Never throws. */
  check: (token: unknown, nowMs?: number) => boolean
}

/** Tokens keyed by `secret` (default: 32 random bytes, this process only). */
export function createCsrfTokens (secret: Buffer = randomBytes(32)): CsrfTokens {
  const mac = (payload: string): Buffer => createHmac('sha256', secret).update(payload).digest()
  return {
    issue (nowMs = Date.now()) {
      const payload = `${nowMs + CSRF_TOKEN_TTL_MS}.${randomBytes(16).toString('base64url')}`
      return `${payload}.${mac(payload).toString('base64url')}`
    },
    check (token, nowMs = Date.now()) {
      if (typeof token !== 'string' || token.length > 200) return false
      const cut = token.lastIndexOf('.')
      if (cut < 0) return false
      const payload = token.slice(0, cut)
      const given = Buffer.from(token.slice(cut + 1), 'base64url')
      const expected = mac(payload)
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return false
      const expiry = Number(payload.slice(0, payload.indexOf('.')))
      return Number.isFinite(expiry) && nowMs <= expiry
    }
  }
}
