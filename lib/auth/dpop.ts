/**
 * DPoP at the front door (RFC 9449, OAuth 2.0 Demonstrating Proof of Possession): the checks of a
 * `DPoP` proof sent with a DPoP-bound access token (§4.3, §7.1), and the replay cache of its `jti`
 * (§11.1), in memory or in Redis (shared by replicas). Pure of Fastify; lib/auth/authenticate decides
 * when a proof is needed and turns every outcome into a refusal of the table.
 *
 * A proof is checked in this order (§4.3), and the first failure is the answer:
 * exactly one `DPoP` header; a JWS whose `typ` is `dpop+jwt`, whose `alg` is an allowed asymmetric
 * algorithm, signed by the public key in its `jwk` header (jose `jwtVerify` with `EmbeddedJWK`, which
 * refuses a private key); claims `jti`, `htm`, `htu`, `iat`; `htm` is the request's method; `htu` is
 * the URL the client used, query and fragment ignored (§4.3 point 9, compared after RFC 3986 §6.2.2–3
 * normalisation by WHATWG URL); `iat` within the window; `ath` is the base64url SHA-256 of the access
 * token (§7.1); the RFC 7638 thumbprint of `jwk` equals the token's `cnf.jkt` (§6); and the `jti`
 * was not seen before from this key (recorded last, so that only proofs that passed every other check
 * take room in the cache).
 */
import { createHash } from 'node:crypto'
import { calculateJwkThumbprint, EmbeddedJWK, errors, jwtVerify, type JWK } from 'jose'
import type { Logger } from '../telemetry/log.js'
import { createRedisConnection, describeRedisTarget, type RedisConnection, type RedisTarget } from '../base/redis.js'

/** `auth.oauth.dpop`: off (the DPoP scheme is unsupported), allowed (default), required (DPoP-bound tokens only). */
export type DpopMode = 'off' | 'allowed' | 'required'

/** The JWS algorithms a proof may use by default: asymmetric only (an HMAC key could not be a public key in `jwk`). */
export const DPOP_ALGORITHMS: readonly string[] = Object.freeze(['ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512', 'EdDSA', 'Ed25519'])

/** Why a proof was refused, with `error="invalid_dpop_proof"` (RFC 9449 §7.1, §12.2); the text is `error_description`. */
export const INVALID_DPOP_PROOF_DESCRIPTIONS = Object.freeze({
  missing: 'A DPoP proof is required with a DPoP-bound access token',
  multiple: 'More than one DPoP proof was sent',
  malformed: 'The DPoP proof is malformed',
  signature: 'The DPoP proof signature is invalid',
  type: 'The DPoP proof type is not dpop+jwt',
  algorithm: 'The DPoP proof algorithm is not allowed',
  key: 'The DPoP proof does not carry a usable public key',
  claims: 'The DPoP proof lacks a required claim (jti, htm, htu, iat)',
  method: 'The DPoP proof was made for another HTTP method',
  url: 'The DPoP proof was made for another URL',
  stale: 'The DPoP proof is too old',
  future: 'The DPoP proof is issued in the future',
  tokenHash: 'The DPoP proof was made for another access token',
  replayed: 'The DPoP proof has been used before'
})

/** A reason from {@link INVALID_DPOP_PROOF_DESCRIPTIONS}. */
export type InvalidDpopProofReason = keyof typeof INVALID_DPOP_PROOF_DESCRIPTIONS

/**
 * Why a token was refused for its DPoP binding, with `error="invalid_token"` (RFC 9449 §7.1: "Invalid
 * DPoP key binding" is an invalid token, the proof being sound); the text is `error_description`.
 */
export const DPOP_TOKEN_DESCRIPTIONS = Object.freeze({
  keyBinding: 'The DPoP proof key is not the key the access token is bound to',
  boundAsBearer: 'The access token is bound to a DPoP key: send it with the DPoP scheme and a DPoP proof',
  notBound: 'The access token is not bound to a DPoP key: send it with the Bearer scheme',
  required: 'This resource accepts DPoP-bound access tokens only'
})

/** A reason from {@link DPOP_TOKEN_DESCRIPTIONS}. */
export type DpopTokenReason = keyof typeof DPOP_TOKEN_DESCRIPTIONS

/** What the front door knows of one request, for its proof. */
export interface DpopRequest {
  /**
   * The `DPoP` header as received: undefined when absent; one value; several fields joined by
   * commas (Node joins repeated fields with `, `); or an array of field values.
   */
  proof: string | readonly string[] | undefined
  /** The request method (`POST`, `GET`, `DELETE`), as `htm` must spell it. */
  method: string
  /** The absolute URL the client used (behind a trusted proxy, the one it named); called only when a proof is checked. */
  url: () => string
}

/** What {@link DpopVerifier.check} decided. */
export type DpopOutcome =
  | { kind: 'ok' }
  | { kind: 'proof', reason: InvalidDpopProofReason }
  | { kind: 'token', reason: 'keyBinding' }
  | { kind: 'unavailable' }

/** What a replay cache answers for a proof: first seen, seen before, or cannot tell now (fail closed). */
export type ReplayAnswer = 'fresh' | 'replayed' | 'unavailable'

/** Where the `jti`s of accepted proofs are remembered for as long as the proofs could be replayed. */
export interface DpopReplayCache {
  /** `memory` or `redis`. */
  readonly store: 'memory' | 'redis'
  /**
   * Records `key` (a 64-hex digest) for `ttlMs`. Never rejects.
   * @returns fresh when it was not recorded, replayed when it was, unavailable when the store cannot tell
   */
  claim: (key: string, ttlMs: number) => Promise<ReplayAnswer>
  /** Releases the store's connection. Never rejects. */
  close: () => Promise<void>
}

/** Most proofs a {@link MemoryDpopReplayCache} remembers by default. */
export const DPOP_REPLAY_MAX_ENTRIES = 100_000

/**
 * Replay cache in this process. Bounded: every entry lives the same `ttlMs` (the verifier's), so
 * insertion order is expiry order and expired entries are swept from the front. Past `maxEntries`
 * live entries it answers `unavailable` (the proof is refused with 503 and Retry-After) rather than
 * forget a proof that could still be replayed.
 */
export class MemoryDpopReplayCache implements DpopReplayCache {
  readonly store = 'memory' as const
  readonly #until = new Map<string, number>()
  readonly #maxEntries: number

  constructor (maxEntries = DPOP_REPLAY_MAX_ENTRIES) {
    this.#maxEntries = maxEntries
  }

  async claim (key: string, ttlMs: number): Promise<ReplayAnswer> {
    const now = Date.now()
    for (const [first, until] of this.#until) {
      if (until > now) break
      this.#until.delete(first)
    }
    const seen = this.#until.get(key)
    if (seen !== undefined && seen > now) return 'replayed'
    if (this.#until.size >= this.#maxEntries) return 'unavailable'
    this.#until.set(key, now + ttlMs)
    return 'fresh'
  }

  /** Live and expired-but-unswept entries (tests, metrics). */
  get size (): number { return this.#until.size }

  async close (): Promise<void> {}
}

/** Options of {@link RedisDpopReplayCache}. */
export interface RedisDpopReplayCacheOptions {
  /** The Redis of `sessions.redis` (a URL, Sentinel or Cluster). */
  redis: RedisTarget
  /** `sessions.keyPrefix`; keys are `<keyPrefix>dpop:<64 hex>`. */
  keyPrefix: string
  logger: Logger
  /** A command not answered within this fails (the proof is refused: fail closed), ms. Default 1000. */
  commandTimeoutMs?: number
}

/**
 * Replay cache in Redis, shared by every replica on it: `SET <key> 1 NX PX <ttl>` records a proof
 * and says whether it was recorded already, in one atomic command, so a proof accepted by one
 * replica is refused by all. Redis expires the keys. While Redis cannot be reached, proofs are
 * refused (503 with Retry-After): a replay check that an outage lifts is no check.
 */
export class RedisDpopReplayCache implements DpopReplayCache {
  readonly store = 'redis' as const
  readonly #redis: RedisConnection
  readonly #keyPrefix: string
  #connecting: Promise<void> | undefined
  #down = false

  constructor (options: RedisDpopReplayCacheOptions) {
    const log = options.logger
    this.#keyPrefix = `${options.keyPrefix}dpop:`
    this.#redis = createRedisConnection(options.redis, { commandTimeoutMs: options.commandTimeoutMs ?? 1_000 })
    this.#redis.on('error', (err: Error) => {
      if (!this.#down) log.warn({ err, redis: describeRedisTarget(options.redis) }, 'DPoP replay store (Redis) unreachable: requests with DPoP proofs are refused (503) until it returns')
      this.#down = true
    })
    this.#redis.on('ready', () => {
      if (this.#down) log.info('DPoP replay store (Redis) reachable again')
      this.#down = false
    })
    const connecting = this.#redis.connect().then(() => {}, () => {})
    this.#connecting = connecting
    void connecting.then(() => { this.#connecting = undefined })
  }

  async claim (key: string, ttlMs: number): Promise<ReplayAnswer> {
    if (this.#connecting !== undefined) await this.#connecting
    try {
      const set = await this.#redis.set(this.#keyPrefix + key, '1', 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX')
      return set === 'OK' ? 'fresh' : 'replayed'
    } catch {
      return 'unavailable'
    }
  }

  async close (): Promise<void> {
    if (this.#redis.status === 'ready') {
      await Promise.race([this.#redis.quit().catch(() => {}), new Promise(resolve => setTimeout(resolve, 500).unref())])
    }
    this.#redis.disconnect()
  }
}

/** What {@link createDpopReplayCache} needs of the config (`sessions`). */
export interface DpopReplayStoreConfig {
  /** `sessions.store`: `redis` shares the cache through Redis, as sessions and rate limits are. */
  store: 'memory' | 'redis'
  redis: RedisTarget
  keyPrefix: string
}

/**
 * The replay cache of a loaded config: in Redis under `sessions.store: "redis"`, else in memory.
 * @throws McpxError MCPX_ERR_CONFIG as lib/base/redis createRedisConnection (an unset password variable)
 */
export function createDpopReplayCache (sessions: DpopReplayStoreConfig, logger: Logger): DpopReplayCache {
  return sessions.store === 'redis' ? new RedisDpopReplayCache({ redis: sessions.redis, keyPrefix: sessions.keyPrefix, logger }) : new MemoryDpopReplayCache()
}

/** Options of {@link DpopVerifier}; durations in ms. */
export interface DpopVerifierOptions {
  /** Allowed proof algorithms (auth.oauth.dpopSigningAlgs), asymmetric only. */
  algorithms: readonly string[]
  /** How old a proof's `iat` may be (auth.oauth.dpopProofMaxAge), ms. */
  maxAgeMs: number
  /** How far in the future `iat` may be (auth.oauth.clockTolerance), ms. */
  clockToleranceMs: number
  /** The cache of seen proofs, asked for on each check (the caller makes it once, on first use). */
  replay: () => DpopReplayCache
}

/** Base64url SHA-256 of a string, as `ath` and the replay key want it. */
function sha256 (value: string, encoding: 'base64url' | 'hex'): string {
  return createHash('sha256').update(value, 'utf8').digest(encoding)
}

/**
 * The proofs of a `DPoP` header: each field value, and each comma-separated element (a proof is a
 * compact JWS, which has no comma, so a comma means Node joined several fields). Never throws.
 */
function proofsOf (proof: string | readonly string[] | undefined): string[] {
  if (proof === undefined) return []
  const parts = (typeof proof === 'string' ? [proof] : proof).flatMap(value => value.split(','))
  if (parts.length === 1 && parts[0].trim() === '') return []
  return parts.map(part => part.trim())
}

/** The URL a proof's `htu` is compared with: normalised (WHATWG URL), without query and fragment; undefined when unparsable. */
function comparableUrl (url: string): string | undefined {
  const parsed = URL.canParse(url) ? new URL(url) : undefined
  if (parsed === undefined) return undefined
  parsed.search = ''
  parsed.hash = ''
  return parsed.href
}

/** Maps jose's errors on a proof to a reason. Never throws. */
function reasonOf (err: unknown): InvalidDpopProofReason {
  if (err instanceof errors.JOSEAlgNotAllowed) return 'algorithm'
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'signature'
  if (err instanceof errors.JWTClaimValidationFailed) return err.claim === 'typ' ? 'type' : 'claims'
  if (err instanceof errors.JWSInvalid && /jwk|JWK/.test(err.message)) return 'key'
  if (err instanceof errors.JOSENotSupported) return 'algorithm'
  return 'malformed'
}

/**
 * Checks DPoP proofs for one resource (RFC 9449 §4.3, §7.1). Build once; {@link check} per request.
 * Nothing it does throws to the caller: every failure is an outcome.
 */
export class DpopVerifier {
  readonly #options: DpopVerifierOptions
  readonly #algorithms: string[]
  /** How long a proof's jti is remembered: as long as its iat keeps it acceptable (max age + tolerance), ms. */
  readonly #replayTtlMs: number

  constructor (options: DpopVerifierOptions) {
    this.#options = options
    this.#algorithms = [...options.algorithms]
    this.#replayTtlMs = options.maxAgeMs + options.clockToleranceMs
  }

  /** The allowed algorithms, space-separated, as the `algs` challenge parameter lists them (RFC 9449 §7.1). */
  get algs (): string { return this.#algorithms.join(' ') }

  /**
   * Checks the proof of one request made with a DPoP-bound access token.
   * @param request the request's DPoP header, method and URL
   * @param accessToken the token of `Authorization: DPoP <token>`, for `ath`
   * @param jkt the token's `cnf.jkt` (RFC 7638 thumbprint, base64url SHA-256)
   * @returns ok; proof (invalid_dpop_proof) with a reason; token (invalid_token, key binding); or
   *          unavailable when the replay cache cannot tell. Never throws, never rejects.
   */
  async check (request: DpopRequest, accessToken: string, jkt: string): Promise<DpopOutcome> {
    const proofs = proofsOf(request.proof)
    if (proofs.length === 0) return { kind: 'proof', reason: 'missing' }
    if (proofs.length > 1) return { kind: 'proof', reason: 'multiple' }
    let payload: Record<string, unknown>
    let jwk: JWK
    try {
      const verified = await jwtVerify(proofs[0], EmbeddedJWK, { typ: 'dpop+jwt', algorithms: this.#algorithms, requiredClaims: ['jti', 'htm', 'htu', 'iat'] })
      payload = verified.payload as Record<string, unknown>
      jwk = verified.protectedHeader.jwk as JWK
    } catch (err) {
      return { kind: 'proof', reason: reasonOf(err) }
    }
    const { jti, htm, htu, iat, ath } = payload
    if (typeof jti !== 'string' || jti === '' || typeof htm !== 'string' || typeof htu !== 'string' || typeof iat !== 'number') return { kind: 'proof', reason: 'claims' }
    if (htm !== request.method) return { kind: 'proof', reason: 'method' }
    const expected = comparableUrl(request.url())
    if (expected === undefined || comparableUrl(htu) !== expected) return { kind: 'proof', reason: 'url' }
    const now = Date.now()
    if (iat * 1000 > now + this.#options.clockToleranceMs) return { kind: 'proof', reason: 'future' }
    if (iat * 1000 < now - this.#options.maxAgeMs) return { kind: 'proof', reason: 'stale' }
    if (ath !== sha256(accessToken, 'base64url')) return { kind: 'proof', reason: 'tokenHash' }
    let thumbprint: string
    try { thumbprint = await calculateJwkThumbprint(jwk, 'sha256') } catch { return { kind: 'proof', reason: 'key' } }
    if (thumbprint !== jkt) return { kind: 'token', reason: 'keyBinding' }
    // The jti is remembered per key (RFC 9449 §11.1), hashed: a fixed-length key whatever the client sent.
    let answer: ReplayAnswer
    try {
      answer = await this.#options.replay().claim(sha256(`${thumbprint}\0${jti}`, 'hex'), this.#replayTtlMs)
    } catch {
      answer = 'unavailable' // the store could not be made (e.g. a Redis password variable unset): fail closed
    }
    if (answer === 'replayed') return { kind: 'proof', reason: 'replayed' }
    if (answer === 'unavailable') return { kind: 'unavailable' }
    return { kind: 'ok' }
  }
}

/**
 * The DPoP credentials of an Authorization header: `DPoP <token>` (RFC 9449 §7.1: token68; the
 * scheme is case-insensitive, RFC 9110 §11.1). Undefined for anything else. Never throws.
 */
export function dpopTokenOf (authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined
  const match = DPOP_SCHEME.exec(authorization)
  return match === null ? undefined : match[1]
}

/** `DPoP`, one or more spaces, the token, optional trailing whitespace. Compiled once. */
const DPOP_SCHEME = /^dpop +([\x21-\x7e]+)[ \t]*$/i

/**
 * The DPoP key a token is bound to: `cnf.jkt` of the JWT or the introspection answer (RFC 9449 §6.1,
 * §6.2); undefined when the token is not DPoP-bound (no `cnf.jkt`). Never throws.
 */
export function boundKeyOf (claims: Readonly<Record<string, unknown>>): string | undefined {
  const cnf = claims.cnf
  if (typeof cnf !== 'object' || cnf === null) return undefined
  if (!('jkt' in cnf)) return undefined
  const jkt = (cnf as Record<string, unknown>).jkt
  // A `jkt` that is not a thumbprint still binds the token (it is never usable as a bearer token); no proof key matches it.
  return typeof jkt === 'string' && jkt !== '' ? jkt : UNMATCHABLE_JKT
}

/** The binding of a token whose `cnf.jkt` is not a string: no RFC 7638 thumbprint (base64url) contains a space. */
const UNMATCHABLE_JKT = 'malformed cnf.jkt'
