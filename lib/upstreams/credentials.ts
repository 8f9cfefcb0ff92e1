/**
 * mcpx's own credentials to an HTTP upstream (docs/authentication.md › Upstream credentials). Per upstream, an `auth`:
 *
 * - `client_credentials` (RFC 6749 §4.4): one token for mcpx, cached and refreshed before it
 *   expires (at 80 % of its lifetime, and at least 30 s before).
 * - `token_exchange` (RFC 8693): per caller, the caller's OAuth access token is exchanged for one
 *   meant for this upstream (`audience` / `resource`), cached per (subject token, upstream) until it
 *   expires: a caller who presents another token (narrower scopes, a refresh) gets a new exchange, so
 *   the upstream never acts on more than the token the caller holds now. The cache key is the
 *   SHA-256 of the subject token (hex), never the token itself. Requests made outside any caller (initialize, lists, the GET stream) use a
 *   client-credentials token of the same client. A caller without an OAuth token gets a clear
 *   error for this upstream's tools only; other upstreams are unaffected.
 *
 * It plugs into the upstream layer's seam, {@link UpstreamHeaderProvider} (lib/upstreams/contract.ts):
 * asked per request with the caller's principal (or `own: true` for the connection's own traffic),
 * and again with `afterUnauthorized: true` after a 401, when the cached token is dropped and a new
 * one fetched for the single retry. Errors name the upstream and the token endpoint's `error` code,
 * never a token. The caller's token goes only to the authorization server, never to the upstream.
 */
import { McpxError } from '../base/errors.js'
import type { Logger } from '../telemetry/log.js'
import { readSecret, Secret, secretDigest } from '../auth/secret.js'
import { discoverTokenEndpoint } from '../auth/oauth-metadata.js'
import type { Principal } from '../auth/principal.js'
import type { UpstreamAuthConfig, UpstreamConfig } from './config.js'
import type { UpstreamHeaderProvider, UpstreamHeaderRequest } from './contract.js'
import { createIdJagProvider } from './id-jag.js'

/** The credentials of one upstream. */
export interface UpstreamCredentials {
  /**
   * The access token for one request to the upstream.
   * @param request.principal the caller (a lib/auth/principal.ts Principal), for token exchange
   * @param request.own true for the connection's own traffic (handshake, lists, streams): mcpx itself
   * @param request.afterUnauthorized true after a 401: the cached token is dropped first
   * @throws Error naming the upstream (never a token) when no token can be had
   */
  token: (request: Pick<UpstreamHeaderRequest, 'principal' | 'own' | 'afterUnauthorized'>) => Promise<string>
}

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange'
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token'
/** Lifetime assumed when the token endpoint sends no `expires_in`, s. */
const DEFAULT_EXPIRES_IN_S = 300
/** Most exchanged tokens kept per upstream (oldest dropped first: the next request with its subject token exchanges it again). */
const MAX_CACHED = 10_000
/** Timeout of one call to the token endpoint, ms. */
const TOKEN_TIMEOUT_MS = 10_000

interface Cached { token: Secret, refreshAtMs: number, expiresAtMs: number }

/**
 * Builds the provider of one upstream. Reads the client secret now.
 * @throws McpxError MCPX_ERR_CONFIG when neither issuer nor tokenUrl is set, or the secret source is unreadable
 */
export function createUpstreamAuthProvider (upstream: string, auth: UpstreamAuthConfig, logger: Pick<Logger, 'info' | 'warn'>, env: NodeJS.ProcessEnv = process.env): UpstreamCredentials {
  if (auth.tokenUrl === undefined && auth.issuer === undefined) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: upstreams.${upstream}.auth needs issuer or tokenUrl`)
  const secret = readSecret({ env: auth.clientSecretEnv, file: auth.clientSecretFile }, `upstreams.${upstream}.auth`, env)
  const basic = 'Basic ' + Buffer.from(`${encodeURIComponent(auth.clientId)}:${encodeURIComponent(secret.reveal())}`).toString('base64')
  const cache = new Map<string, Cached>()
  const pending = new Map<string, Promise<Secret>>()
  let tokenUrl: Promise<string> | undefined

  async function endpoint (): Promise<string> {
    if (auth.tokenUrl !== undefined) return auth.tokenUrl
    tokenUrl ??= discoverTokenEndpoint(auth.issuer as string, TOKEN_TIMEOUT_MS).catch(err => { tokenUrl = undefined; throw err })
    return await tokenUrl
  }

  async function request (form: Record<string, string>): Promise<Cached> {
    const url = await endpoint()
    let response: Response
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams(form).toString(),
        signal: AbortSignal.timeout(TOKEN_TIMEOUT_MS)
      })
    } catch (cause) {
      throw new Error(`cannot reach the token endpoint ${url} for upstream ${upstream}: ${(cause as Error).message}`, { cause })
    }
    const body = await response.json().catch(() => ({})) as Record<string, unknown>
    if (response.status !== 200 || typeof body.access_token !== 'string') {
      const error = typeof body.error === 'string' ? body.error : `HTTP ${response.status}`
      throw new Error(`the authorization server refused mcpx's ${form.grant_type === TOKEN_EXCHANGE ? 'token exchange' : 'client credentials'} for upstream ${upstream}: ${error}`)
    }
    const now = Date.now()
    const lifetimeMs = (typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : DEFAULT_EXPIRES_IN_S) * 1000
    return { token: new Secret(body.access_token), expiresAtMs: now + lifetimeMs, refreshAtMs: now + Math.min(lifetimeMs * 0.8, lifetimeMs - 30_000) }
  }

  function grantFor (subjectToken: Secret | undefined): Record<string, string> {
    const form: Record<string, string> = subjectToken === undefined
      ? { grant_type: 'client_credentials' }
      : { grant_type: TOKEN_EXCHANGE, subject_token: subjectToken.reveal(), subject_token_type: ACCESS_TOKEN_TYPE, requested_token_type: ACCESS_TOKEN_TYPE }
    if (auth.scope !== undefined) form.scope = auth.scope
    if (auth.resource !== undefined) form.resource = auth.resource
    if (auth.type === 'token_exchange' && auth.audience !== undefined && subjectToken !== undefined) form.audience = auth.audience
    return form
  }

  /**
   * The cache key and subject token of one request: mcpx itself (key ''), or the caller's token, keyed
   * by its SHA-256 (hex; a token is never a key): the exchange follows the token, not the principal.
   */
  function whoFor (request: Pick<UpstreamHeaderRequest, 'principal' | 'own'>): { key: string, subject?: Secret } {
    if (auth.type === 'client_credentials' || request.own === true) return { key: '' } // handshake, lists, streams: mcpx itself
    const caller = request.principal as Principal | undefined
    if (caller?.kind !== 'oauth' || caller.token === undefined) {
      throw new Error(`upstream ${upstream} needs the caller's OAuth access token (token exchange), and this caller (${caller?.id ?? 'anonymous'}) has none`)
    }
    return { key: secretDigest(caller.token), subject: caller.token }
  }

  async function fresh (key: string, subject: Secret | undefined): Promise<Secret> {
    let inflight = pending.get(key)
    if (inflight === undefined) {
      inflight = request(grantFor(subject)).then(entry => {
        if (cache.size >= MAX_CACHED && !cache.has(key)) cache.delete(cache.keys().next().value as string)
        cache.set(key, entry)
        return entry.token
      }).finally(() => pending.delete(key))
      pending.set(key, inflight)
    }
    return await inflight
  }

  return {
    async token (request) {
      const { key, subject } = whoFor(request)
      if (request.afterUnauthorized) {
        // The upstream refused the token: drop it, so the retry gets a new one (refresh or re-exchange).
        cache.delete(key)
        logger.info({ upstream }, 'upstream answered 401: getting a new token and retrying once')
      }
      const hit = cache.get(key)
      const now = Date.now()
      if (hit !== undefined && now < hit.refreshAtMs) return hit.token.reveal()
      if (hit !== undefined && now < hit.expiresAtMs) {
        // Refresh ahead of expiry; keep using the current token if the refresh fails.
        return await fresh(key, subject).then(t => t.reveal(), err => { logger.warn({ err, upstream }, 'upstream token refresh failed; the current token is still valid'); return hit.token.reveal() })
      }
      return (await fresh(key, subject)).reveal()
    }
  }
}

/**
 * The header provider for every HTTP upstream that has an `auth` (registry option
 * `headerProvider`); undefined when none has. Reads every client secret now.
 * @returns an UpstreamHeaderProvider answering `{ authorization: 'Bearer …' }` for those upstreams
 *          and undefined for the others
 * @throws McpxError MCPX_ERR_CONFIG as {@link createUpstreamAuthProvider}
 */
export function createUpstreamHeaderProvider (upstreams: Record<string, UpstreamConfig>, logger: Pick<Logger, 'info' | 'warn'>, env: NodeJS.ProcessEnv = process.env): UpstreamHeaderProvider | undefined {
  const credentials = new Map<string, UpstreamCredentials>()
  for (const [name, config] of Object.entries(upstreams)) {
    if (!('url' in config) || config.auth === undefined || config.auth.type === 'oauth-user') continue
    // `oauth-user` tokens are each caller's own (lib/upstreams/user-grants.ts).
    // `id-jag` (Enterprise-Managed Authorization) lives in its own module, lib/upstreams/id-jag.ts.
    credentials.set(name, config.auth.type === 'id-jag' ? createIdJagProvider(name, config.url, config.auth, logger, env, createUpstreamAuthProvider) : createUpstreamAuthProvider(name, config.auth, logger, env))
  }
  if (credentials.size === 0) return undefined
  return async function upstreamCredentials (request) {
    const own = credentials.get(request.upstream)
    if (own === undefined) return undefined
    return { authorization: `Bearer ${await own.token(request)}` }
  }
}
