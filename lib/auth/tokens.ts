/**
 * Bearer-token authentication for the daemon (docs/security.md › Security). Pure: no Fastify.
 *
 * Tokens come from `auth.bearerTokens`, a file `auth.bearerTokensFile` (one token per line) and an
 * environment variable named by `auth.bearerTokensEnv` (comma-separated). A request carries
 * `Authorization: Bearer <token>` (RFC 6750 §2.1; the scheme is case-insensitive, RFC 9110 §11.1).
 * Comparison is constant-time: both sides are hashed with SHA-256, so every comparison is over
 * 32 bytes whatever the lengths, and every configured token is compared, with no early exit.
 *
 * {@link assertSafeBind} refuses to start a daemon on a non-loopback address with no token unless
 * `auth.allowUnauthenticated` says an authenticating reverse proxy sits in front.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { AdminConfig, AuthConfig } from './config.js'
import { McpxError } from '../base/errors.js'
import { Secret, readSecret } from './secret.js'
import { isLoopbackAddress } from '../base/net.js'

/** A token may hold visible ASCII only: anything else could never arrive intact in a header. */
const TOKEN_CHARS = /^[\x21-\x7e]+$/

/** `Bearer`, one or more spaces, the token, optional trailing whitespace. Compiled once. */
const BEARER = /^bearer +([\x21-\x7e]+)[ \t]*$/i

/** What a verifier made of an Authorization header. */
export type BearerOutcome = 'ok' | 'missing' | 'invalid'

/**
 * Checks one Authorization header value.
 * @returns 'ok' when it is `Bearer <token>` with an accepted token; 'missing' when there is no
 *          header or it is not Bearer credentials; 'invalid' when a bearer token was sent and is not
 *          accepted. Never throws.
 */
export type BearerVerifier = (authorization: string | undefined) => BearerOutcome

function sha256 (value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest()
}

/**
 * The token of an Authorization header: `Bearer <token>` (RFC 6750 §2.1; the scheme is
 * case-insensitive, RFC 9110 §11.1). Undefined when there is no header or it is not Bearer
 * credentials with one visible-ASCII token. Never throws.
 */
export function bearerTokenOf (authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined
  const match = BEARER.exec(authorization)
  return match === null ? undefined : match[1]
}

/**
 * Builds a matcher for a set of tokens; the tokens' SHA-256 digests are computed once, here.
 * Per call: one SHA-256 of the presented token, then `timingSafeEqual` against every digest, with
 * no early exit.
 * @returns a function from a presented token to the index of the matching token, or -1. Never throws.
 */
export function createTokenMatcher (tokens: readonly string[]): (presented: string) => number {
  const digests = tokens.map(sha256)
  return function matchToken (presented: string): number {
    const digest = sha256(presented)
    let found = -1
    for (let i = 0; i < digests.length; i++) {
      // timingSafeEqual runs on every digest, whichever matches.
      if (timingSafeEqual(digest, digests[i]) && found === -1) found = i
    }
    return found
  }
}

/**
 * Builds a verifier for a set of tokens (see {@link createTokenMatcher}). With no tokens every
 * header is 'missing' or 'invalid'. Never throws.
 */
export function createBearerVerifier (tokens: readonly string[]): BearerVerifier {
  const match = createTokenMatcher(tokens)
  return function verifyBearer (authorization: string | undefined): BearerOutcome {
    const token = bearerTokenOf(authorization)
    if (token === undefined) return 'missing'
    return match(token) >= 0 ? 'ok' : 'invalid'
  }
}

/**
 * Is this Authorization header `Bearer <one of tokens>`? Constant-time over the tokens (see
 * {@link createBearerVerifier}, which a hot path should use to hash the tokens only once).
 * @param authorizationHeader `request.headers.authorization`, undefined when absent
 * @param tokens accepted tokens; empty accepts nothing
 * @returns true on a match. Never throws.
 */
export function checkBearer (authorizationHeader: string | undefined, tokens: readonly string[]): boolean {
  return createBearerVerifier(tokens)(authorizationHeader) === 'ok'
}

function checkToken (token: string, source: string): string {
  if (!TOKEN_CHARS.test(token)) {
    // Never print the token itself.
    throw new McpxError('MCPX_ERR_CONFIG', `mcpx: ${source} holds a token with a space, control or non-ASCII character; tokens are visible ASCII`)
  }
  return token
}

/**
 * Collects the accepted bearer tokens, de-duplicated, in order: `auth.bearerTokens`, then the lines
 * of `auth.bearerTokensFile` (each trimmed; blank lines and lines starting with `#` skipped), then
 * the comma-separated value of the environment variable named by `auth.bearerTokensEnv` (each
 * trimmed; empty items skipped).
 * @param auth the `auth` section of the config
 * @param env the environment to read `bearerTokensEnv` from (default `process.env`)
 * @returns the tokens; empty when none is configured (then the daemon is unauthenticated)
 * @throws McpxError MCPX_ERR_CONFIG when the file cannot be read, the file or variable is named but
 *         holds no token (or the variable is unset), or a token holds a character other than
 *         visible ASCII. A named source that yields nothing is an error, not a silent "no auth".
 */
export function loadBearerTokens (auth: AuthConfig, env: NodeJS.ProcessEnv = process.env): string[] {
  return collectTokens({ list: auth.bearerTokens, file: auth.bearerTokensFile, envName: auth.bearerTokensEnv }, 'auth.bearerTokens', env)
}

/**
 * The admin tokens (`admin.tokens`, `admin.tokensFile`, `admin.tokensEnv`): they open
 * `POST /admin/reload` and, for a client that is not on loopback, `/status`, `/status.json`, `/metrics` and the detail of `/readyz`. Read like
 * {@link loadBearerTokens}, with the same errors naming the `admin.*` key.
 * @returns the tokens; empty when none is configured (then no admin route answers a request)
 */
export function loadAdminTokens (admin: AdminConfig, env: NodeJS.ProcessEnv = process.env): string[] {
  return collectTokens({ list: admin.tokens, file: admin.tokensFile, envName: admin.tokensEnv }, 'admin.tokens', env)
}

/** Tokens from a list, a file (one a line) and an environment variable (comma-separated); `key` names them in errors. */
function collectTokens (sources: { list: readonly string[], file?: string, envName?: string }, key: string, env: NodeJS.ProcessEnv): string[] {
  const tokens = new Set<string>()
  sources.list.forEach((token, index) => tokens.add(checkToken(token, `${key}[${index}]`)))

  if (sources.file !== undefined) {
    const path = sources.file
    let text: string
    try {
      text = readFileSync(path, 'utf8')
    } catch (cause) {
      throw new McpxError('MCPX_ERR_CONFIG', `mcpx: cannot read ${key}File ${path}: ${(cause as Error).message}`, { cause })
    }
    let found = 0
    for (const line of text.split('\n')) {
      const token = line.trim()
      if (token === '' || token.startsWith('#')) continue
      tokens.add(checkToken(token, `${key}File ${path}`))
      found++
    }
    if (found === 0) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: ${key}File ${path} holds no token`)
  }

  if (sources.envName !== undefined) {
    const name = sources.envName
    const value = env[name]
    if (value === undefined) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: ${key}Env names ${name}, which is not set`)
    let found = 0
    for (const item of value.split(',')) {
      const token = item.trim()
      if (token === '') continue
      tokens.add(checkToken(token, `environment variable ${name}`))
      found++
    }
    if (found === 0) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: environment variable ${name} (${key}Env) holds no token`)
  }
  return [...tokens]
}

/** A configured static token with its name and scopes (`auth.tokens`, or a legacy `bearerTokens*` one). */
export interface StaticToken {
  /** `auth.tokens[].name`; a legacy token is named `bearer:<first 16 hex of its SHA-256>`. */
  name: string
  token: Secret
  /** Granted scopes (for policies); empty for legacy tokens. */
  scopes: readonly string[]
}

/**
 * Every static token: the named `auth.tokens` (each read from its `tokenEnv` or `tokenFile`), then
 * the legacy ones of {@link loadBearerTokens}, each named by a digest prefix (stable across
 * restarts and config order, and revealing nothing).
 * @throws McpxError MCPX_ERR_CONFIG as {@link loadBearerTokens} and {@link readSecret} do, or for
 *         two tokens with one name. Messages never hold a token.
 */
export function loadStaticTokens (auth: AuthConfig, env: NodeJS.ProcessEnv = process.env): StaticToken[] {
  const out: StaticToken[] = []
  const names = new Set<string>()
  for (const [index, entry] of (auth.tokens ?? []).entries()) {
    const what = `auth.tokens[${index}] (${entry.name})`
    if (names.has(entry.name)) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: ${what}: the name ${entry.name} is used twice`)
    names.add(entry.name)
    const token = readSecret({ env: entry.tokenEnv, file: entry.tokenFile }, what, env)
    checkToken(token.reveal(), what)
    out.push({ name: entry.name, token, scopes: entry.scopes ?? [] })
  }
  for (const token of loadBearerTokens(auth, env)) {
    out.push({ name: `bearer:${sha256(token).toString('hex').slice(0, 16)}`, token: new Secret(token), scopes: [] })
  }
  return out
}

/** True when the config asks for authentication: static tokens of any kind, or `auth.oauth`. */
export function authConfigured (auth: AuthConfig): boolean {
  return auth.oauth !== undefined || (auth.tokens ?? []).length > 0 || auth.bearerTokens.length > 0 ||
    auth.bearerTokensFile !== undefined || auth.bearerTokensEnv !== undefined
}

/**
 * Refuses an unauthenticated daemon on a non-loopback address.
 * @param config the loaded config (`daemon.address`, `auth.allowUnauthenticated`)
 * @param tokens the tokens from {@link loadBearerTokens} (or {@link loadStaticTokens})
 * @returns nothing when the address is loopback, a token or `auth.oauth` is configured, or
 *          `auth.allowUnauthenticated` is true
 * @throws McpxError MCPX_ERR_UNSAFE_BIND otherwise (an unparseable address counts as non-loopback)
 */
export function assertSafeBind (config: { daemon: { address: string }, auth: AuthConfig }, tokens: readonly unknown[]): void {
  const address = config.daemon.address
  if (isLoopbackAddress(address)) return
  // auth.oauth and named auth.tokens are explicit authentication too.
  if (tokens.length > 0 || config.auth.oauth !== undefined || (config.auth.tokens ?? []).length > 0 || config.auth.allowUnauthenticated === true) return
  throw new McpxError('MCPX_ERR_UNSAFE_BIND', `mcpx: refusing to listen on ${address} without authentication: set auth.bearerTokens (or bearerTokensFile / bearerTokensEnv), auth.tokens or auth.oauth, or auth.allowUnauthenticated: true if an authenticating reverse proxy sits in front`)
}
