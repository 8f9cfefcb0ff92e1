/**
 * The caller's identity, made once at the boundary (STYLE › The new areas › Identity is a value
 * made once at the boundary). The auth plugin turns the Authorization
 * header into a {@link Principal}; nothing after it reads the header again. Sessions, MRTR
 * `requestState` and GET streams bind to {@link Principal.key}, so a session survives a token
 * refresh (same issuer and subject, new token) and refuses another subject.
 */
import { createHash } from 'node:crypto'
import type { Secret } from './secret.js'

/** Fields every principal has. */
interface PrincipalBase {
  /** Human-readable identity: `oauth:<issuer>#<subject>`, `token:<name>` or `local`. Never a credential. */
  readonly id: string
  /**
   * The binding key: the first 128 bits of SHA-256(id), hex (32 characters). Sessions and
   * requestState store this, not the id, so a sealed state does not spell out the subject.
   */
  readonly key: string
  /** Granted scopes (OAuth `scope`/`scp`, or a static token's configured scopes); empty when none. */
  readonly scopes: readonly string[]
}

/** A caller authenticated by an OAuth access token (JWT or introspected; RFC 9068, RFC 7662). */
export interface OAuthPrincipal extends PrincipalBase {
  readonly kind: 'oauth'
  /** `iss`, exactly as the token (and config) spell it. */
  readonly issuer: string
  /** `sub`. */
  readonly subject: string
  /** `client_id`, else `azp`, when the token names the client. */
  readonly clientId?: string
  /** Every claim of the token (or introspection response), frozen. */
  readonly claims: Readonly<Record<string, unknown>>
  /** The access token itself, for RFC 8693 exchange at the authorization server only (prints as [redacted]). */
  readonly token?: Secret
}

/** A caller authenticated by a configured static token: named (`auth.tokens`) or a legacy `bearerTokens*` one. */
export interface TokenPrincipal extends PrincipalBase {
  readonly kind: 'token'
  /** The token's name (`auth.tokens[].name`); legacy unnamed tokens are named `bearer:<16 hex of SHA-256>`. */
  readonly name: string
}

/** The one caller of a stdio server: whoever started the process. */
export interface LocalPrincipal extends PrincipalBase {
  readonly kind: 'local'
}

/** Who is calling. */
export type Principal = OAuthPrincipal | TokenPrincipal | LocalPrincipal

function keyOf (id: string): string {
  return createHash('sha256').update(id).digest('hex').slice(0, 32)
}

/**
 * What sessions, GET streams and MRTR requestState bind to: the principal's key when mcpx-auth made
 * one (authentication on: every admitted request has one). With no authentication configured (e.g.
 * behind a proxy that authenticates) there is no principal, and the binding falls back to the first
 * 128 bits of SHA-256 of the raw Authorization value, hex, as before OAuth and named tokens (so that a
 * leaked session id is useless to another caller). That fallback names nobody and grants nothing.
 * On a curated endpoint the key also binds the endpoint's name, so a session (or a
 * requestState) minted on `/mcp/support` is unknown on `/mcp/billing` and on `/mcp`.
 * @param principal `request.mcpPrincipal`, or null
 * @param authorization the raw header; undefined or '' with no principal gives undefined (nothing to bind to)
 * @param endpoint the curated endpoint's name; undefined for `/mcp` itself
 * @returns a 32-character hex key, or undefined (only on `/mcp`). Never throws.
 */
export function bindingKeyOf (principal: Principal | null, authorization: string | undefined, endpoint?: string): string | undefined {
  const base = principal !== null ? principal.key : authorization === undefined || authorization === '' ? undefined : keyOf('header:' + authorization)
  return endpoint === undefined ? base : keyOf(`endpoint:${endpoint}\0${base ?? ''}`)
}

/**
 * When the credential behind `principal` stops being valid, in ms since the epoch: an OAuth
 * access token's `exp` (JWT claim, or the introspection response's), or undefined when the
 * credential does not expire (a static token, the stdio caller, a token without `exp`). A stream
 * opened with the credential ends then (docs/authentication.md › Tokens that expire). Never throws.
 */
export function expiresAtOf (principal: Principal | null | undefined): number | undefined {
  if (principal?.kind !== 'oauth') return undefined
  const exp = principal.claims.exp
  return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined
}

/**
 * The principal of a verified OAuth access token. Never throws.
 * @param claims the verified claims; `iss` and `sub` must be strings (the verifier checked them)
 * @param scopes the granted scopes, already split
 * @param token the access token, kept for token exchange (never printed)
 */
export function oauthPrincipal (claims: Record<string, unknown>, scopes: readonly string[], token?: Secret): OAuthPrincipal {
  const issuer = String(claims.iss)
  const subject = String(claims.sub)
  const clientId = typeof claims.client_id === 'string' ? claims.client_id : typeof claims.azp === 'string' ? claims.azp : undefined
  // The id joins issuer and subject with '#': an issuer URL has no fragment (RFC 8414 §2), so the pair is unambiguous.
  const id = `oauth:${issuer}#${subject}`
  return Object.freeze({
    kind: 'oauth' as const,
    id,
    key: keyOf(id),
    issuer,
    subject,
    ...(clientId !== undefined ? { clientId } : {}),
    scopes: Object.freeze([...scopes]),
    claims: Object.freeze({ ...claims }),
    ...(token !== undefined ? { token } : {})
  })
}

/** The principal of a static token called `name`, granted `scopes`. Never throws. */
export function tokenPrincipal (name: string, scopes: readonly string[] = []): TokenPrincipal {
  const id = `token:${name}`
  return Object.freeze({ kind: 'token' as const, id, key: keyOf(id), name, scopes: Object.freeze([...scopes]) })
}

/** The stdio caller (`mcpx serve`): one process, one principal. */
export const LOCAL_PRINCIPAL: LocalPrincipal = Object.freeze({ kind: 'local' as const, id: 'local', key: keyOf('local'), scopes: Object.freeze([]) })

/**
 * Splits an access token's scopes: the space-separated `scope` claim (RFC 9068 §2.2.3, RFC 7662),
 * else `scp` as an array or a space-separated string (Entra ID, Okta). Empty when neither. Never throws.
 */
export function scopesOf (claims: Record<string, unknown>): string[] {
  const raw = claims.scope ?? claims.scp
  if (typeof raw === 'string') return raw.split(' ').filter(s => s !== '')
  if (Array.isArray(raw)) return raw.filter((s): s is string => typeof s === 'string')
  return []
}
