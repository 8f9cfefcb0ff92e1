/**
 * Values derived from a loaded config for the parts that run it: the daemon's Node http.Server
 * timeouts ({@link httpServerTimeouts}) and the MRTR bridge's options ({@link mrtrOptions}).
 */
import { McpxError } from '../base/errors.js'
import { MAX_DURATION_MS } from '../base/duration.js'
import type { McpxConfig } from './types.js'

/** Node http.Server timeouts of the daemon, all ms (0 = off), as {@link httpServerTimeouts} derives them. */
export interface HttpServerTimeouts {
  /** The request head must be complete within this, from the connection's or the message's first moment. */
  headersTimeout: number
  /** The whole request (head and body) must be complete within this; headersTimeout + bodyTimeout. */
  requestTimeout: number
  /** An idle keep-alive connection closes after this. */
  keepAliveTimeout: number
  /** How often Node looks for connections past headersTimeout or requestTimeout. */
  connectionsCheckingInterval: number
}

/** Bounds of the expiry sweep's interval, ms: often enough to close late peers promptly, rarely enough to cost nothing. */
const CHECK_INTERVAL_MIN_MS = 100
const CHECK_INTERVAL_MAX_MS = 1_000

/**
 * The daemon's Node http.Server timeouts from transport.headersTimeout, bodyTimeout and
 * keepAliveTimeout (docs/security.md › Limits). Node 20 counts requestTimeout from the
 * message's first byte (or the connection's start) until the request is fully read, never while
 * the answer is written: so it bounds sending a request (head and body) and leaves long SSE
 * replies, GET streams and long-running calls alone. requestTimeout is headersTimeout + bodyTimeout
 * so that a request that meets both bounds is never cut (Node also requires headersTimeout ≤
 * requestTimeout). A connection past either bound is found by a sweep every quarter of the
 * shortest bound, between 100 ms and 1 s. Never throws.
 */
export function httpServerTimeouts (transport: Pick<McpxConfig['transport'], 'headersTimeout' | 'bodyTimeout' | 'keepAliveTimeout'>): HttpServerTimeouts {
  const { headersTimeout, bodyTimeout, keepAliveTimeout } = transport
  const requestTimeout = bodyTimeout > 0 ? Math.min(MAX_DURATION_MS, headersTimeout + bodyTimeout) : 0
  const bounds = [headersTimeout, requestTimeout].filter(ms => ms > 0)
  const shortest = bounds.length > 0 ? Math.min(...bounds) : CHECK_INTERVAL_MAX_MS * 4
  const connectionsCheckingInterval = Math.min(CHECK_INTERVAL_MAX_MS, Math.max(CHECK_INTERVAL_MIN_MS, Math.floor(shortest / 4)))
  return { headersTimeout, requestTimeout, keepAliveTimeout, connectionsCheckingInterval }
}

/**
 * The Dispatcher's MRTR options from config: the sealing key (base64, at least 32 bytes) and the
 * parked-call and state lifetimes in ms. Throws McpxError MCPX_ERR_CONFIG for a short key.
 */
export function mrtrOptions (config: McpxConfig): { stateKey?: Buffer, parkTimeoutMs: number, stateTtlMs: number } {
  const { stateKey, parkTimeout, stateTtl } = config.mrtr
  let key: Buffer | undefined
  if (stateKey !== undefined) {
    key = Buffer.from(stateKey, stateKey.includes('-') || stateKey.includes('_') ? 'base64url' : 'base64')
    if (key.length < 32) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: mrtr.stateKey must decode to at least 32 bytes (got ${key.length})`)
  }
  return { ...(key !== undefined ? { stateKey: key } : {}), parkTimeoutMs: parkTimeout, stateTtlMs: stateTtl }
}
