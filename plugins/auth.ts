/**
 * mcpx-auth: the front door (docs/security.md › Security, Authentication). One `onRequest` hook turns the Authorization header
 * into a Principal, once, through lib/auth/authenticate, and stores it in `request.mcpPrincipal`; nothing
 * after it reads the header for identity (only lib/auth/principal bindingKeyOf hashes it, with auth off). A refusal is sent as lib/auth/authenticate built it (a row of the refusal table, through
 * plugins/send-refusal): 401 with
 * `WWW-Authenticate` (and `resource_metadata` with OAuth), or 403 for missing scopes, with an id-less
 * JSON-RPC body. With `Authorization: DPoP`, the request's `DPoP` header, method and URL go along for
 * the proof (RFC 9449; lib/auth/dpop.ts). OPTIONS passes: a CORS preflight carries no Authorization (mcpx-cors has normally
 * answered it already). With no authentication configured, no hook is added at all.
 *
 * Register it after mcpx-origin and mcpx-cors (checked through `dependencies`): a refused Origin is
 * 403 before it is 401, and an allowed origin's 401 carries its CORS headers, so a browser client
 * can read WWW-Authenticate. Its hook runs in `onRequest`, so the token is checked before the
 * session lookup (mcpx-legacy-sessions, preHandler): no token is 401, never 404. The curated endpoint a
 * request names is mcpx-era's verdict (`request.mcpEndpoint`, set in its onRequest hook), so with curated
 * endpoints (`hasEndpoint`) mcpx-era must be registered first; registration fails otherwise.
 */
import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import type { Principal } from '../lib/auth/principal.js'
import { createAuthenticator, type Authenticator } from '../lib/auth/authenticate.js'
import { loadConfig } from '../lib/config/load.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling; null when authentication is off (or before mcpx-auth ran). */
    mcpPrincipal: Principal | null
  }
}

export interface AuthOptions {
  /** The authenticator, usually `createAuthenticator(config.auth, { logger })`. */
  authenticator?: Authenticator
  /** Shorthand for tests and old callers: accepted legacy bearer tokens (no OAuth). Ignored when `authenticator` is given. */
  tokens?: readonly string[]
  /**
   * Whether `<prefix>/mcp/<name>` is a configured curated endpoint now (the dispatcher's, read per
   * request: a reload may change them). Its requests are authenticated as its own protected
   * resource (lib/auth/authenticate). Default: none is, every request is `/mcp`'s.
   */
  hasEndpoint?: (name: string) => boolean
}

/**
 * The URL the client used, without the query, as a DPoP proof's `htu` names it (RFC 9449 §4.3):
 * Fastify's `protocol` and `host`, which follow X-Forwarded-Proto and X-Forwarded-Host only from a
 * proxy daemon.trustProxy lists, and the request path.
 */
function requestUrl (request: FastifyRequest): string {
  const query = request.url.indexOf('?')
  return `${request.protocol}://${request.host}${query < 0 ? request.url : request.url.slice(0, query)}`
}

export default fp<AuthOptions>(async function mcpxAuth (fastify, opts) {
  let authenticator = opts?.authenticator
  if (authenticator === undefined) {
    if (!Array.isArray(opts?.tokens)) throw new TypeError('mcpx: mcpx-auth requires opts.authenticator or opts.tokens (an array of strings, possibly empty)')
    authenticator = createAuthenticator(loadConfig({ auth: { bearerTokens: [...opts.tokens] } }).auth, { logger: fastify.log })
  }
  fastify.decorateRequest('mcpPrincipal', null)
  if (opts.hasEndpoint !== undefined && !fastify.hasRequestDecorator('mcpEndpoint')) {
    throw new TypeError('mcpx: mcpx-auth with opts.hasEndpoint needs mcpx-era registered before it (its onRequest hook sets request.mcpEndpoint)')
  }
  if (!authenticator.enabled) return // zero cost when authentication is off (binding: lib/auth/principal bindingKeyOf)
  const { authenticate } = authenticator
  const hasEndpoint = opts.hasEndpoint ?? (() => false)
  // Decided once: without DPoP (static tokens only, or `auth.oauth.dpop: "off"`) no proof is read,
  // so no proof object and URL closure are made per request.
  const checksProofs = authenticator.checksProofs !== false
  fastify.addHook('onRequest', async function checkBearerToken (request, reply) {
    if (request.method === 'OPTIONS') return
    // An unknown name is /mcp's (its 404 comes after the token check), so only configured names reach the authenticator.
    const endpoint = request.mcpEndpoint // mcpx-era's onRequest hook ran first
    const configured = endpoint !== undefined && hasEndpoint(endpoint) ? endpoint : undefined
    const outcome = checksProofs
      ? await authenticate(request.headers.authorization, configured, { proof: request.headers.dpop, method: request.method, url: () => requestUrl(request) })
      : await authenticate(request.headers.authorization, configured)
    if (outcome.kind === 'ok') {
      request.mcpPrincipal = outcome.principal
      return
    }
    const { refusal } = outcome
    request.log.debug({ reason: refusal.reason }, 'bearer token refused') // never the token itself
    return reply.sendRefusal(refusal)
  })
}, { name: 'mcpx-auth', fastify: '5.x', dependencies: ['mcpx-origin', 'mcpx-cors'] })
