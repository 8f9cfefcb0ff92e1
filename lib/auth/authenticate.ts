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
 *
 * DPoP (RFC 9449; `auth.oauth.dpop`, default `allowed`; lib/auth/dpop.ts checks the proofs): a token
 * bound to a key (`cnf.jkt`, from the JWT or the introspection answer) is accepted with
 * `Authorization: DPoP <token>` and a valid `DPoP` proof only, on every request; sent as a Bearer
 * token it is refused (§7.2: no downgrade). `Authorization: DPoP` with a token that is not bound is
 * refused too. Under `required` every OAuth token must be bound (static tokens stay Bearer tokens);
 * under `off` the DPoP scheme is unsupported (answered as no credentials) and tokens are taken as
 * before DPoP. Refusals of a request made with the DPoP scheme (or for a binding) challenge with
 * `DPoP` (§7.1): `error="invalid_dpop_proof"` for the proof, `error="invalid_token"` for the token
 * and its binding, with `algs` and `resource_metadata`.
 */
import type { AuthConfig, OAuthConfig } from './config.js'
import type { Logger } from '../telemetry/log.js'
import { REFUSALS, refusal, type Refusal } from '../protocol/http-status.js'
import { tokenPrincipal, type Principal, type TokenPrincipal } from './principal.js'
import { bearerTokenOf, createTokenMatcher, loadStaticTokens, type StaticToken } from './tokens.js'
import { readSecret } from './secret.js'
import { OAuthVerifier, INVALID_TOKEN_DESCRIPTIONS, type InvalidTokenReason } from './verifier.js'
import { endpointResource, protectedResourceMetadata, protectedResourceMetadataUrl, type ProtectedResourceMetadata } from './oauth-metadata.js'
import {
  boundKeyOf, DPOP_ALGORITHMS, DPOP_TOKEN_DESCRIPTIONS, dpopTokenOf, DpopVerifier, INVALID_DPOP_PROOF_DESCRIPTIONS, MemoryDpopReplayCache,
  type DpopMode, type DpopReplayCache, type DpopRequest, type DpopTokenReason, type InvalidDpopProofReason
} from './dpop.js'

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
   * Whether {@link authenticate} may check a DPoP proof (RFC 9449): true when `auth.oauth` is
   * configured and its `dpop` is not `off`. False: it never reads its `dpop` argument, so a caller
   * need not build one per request (plugins/auth.ts decides this once, at registration). Undefined
   * (an authenticator made elsewhere) counts as true.
   */
  readonly checksProofs?: boolean
  /**
   * Decides one request.
   * @param authorization the raw header, undefined when absent
   * @param endpoint the configured curated endpoint the request is for (`/mcp/<name>`); undefined for
   *        `/mcp` and for a name that is not configured (its refusals are built once per name: only
   *        configured names may be passed, so that they stay bounded)
   * @param dpop the request's `DPoP` header, method and URL (RFC 9449 §4.3); undefined: the request
   *        has no proof (a DPoP-bound token is then refused)
   * @returns ok with the principal, or refused with the ready refusal. Never throws, never rejects.
   */
  authenticate: (authorization: string | undefined, endpoint?: string, dpop?: DpopRequest) => Promise<AuthOutcome>
}

/** A request without a proof (callers that pass no {@link DpopRequest}). */
const NO_PROOF: DpopRequest = Object.freeze({ proof: undefined, method: '', url: () => '' })

/** A header parameter value: a quoted-string (RFC 9110 §5.6.4), `"` and `\` escaped. */
function quoted (value: string): string {
  return `"${value.replace(/["\\]/g, m => '\\' + m)}"`
}

/** The refusal table's row `row`, id-less, with its challenge and message as given; frozen, built once. */
function authRefusal (row: 'unauthorizedMissing' | 'unauthorizedInvalid' | 'unauthorizedDpop' | 'insufficientScope', wwwAuthenticate: string, message: string, reason: string): AuthRefusal {
  return Object.freeze({ ...refusal(row, undefined, { message, wwwAuthenticate }), reason })
}

/** The body's message of a refusal whose challenge says `description`: `Unauthorized: <description, first letter lowered>`. */
function unauthorized (description: string): string {
  return `Unauthorized: ${description.charAt(0).toLowerCase()}${description.slice(1)}`
}

// Statuses, base messages and base challenges come from the refusal table (lib/protocol/http-status REFUSALS);
// with OAuth, the challenges gain resource_metadata, scope and error_description here.
const { unauthorizedMissing: MISSING, unauthorizedInvalid: INVALID, unauthorizedDpop: DPOP_PROOF, insufficientScope: SCOPE } = REFUSALS

/** A 503 while the DPoP replay cache cannot tell (lib/auth/dpop DpopReplayCache), built once. */
const DPOP_REPLAY_UNAVAILABLE: AuthRefusal = Object.freeze({ ...refusal('dpopReplayUnavailable'), reason: 'dpop_replay_unavailable' })

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
 * @param options.dpopReplay makes the cache where the `jti`s of DPoP proofs are remembered (lib/auth/dpop
 *        createDpopReplayCache: Redis under `sessions.store: "redis"`), called on the first proof to
 *        check (the caller closes what it made); default: one in memory.
 * @throws McpxError MCPX_ERR_CONFIG for unreadable token or secret sources (see loadStaticTokens)
 */
export function createAuthenticator (auth: AuthConfig, options: { logger: Logger, env?: NodeJS.ProcessEnv, verifier?: OAuthVerifier, dpopReplay?: () => DpopReplayCache }): Authenticator {
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
      checksProofs: false,
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
  const dpopMode: DpopMode = oauthConfig.dpop ?? 'allowed'
  let replay: DpopReplayCache | undefined
  const makeReplay = options.dpopReplay ?? (() => new MemoryDpopReplayCache())
  const dpop = dpopMode === 'off'
    ? undefined
    : new DpopVerifier({
      algorithms: oauthConfig.dpopSigningAlgs ?? DPOP_ALGORITHMS,
      maxAgeMs: oauthConfig.dpopProofMaxAge ?? 60_000,
      clockToleranceMs: oauthConfig.clockTolerance,
      replay: () => (replay ??= makeReplay())
    })
  /** RFC 9449 §7.1: a DPoP challenge lists the proof algorithms mcpx accepts. */
  const algs = dpop === undefined ? '' : `algs=${quoted(dpop.algs)}`
  /** The OAuth refusals of one protected resource: each names the resource's metadata (RFC 9728 §5.1). */
  function oauthRefusals (resource: string): OAuthRefusals {
    const rm = `resource_metadata=${quoted(protectedResourceMetadataUrl(resource))}`
    /** The parameters every DPoP challenge ends with (used only when DPoP is on, so `algs` is set). */
    const dpopTail = `${algs}, ${rm}`
    const byReason = new Map<InvalidTokenReason, AuthRefusal>()
    const byReasonDpop = new Map<InvalidTokenReason, AuthRefusal>()
    for (const [reason, description] of Object.entries(INVALID_TOKEN_DESCRIPTIONS) as Array<[InvalidTokenReason, string]>) {
      byReason.set(reason, authRefusal('unauthorizedInvalid', `${INVALID.wwwAuthenticate}, error_description=${quoted(description)}, ${rm}`, unauthorized(description), reason))
      byReasonDpop.set(reason, authRefusal('unauthorizedInvalid', `DPoP error="invalid_token", error_description=${quoted(description)}, ${dpopTail}`, unauthorized(description), reason))
    }
    const proofs = new Map<InvalidDpopProofReason, AuthRefusal>()
    for (const [reason, description] of Object.entries(INVALID_DPOP_PROOF_DESCRIPTIONS) as Array<[InvalidDpopProofReason, string]>) {
      proofs.set(reason, authRefusal('unauthorizedDpop', `${DPOP_PROOF.wwwAuthenticate}, error_description=${quoted(description)}, ${dpopTail}`, unauthorized(description), `dpop_${reason}`))
    }
    const bindings = new Map<DpopTokenReason, AuthRefusal>()
    for (const [reason, description] of Object.entries(DPOP_TOKEN_DESCRIPTIONS) as Array<[DpopTokenReason, string]>) {
      bindings.set(reason, authRefusal('unauthorizedInvalid', `DPoP error="invalid_token", error_description=${quoted(description)}, ${dpopTail}`, unauthorized(description), `dpop_${reason}`))
    }
    const scopeMessage = `${SCOPE.message}: ${oauthConfig.requiredScopes.join(' ')}`
    return {
      resource,
      // Under `required` only a DPoP-bound token can pass: the challenge names the DPoP scheme alone (RFC 9449 §7.1).
      missing: dpopMode === 'required'
        ? authRefusal('unauthorizedMissing', [`DPoP ${algs}`, rm, scope].filter(p => p !== undefined).join(', '), 'Unauthorized: a DPoP-bound access token is required', 'missing')
        : authRefusal('unauthorizedMissing', [`${MISSING.wwwAuthenticate} ${rm}`, scope].filter(p => p !== undefined).join(', '), MISSING.message, 'missing'),
      invalid: (reason, scheme) => (scheme === 'dpop' ? byReasonDpop : byReason).get(reason) ?? staticInvalid,
      proof: reason => proofs.get(reason) as AuthRefusal,
      binding: reason => bindings.get(reason) as AuthRefusal,
      insufficientScope: scope === undefined ? undefined : authRefusal('insufficientScope', `${SCOPE.wwwAuthenticate}, ${scope}, ${rm}`, scopeMessage, 'insufficient_scope'),
      insufficientScopeDpop: scope === undefined ? undefined : authRefusal('insufficientScope', `DPoP error="insufficient_scope", ${scope}, ${dpopTail}`, scopeMessage, 'insufficient_scope')
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
  const metadataOf = (resource: string): ProtectedResourceMetadata => protectedResourceMetadata({
    resource,
    issuer: oauthConfig.issuer,
    scopesSupported: oauthConfig.scopesSupported ?? oauthConfig.requiredScopes,
    resourceName: oauthConfig.resourceName,
    ...(dpopMode === 'required' && dpop !== undefined ? { dpopRequired: dpop.algs.split(' ') } : {})
  })
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
    checksProofs: dpop !== undefined,
    async authenticate (authorization, endpoint, request = NO_PROOF) {
      const refusals = refusalsOf(endpoint)
      let scheme: 'bearer' | 'dpop' = 'bearer'
      let token = bearerTokenOf(authorization)
      if (token === undefined && dpop !== undefined) {
        token = dpopTokenOf(authorization)
        scheme = 'dpop'
      }
      if (token === undefined) return { kind: 'refused', refusal: refusals.missing }
      if (scheme === 'bearer' && principals.length > 0) {
        const index = matchToken(token)
        if (index >= 0) return { kind: 'ok', principal: principals[index] }
      }
      const verdict = await verifier.verify(token, endpoint === undefined ? undefined : refusals.resource)
      if (verdict.kind === 'invalid') return { kind: 'refused', refusal: refusals.invalid(verdict.reason, scheme) }
      if (dpop !== undefined) {
        // RFC 9449 §7.1, §7.2: a bound token needs the DPoP scheme and a proof of its key, every request.
        const jkt = boundKeyOf(verdict.principal.claims)
        if (jkt === undefined) {
          if (dpopMode === 'required') return { kind: 'refused', refusal: refusals.binding('required') }
          if (scheme === 'dpop') return { kind: 'refused', refusal: refusals.binding('notBound') }
        } else {
          if (scheme === 'bearer') return { kind: 'refused', refusal: refusals.binding('boundAsBearer') }
          const proof = await dpop.check(request, token, jkt)
          if (proof.kind === 'proof') return { kind: 'refused', refusal: refusals.proof(proof.reason) }
          if (proof.kind === 'token') return { kind: 'refused', refusal: refusals.binding(proof.reason) }
          if (proof.kind === 'unavailable') return { kind: 'refused', refusal: DPOP_REPLAY_UNAVAILABLE }
        }
      }
      const insufficient = scheme === 'dpop' ? refusals.insufficientScopeDpop : refusals.insufficientScope
      if (insufficient !== undefined && !required.every(s => verdict.principal.scopes.includes(s))) return { kind: 'refused', refusal: insufficient }
      return { kind: 'ok', principal: verdict.principal }
    }
  }
}

/** The OAuth refusals of one protected resource (`/mcp`, or a curated endpoint), built once. */
interface OAuthRefusals {
  /** Its resource URL (RFC 9728 `resource`). */
  readonly resource: string
  readonly missing: AuthRefusal
  /** A token that is not accepted, challenged with the scheme it came with (RFC 6750 §3.1; RFC 9449 §7.1). */
  readonly invalid: (reason: InvalidTokenReason, scheme: 'bearer' | 'dpop') => AuthRefusal
  /** A DPoP proof that is missing or not accepted: `DPoP error="invalid_dpop_proof"`. */
  readonly proof: (reason: InvalidDpopProofReason) => AuthRefusal
  /** A token refused for its DPoP binding: `DPoP error="invalid_token"`. */
  readonly binding: (reason: DpopTokenReason) => AuthRefusal
  /** Undefined when no scope is required. */
  readonly insufficientScope: AuthRefusal | undefined
  /** The same, for a request made with the DPoP scheme. */
  readonly insufficientScopeDpop: AuthRefusal | undefined
}
