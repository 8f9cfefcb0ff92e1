/**
 * Host and port, and what counts as loopback: the one definition that the Origin check, the safe-bind
 * rule, the operator endpoints' peer and Host checks, OAuth issuer URLs and Redis addresses share. Pure, no I/O.
 */
import { isIPv4, isIPv6 } from 'node:net'
import { McpxError } from './errors.js'

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
 * - a peer address (the client of a connection, {@link isLoopbackIp}) is loopback when it is an IP
 *   literal in 127.0.0.0/8 or `::1`, and here the IPv4-mapped form counts: it is how a socket bound to
 *   `::` reports a client that connected over 127.0.0.1. Never a name: a peer address is not chosen
 *   by the client, so a spelling that needs resolving (`localhost`, `127.1`) is not one.
 */

/** 127.0.0.0/8 in dotted decimal, as `URL` normalises any IPv4 spelling. */
const LOOPBACK_V4 = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/

/** `::ffff:127.x.y.z` as `URL` writes it (`[::ffff:7f00:1]`): IPv4 loopback on a dual-stack socket. */
const LOOPBACK_V4_MAPPED = /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/

/** Hosts that mean "every interface": they name no origin a browser could be on. */
const UNSPECIFIED_HOSTS: ReadonlySet<string> = new Set(['0.0.0.0', '[::]'])

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
 * one is the seed's three names exactly (lib/http/origin.ts LOOPBACK_ORIGIN_HOSTS). Never throws.
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
 * True when `ip`, the address at the other end of a connection (Node's `socket.remoteAddress`, or
 * with daemon.trustProxy the client a trusted proxy named: Fastify's `request.ip`), is loopback:
 * an IPv4 literal in dotted decimal within 127.0.0.0/8, `::1` in any IPv6 spelling, or an
 * IPv4-mapped 127.0.0.0/8 (`::ffff:127.0.0.1`). Anything else, including undefined, a name, a
 * shorthand IPv4 spelling or an address with a zone id, is not. Never throws.
 */
export function isLoopbackIp (ip: string | undefined): boolean {
  if (ip === undefined) return false
  if (isIPv4(ip)) return LOOPBACK_V4.test(ip)
  if (!isIPv6(ip)) return false
  let host: string
  try {
    host = new URL(`http://[${ip}]/`).hostname
  } catch {
    return false // a zone id (fe80::1%eth0): never loopback
  }
  return host === '[::1]' || LOOPBACK_V4_MAPPED.test(host)
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
 * A Redis node address: {@link parseHostPort} with a port 1…65535, the host unbracketed as ioredis
 * wants it (`::1`, not `[::1]`).
 * @throws McpxError MCPX_ERR_CONFIG when the address is not `host:port`
 */
export function parseNodeAddress (address: string): HostPort {
  const parsed = parseHostPort(address)
  if (parsed === undefined || parsed.port < 1) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: a Redis address must be host:port, got ${JSON.stringify(address)}`)
  return { host: parsed.host.startsWith('[') ? parsed.host.slice(1, -1) : parsed.host, port: parsed.port }
}
