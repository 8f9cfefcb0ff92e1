/**
 * GET /status (HTML for people) and GET /status.json (the same report for machines), docs:
 * The status page. Thin: the guard comes from the daemon (a local client or an admin credential, lib/ops/access.ts; refusals
 * from lib/protocol/http-status.ts), the report from lib/ops/status-model.ts, the HTML and its headers (strict CSP)
 * from lib/ops/status-page.ts.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import { escapeHtml, renderStatusPage, STATUS_PAGE_HEADERS } from '../../lib/ops/status-page.js'
import type { StatusReport } from '../../lib/ops/status-model.js'
import { createCsrfTokens } from '../../lib/ops/csrf.js'
import type { Integrity } from '../../lib/policy/integrity.js'
import type { PinnedKind } from '../../lib/policy/pin-store.js'
import { integrityStatus } from '../../lib/protocol/http-status.js'

/** Options of the status routes. */
export interface StatusRouteOptions {
  /** Builds the report now (lib/ops/status-model.ts collectStatus over the daemon's state). */
  collect: () => StatusReport
  /** Who may read it (the daemon's operator guard: a local client or an admin credential). */
  guard: onRequestHookHandler
  /** The integrity gate, when any upstream is pinned: the page's approve and reject forms decide through it. */
  integrity?: () => Integrity | undefined
  /** Who decided, for the audit trail (never a credential). */
  who?: (request: FastifyRequest) => Promise<string>
}

const KINDS = new Set(['tool', 'prompt', 'template'])

/**
 * Whether a form POST comes from a page of this origin (Fetch Metadata `Sec-Fetch-Site`, else
 * `Origin` against `Host`): with the CSRF token, what keeps another site's page from deciding.
 */
function sameOrigin (request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site']
  if (site !== undefined) return site === 'same-origin'
  const origin = request.headers.origin
  if (origin === undefined) return false
  try { return new URL(origin).host === request.headers.host } catch { return false }
}

/** A short page answering a form that could not be applied (same headers and CSP as the status page). */
function answerPage (message: string): string {
  return `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>mcpx status</title></head><body><p id="answer">${escapeHtml(message)}</p><p><a href="../status">Back to the status page</a></p></body></html>\n`
}

/** Headers of /status.json: never cached, never sniffed as anything but JSON. */
const JSON_HEADERS = Object.freeze({ 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' })

const statusRoutes: FastifyPluginAsync<StatusRouteOptions> = async function statusRoutes (fastify, opts) {
  const route = { logLevel: 'warn' as const, onRequest: opts.guard }
  const csrf = createCsrfTokens()
  fastify.get('/status', route, async function statusPage (_request, reply) {
    const report = opts.collect()
    return await reply.headers(STATUS_PAGE_HEADERS).send(renderStatusPage(report, report.integrity !== undefined ? { csrf: csrf.issue() } : {}))
  })
  // The page's approve and reject forms (docs/policy.md › Approving): whoever may read the page,
  // from a page of this origin, with a token the page carried. 303 back to the page once applied.
  fastify.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 16 * 1024 }, function parseForm (_request, body, done) {
    done(null, Object.fromEntries(new URLSearchParams(body as string)))
  })
  fastify.post('/status/integrity', route, async function decideFromPage (request, reply) {
    const form = (request.body ?? {}) as Record<string, unknown>
    const page = (status: number, message: string): FastifyReply => reply.code(status).headers(STATUS_PAGE_HEADERS).send(answerPage(message))
    if (!sameOrigin(request) || !csrf.check(form.csrf)) return await page(403, 'Refused: this form did not come from this status page (reload the page and try again).')
    const integrity = opts.integrity?.()
    if (integrity === undefined || opts.who === undefined) return await page(integrityStatus('unavailable'), 'No upstream is pinned.')
    const { action, upstream, kind, name, hash } = form
    if ((action !== 'approve' && action !== 'reject') || typeof upstream !== 'string' || typeof name !== 'string' || typeof hash !== 'string' || !KINDS.has(kind as string)) {
      return await page(integrityStatus('invalid'), 'The form is missing a field.')
    }
    try {
      const outcome = await integrity[action](upstream, kind as PinnedKind, name, hash, await opts.who(request))
      if (outcome.kind === 'done') return await reply.code(303).header('location', '../status').header('cache-control', 'no-store').send()
      return await page(integrityStatus(outcome.kind), outcome.kind === 'stale' ? 'The definition changed again since the page was shown; nothing was decided. Look again.' : 'No such change waits any more.')
    } catch (err) {
      request.log.error({ err }, 'integrity: the pin store failed')
      return await page(integrityStatus('unavailable'), 'The pin store could not be written.')
    }
  })
  fastify.get('/status.json', route, async function statusJson (_request, reply) {
    return await reply.headers(JSON_HEADERS).send(opts.collect())
  })
}

export default statusRoutes
