/**
 * Enterprise-Managed Authorization toward an HTTP upstream (`auth.type: "id-jag"`; docs/authentication.md ›
 * Enterprise-managed authorization (ID-JAG)): the MCP extension `io.modelcontextprotocol/enterprise-managed-authorization`,
 * an application of the Identity Assertion JWT Authorization Grant (draft-ietf-oauth-identity-assertion-authz-grant).
 * Per caller, two token requests:
 *
 * 1. At the enterprise IdP, an RFC 8693 token exchange: the caller's identity assertion (the OAuth
 *    access token the caller presented at mcpx's front door, `auth.oauth`) as `subject_token`,
 *    `requested_token_type` `urn:ietf:params:oauth:token-type:id-jag`, `audience` the issuer of the
 *    upstream's authorization server, `resource` the upstream (RFC 8707), `scope`. The IdP answers an
 *    ID-JAG (a JWT of `typ` `oauth-id-jag+jwt`, `issued_token_type` the id-jag URN, `token_type` `N_A`).
 * 2. At the upstream's authorization server, an RFC 7523 §2.1 JWT bearer grant: `grant_type`
 *    `urn:ietf:params:oauth:grant-type:jwt-bearer`, `assertion` the ID-JAG. It answers the access
 *    token the upstream accepts.
 *
 * The access token is cached per caller's token (the SHA-256 of the subject token, hex, never the
 * token) until it is about to expire, like token exchange (lib/upstreams/credentials.ts): at most
 * {@link MAX_CACHED} per upstream, the oldest dropped first (its caller then exchanges again). The
 * ID-JAG itself is used once and never kept. Requests made outside any caller (the connection's
 * set-up, lists, the GET stream) use a client-credentials token of mcpx's client at the upstream's
 * authorization server. Errors name the upstream, the endpoint and the OAuth `error` code, never a
 * token or a secret; both client secrets are {@link Secret}s.
 */
import { McpxError } from '../base/errors.js'
import type { Logger } from '../telemetry/log.js'
import { readSecret, Secret, secretDigest } from '../auth/secret.js'
import { discoverTokenEndpoint } from '../auth/oauth-metadata.js'
import type { Principal } from '../auth/principal.js'
import type { IdJagAuthConfig, UpstreamAuthConfig } from './config.js'
import type { UpstreamHeaderRequest } from './contract.js'

/** RFC 8693 §2.1 grant type. */
export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange'
/** The ID-JAG's token type (draft-ietf-oauth-identity-assertion-authz-grant §4.3, requested_token_type). */
export const ID_JAG_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id-jag'
/** RFC 7523 §2.1 grant type. */
export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer'
/** RFC 8693 §3: the caller's front-door credential is an OAuth access token. */
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token'
/** Lifetime assumed when the authorization server sends no `expires_in`, s. */
const DEFAULT_EXPIRES_IN_S = 300
/** Most access tokens kept per upstream; past it the oldest is dropped (its caller's next request exchanges again). */
export const MAX_CACHED = 10_000
/** Timeout of one call to a token endpoint or metadata document, ms. */
const TOKEN_TIMEOUT_MS = 10_000

/** The credentials of one upstream, as lib/upstreams/credentials.ts's UpstreamCredentials. */
export interface IdJagCredentials {
  /**
   * The access token for one request to the upstream.
   * @throws Error naming the upstream and the refusing endpoint (never a token) when no token can be had
   */
  token: (request: Pick<UpstreamHeaderRequest, 'principal' | 'own' | 'afterUnauthorized'>) => Promise<string>
}

/** Builds a client-credentials provider (lib/upstreams/credentials.ts createUpstreamAuthProvider), passed in so this module does not import its importer. */
export type ClientCredentialsFactory = (upstream: string, auth: UpstreamAuthConfig, logger: Pick<Logger, 'info' | 'warn'>, env: NodeJS.ProcessEnv) => IdJagCredentials

interface Cached { token: Secret, refreshAtMs: number, expiresAtMs: number }

/** One OAuth client at one token endpoint: mcpx at the IdP, or mcpx at the upstream's authorization server. */
class TokenClient {
  readonly #basic: Secret
  #endpoint: Promise<string> | undefined

  /**
   * @param what who this endpoint is, for errors: `identity provider` or `authorization server`
   * @throws McpxError MCPX_ERR_CONFIG when neither issuer nor tokenUrl is set, or the secret is unreadable
   */
  constructor (readonly upstream: string, readonly what: string, private readonly client: { issuer?: string, tokenUrl?: string, clientId: string, clientSecretEnv?: string, clientSecretFile?: string }, path: string, env: NodeJS.ProcessEnv) {
    if (client.tokenUrl === undefined && client.issuer === undefined) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: ${path} needs issuer or tokenUrl`)
    const secret = readSecret({ env: client.clientSecretEnv, file: client.clientSecretFile }, path, env)
    // client_secret_basic (RFC 6749 §2.3.1): both parts form-urlencoded first.
    this.#basic = new Secret('Basic ' + Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(secret.reveal())}`).toString('base64'))
  }

  async #tokenUrl (): Promise<string> {
    if (this.client.tokenUrl !== undefined) return this.client.tokenUrl
    this.#endpoint ??= discoverTokenEndpoint(this.client.issuer as string, TOKEN_TIMEOUT_MS).catch(err => { this.#endpoint = undefined; throw err })
    return await this.#endpoint
  }

  /**
   * POSTs one token request; `step` names it in errors (`token exchange for an ID-JAG`, `JWT bearer grant`).
   * @returns the JSON body of a 200 answer
   * @throws Error naming the upstream, the endpoint, the step and the OAuth `error` (or HTTP status), never a token
   */
  async request (form: Record<string, string>, step: string): Promise<Record<string, unknown>> {
    const url = await this.#tokenUrl()
    let response: Response
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: { authorization: this.#basic.reveal(), 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams(form).toString(),
        signal: AbortSignal.timeout(TOKEN_TIMEOUT_MS)
      })
    } catch (cause) {
      throw new Error(`cannot reach the ${this.what}'s token endpoint ${url} for upstream ${this.upstream} (${step}): ${(cause as Error).message}`, { cause })
    }
    const body = await response.json().catch(() => ({})) as Record<string, unknown>
    if (response.status !== 200 || typeof body.access_token !== 'string') {
      const error = typeof body.error === 'string' ? body.error : `HTTP ${response.status}`
      throw new Error(`the ${this.what} refused mcpx's ${step} for upstream ${this.upstream}: ${error}`)
    }
    return body
  }
}

/**
 * Builds the `id-jag` credentials of one upstream. Reads both client secrets now.
 * @param url the upstream's URL, the default `resource`
 * @param clientCredentials builds the provider of the connection's own traffic (client credentials at the upstream's authorization server)
 * @throws McpxError MCPX_ERR_CONFIG when the IdP or the authorization server has neither issuer nor tokenUrl,
 *         when there is no `audience` and no `issuer` to take it from, or when a secret source is unreadable
 */
export function createIdJagProvider (upstream: string, url: string, auth: IdJagAuthConfig, logger: Pick<Logger, 'info' | 'warn'>, env: NodeJS.ProcessEnv, clientCredentials: ClientCredentialsFactory): IdJagCredentials {
  const path = `upstreams.${upstream}.auth`
  const audience = auth.audience ?? auth.issuer
  if (audience === undefined) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: ${path}.audience: needed when the authorization server is given by tokenUrl (the ID-JAG's audience is its issuer)`)
  const resource = auth.resource ?? url
  const idp = new TokenClient(upstream, 'identity provider', auth.idp, `${path}.idp`, env)
  const as = new TokenClient(upstream, 'authorization server', auth, path, env)
  const own = clientCredentials(upstream, { type: 'client_credentials', issuer: auth.issuer, tokenUrl: auth.tokenUrl, clientId: auth.clientId, clientSecretEnv: auth.clientSecretEnv, clientSecretFile: auth.clientSecretFile, scope: auth.scope, resource }, logger, env)
  const cache = new Map<string, Cached>()
  const pending = new Map<string, Promise<Secret>>()

  /** The two steps for one subject token. */
  async function exchange (subject: Secret): Promise<Cached> {
    const grant: Record<string, string> = {
      grant_type: TOKEN_EXCHANGE_GRANT,
      requested_token_type: ID_JAG_TOKEN_TYPE,
      audience: audience as string,
      resource,
      subject_token: subject.reveal(),
      subject_token_type: ACCESS_TOKEN_TYPE
    }
    if (auth.scope !== undefined) grant.scope = auth.scope
    const issued = await idp.request(grant, 'token exchange for an ID-JAG')
    if (issued.issued_token_type !== ID_JAG_TOKEN_TYPE) {
      throw new Error(`the identity provider answered mcpx's token exchange for upstream ${upstream} with issued_token_type ${JSON.stringify(issued.issued_token_type)}, not ${ID_JAG_TOKEN_TYPE}`)
    }
    const assertion = new Secret(issued.access_token as string)
    const form: Record<string, string> = { grant_type: JWT_BEARER_GRANT, assertion: assertion.reveal() }
    if (auth.scope !== undefined) form.scope = auth.scope
    const body = await as.request(form, 'JWT bearer grant (the ID-JAG)')
    const now = Date.now()
    const lifetimeMs = (typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : DEFAULT_EXPIRES_IN_S) * 1000
    // As token exchange: refresh at 80 % of the lifetime, and at least 30 s before it ends.
    return { token: new Secret(body.access_token as string), expiresAtMs: now + lifetimeMs, refreshAtMs: now + Math.min(lifetimeMs * 0.8, lifetimeMs - 30_000) }
  }

  async function fresh (key: string, subject: Secret): Promise<Secret> {
    let inflight = pending.get(key)
    if (inflight === undefined) {
      inflight = exchange(subject).then(entry => {
        cache.delete(key) // re-insert: the Map's order is then the age order the bound drops by
        if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value as string)
        cache.set(key, entry)
        return entry.token
      }).finally(() => pending.delete(key))
      pending.set(key, inflight)
    }
    return await inflight
  }

  return {
    async token (request) {
      if (request.own === true) return await own.token(request) // handshake, lists, streams: mcpx itself
      const caller = request.principal as Principal | undefined
      if (caller?.kind !== 'oauth' || caller.token === undefined) {
        throw new Error(`upstream ${upstream} needs the caller's OAuth access token (enterprise-managed authorization, ID-JAG), and this caller (${caller?.id ?? 'anonymous'}) has none`)
      }
      const key = secretDigest(caller.token)
      if (request.afterUnauthorized) {
        cache.delete(key)
        logger.info({ upstream }, 'upstream answered 401: redeeming a new ID-JAG and retrying once')
      }
      const hit = cache.get(key)
      const now = Date.now()
      if (hit !== undefined && now < hit.refreshAtMs) return hit.token.reveal()
      if (hit !== undefined && now < hit.expiresAtMs) {
        // Refresh ahead of expiry; keep using the current token if that fails.
        return await fresh(key, caller.token).then(t => t.reveal(), err => { logger.warn({ err, upstream }, 'ID-JAG refresh failed; the current upstream token is still valid'); return hit.token.reveal() })
      }
      if (hit !== undefined) cache.delete(key)
      return (await fresh(key, caller.token)).reveal()
    }
  }
}

