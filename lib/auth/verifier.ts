/**
 * Access-token verification for mcpx as an OAuth 2.1 resource server (invalid tokens are refused;
 * MCP authorization › Token Handling; RFC 9068, RFC 7662, RFC 8707). Pure of Fastify.
 *
 * A token that looks like a JWS compact serialisation is verified locally with jose against the
 * issuer's JWKS ({@link createKeyResolver}): signature, an asymmetric algorithm, `typ` (`at+jwt`,
 * `JWT` or none), `iss`, `aud` (one of the configured audiences, or, on a curated endpoint, its own
 * resource URL: checked on every request, a remembered verdict too), `exp`/`nbf` with the clock
 * tolerance, and a subject. Any other token is introspected (RFC 7662) when introspection is
 * configured, else refused; an active answer must name one of the audiences too, unless the operator
 * says the endpoint knows this resource's tokens only. The verdict never carries token text.
 */
import { errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose'
import type { Logger } from '../telemetry/log.js'
import { Secret } from './secret.js'
import { oauthPrincipal, scopesOf, type OAuthPrincipal } from './principal.js'
import { createKeyResolver, KeysUnavailableError } from './jwks.js'
import { issuerMetadataUrls } from './oauth-metadata.js'

/** Why a token was refused; each is a 401 `invalid_token`. The text is what `error_description` says. */
export const INVALID_TOKEN_DESCRIPTIONS = Object.freeze({
  malformed: 'The access token is malformed',
  signature: 'The access token signature is invalid',
  algorithm: 'The access token algorithm is not allowed',
  key: 'The access token is signed with an unknown key',
  type: 'The access token type is not accepted',
  issuer: 'The access token was issued by another authorization server',
  audience: 'The access token was issued for another resource',
  expired: 'The access token is expired',
  notYetValid: 'The access token is not yet valid',
  claims: 'The access token lacks a required claim',
  inactive: 'The access token is not active',
  unavailable: 'The access token cannot be checked now: the authorization server is unreachable'
})

/** A reason from {@link INVALID_TOKEN_DESCRIPTIONS}. */
export type InvalidTokenReason = keyof typeof INVALID_TOKEN_DESCRIPTIONS

/** What a verifier made of a token. */
export type TokenVerdict =
  | { kind: 'ok', principal: OAuthPrincipal }
  | { kind: 'invalid', reason: InvalidTokenReason }

/** Options of {@link OAuthVerifier}; durations in ms. */
export interface OAuthVerifierOptions {
  /** `iss` every token must carry, exactly (auth.oauth.issuer). */
  issuer: string
  /** Accepted `aud` values: a token must name at least one (auth.oauth.audience, default [resource]). */
  audience: readonly string[]
  /** The JWKS URL; undefined: discovered from the issuer's metadata (RFC 8414, then OIDC). */
  jwksUri?: string
  /** Allowed clock skew for `exp`, `nbf` and `iat`, ms. */
  clockToleranceMs: number
  /** Least time between two key fetches prompted by an unknown `kid`, ms. */
  jwksCooldownMs: number
  /**
   * RFC 7662 introspection for opaque tokens. `knowsOnlyThisResource` (default false): the endpoint
   * knows tokens for this resource only, so an active answer without `aud` is taken as issued for it;
   * otherwise such an answer is refused (`audience`), as a token must be issued for this resource
   * (RFC 8707 §2, MCP authorization › Token Handling).
   */
  introspection?: { url: string, clientId: string, clientSecret: Secret, knowsOnlyThisResource?: boolean }
  /** Timeout of each call to the authorization server, ms. Default 5000. */
  timeoutMs?: number
  logger: Logger
}

/** Asymmetric JWS algorithms only: an `HS*` token would use a public key as an HMAC secret. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519']

/** Three base64url segments (the signature may be empty, as in `alg: none`). */
const JWS_COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/

/** Most accepted tokens remembered (oldest dropped first): a client reuses its token for many requests. */
const VERDICT_CACHE_SIZE = 10_000
/** An accepted JWT is remembered until it expires, at most this long, ms (a key removed from the JWKS stops counting within it). */
const JWT_CACHE_MS = 300_000
/** An introspected token is remembered until it expires, at most this long, ms (a revoked token is refused within it). */
const INTROSPECTION_CACHE_MS = 60_000

/**
 * An accepted token: its verdict, and the audiences it names (`aud`), checked against each request's
 * accepted audiences (they differ by endpoint); undefined: it names none (an introspection answer
 * without `aud`, admitted only under `introspection.knowsOnlyThisResource`), so any endpoint accepts it.
 */
interface Accepted { verdict: TokenVerdict, audiences: readonly string[] | undefined }

/**
 * Accepted tokens, keyed by the whole token text, each until a deadline.
 * Bounded: past {@link VERDICT_CACHE_SIZE} the oldest entry goes. Never throws.
 */
class VerdictCache {
  readonly #entries = new Map<string, { accepted: Accepted, untilMs: number }>()

  get (token: string, now: number): Accepted | undefined {
    const hit = this.#entries.get(token)
    if (hit === undefined) return undefined
    if (now < hit.untilMs) return hit.accepted
    this.#entries.delete(token)
    return undefined
  }

  set (token: string, accepted: Accepted, untilMs: number): void {
    if (this.#entries.size >= VERDICT_CACHE_SIZE) this.#entries.delete(this.#entries.keys().next().value as string)
    this.#entries.set(token, { accepted, untilMs })
  }
}

/** `aud` as a list (RFC 7519 §4.1.3: a string or an array of strings); undefined when absent. */
function audiencesOf (aud: unknown): readonly string[] | undefined {
  if (aud === undefined) return undefined
  return (Array.isArray(aud) ? aud : [aud]).filter((a): a is string => typeof a === 'string')
}

/** Maps jose's errors to a reason. Never throws. */
function reasonOf (err: unknown): InvalidTokenReason {
  if (err instanceof KeysUnavailableError) return 'unavailable'
  if (err instanceof errors.JWTExpired) return 'expired'
  if (err instanceof errors.JWTClaimValidationFailed) {
    switch (err.claim) {
      case 'iss': return 'issuer'
      case 'aud': return 'audience'
      case 'nbf': return 'notYetValid'
      case 'iat': return err.reason === 'check_failed' ? 'notYetValid' : 'claims'
      case 'typ': return 'type'
      default: return 'claims'
    }
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'signature'
  if (err instanceof errors.JOSEAlgNotAllowed) return 'algorithm'
  if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) return 'key'
  return 'malformed'
}

/** `typ` of an access token: `at+jwt` (RFC 9068 §2.1), `JWT`, with or without `application/`, or none. */
function typeAccepted (typ: unknown): boolean {
  if (typ === undefined) return true
  if (typeof typ !== 'string') return false
  const t = typ.toLowerCase().replace(/^application\//, '')
  return t === 'at+jwt' || t === 'jwt'
}

/** The subject: `sub`, else (client credentials, RFC 9068 §2.2) `client_id`. */
function subjectOf (claims: Record<string, unknown>): string | undefined {
  if (typeof claims.sub === 'string' && claims.sub !== '') return claims.sub
  if (typeof claims.client_id === 'string' && claims.client_id !== '') return claims.client_id
  return undefined
}

/**
 * Verifies access tokens for one resource. Build once per mcpx instance; {@link verify} per request.
 * Nothing it does throws to the caller: every failure is a verdict.
 */
export class OAuthVerifier {
  readonly #options: OAuthVerifierOptions
  readonly #keys: JWTVerifyGetKey
  readonly #clockToleranceSec: number
  #metadata: Promise<Record<string, unknown>> | undefined
  #metadataFailedAt = -Infinity
  readonly #accepted = new VerdictCache()

  constructor (options: OAuthVerifierOptions) {
    this.#options = options
    this.#clockToleranceSec = options.clockToleranceMs / 1000
    this.#keys = createKeyResolver({
      jwksUri: options.jwksUri ?? (async () => await this.#jwksUriFromMetadata()),
      cooldownMs: options.jwksCooldownMs,
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      logger: options.logger
    })
  }

  /**
   * Checks one bearer token.
   * @param token the credentials after `Bearer ` (visible ASCII)
   * @param resource a curated endpoint's own resource URL (lib/auth/oauth-metadata endpointResource),
   *        accepted as an audience besides the configured ones, for this request only
   * @returns ok with the caller's principal, or invalid with a reason. Never throws.
   */
  async verify (token: string, resource?: string): Promise<TokenVerdict> {
    const audience = resource === undefined ? this.#options.audience : [...this.#options.audience, resource]
    // A client sends the same token for many requests: it is checked once, then remembered until it
    // expires (at most JWT_CACHE_MS, or INTROSPECTION_CACHE_MS); its audience is checked every time.
    const known = this.#accepted.get(token, Date.now())
    if (known !== undefined) {
      if (known.audiences !== undefined && !known.audiences.some(a => audience.includes(a))) return { kind: 'invalid', reason: 'audience' }
      return known.verdict
    }
    if (JWS_COMPACT.test(token)) return await this.#verifyJwt(token, audience)
    if (this.#options.introspection !== undefined) return await this.#introspect(token, audience)
    return { kind: 'invalid', reason: 'malformed' }
  }

  async #verifyJwt (token: string, audience: readonly string[]): Promise<TokenVerdict> {
    const now = Date.now()
    let payload: JWTPayload
    let typ: unknown
    try {
      const verified = await jwtVerify(token, this.#keys, {
        issuer: this.#options.issuer,
        audience: [...audience],
        clockTolerance: this.#clockToleranceSec,
        algorithms: ALGORITHMS,
        requiredClaims: ['exp']
      })
      payload = verified.payload
      typ = verified.protectedHeader.typ
    } catch (err) {
      const reason = reasonOf(err)
      if (reason === 'malformed' && !(err instanceof errors.JOSEError)) this.#options.logger.error({ err }, 'oauth: unexpected token verification failure')
      return { kind: 'invalid', reason }
    }
    if (!typeAccepted(typ)) return { kind: 'invalid', reason: 'type' }
    const verdict = this.#principal(payload as Record<string, unknown>, token)
    // jose required an `aud` naming one of `audience`, so the list is never undefined here.
    if (verdict.kind === 'ok') this.#accepted.set(token, { verdict, audiences: audiencesOf(payload.aud) ?? [] }, Math.min((payload.exp as number) * 1000 + this.#options.clockToleranceMs, now + JWT_CACHE_MS))
    return verdict
  }

  #principal (claims: Record<string, unknown>, token: string): TokenVerdict {
    const subject = subjectOf(claims)
    if (subject === undefined) return { kind: 'invalid', reason: 'claims' }
    return { kind: 'ok', principal: oauthPrincipal({ ...claims, iss: this.#options.issuer, sub: subject }, scopesOf(claims), new Secret(token)) }
  }

  /** RFC 7662 §2: POST token=…; the client authenticates with HTTP Basic (RFC 6749 §2.3.1). */
  async #introspect (token: string, audience: readonly string[]): Promise<TokenVerdict> {
    const now = Date.now()
    const { url, clientId, clientSecret } = this.#options.introspection as NonNullable<OAuthVerifierOptions['introspection']>
    let body: Record<string, unknown>
    try {
      const basic = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret.reveal())}`).toString('base64')
      const response = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
        signal: AbortSignal.timeout(this.#options.timeoutMs ?? 5000)
      })
      if (response.status !== 200) throw new Error(`introspection endpoint answered HTTP ${response.status}`)
      body = await response.json() as Record<string, unknown>
    } catch (err) {
      this.#options.logger.warn({ err, url }, 'oauth: token introspection failed')
      return { kind: 'invalid', reason: 'unavailable' }
    }
    const verdict = this.#judgeIntrospection(body, now, token, audience)
    if (verdict.kind === 'ok') {
      const expMs = typeof body.exp === 'number' ? body.exp * 1000 : Infinity
      this.#accepted.set(token, { verdict, audiences: audiencesOf(body.aud) }, Math.min(expMs, now + INTROSPECTION_CACHE_MS))
    }
    return verdict
  }

  #judgeIntrospection (body: Record<string, unknown>, now: number, token: string, audience: readonly string[]): TokenVerdict {
    const tolerance = this.#options.clockToleranceMs
    if (body.active !== true) return { kind: 'invalid', reason: 'inactive' }
    if (body.iss !== undefined && body.iss !== this.#options.issuer) return { kind: 'invalid', reason: 'issuer' }
    const aud = audiencesOf(body.aud)
    // No `aud`: the token may be for any resource the authorization server serves; it is for this one
    // only when the operator says the endpoint knows no other (introspection.knowsOnlyThisResource).
    if (aud === undefined && this.#options.introspection?.knowsOnlyThisResource !== true) return { kind: 'invalid', reason: 'audience' }
    if (aud !== undefined && !aud.some(a => audience.includes(a))) return { kind: 'invalid', reason: 'audience' }
    if (typeof body.exp === 'number' && body.exp * 1000 + tolerance <= now) return { kind: 'invalid', reason: 'expired' }
    if (typeof body.nbf === 'number' && body.nbf * 1000 - tolerance > now) return { kind: 'invalid', reason: 'notYetValid' }
    return this.#principal(body, token)
  }

  /** Starts discovery early (when jwksUri is not configured), so the first request does not wait. Never throws. */
  warmUp (): void {
    if (this.#options.jwksUri === undefined) this.#jwksUriFromMetadata().catch(() => {})
  }

  /** The issuer's `jwks_uri` from its metadata; a failure is retried after the cooldown. */
  async #jwksUriFromMetadata (): Promise<string> {
    if (this.#metadata === undefined || (Date.now() - this.#metadataFailedAt >= this.#options.jwksCooldownMs && this.#metadataFailedAt > -Infinity)) {
      this.#metadataFailedAt = -Infinity
      this.#metadata = this.#discover()
      this.#metadata.catch(() => { this.#metadataFailedAt = Date.now() })
    }
    const metadata = await this.#metadata
    return metadata.jwks_uri as string
  }

  /** RFC 8414 §3 then OIDC Discovery §4: the first document that answers 200 with our issuer and a jwks_uri. */
  async #discover (): Promise<Record<string, unknown>> {
    const { issuer, logger } = this.#options
    const problems: string[] = []
    for (const url of issuerMetadataUrls(issuer)) {
      try {
        const response = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(this.#options.timeoutMs ?? 5000) })
        if (response.status !== 200) { problems.push(`${url}: HTTP ${response.status}`); await response.body?.cancel(); continue }
        const metadata = await response.json() as Record<string, unknown>
        // RFC 8414 §3.3: the document's issuer must be the one asked for.
        if (metadata.issuer !== issuer) { problems.push(`${url}: issuer ${JSON.stringify(metadata.issuer)}`); continue }
        if (typeof metadata.jwks_uri !== 'string') { problems.push(`${url}: no jwks_uri`); continue }
        logger.info({ issuer, metadata: url, jwksUri: metadata.jwks_uri }, 'oauth: authorization server metadata loaded')
        return metadata
      } catch (err) {
        problems.push(`${url}: ${(err as Error).message}`)
      }
    }
    const err = new Error(`no usable authorization server metadata for ${issuer}: ${problems.join('; ')}`)
    logger.warn({ err }, 'oauth: discovery failed; retrying after the cooldown')
    throw err
  }
}
