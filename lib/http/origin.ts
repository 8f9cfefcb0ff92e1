/**
 * Which browser origins may talk to mcpx over Streamable HTTP
 * (seed › "Origin (every revision with Streamable HTTP)").
 *
 * Allowed: no Origin at all (every non-browser client); the loopback hosts `localhost`,
 * `127.0.0.1` and `[::1]` at any port over http or https; the daemon's own `daemon.address` when it
 * is a specific address; the exact origins in `transport.allowedOrigins`. Refused: `Origin: null`
 * ("it names nobody"), a repeated Origin header, anything that is not the canonical serialisation
 * of an http(s) origin (paths, userinfo, other schemes, lookalike hosts, garbage).
 *
 * The daemon's address comes from config, never from the request's Host header: Host is exactly
 * what DNS rebinding controls. Pure: no Fastify. The per-policy check is built once (a Set of
 * canonical origins) and cached per policy object, so a request costs a Set lookup and, on a miss,
 * one `new URL`.
 */
import type { McpxConfig } from '../config/types.js'
import { McpxError } from '../base/errors.js'
import { isUnspecifiedHost, parseHostPort } from '../base/net.js'

/** The inputs of the Origin check. Treated as immutable once first used (the check is cached per object). */
export interface OriginPolicy {
  /**
   * Exact origins allowed besides loopback and the daemon address (`transport.allowedOrigins`),
   * e.g. `https://app.example.com`. Normalised once: scheme and host lowercased, a trailing `/`
   * and a default port (`:80` for http, `:443` for https) dropped. Default `[]`.
   */
  readonly allowedOrigins: readonly string[]
  /**
   * `host:port` the daemon listens on (`daemon.address`), e.g. `10.0.0.5:3939` or `[fd00::5]:3939`.
   * When the host is specific (not `0.0.0.0`, `::`, `[::]`) and the port is not 0, the origins
   * `http://host:port` and `https://host:port` are allowed. Absent: nothing is added.
   */
  readonly daemonAddress?: string
}

// Loopback and host:port are lib/base/net.ts's: one definition for Origin, binds, Host headers and OAuth issuers.

/** Origin hosts that are loopback whatever the port or scheme (seed: "transport defaults"), as `URL#hostname` writes them. */
const LOOPBACK_ORIGIN_HOSTS: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]'])

/** Visible ASCII only: an Origin header with anything else is garbage (and would defeat ASCII lowercasing). */
const VISIBLE_ASCII = /^[\x21-\x7e]+$/

/**
 * Builds the policy from config: `transport.allowedOrigins` and `daemon.address`.
 * @returns a frozen {@link OriginPolicy}. Never throws (bad entries throw when the check is built).
 */
export function originPolicyFromConfig (config: McpxConfig): OriginPolicy {
  return Object.freeze({
    allowedOrigins: Object.freeze([...config.transport.allowedOrigins]),
    daemonAddress: config.daemon.address
  })
}

/** Canonical form of one configured allowed origin, or a config error naming it. */
function canonicalAllowedOrigin (entry: string, index: number): string {
  const where = `transport.allowedOrigins[${index}]`
  let url: URL
  try {
    url = new URL(entry)
  } catch (cause) {
    throw new McpxError('MCPX_ERR_CONFIG', `mcpx: ${where} is not an origin: ${JSON.stringify(entry)} (expected e.g. "https://app.example.com")`, { cause })
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new McpxError('MCPX_ERR_CONFIG', `mcpx: ${where} must be an http or https origin, got ${JSON.stringify(entry)}`)
  }
  if (url.username !== '' || url.password !== '' || url.pathname !== '/' || url.search !== '' || url.hash !== '') {
    throw new McpxError('MCPX_ERR_CONFIG', `mcpx: ${where} must be scheme://host[:port] with no userinfo, path, query or fragment, got ${JSON.stringify(entry)}`)
  }
  return url.origin
}

/**
 * Builds the Origin check for one policy: the canonical allowed origins go into a Set once.
 * @returns `(origin) => boolean`, where `origin` is `request.headers.origin` as Node gives it
 *          (undefined when absent, an array when repeated). The returned function never throws.
 * @throws McpxError MCPX_ERR_CONFIG when an `allowedOrigins` entry is not an http(s) origin
 *         (`null`, `*`, a path, userinfo…) or `daemonAddress` is not `host:port`.
 */
export function createOriginCheck (policy: OriginPolicy): (origin: string | string[] | undefined) => boolean {
  const allowed = new Set<string>()
  policy.allowedOrigins.forEach((entry, index) => allowed.add(canonicalAllowedOrigin(entry, index)))
  if (policy.daemonAddress !== undefined) {
    const parsed = parseHostPort(policy.daemonAddress)
    if (parsed === undefined) {
      throw new McpxError('MCPX_ERR_CONFIG', `mcpx: daemon.address must be host:port, got ${JSON.stringify(policy.daemonAddress)}`)
    }
    // A wildcard bind or an ephemeral port names no origin a browser could be on.
    if (!isUnspecifiedHost(parsed.host) && parsed.port !== 0) {
      allowed.add(new URL(`http://${parsed.host}:${parsed.port}`).origin)
      allowed.add(new URL(`https://${parsed.host}:${parsed.port}`).origin)
    }
  }

  return function checkOrigin (origin: string | string[] | undefined): boolean {
    if (origin === undefined) return true // no Origin: not a browser, nothing to defend
    if (typeof origin !== 'string') return false // a repeated Origin header is never one origin
    if (allowed.has(origin)) return true // fast path: already canonical and listed
    if (!VISIBLE_ASCII.test(origin)) return false
    let url: URL
    try {
      url = new URL(origin)
    } catch {
      return false
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return false
    const canonical = url.origin
    // The header must BE a serialised origin: `http://localhost/x`, `http://localhost@evil.com`,
    // `http://localhost:80`, `http://0x7f.1` all serialise differently and are refused. Only ASCII
    // case is forgiven (scheme and host are case-insensitive).
    if (canonical !== origin.toLowerCase()) return false
    return allowed.has(canonical) || LOOPBACK_ORIGIN_HOSTS.has(url.hostname)
  }
}

const checks = new WeakMap<OriginPolicy, (origin: string | string[] | undefined) => boolean>()

/**
 * Is this Origin header allowed? (seed › "Origin (every revision with Streamable HTTP)")
 * @param origin `request.headers.origin`: undefined when absent (allowed), a string, or an array
 *               when the header was repeated (refused). `null` is refused.
 * @param policy built once per policy object (see {@link createOriginCheck}) and cached; do not
 *               mutate a policy after its first use.
 * @returns true when allowed.
 * @throws McpxError MCPX_ERR_CONFIG only for a bad policy, on its first use; never for any origin value.
 */
export function isOriginAllowed (origin: string | string[] | undefined, policy: OriginPolicy): boolean {
  let check = checks.get(policy)
  if (check === undefined) {
    check = createOriginCheck(policy)
    checks.set(policy, check)
  }
  return check(origin)
}
