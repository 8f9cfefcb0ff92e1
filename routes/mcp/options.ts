/**
 * The options of the /mcp routes' scope, in their own module so that index.ts (the scope) and
 * get.ts/post.ts (its routes) both import them without importing each other.
 */
import type { StreamSlots } from '../../lib/http/sse.js'
import type { RequestSlots } from '../../lib/http/exchange.js'
import type { FlowPolicy } from '../../lib/connection/flow.js'

export interface McpRoutesOptions {
  maxBodyBytes: number
  /** Longest wait (ms) reading the rest of a body over maxBodyBytes before its 413 (lib/http/drain.ts). */
  drainTimeoutMs: number
  keepAliveMs: number
  maxRequestsPerSession: number
  /** Most members one batch may hold (transport.maxBatchMembers); a longer one is refused whole, id-less -32600. */
  maxBatchMembers: number
  /** Most members of one batch in progress at once (transport.maxBatchInFlight); the rest wait. */
  maxBatchInFlight: number
  /** Most long-lived streams open at once, GET and subscriptions/listen together (transport.maxGetStreams). */
  maxGetStreams: number
  /** Most requests in flight across this mcpx (transport.maxConcurrentRequests): POSTs, and batch members beside their batch's first; past it, 503 with Retry-After. */
  maxConcurrentRequests: number
  /** Limits of every outgoing SSE stream (transport.streamBufferBytes, streamBufferMaxBytes) and their metrics. */
  flow: FlowPolicy
}

/** What the GET and POST routes get: the scope's options plus the streams' shared cap. */
export interface McpRouteDeps extends McpRoutesOptions {
  streamSlots: StreamSlots
  /** This scope's requests in flight (transport.maxConcurrentRequests): POSTs, and batch members beside each batch's first. */
  requestSlots: RequestSlots
}
