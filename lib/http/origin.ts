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
import type { McpxConfig } from '../config/config.js'
import { McpxError } from '../base/errors.js'

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

/** A daemon address split into a URL-normalised host (`127.0.0.1`, `[::1]`, `example.com`) and a port. */
export interface HostPort {
  /** Lowercased; IPv4 in dotted decimal; IPv6 bracketed and compressed, as `URL#hostname` writes them. */
  host: string
  /** 0…65535. */
  port: number
}

/*
 * Loopback, the one definition. Two member sets, on purpose:
 * - an Origin is allowed when its host is one of the seed's named loopback hosts ("transport
 *   defaults: localhost, 127.0.0.1, ::1"), exactly: a browser origin is a name the page chose, and
 *   the seed lists three, so `http://127.0.0.2` is not allowed unless configured;
 * - a bind address (daemon.address: may the daemon run without auth?) and the Host of an ops request
 *   on a loopback daemon (DNS rebinding) are loopback when they are an address that never leaves the
 *   machine: `localhost`, 127.0.0.0/8 (RFC 1122 §3.2.1.3) and `::1`, in any spelling `URL` normalises.
 *   An IPv4-mapped address (`::ffff:127.0.0.1`) is not counted: when in doubt, require authentication.
 */

/** Origin hosts that are loopback whatever the port or scheme (seed: "transport defaults"), as `URL#hostname` writes them. */
const LOOPBACK_ORIGIN_HOSTS: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]'])

/** 127.0.0.0/8 in dotted decimal, as `URL` normalises any IPv4 spelling. */
const LOOPBACK_V4 = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/

/** Hosts that mean "every interface": they name no origin a browser could be on. */
const UNSPECIFIED_HOSTS: ReadonlySet<string> = new Set(['0.0.0.0', '[::]'])

/** Visible ASCII only: an Origin header with anything else is garbage (and would defeat ASCII lowercasing). */
const VISIBLE_ASCII = /^[\x21-\x7e]+$/

/**
 * Splits a `host:port` address (`daemon.address`) and normalises the host through `URL`.
 * Accepts `[v6]:port`, `v4:port`, `name:port`, and a bare IPv6 host before the last colon (`:::3939`).
 * @returns the host and port, or undefined when the address is not `host:port` with a port 0…65535.
 *          Never throws.
 */
export function parseHostPort (address: string): HostPort | undefined {
  const colon = address.lastIndexOf(':')
  if (colon <= 0) return undefined
  let host = address.slice(0, colon)
  const portText = address.slice(colon + 1)
  if (!/^\d{1,5}$/.test(portText)) return undefined
  const port = Number(portText)
  if (port > 65_535) return undefined
  if (host.includes(':') && !host.startsWith('[')) host = `[${host}]`
  let url: URL
  try {
    url = new URL(`http://${host}/`)
  } catch {
    return undefined
  }
  // Reject anything URL would have read as something other than a bare host (userinfo, path, …).
  if (url.username !== '' || url.password !== '' || url.port !== '' || url.pathname !== '/' || url.search !== '' || url.hash !== '') return undefined
  if (url.hostname === '') return undefined
  return { host: url.hostname, port }
}

/**
 * True for a loopback host as an address (bind host, Host header name): `localhost`, 127.0.0.0/8,
 * `::1` (bracketed or not, any spelling `URL` normalises to `[::1]`). Not the Origin rule: that
 * one is the seed's three names exactly (see the note above {@link LOOPBACK_ORIGIN_HOSTS}). Never throws.
 */
export function isLoopbackHost (host: string): boolean {
  const parsed = parseHostPort(`${host}:0`)
  if (parsed === undefined) return false
  const h = parsed.host
  return h === 'localhost' || h === '[::1]' || LOOPBACK_V4.test(h)
}

/**
 * True when a Host header names a loopback host (see {@link isLoopbackHost}), whatever its port:
 * `localhost:3939`, `127.0.0.1`, `[::1]:3939`. Never throws.
 */
export function isLoopbackHostHeader (hostHeader: string | undefined): boolean {
  const host = hostHeader ?? ''
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0]
  return name !== '' && isLoopbackHost(name)
}

/**
 * True when `address` (`host:port`, e.g. daemon.address) names a loopback host. Never throws.
 */
export function isLoopbackAddress (address: string): boolean {
  const parsed = parseHostPort(address)
  return parsed !== undefined && isLoopbackHost(parsed.host)
}

/** True when a (normalised) host means "all interfaces" (`0.0.0.0`, `[::]`). Never throws. */
export function isUnspecifiedHost (host: string): boolean {
  return UNSPECIFIED_HOSTS.has(host)
}

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
