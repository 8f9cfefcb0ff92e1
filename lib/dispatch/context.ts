/**
 * The contract of the method dispatcher (lib/dispatch/dispatcher.ts), shared by the HTTP routes and the
 * stdio server: one core answers every request, whichever transport carried it.
 */
import type { Era, Revision } from '../protocol/revisions.js'
import type { JsonRpcNotification, JsonRpcRequest, JsonRpcResponse, JsonObject } from '../protocol/jsonrpc.js'
import type { InstanceHome } from '../upstreams/isolation.js'
import type { UpstreamQuestion } from '../upstreams/contract.js'
import type { RequestTrace, TraceIn } from '../telemetry/trace.js'
import type { CancelSignal, Canceller } from '../base/cancel.js'
import type { Visibility } from '../policy/visibility.js'

/** Identity mcpx reports as `serverInfo` (legacy `initialize`, modern `_meta` of every result). */
export interface ServerInfo { name: string, version: string }

/** Everything the dispatcher needs to know about where a request came from. */
export interface DispatchContext {
  /** The era the request is served in. */
  era: Era
  /**
   * Legacy: the revision negotiated at `initialize` (or assumed: 2025-03-26 for sessionless
   * HTTP, 2024-11-05 on stdio before initialize). Modern: the request's `_meta` protocolVersion.
   */
  revision: Revision
  /** Legacy: the capabilities the client declared at `initialize`; modern: this request's `_meta` clientCapabilities. */
  clientCapabilities: JsonObject
  /** Aborted when the request is cancelled (notifications/cancelled, or a disconnect where that is the signal). */
  signal: CancelSignal
  /**
   * The canceller behind `signal` (lib/base/cancel Cancellation), when the face made one for this request alone and aborts
   * it only when the request is cancelled (2026-07-28 HTTP: its client went away). The MRTR bridge
   * (lib/dispatch/mrtr.ts) then adopts it for a fresh upstream call instead of making a second one and
   * listening on `signal` (so a request allocates no AbortController). Undefined elsewhere.
   */
  controller?: Canceller
  /**
   * Sends a request-scoped notification to the client (`notifications/progress`,
   * `notifications/message`) on this request's stream. Undefined when there is nowhere to send it.
   */
  notify?: (notification: JsonRpcNotification) => void
  /**
   * Asks the client a question (legacy server→client request) and resolves to its result.
   * Undefined when this transport/era cannot ask (then questions are refused upstream).
   */
  ask?: (question: UpstreamQuestion, signal: CancelSignal) => Promise<JsonObject>
  /**
   * An opaque identity of the authenticated caller (lib/auth/principal.ts Principal.key), when there is one.
   * MRTR requestState is bound to it, so another caller cannot resume a parked call (mrtr.mdx:
   * the state SHOULD bind the principal).
   */
  principal?: string
  /**
   * The caller's Principal itself (lib/auth/principal.ts): passed to upstream calls as their
   * `principal`, and what the policy (lib/policy/rules.ts) decides by. Undefined: anonymous
   * (HTTP without authentication). stdio sets LOCAL_PRINCIPAL.
   */
  caller?: unknown
  /**
   * The client connection the request belongs to, when it is one client's: the legacy HTTP
   * session id, or {@link STDIO_SESSION} on stdio. Undefined for sessionless legacy POSTs and
   * 2026-07-28 HTTP requests. Upstream calls carry it as their `owner` (a question or
   * log line goes to a caller only when it can be tied to one), and isolated upstreams key
   * per-session instances by it.
   */
  sessionId?: string
  /**
   * Where the session's per-session isolated instances live when replicas share sessions (Redis
   * store): handed to upstream calls as their `home`. Undefined: this process.
   */
  instanceHome?: InstanceHome
  /**
   * The endpoint the request came in on: a curated server's name (`<prefix>/mcp/<name>`,
   * `mcpx serve --server <name>`), or undefined for `/mcp` itself (the whole catalogue).
   */
  endpoint?: string
  /**
   * The request's `params._meta` as the face classified it (lib/protocol/inbound InboundMessage.meta):
   * the object, or null when the request has none. Undefined when the face classified nothing (a
   * legacy HTTP batch member, a hand-made context): then the dispatcher reads the request itself
   * (lib/dispatch/envelope.ts requestMeta). The envelope check and the upstream call options read it.
   */
  meta?: Readonly<Record<string, unknown>> | null
  /**
   * The caller's view on its endpoint (Dispatcher.viewOf), when the face already worked it out for this
   * request (2026-07-28 HTTP tools/call: the Mcp-Param-* check looked the tool up in it,
   * plugins/modern-headers). Dispatcher.handle serves the request in it and works one out only when
   * it is undefined, so a request keeps the view it started with even if a reload swaps the policy
   * in between (Dispatcher.setAccess).
   */
  view?: Visibility
  /** Legacy only: resource subscriptions of this connection/session (resources/subscribe adds, unsubscribe removes). */
  subscriptions?: SubscriptionSet
  /**
   * Set by the confirmation gate (lib/dispatch/confirm-gate.ts) on a 2026-07-28 call a human confirmed:
   * the arguments' hash, which the MRTR bridge seals into the call's later states, so a retry can
   * only repeat the confirmed arguments. Undefined otherwise.
   */
  confirmedArguments?: string
  /** Set by the face only when tracing is on (lib/telemetry/trace.ts): transport, HTTP traceparent, session. */
  traceIn?: TraceIn
  /** Set by the dispatcher only when tracing is on: the request's span, parent of its upstream calls. */
  trace?: RequestTrace
}

/**
 * What `resources/subscribe` and `resources/unsubscribe` act on. `has` is true when the
 * dispatcher must not subscribe upstream again for this connection/session here; `delete`
 * resolves true when the dispatcher must release one upstream subscription here. A
 * `Set<string>` satisfies it (stdio, the memory session store); the Redis session store
 * (lib/sessions/redis-store.ts) records the subscription in Redis as well.
 */
export interface SubscriptionSet {
  has: (uri: string) => boolean
  add: (uri: string) => unknown
  delete: (uri: string) => boolean | Promise<boolean>
}

/** {@link DispatchContext.sessionId} of every request on a stdio connection (one client per `mcpx serve`). */
export const STDIO_SESSION = 'stdio'
