/**
 * The signing keys of the authorization server, cached and rotated (docs/authentication.md › OAuth 2.1 (the MCP authorization spec)), on top of
 * jose's `createRemoteJWKSet` (which selects the key by `kid`/`alg` and keeps the parsed keys).
 *
 * - Keys are fetched on first use and kept `cacheMaxAgeMs` (10 min) before a background-free
 *   refetch on the next verification.
 * - An unknown `kid` makes jose refetch, at most once per `cooldownMs` after a successful fetch.
 * - While the server cannot be reached, the keys last fetched keep working, and a failed fetch is
 *   not retried before `cooldownMs` has passed (jose would retry on every request with an unknown
 *   `kid`, sending one fetch per attacker request to a server that is already down). A `kid` none
 *   of them has then is {@link KeysUnavailableError}, not jose's "no matching key": it may be a key
 *   the server published since (a rotation), so the token cannot be checked now, and a client should
 *   retry rather than fetch a new token (docs/authentication.md › Keys).
 * - Nothing here throws past the verifier: a fetch failure becomes {@link KeysUnavailableError}.
 */
import { createLocalJWKSet, createRemoteJWKSet, errors, type JWTVerifyGetKey } from 'jose'
import type { Logger } from '../telemetry/log.js'

/** The keys could not be fetched and no cached key matched: the token cannot be checked now. */
export class KeysUnavailableError extends Error {
  constructor (options?: { cause?: unknown }) {
    super('the authorization server\'s signing keys cannot be fetched', options)
    this.name = 'KeysUnavailableError'
  }
}

/** Options of {@link createKeyResolver}. */
export interface KeyResolverOptions {
  /** The `jwks_uri` (configured or discovered). */
  jwksUri: string | (() => Promise<string>)
  /** After a fetch (successful or not), an unknown `kid` refetches only after this long, ms (auth.oauth.jwksCooldown). */
  cooldownMs: number
  /** Cached keys are refetched after this long, ms; while the refetch fails they keep working. Default 600 000. */
  cacheMaxAgeMs?: number
  /** Fetch timeout, ms. Default 5000. */
  timeoutMs?: number
  logger: Logger
}

/** jose's own verdicts on a key lookup: no retry, no fallback (the token is at fault, not the network). */
function isKeySelectionError (err: unknown): boolean {
  return err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys ||
    err instanceof errors.JOSENotSupported || err instanceof errors.JWSInvalid || err instanceof errors.JOSEAlgNotAllowed ||
    err instanceof errors.JWKInvalid
}

/**
 * A jose key resolver for `jwtVerify`, with the fallbacks above.
 * @returns a JWTVerifyGetKey; it rejects with jose's key-selection errors (unknown kid after a
 *          refetch that succeeded, or inside the cooldown after one; wrong key type for the alg) or
 *          with {@link KeysUnavailableError} (no keys, or an unknown kid, while the server cannot be reached).
 */
export function createKeyResolver (options: KeyResolverOptions): JWTVerifyGetKey {
  const { cooldownMs, logger } = options
  let remote: ReturnType<typeof createRemoteJWKSet> | undefined
  let resolving: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined
  let failedAt = -Infinity
  let stale: { fingerprint: string, keys: ReturnType<typeof createLocalJWKSet> } | undefined

  async function remoteSet (): Promise<ReturnType<typeof createRemoteJWKSet>> {
    if (remote !== undefined) return remote
    resolving ??= (async () => {
      const uri = typeof options.jwksUri === 'string' ? options.jwksUri : await options.jwksUri()
      remote = createRemoteJWKSet(new URL(uri), {
        cooldownDuration: cooldownMs,
        cacheMaxAge: options.cacheMaxAgeMs ?? 600_000,
        timeoutDuration: options.timeoutMs ?? 5000
      })
      return remote
    })().finally(() => { resolving = undefined })
    return await resolving
  }

  /** The last fetched keys as a local set (rebuilt only when jose fetched new ones). */
  function cachedKeys (set: ReturnType<typeof createRemoteJWKSet>): ReturnType<typeof createLocalJWKSet> | undefined {
    const jwks = set.jwks()
    if (jwks === undefined) return undefined
    const fingerprint = JSON.stringify(jwks)
    if (stale?.fingerprint !== fingerprint) stale = { fingerprint, keys: createLocalJWKSet(jwks) }
    return stale.keys
  }

  /**
   * The key from the last fetched keys, used while the server cannot be reached (`cause`: the failed
   * fetch, if this request made one). A `kid` they lack cannot be judged until the server answers.
   */
  async function fromCache (set: ReturnType<typeof createRemoteJWKSet>, header: Parameters<JWTVerifyGetKey>[0], token: Parameters<JWTVerifyGetKey>[1], cause?: unknown): Promise<Awaited<ReturnType<JWTVerifyGetKey>>> {
    const cached = cachedKeys(set)
    if (cached === undefined) throw new KeysUnavailableError(cause === undefined ? undefined : { cause })
    try {
      return await cached(header, token)
    } catch (err) {
      if (err instanceof errors.JWKSNoMatchingKey) throw new KeysUnavailableError({ cause: cause ?? err })
      throw err
    }
  }

  return async function resolveKey (header, token) {
    let set: ReturnType<typeof createRemoteJWKSet>
    try {
      set = await remoteSet()
    } catch (cause) {
      throw new KeysUnavailableError({ cause })
    }
    // Inside the cooldown after a failed fetch: cached keys only, no new fetch.
    if (Date.now() - failedAt < cooldownMs) return await fromCache(set, header, token)
    try {
      return await set(header, token)
    } catch (err) {
      if (isKeySelectionError(err)) throw err
      failedAt = Date.now()
      logger.warn({ err }, 'oauth: cannot fetch the authorization server\'s signing keys; the cached keys stay in use')
      return await fromCache(set, header, token, err)
    }
  }
}
