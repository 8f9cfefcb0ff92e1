/**
 * The front door: one Authorization header in, one {@link Principal} or one refusal out
 * (STYLE › The new areas › Identity is a value made once at the boundary). Pure of
 * Fastify; mcpx-auth calls {@link Authenticator.authenticate} once per request and stores the result.
 *
 * Order: a static token (constant-time, `auth.tokens` and the legacy `bearerTokens*`), then an
 * OAuth access token (lib/auth/verifier.ts), then `requiredScopes` (OAuth tokens only: static
 * tokens are admitted by being configured).
 *
 * A curated endpoint (`/mcp/<name>`) is a protected resource of its own (RFC 9728 §3.3: the metadata a
 * 401 names must have the URL the client used as its `resource`): its refusals name its own metadata
 * (lib/auth/oauth-metadata endpointResource), and a token for it is accepted there besides the
 * configured audiences; a token for `…/mcp` is accepted on every endpoint.
 *
 * Refusals (RFC 6750 §3, RFC 9728 §5.1, MCP authorization › Error Handling), each with an id-less
 * JSON-RPC body (code -32600) built once (per endpoint: on its first refusal):
 * - no bearer token: 401, `WWW-Authenticate: Bearer resource_metadata="<PRM URL>"` (+ `scope="…"`
 *   when requiredScopes is set); with static tokens only, plain `Bearer` as before OAuth;
 * - a token that is not accepted: 401, `Bearer error="invalid_token", error_description="…"` (+
 *   resource_metadata with OAuth);
 * - a valid OAuth token without the required scopes: 403, `Bearer error="insufficient_scope", scope="…"`.
 */
import type { AuthConfig, OAuthConfig } from './config.js'
import type { Logger } from '../telemetry/log.js'
import { REFUSALS, refusal, type Refusal } from '../protocol/http-status.js'
import { tokenPrincipal, type Principal, type TokenPrincipal } from './principal.js'
import { bearerTokenOf, createTokenMatcher, loadStaticTokens, type StaticToken } from './tokens.js'
import { readSecret } from './secret.js'
import { OAuthVerifier, INVALID_TOKEN_DESCRIPTIONS, type InvalidTokenReason } from './verifier.js'
import { endpointResource, protectedResourceMetadata, protectedResourceMetadataUrl, type ProtectedResourceMetadata } from './oauth-metadata.js'

/**
 * A refusal, ready to send: a row of the refusal table (lib/protocol/http-status refusal: status,
 * `www-authenticate` among its headers, the encoded id-less JSON-RPC body), and why.
 */
export interface AuthRefusal extends Refusal {
  /** Why, for the debug log (never the token). */
  readonly reason: string
}

/** What {@link Authenticator.authenticate} decided. */
export type AuthOutcome = { kind: 'ok', principal: Principal } | { kind: 'refused', refusal: AuthRefusal }

/** The OAuth side of an authenticator, for the metadata routes. */
export interface OAuthSide {
  readonly config: OAuthConfig
  /** The RFC 9728 document served at the PRM paths. */
  readonly metadata: ProtectedResourceMetadata
  /** The absolute PRM URL derived from `resource` (RFC 9728 §3.1), as `resource_metadata` names it. */
  readonly metadataUrl: string
  /** The RFC 9728 document of the curated endpoint `name`: `metadata` with the endpoint's own `resource`. Never throws. */
  readonly endpointMetadata: (name: string) => ProtectedResourceMetadata
  readonly verifier: OAuthVerifier
}

/** Authenticates requests for one mcpx scope. */
export interface Authenticator {
  /** False when no authentication is configured (then every request is anonymous and no hook is needed). */
  readonly enabled: boolean
  /** Present when `auth.oauth` is configured. */
  readonly oauth?: OAuthSide
  /**
   * Decides one request.
   * @param authorization the raw header, undefined when absent
   * @param endpoint the configured curated endpoint the request is for (`/mcp/<name>`); undefined for
   *        `/mcp` and for a name that is not configured (its refusals are built once per name: only
   *        configured names may be passed, so that they stay bounded)
   * @returns ok with the principal, or refused with the ready refusal. Never throws, never rejects.
   */
  authenticate: (authorization: string | undefined, endpoint?: string) => Promise<AuthOutcome>
}

/** A header parameter value: a quoted-string (RFC 9110 §5.6.4), `"` and `\` escaped. */
function quoted (value: string): string {
  return `"${value.replace(/["\\]/g, m => '\\' + m)}"`
}

/** The refusal table's row `row`, id-less, with its challenge and message as given; frozen, built once. */
function authRefusal (row: 'unauthorizedMissing' | 'unauthorizedInvalid' | 'insufficientScope', wwwAuthenticate: string, message: string, reason: string): AuthRefusal {
  return Object.freeze({ ...refusal(row, undefined, { message, wwwAuthenticate }), reason })
}

// Statuses, base messages and base challenges come from the refusal table (lib/protocol/http-status REFUSALS);
// with OAuth, the challenges gain resource_metadata, scope and error_description here.
const { unauthorizedMissing: MISSING, unauthorizedInvalid: INVALID, insufficientScope: SCOPE } = REFUSALS

/** Message of the 403 body when the token lacks required scopes. */
export const AUTH_SCOPE_MESSAGE = SCOPE.message

/** Builds the OAuth verifier of `auth.oauth` and starts its discovery in the background. */
function startVerifier (oauthConfig: OAuthConfig, env: NodeJS.ProcessEnv, logger: Logger): OAuthVerifier {
  const introspection = oauthConfig.introspection
  const verifier = new OAuthVerifier({
    issuer: oauthConfig.issuer,
    audience: oauthConfig.audience,
    ...(oauthConfig.jwksUri !== undefined ? { jwksUri: oauthConfig.jwksUri } : {}),
    clockToleranceMs: oauthConfig.clockTolerance,
    jwksCooldownMs: oauthConfig.jwksCooldown,
    ...(introspection !== undefined
      ? { introspection: { url: introspection.url, clientId: introspection.clientId, clientSecret: readSecret({ env: introspection.clientSecretEnv, file: introspection.clientSecretFile }, 'auth.oauth.introspection', env), knowsOnlyThisResource: introspection.knowsOnlyThisResource === true } }
      : {}),
    logger
  })
  verifier.warmUp()
  return verifier
}

/**
 * Builds the authenticator of a config. Static tokens are read (env, files) and hashed here; the
 * OAuth verifier is created and starts its discovery in the background.
 * @param auth the `auth` section of a loaded config
 * @param options.logger for key-fetch and discovery failures (never token text)
 * @param options.verifier an existing verifier for the same `auth.oauth` issuer and audience (its
 *        JWKS cache and verdict cache are shared); used instead of building one. The admin check
 *        (admin.scopes) passes the `/mcp` authenticator's, so one JWKS fetch serves both.
 * @throws McpxError MCPX_ERR_CONFIG for unreadable token or secret sources (see loadStaticTokens)
 */
export function createAuthenticator (auth: AuthConfig, options: { logger: Logger, env?: NodeJS.ProcessEnv, verifier?: OAuthVerifier }): Authenticator {
  const env = options.env ?? process.env
  const statics: StaticToken[] = loadStaticTokens(auth, env)
  const configured = auth.oauth
  if (statics.length === 0 && configured === undefined) {
    return { enabled: false, authenticate: async () => ({ kind: 'refused', refusal: authRefusal('unauthorizedMissing', MISSING.wwwAuthenticate, MISSING.message, 'missing') }) }
  }
  const matchToken = createTokenMatcher(statics.map(s => s.token.reveal()))
  const principals: TokenPrincipal[] = statics.map(s => tokenPrincipal(s.name, s.scopes))

  const staticInvalid = authRefusal('unauthorizedInvalid', INVALID.wwwAuthenticate, INVALID.message, 'invalid')
  if (configured === undefined) {
    const missing = authRefusal('unauthorizedMissing', MISSING.wwwAuthenticate, MISSING.message, 'missing')
    return {
      enabled: true,
      async authenticate (authorization) {
        const token = bearerTokenOf(authorization)
        if (token === undefined) return { kind: 'refused', refusal: missing }
        const index = matchToken(token)
        return index >= 0 ? { kind: 'ok', principal: principals[index] } : { kind: 'refused', refusal: staticInvalid }
      }
    }
  }

  const oauthConfig: OAuthConfig = configured
  const scope = oauthConfig.requiredScopes.length > 0 ? `scope=${quoted(oauthConfig.requiredScopes.join(' '))}` : undefined
  /** The OAuth refusals of one protected resource: each names the resource's metadata (RFC 9728 §5.1). */
  function oauthRefusals (resource: string): OAuthRefusals {
    const rm = `resource_metadata=${quoted(protectedResourceMetadataUrl(resource))}`
    const byReason = new Map<InvalidTokenReason, AuthRefusal>()
    for (const [reason, description] of Object.entries(INVALID_TOKEN_DESCRIPTIONS) as Array<[InvalidTokenReason, string]>) {
      byReason.set(reason, authRefusal('unauthorizedInvalid', `${INVALID.wwwAuthenticate}, error_description=${quoted(description)}, ${rm}`, `Unauthorized: ${description.charAt(0).toLowerCase()}${description.slice(1)}`, reason))
    }
    return {
      resource,
      missing: authRefusal('unauthorizedMissing', [`${MISSING.wwwAuthenticate} ${rm}`, scope].filter(p => p !== undefined).join(', '), MISSING.message, 'missing'),
      invalid: reason => byReason.get(reason) ?? staticInvalid,
      insufficientScope: scope === undefined ? undefined : authRefusal('insufficientScope', `${SCOPE.wwwAuthenticate}, ${scope}, ${rm}`, `${SCOPE.message}: ${oauthConfig.requiredScopes.join(' ')}`, 'insufficient_scope')
    }
  }
  const mcp = oauthRefusals(oauthConfig.resource)
  const endpoints = new Map<string, OAuthRefusals>()
  function refusalsOf (endpoint: string | undefined): OAuthRefusals {
    if (endpoint === undefined) return mcp
    let refusals = endpoints.get(endpoint)
    if (refusals === undefined) endpoints.set(endpoint, refusals = oauthRefusals(endpointResource(oauthConfig.resource, endpoint)))
    return refusals
  }
  const metadataOf = (resource: string): ProtectedResourceMetadata => protectedResourceMetadata({ resource, issuer: oauthConfig.issuer, scopesSupported: oauthConfig.scopesSupported ?? oauthConfig.requiredScopes, resourceName: oauthConfig.resourceName })
  const verifier = options.verifier ?? startVerifier(oauthConfig, env, options.logger)
  const oauth: OAuthSide = Object.freeze({
    config: oauthConfig,
    metadata: metadataOf(oauthConfig.resource),
    metadataUrl: protectedResourceMetadataUrl(oauthConfig.resource),
    endpointMetadata: (name: string) => metadataOf(endpointResource(oauthConfig.resource, name)),
    verifier
  })
  const required = oauthConfig.requiredScopes

  return {
    enabled: true,
    oauth,
    async authenticate (authorization, endpoint) {
      const refusals = refusalsOf(endpoint)
      const token = bearerTokenOf(authorization)
      if (token === undefined) return { kind: 'refused', refusal: refusals.missing }
      if (principals.length > 0) {
        const index = matchToken(token)
        if (index >= 0) return { kind: 'ok', principal: principals[index] }
      }
      const verdict = await verifier.verify(token, endpoint === undefined ? undefined : refusals.resource)
      if (verdict.kind === 'invalid') return { kind: 'refused', refusal: refusals.invalid(verdict.reason) }
      if (refusals.insufficientScope !== undefined && !required.every(s => verdict.principal.scopes.includes(s))) return { kind: 'refused', refusal: refusals.insufficientScope }
      return { kind: 'ok', principal: verdict.principal }
    }
  }
}

/** The OAuth refusals of one protected resource (`/mcp`, or a curated endpoint), built once. */
interface OAuthRefusals {
  /** Its resource URL (RFC 9728 `resource`). */
  readonly resource: string
  readonly missing: AuthRefusal
  readonly invalid: (reason: InvalidTokenReason) => AuthRefusal
  /** Undefined when no scope is required. */
  readonly insufficientScope: AuthRefusal | undefined
}
