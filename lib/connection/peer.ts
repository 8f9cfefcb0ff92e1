/**
 * One client connection's MCP semantics, whatever carries it: a stdio connection, a legacy HTTP
 * session, or the sessionless legacy POSTs of one /mcp scope. The transports (lib/stdio/server.ts,
 * lib/http/exchange.ts) own framing and streams; this module owns what a connection means:
 *
 * - requests in flight, by id, and `notifications/cancelled` (seed › legacy › Cancellation;
 *   DIGEST §6b): a cancelled request is aborted and nothing more is written for it;
 * - questions mcpx asks the client for an upstream (legacy server→client requests: mint an id,
 *   ask, deliver the answer), seed › "Questions to the client";
 * - the state a legacy `initialize` settles (revision, client capabilities), and the one builder of
 *   every request's {@link DispatchContext} ({@link contextFor});
 * - the batch rules per revision (seed › Batches: only 2025-03-26 has them; initialize is never batched).
 *
 * All state is per instance (no module-level mutable state), so two mcpx instances in one process
 * never share questions. The session stores hold one {@link Peer} per session; the Redis store only
 * relays answers and cancellations between replicas, onto the Peer of the replica that holds them.
 *
 * {@link MessageSink} is the one interface through which anything reaches a client: the stdio
 * writer, an SSE stream and a pending HTTP reply implement it. Flow control (high-water
 * marks, progress coalescing) sits behind it, in lib/connection/flow.ts, for both transports.
 */
import { randomBytes } from 'node:crypto'
import { errorResponse, idKey, isObject, RawNumberId, INTERNAL_ERROR, INVALID_REQUEST, type JsonRpcErrorResponse, type JsonRpcMessage, type JsonRpcNotification, type JsonRpcRequest, type JsonRpcResponse, type RequestId, type JsonObject } from '../protocol/jsonrpc.js'
import { FIRST_MODERN_REVISION, OLDEST_REVISION, batchAllowed, type Era, type Revision } from '../protocol/revisions.js'
import { hasModernMeta, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION } from '../protocol/inbound.js'
import type { DispatchContext, SubscriptionSet } from '../dispatch/context.js'
import type { UpstreamQuestion } from '../upstreams/contract.js'
import { Cancellation, type CancelSignal } from '../base/cancel.js'
import type { InstanceHome } from '../upstreams/isolation.js'
import type { TraceIn } from '../telemetry/trace.js'
import type { Visibility } from '../policy/visibility.js'
import { InFlightTable } from '../base/in-flight-table.js'

/**
 * Where outgoing messages to one client are written, in order: the stdio writer, an SSE stream, a
 * pending HTTP reply. Behind it, every stream sink writes through lib/connection/flow.ts OutboundFlow (issue
 * #20): backpressure, progress coalesced and log lines dropped past transport.streamBufferBytes,
 * the stream ended past transport.streamBufferMaxBytes; a response is never dropped.
 */
export interface MessageSink {
  /**
   * Hands one frame (a message, or a batch of them) to the transport.
   * @returns true when it was accepted for writing; false when the sink is closed or cannot carry
   *          it (a pending HTTP reply whose client does not accept SSE). Never throws.
   */
  send: (message: JsonRpcMessage | JsonRpcMessage[]) => boolean
}

/**
 * A long-lived outgoing stream that outlives the request that opened it (a legacy session's GET
 * stream, DIGEST §3d): what a session store needs of it. lib/http/sse.ts SseStream implements it.
 */
export interface OpenStream extends MessageSink {
  /** True once it is closing or closed: nothing more can be sent. */
  readonly isClosed: boolean
  /** Resolves once the stream has ended, however it ended. */
  readonly closed: Promise<void>
  /** Ends the stream (idempotent). */
  close: () => void
}

/** What a legacy `initialize` settled for a connection (2024-11-05/basic/lifecycle.mdx). */
export interface LegacyState {
  /** The negotiated revision. */
  readonly revision: Revision
  /** The capabilities the client declared in `initialize` params. */
  readonly clientCapabilities: JsonObject
}

/** A question mcpx asked the client, waiting for the client's response. */
export interface PendingQuestion {
  resolve: (result: JsonObject) => void
  reject: (error: QuestionFailed) => void
}

/**
 * A question that got no result: the client answered with an error (its code, message and data),
 * or the question was cancelled, could not be sent, or its connection ended. `code` is a JSON-RPC
 * error code; the upstream that asked gets it back as its request's error.
 */
export class QuestionFailed extends Error {
  constructor (readonly code: number, message: string, readonly data?: unknown) {
    super(message)
    this.name = 'QuestionFailed'
  }
}

/** -32800, the code a cancelled question is failed with (the SDK's RequestCancelled). */
const QUESTION_CANCELLED = -32_800

/** One request in flight on a connection. */
export interface InFlight {
  readonly id: RequestId
  /** Aborted on cancellation: the signal reaches the upstream call. */
  readonly controller: Cancellation
  /** Cancelled (by the client, the connection's end or the drain): nothing more is written for it. */
  cancelled: boolean
  /** Answered: no request-scoped notification after the reply. */
  done: boolean
  /** Set for a stdio `subscriptions/listen`: how to end it (`byServer`: mcpx ends it at shutdown). */
  endListen?: (byServer: boolean) => void
}

/** How a question reaches the client, per transport. */
export interface QuestionRoute {
  /**
   * Called with the minted id before the question is sent; resolving false fails the question
   * (the Redis store records where the answer must go before the client can see the question).
   */
  asking?: (id: string) => Promise<boolean>
  /** Sends the question. false (or a promise of false): there is no way to the client now. */
  send: (question: JsonRpcRequest) => boolean | Promise<boolean>
  /** The question is settled (answered, cancelled, failed). */
  settled?: (id: string) => void
  /** The asker gave up (its signal aborted) before an answer: stdio tells the client with notifications/cancelled. */
  withdrawn?: (id: string) => void
}

/** Options of a {@link Peer}. */
export interface PeerOptions {
  /**
   * How question ids are minted: `sequential` (`mcpx-q-1`, `mcpx-q-2`, … on a private stdio
   * connection), or `random` (`mcpx-q-` + 96 bits from the CSPRNG, base64url: over HTTP no other
   * client can guess and answer one).
   */
  questionIds: 'sequential' | 'random'
  /**
   * A request whose id is already in flight: `refuse` (-32600, stdio), or `replace` (the newer one
   * takes the id for cancellation; a legacy HTTP session, which has always served both).
   */
  duplicateIds: 'refuse' | 'replace'
  /** The connection's legacy state when it is known at creation (an HTTP session: minted by its initialize). */
  legacy?: LegacyState
}

/**
 * One client connection's state: requests in flight, pending questions, legacy initialize state.
 * No method throws, except {@link ask}, which rejects with {@link QuestionFailed}.
 */
export class Peer {
  /** Set by a successful legacy `initialize` (or at creation for an HTTP session). */
  legacy: LegacyState | undefined
  private readonly running = new InFlightTable<InFlight>() // by idKey; not a Map: lib/base/in-flight-table.ts
  private readonly questions = new Map<string, PendingQuestion>()
  private questionSeq = 0
  /** Set once the connection ended: no question is asked after that. */
  private endedWith: string | undefined

  constructor (private readonly options: PeerOptions) {
    this.legacy = options.legacy
  }

  /** Requests in flight (listens included). */
  get inFlight (): number { return this.running.size }

  /** Questions waiting for the client. */
  get pendingQuestions (): number { return this.questions.size }

  /** The requests in flight, for the drain. */
  requests (): InFlight[] { return this.running.values() }

  // ---- requests in flight ---------------------------------------------------------------------

  /** Registers a request as in flight; undefined when its id is already in flight and duplicates are refused. */
  track (id: RequestId): InFlight | undefined {
    const key = idKey(id)
    if (this.options.duplicateIds === 'refuse' && this.running.has(key)) return undefined
    const entry: InFlight = { id, controller: new Cancellation(), cancelled: false, done: false }
    this.running.set(key, entry)
    return entry
  }

  /** Marks a request answered and forgets it (a replaced entry leaves its successor alone). */
  untrack (entry: InFlight): void {
    entry.done = true
    const key = idKey(entry.id)
    if (this.running.get(key) === entry) this.running.delete(key)
  }

  /**
   * `notifications/cancelled {requestId}` from the client: aborts that request, if it is in flight
   * here, and marks it cancelled so nothing more is written for it.
   * @param requestId the notification's `params.requestId`, as parsed
   * @returns true when a request here was cancelled
   */
  cancel (requestId: unknown): boolean {
    const entry = this.find(requestId)
    if (entry === undefined) return false
    this.abort(entry, 'cancelled by the client')
    return true
  }

  /** Cancels the request with this idKey (a cancellation relayed from another replica). */
  cancelKey (key: string): void {
    const entry = this.running.get(key)
    if (entry !== undefined) this.abort(entry, 'cancelled by the client')
  }

  /** Ends every request in flight as cancelled (the connection or session ended, or the drain gave up). */
  cancelAll (reason: string): void {
    for (const entry of this.running.values()) this.abort(entry, reason) // values() is a snapshot
  }

  private abort (entry: InFlight, reason: string): void {
    entry.cancelled = true
    entry.controller.abort(new Error(reason))
  }

  /** The in-flight request a cancellation names: a string, a finite number, or a number kept as raw text (lib/protocol/jsonrpc.ts parseBody). */
  private find (requestId: unknown): InFlight | undefined {
    if (requestId instanceof RawNumberId) return this.running.get(idKey(requestId))
    if (typeof requestId !== 'string' && !(typeof requestId === 'number' && Number.isFinite(requestId))) return undefined
    // A number that is not a safe integer here was rounded after parsing (parseBody keeps the raw
    // text of a parsed one): it names a request only when exactly one id in flight rounds to it.
    if (typeof requestId === 'number' && !Number.isSafeInteger(requestId)) {
      const candidates = this.running.values().filter(candidate => candidate.id instanceof RawNumberId ? Number(candidate.id.raw) === requestId : candidate.id === requestId)
      return candidates.length === 1 ? candidates[0] : undefined
    }
    return this.running.get(idKey(requestId))
  }

  // ---- questions to the client ----------------------------------------------------------------

  /** Mints a question id (see {@link PeerOptions.questionIds}). */
  private mintQuestionId (): string {
    return this.options.questionIds === 'sequential'
      ? `mcpx-q-${++this.questionSeq}`
      : 'mcpx-q-' + randomBytes(12).toString('base64url')
  }

  /**
   * Asks the client a question for an upstream (a legacy server→client request) under an id mcpx
   * mints, and waits for its response.
   * @param signal the asking request's signal: aborting it withdraws the question
   * @param route how the question reaches the client on this transport
   * @returns the client's result
   * @throws QuestionFailed when the client answered with an error (its code), the question was
   *         cancelled (-32800), could not be sent or the connection ended (-32603)
   */
  async ask (question: UpstreamQuestion, signal: CancelSignal, route: QuestionRoute): Promise<JsonObject> {
    if (this.endedWith !== undefined) throw new QuestionFailed(INTERNAL_ERROR, this.endedWith)
    if (signal.aborted) throw new QuestionFailed(QUESTION_CANCELLED, 'question cancelled')
    const id = this.mintQuestionId()
    if (route.asking !== undefined && !await route.asking(id)) {
      throw new QuestionFailed(INTERNAL_ERROR, 'the session store cannot be reached to record the question')
    }
    const message: JsonRpcRequest = question.params === undefined
      ? { jsonrpc: '2.0', id, method: question.method }
      : { jsonrpc: '2.0', id, method: question.method, params: question.params }
    return await new Promise<JsonObject>((resolve, reject) => {
      const settle = (): void => {
        this.questions.delete(id)
        signal.removeEventListener('abort', onAbort)
        route.settled?.(id)
      }
      const onAbort = (): void => {
        if (this.questions.get(id) !== pending) return
        settle()
        route.withdrawn?.(id)
        reject(new QuestionFailed(QUESTION_CANCELLED, 'question cancelled'))
      }
      const pending: PendingQuestion = {
        resolve: (result) => { settle(); resolve(result) },
        reject: (error) => { settle(); reject(error) }
      }
      const noWay = (): void => {
        if (this.questions.get(id) !== pending) return
        pending.reject(new QuestionFailed(INTERNAL_ERROR, 'no stream to ask the client on: accept text/event-stream or open the GET stream'))
      }
      this.questions.set(id, pending)
      signal.addEventListener('abort', onAbort, { once: true })
      const sent = route.send(message)
      if (sent === true) return
      if (sent === false) { noWay(); return }
      sent.then(ok => { if (!ok) noWay() }, noWay)
    })
  }

  /**
   * A response from the client: the answer to one of this connection's questions.
   * @returns false when no question here waits for it (the caller decides: ignore, relay, 400)
   */
  answer (response: JsonRpcResponse): boolean {
    const id = response.id
    const pending = typeof id === 'string' ? this.questions.get(id) : undefined
    if (pending === undefined) return false
    if ('error' in response) pending.reject(new QuestionFailed(response.error.code, response.error.message, response.error.data))
    else pending.resolve(isObject(response.result) ? response.result : {})
    return true
  }

  /** True when a question with this id waits here. */
  asks (id: string): boolean { return this.questions.has(id) }

  /**
   * The connection ended: every pending question fails (-32603 with `reason`), and no new one is
   * asked. Requests in flight are left to the caller ({@link cancelAll}), which may drain them first.
   */
  end (reason: string): void {
    this.endedWith ??= reason
    for (const question of [...this.questions.values()]) question.reject(new QuestionFailed(INTERNAL_ERROR, reason))
    this.questions.clear()
  }
}

/**
 * What a successful legacy `initialize` settles: the negotiated revision (the result's
 * protocolVersion) and the client's declared capabilities. Undefined for an error response.
 */
export function initializedState (request: JsonRpcRequest, response: JsonRpcResponse): LegacyState | undefined {
  if (!('result' in response)) return undefined
  const capabilities = request.params?.capabilities
  const revision = response.result.protocolVersion
  return {
    revision: typeof revision === 'string' ? revision : OLDEST_REVISION,
    clientCapabilities: isObject(capabilities) ? capabilities : {}
  }
}

// ---- the dispatch context ------------------------------------------------------------------------

/**
 * Who sends a request and the connection it belongs to: the fields of its {@link DispatchContext}
 * beside the message's own (era, `_meta`), its signal and its `notify`. A PostChannel is one (the
 * caller's part: lib/http/exchange.ts); a legacy HTTP request adds its session's part; the stdio
 * connection keeps one for all its requests. Each field is copied into the context when it is set.
 */
export interface ContextSource {
  /** DispatchContext.principal: the caller's opaque key (Principal.key), or the binding key without auth. */
  readonly principal?: string | undefined
  /** DispatchContext.caller: the caller's Principal. */
  readonly caller?: unknown
  /** DispatchContext.endpoint: the curated endpoint's name; undefined for the whole catalogue. */
  readonly endpoint?: string | undefined
  /** DispatchContext.traceIn: only when tracing is on. */
  readonly traceIn?: TraceIn | undefined
  /** DispatchContext.view: the caller's view, when the face already worked it out for this request. */
  readonly view?: Visibility | undefined
  /** DispatchContext.sessionId: the legacy HTTP session, or STDIO_SESSION. */
  readonly sessionId?: string | undefined
  /** DispatchContext.instanceHome: where a Redis-stored session's isolated instances live. */
  readonly instanceHome?: InstanceHome | undefined
  /** DispatchContext.subscriptions; legacy requests only (resources/subscribe exists only there). */
  readonly subscriptions?: SubscriptionSet | undefined
  /** DispatchContext.ask; legacy requests only (a modern client never gets server→client requests, DIGEST §6b: the MRTR bridge asks instead). */
  readonly ask?: DispatchContext['ask']
}

/**
 * The context one request is served in: the one builder of every face's DispatchContext (HTTP
 * modern and legacy, stdio). A modern request is stateless: its revision and client capabilities
 * come from its `_meta`, as classified (DIGEST §6a; a missing or malformed `_meta` is left to the
 * dispatcher's envelope check, -32602). A legacy one is served in its connection's initialize
 * state, or `fallback` and no capabilities before any.
 * Built field by field in one order, never with conditional spreads: no throwaway objects per
 * request, and the same own keys for the same kind of request (an optional field only when set).
 * @param era the era it is served in
 * @param meta its `params._meta` as classified (null: none); undefined when the face did not classify it (DispatchContext.meta)
 * @param legacy the connection's legacy state (a Peer's `legacy`); ignored for a modern request
 * @param fallback the legacy revision before any initialize (assumed: 2025-03-26 sessionless over HTTP, 2024-11-05 on stdio)
 * @param signal aborted when the request is cancelled
 * @param notify its request-scoped notifications ({@link scopedNotify}); undefined: nowhere to send them
 * @param source who sends it, and its connection ({@link ContextSource})
 * @returns a new context. Never throws.
 */
export function contextFor (era: Era, meta: Readonly<Record<string, unknown>> | null | undefined, legacy: LegacyState | undefined, fallback: Revision, signal: CancelSignal, notify: DispatchContext['notify'], source: ContextSource): DispatchContext {
  let revision: Revision
  let clientCapabilities: JsonObject
  if (era === 'modern') {
    const version = meta?.[META_PROTOCOL_VERSION]
    const capabilities = meta?.[META_CLIENT_CAPABILITIES]
    revision = typeof version === 'string' ? version : FIRST_MODERN_REVISION
    clientCapabilities = isObject(capabilities) ? capabilities : {}
  } else {
    revision = legacy?.revision ?? fallback
    clientCapabilities = legacy?.clientCapabilities ?? {}
  }
  const ctx: DispatchContext = { era, revision, clientCapabilities, signal, meta }
  if (notify !== undefined) ctx.notify = notify
  if (era === 'legacy') {
    if (source.ask !== undefined) ctx.ask = source.ask
    if (source.subscriptions !== undefined) ctx.subscriptions = source.subscriptions
  }
  if (source.principal !== undefined) ctx.principal = source.principal
  if (source.caller !== undefined) ctx.caller = source.caller
  if (source.sessionId !== undefined) ctx.sessionId = source.sessionId
  if (source.instanceHome !== undefined) ctx.instanceHome = source.instanceHome
  if (source.endpoint !== undefined) ctx.endpoint = source.endpoint
  if (source.traceIn !== undefined) ctx.traceIn = source.traceIn
  if (source.view !== undefined) ctx.view = source.view
  return ctx
}

// ---- batches ------------------------------------------------------------------------------------

/**
 * Whether a batch may be served at all (seed › Batches; 2025-03-26/basic/index.mdx): not when
 * empty, not when it carries modern `_meta` (modern has no batches), and only under a revision that
 * has batches (2025-03-26: a connection's negotiated one, or the assumed one before initialize).
 * @returns the id-less -32600 refusal, or undefined when the batch is served
 */
export function batchRefusal (elements: readonly unknown[], revision: Revision): JsonRpcErrorResponse | undefined {
  if (elements.length === 0) return errorResponse(undefined, INVALID_REQUEST, 'Invalid Request: empty batch')
  if (elements.some(hasModernMeta)) return errorResponse(undefined, INVALID_REQUEST, 'Invalid Request: batches do not exist in the modern era')
  if (!batchAllowed(revision)) return errorResponse(undefined, INVALID_REQUEST, `Invalid Request: JSON-RPC batches are not allowed in revision ${revision}`)
  return undefined
}

/**
 * The reply to an `initialize` inside a batch (2025-03-26 lifecycle: initialize MUST NOT be
 * batched). It initializes nothing and mints nothing.
 */
export function batchedInitialize (id: RequestId): JsonRpcErrorResponse {
  return errorResponse(id, INVALID_REQUEST, 'Invalid Request: initialize must not be batched')
}

/** The reply to a request whose id is already in flight on the connection. */
export function duplicateId (id: RequestId): JsonRpcErrorResponse {
  return errorResponse(id, INVALID_REQUEST, 'Invalid Request: a request with this id is already in flight')
}

/**
 * A request's `notify` (progress, log lines): written to `sink` until the reply, and never after
 * the request was cancelled or its client went away (DIGEST §6b).
 */
export function scopedNotify (entry: InFlight, sink: MessageSink): (notification: JsonRpcNotification) => void {
  return (notification) => { if (!entry.done && !entry.controller.signal.aborted) sink.send(notification) }
}
