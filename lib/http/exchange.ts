/**
 * One POST /mcp exchange, in either era, written against a small transport-neutral
 * {@link PostChannel} so that lib/ knows nothing of Fastify (routes/mcp/post.ts adapts).
 *
 * A reply starts "pending". If something must be sent before the response is ready (a progress
 * notification, a question for the client) and the client accepts `text/event-stream`, it
 * becomes an SSE stream; otherwise the response goes as one JSON body. Seed sections:
 * "Streamable HTTP, 2026-07-28" and "Streamable HTTP, 2025-03-26 … 2025-11-25".
 */
import {
  classify, encodeMessage, errorResponse, INVALID_REQUEST,
  type Classified, type JsonRpcErrorObject, type JsonRpcMessage, type JsonRpcNotification, type JsonRpcRequest, type JsonRpcResponse
} from '../protocol/jsonrpc.js'
import { modernStatus, legacyStatus, markedRefusal, refusal, type Refusal } from '../protocol/http-status.js'
import { ASSUMED_LEGACY_REVISION, FIRST_MODERN_REVISION, type Revision } from '../protocol/revisions.js'
import type { NotificationHub } from '../connection/notify-hub.js'
import type { InboundBatch, InboundMessage } from '../protocol/inbound.js'
import { Listen, checkListen } from '../connection/listen.js'
import {
  Peer, batchRefusal, initializedState, contextFor, scopedNotify,
  type ContextSource, type InFlight, type MessageSink, type QuestionRoute
} from '../connection/peer.js'
import type { Dispatcher } from '../dispatch/dispatcher.js'
import type { Session, SessionStore } from '../sessions/store.js'
import type { SseStream, StreamSlots } from './sse.js'
import type { Logger } from '../telemetry/log.js'
import type { TraceIn } from '../telemetry/trace.js'
import type { Visibility } from '../policy/visibility.js'
import { Cancellation } from '../base/cancel.js'
import { expiresAtOf, type Principal } from '../auth/principal.js'
import { batchedRequestRefusal, serveBounded } from '../connection/batch.js'

/**
 * What a route supplies to write one reply. It is also the request's {@link ContextSource} (who
 * sends it: principal, caller, endpoint, traceIn, view), read by lib/connection/peer.ts contextFor.
 */
export interface PostChannel {
  /** True when the client's Accept admits text/event-stream. */
  readonly acceptsSse: boolean
  /** True when the client's Accept admits application/json (absent: true). */
  readonly acceptsJson?: boolean
  /** Sends a whole reply. `body` undefined sends no body (202). */
  json (status: number, body: string | undefined, headers?: Record<string, string>): void
  /**
   * Starts an SSE reply (status 200) and returns the stream.
   * @param kind `reply` (default) for a POST's reply stream, `listen` for a subscriptions/listen stream (flow metrics)
   */
  sse (headers?: Record<string, string>, kind?: 'reply' | 'listen'): SseStream
  /** Registers a callback for the client going away before the reply is finished. */
  onDisconnect (fn: () => void): void
  /** The caller's opaque identity (lib/auth/principal.ts Principal.key, made once by mcpx-auth), if any. */
  readonly principal?: string
  /** The caller's Principal itself, handed to upstream header providers (token exchange). */
  readonly caller?: unknown
  /** Only when tracing is on (lib/telemetry/trace.ts): the request's traceparent/tracestate headers. */
  readonly traceIn?: TraceIn | undefined
  /** The curated endpoint the request came in on; undefined for `/mcp` itself. */
  readonly endpoint?: string
  /** The caller's view, when the route already worked it out for this request (DispatchContext.view); undefined: the dispatcher does. */
  readonly view?: Visibility
}

/** Shared state of the HTTP face. */
export interface ExchangeDeps {
  dispatcher: Dispatcher
  hub: NotificationHub
  sessions: SessionStore
  logger: Logger
  /** Keep-alive comment interval on SSE replies, ms. */
  keepAliveMs: number
  /** Most requests in flight per legacy session. */
  maxRequestsPerSession: number
  /** Most members of one batch in progress at once (transport.maxBatchInFlight; lib/connection/batch.ts). */
  maxBatchInFlight: number
  /** The scope's requests in flight (transport.maxConcurrentRequests): a batch's members beside its first take their own. */
  requestSlots: RequestSlots
  /** The long-lived streams' cap (transport.maxGetStreams), shared with GET /mcp. */
  streamSlots: StreamSlots
}

/**
 * transport.maxConcurrentRequests, "most requests in flight across the daemon", for one /mcp scope:
 * a POST takes a slot from its head until its response closes (routes/mcp), and each member of a
 * batch in progress beside another takes one more ({@link HttpExchange}), so a batch counts as
 * many requests as it has running, as a session's requests do. Never throws.
 */
export class RequestSlots {
  private claimed = 0
  /** @param max the cap (transport.maxConcurrentRequests), requests */
  constructor (readonly max: number) {}
  /** Requests in flight now. */
  get inFlight (): number { return this.claimed }
  /** Takes a slot; false (nothing taken) when none is free. */
  claim (): boolean {
    if (this.claimed >= this.max) return false
    this.claimed++
    return true
  }

  /** Gives back a slot taken by {@link claim}. */
  release (): void { if (this.claimed > 0) this.claimed-- }
}

/** The source of a context with nothing of the caller's in it (lib/connection/peer.ts contextFor). */
const NO_SOURCE: ContextSource = Object.freeze({})

/** The id-less 202 acknowledgement has no body (DIGEST §3d rule 6). */
const ACCEPTED = 202

/**
 * A reply that may turn from pending into an SSE stream. Sends nothing once finished or
 * withheld.
 */
class Responder implements MessageSink {
  private stream: SseStream | undefined
  private done = false
  /** Made on the first {@link onOverflow} (a batch's members register; a single request does not). */
  private overflowHandlers: Array<() => void> | undefined

  /** @param headers extra headers of the reply; undefined (the common case) allocates nothing */
  constructor (private readonly channel: PostChannel, private readonly headers?: Record<string, string>) {}

  /**
   * Runs `fn` when the reply's SSE stream is ended past transport.streamBufferMaxBytes (lib/connection/flow.ts):
   * the request it carries is cancelled upstream.
   */
  onOverflow (fn: () => void): void { (this.overflowHandlers ??= []).push(fn) }

  /** The session request whose call {@link cancelOnOverflow} cancels if the stream overflows; undefined: none. */
  private overflowEntry: InFlight | undefined

  /**
   * Cancels `entry` upstream (marked cancelled: its reply is withheld) when the reply's SSE stream
   * is ended past transport.streamBufferMaxBytes: {@link onOverflow} with no closure or array
   * made unless the reply becomes a stream.
   */
  cancelOnOverflow (entry: InFlight): void { this.overflowEntry = entry }

  private open (): SseStream {
    const stream = this.channel.sse(this.headers)
    const entry = this.overflowEntry
    if (entry !== undefined) stream.onOverflow(() => { entry.cancelled = true; entry.controller.abort(new Error('reply stream ended past transport.streamBufferMaxBytes')) })
    if (this.overflowHandlers !== undefined) for (const fn of this.overflowHandlers) stream.onOverflow(fn)
    this.stream = stream
    return stream
  }

  get streaming (): boolean { return this.stream !== undefined }
  get finished (): boolean { return this.done }

  /** Sends a message ahead of the response; switches to SSE when allowed. Returns false when it could not be sent. */
  send (message: JsonRpcMessage | JsonRpcMessage[]): boolean {
    if (this.done) return false
    if (this.stream === undefined) {
      if (!this.channel.acceptsSse) return false
      return this.open().send(message)
    }
    return this.stream.send(message)
  }

  /** Finishes with a response (or a batch of them, or nothing: 202). */
  finish (status: number, message: JsonRpcMessage | JsonRpcMessage[] | undefined, headers?: Readonly<Record<string, string>>): void {
    if (this.done) return
    this.done = true
    if (this.stream !== undefined) {
      if (Array.isArray(message)) for (const m of message) this.stream.send(m)
      else if (message !== undefined) this.stream.send(message)
      this.stream.close()
      return
    }
    this.channel.json(message === undefined ? ACCEPTED : status, message === undefined ? undefined : encodeMessage(message), headers === undefined ? this.headers : { ...this.headers, ...headers })
  }

  /** Ends the reply as an event stream with nothing on it (a withheld, cancelled reply: seed › legacy › Cancellation). */
  withhold (): void {
    if (this.done) return
    this.done = true
    const stream = this.stream ?? this.open()
    stream.close()
  }

  /** Switches a pending reply to SSE now (no-op once streaming or finished). */
  startStream (): void {
    if (this.done || this.stream !== undefined) return
    this.open()
  }

  /** Marks the reply finished without writing (the client is gone). */
  abandon (): void { this.done = true }

}

function reply (channel: PostChannel, status: number, message: JsonRpcMessage, headers?: Record<string, string>): void {
  channel.json(status, encodeMessage(message), headers)
}

/** Sends a lib/protocol/http-status refusal as it is. */
function sendRefusal (channel: PostChannel, refused: Refusal): void {
  channel.json(refused.status, refused.body, { ...refused.headers })
}

/** An id-less -32600 refusal, its status from the era's status function (lib/protocol/http-status). */
function refuse (channel: PostChannel, statusOf: (error: JsonRpcErrorObject) => number, message: string): void {
  const refused = errorResponse(undefined, INVALID_REQUEST, message)
  reply(channel, statusOf(refused.error), refused)
}

/* ------------------------------------------------------------------ the exchange */

/** Where a legacy POST belongs: its session (found by the legacy-sessions plugin) or none. */
export interface LegacyPostContext {
  session: Session | undefined
  /** MCP-Protocol-Version when present (already checked to be a legacy revision), else undefined. */
  headerRevision: Revision | undefined
}

type ItemOutcome =
  | { kind: 'reply', status: number, message: JsonRpcResponse, headers?: Record<string, string> }
  | { kind: 'accepted' }
  | { kind: 'withheld' }
  | { kind: 'gone' }

/**
 * The HTTP face of one /mcp scope: serves POSTs in either era on top of lib/connection/peer.ts. A session's
 * {@link Peer} lives in its {@link Session}; the sessionless legacy POSTs of this scope share one
 * Peer of their own (questions asked during a sessionless request are answered by sessionless POSTs).
 */
export class HttpExchange {
  /** Sessionless legacy requests' questions, by minted id: per instance, never shared across mcpx instances. */
  private readonly sessionless = new Peer({ questionIds: 'random', duplicateIds: 'replace' })

  constructor (private readonly deps: ExchangeDeps) {}

  /* ---------------------------------------------------------------- modern */

  /**
   * Serves one modern POST whose headers already passed the modern header checks.
   * @param inbound the body as lib/protocol/inbound classified it (never a batch: the modern-headers plugin refused those)
   * Never throws.
   */
  async serveModern (inbound: InboundMessage, channel: PostChannel): Promise<void> {
    const item = inbound.item
    switch (item.kind) {
      case 'invalid':
        return reply(channel, modernStatus(item.error), errorResponse(item.id, item.error.code, item.error.message))
      case 'response':
        // A modern client never answers (DIGEST §6c rule 4: no responses in a body).
        return refuse(channel, modernStatus, 'Invalid Request: a 2026-07-28 POST carries one request or notification, never a response')
      case 'notification':
        // Seed › Notifications: 202 with no body; an unknown method is ignored (202).
        return channel.json(ACCEPTED, undefined)
      case 'request':
        break
    }
    const request = item.message
    if (request.method === 'subscriptions/listen') return await this.serveListen(request, channel)
    // Modern requests are stateless: untracked, cancelled by closing their stream.
    const entry = untracked(request)
    // Seed › Closing the stream is cancellation: the request runs under the HTTP request's lifetime.
    channel.onDisconnect(() => entry.controller.abort())
    const responder = new Responder(channel)
    // The channel is the source: principal, caller (per-caller upstream credentials), curated endpoint,
    // traceIn, and the view the Mcp-Param-* check worked out (not again).
    const ctx = contextFor('modern', inbound.meta ?? null, undefined, FIRST_MODERN_REVISION, entry.controller.signal, scopedNotify(entry, responder), channel)
    ctx.controller = entry.controller // aborted only by the disconnect above: the MRTR bridge adopts it (no second controller)
    const response = await this.deps.dispatcher.handle(request, ctx)
    if (entry.controller.signal.aborted) { responder.abandon(); return } // nothing is written after a cancel
    const refused = markedRefusal(response)
    if (refused !== undefined && !responder.streaming) return responder.finish(refused.status, refused.message, refused.headers)
    const status = modernStatus('error' in response ? response.error : undefined)
    // Seed › Responses are JSON or SSE as Accept allows: a client that accepts only
    // text/event-stream gets its 200 as an event stream. A 400/404 stays JSON: an SSE reply is a
    // 200, and the status must stay a function of the response (modernStatus).
    if (status === 200 && channel.acceptsJson === false && channel.acceptsSse) responder.startStream()
    responder.finish(status, response)
  }

  private async serveListen (request: JsonRpcRequest, channel: PostChannel): Promise<void> {
    const deps = this.deps
    const checked = checkListen(deps.dispatcher, request)
    if (!checked.ok) return reply(channel, modernStatus(checked.error.error), checked.error)
    if (!channel.acceptsSse) {
      const error = errorResponse(request.id, INVALID_REQUEST, 'Invalid Request: subscriptions/listen needs Accept: text/event-stream')
      return reply(channel, modernStatus(error.error), error)
    }
    // transport.maxGetStreams is "most streams open at once": a listen stream is as long-lived as a
    // GET stream, so it takes a slot from the same cap (503 with Retry-After and the request's id).
    if (!deps.streamSlots.claim()) {
      deps.logger.debug({ maxGetStreams: deps.streamSlots.max }, 'listen: too many open streams')
      return sendRefusal(channel, refusal('tooManyStreams', request.id))
    }
    try {
      const stream = channel.sse(undefined, 'listen')
      deps.streamSlots.track('listen', stream)
      // The stream ends when the token it was opened with expires (docs/authentication.md › Tokens that expire).
      const expiresAt = expiresAtOf(channel.caller as Principal | undefined)
      if (expiresAt !== undefined) stream.closeAt(expiresAt)
      const viewed = { caller: channel.caller, endpoint: channel.endpoint }
      // The owner its calls name (a 2026-07-28 request has no session: its principal; lib/dispatch/call-options.ts instanceOwnerOf).
      const listen = new Listen(deps.dispatcher, deps.hub, deps.logger, request.id, checked.filter, (n) => { stream.send(n) }, () => deps.dispatcher.visibilityOf(viewed), channel.principal === undefined ? {} : { principalKey: channel.principal })
      // Subscribed upstream before the acknowledgement: what the ack promises is delivered from then on.
      await listen.subscribeUpstream()
      stream.send(listen.ack)
      listen.start()
      await stream.closed
      // Closing the stream releases upstream subscriptions that no one else needs (the registry refcounts).
      await listen.end()
    } finally {
      deps.streamSlots.release()
    }
  }

  /* ---------------------------------------------------------------- legacy */

  /**
   * Serves one legacy POST (a message or a batch). Never throws.
   * The session, when named, was found by the legacy-sessions plugin (404s are answered there).
   */
  async serveLegacy (inbound: InboundMessage | InboundBatch, context: LegacyPostContext, channel: PostChannel): Promise<void> {
    const { session } = context
    // Seed: in a session the negotiated version governs; sessionless, the header or 2025-03-26.
    const revision = session?.revision ?? context.headerRevision ?? ASSUMED_LEGACY_REVISION
    if (inbound.kind === 'batch') return await this.serveBatch(inbound.elements, revision, context, channel)
    const item = inbound.item
    const meta = inbound.meta ?? null // classified once (DispatchContext.meta)
    if (item.kind === 'request' && item.message.method === 'initialize') return await this.serveInitialize(item.message, meta, channel)
    const responder = new Responder(channel)
    const outcome = await this.handleItem(item, meta, revision, context, responder, channel)
    if (outcome.kind === 'reply') responder.finish(outcome.status, outcome.message, outcome.headers)
    else if (outcome.kind === 'accepted') responder.finish(ACCEPTED, undefined)
    else if (outcome.kind === 'withheld') responder.withhold()
    else responder.abandon()
  }

  private async serveInitialize (request: JsonRpcRequest, meta: InboundMessage['meta'] | null, channel: PostChannel): Promise<void> {
    const deps = this.deps
    const controller = new Cancellation()
    // Nothing of the caller's: the session it mints is bound to the principal below, not this call.
    const ctx = contextFor('legacy', meta, this.sessionless.legacy, ASSUMED_LEGACY_REVISION, controller.signal, undefined, channel.traceIn === undefined ? NO_SOURCE : { traceIn: channel.traceIn })
    const response = await deps.dispatcher.handle(request, ctx)
    const state = initializedState(request, response)
    if (state === undefined || 'error' in response) return reply(channel, legacyStatus('error' in response ? response.error : undefined), response)
    const minted = await deps.sessions.mint(state.revision, state.clientCapabilities, channel.principal)
    if (minted.kind === 'full') return sendRefusal(channel, refusal('tooManySessions', request.id))
    if (minted.kind === 'unavailable') return sendRefusal(channel, refusal('storeUnavailable', request.id))
    const session = minted.session
    deps.logger.debug({ session: session.id, revision: session.revision }, 'session minted')
    reply(channel, 200, response, { 'mcp-session-id': session.id })
  }

  /**
   * One message of a legacy POST, or one member of its batch (`batch` given: the batch's one
   * disconnect or overflow listener ends it, instead of a listener of its own).
   * @param meta the message's `_meta` as classified (null: none), or undefined for a batch member (classified without it)
   */
  private async handleItem (item: Classified, meta: InboundMessage['meta'] | null, revision: Revision, context: LegacyPostContext, responder: Responder, channel: PostChannel, batch?: BatchRun): Promise<ItemOutcome> {
    const { session } = context
    const deps = this.deps
    switch (item.kind) {
      case 'invalid': {
        const message = errorResponse(item.id, item.error.code, item.error.message)
        return { kind: 'reply', status: legacyStatus(item.error), message }
      }
      case 'notification':
        this.notification(item.message, session)
        return { kind: 'accepted' }
      case 'response':
        return await this.answer(item.message, session)
      case 'request':
        break
    }
    const request = item.message
    // A batch's initialize is answered in place (a lone one mints a session: serveInitialize, so it
    // never gets here); the batch's own status applies (200 with its array).
    const inPlace = batchedRequestRefusal(request)
    if (inPlace !== undefined) return { kind: 'reply', status: legacyStatus(inPlace.error), message: inPlace }
    if (session !== undefined && session.peer.inFlight >= deps.maxRequestsPerSession) {
      const refused = refusal('sessionBusy', request.id)
      return { kind: 'reply', status: refused.status, message: refused.message }
    }
    // transport.maxConcurrentRequests counts requests: a batch's POST holds one slot (routes/mcp),
    // each member in progress beside another takes its own; past the cap the member is refused
    // as a POST would be (503 -32603 with its id; inside the batch's 200).
    if (batch !== undefined && !batch.admit(deps.requestSlots)) {
      const refused = refusal('tooManyConcurrentRequests', request.id)
      return { kind: 'reply', status: refused.status, message: refused.message }
    }
    let entry: InFlight
    if (session !== undefined) {
      // Seed: in a session a dropped connection is not a cancellation; notifications/cancelled is.
      entry = session.peer.track(request.id) ?? untracked(request)
      // But a reply stream ended past its hard limit (lib/connection/flow.ts) can no longer carry the answer: cancel upstream.
      if (batch === undefined) responder.cancelOnOverflow(entry)
    } else {
      // Without a session no cancellation could ever reach the request, so the disconnect is the signal.
      entry = untracked(request)
      if (batch === undefined) channel.onDisconnect(() => entry.controller.abort())
    }
    batch?.add(entry)
    const peer = session?.peer ?? this.sessionless
    const traceIn = channel.traceIn
    const source: ContextSource = {
      // Whose instance of a per-principal isolated upstream its calls use; a session is bound to it.
      principal: channel.principal,
      caller: channel.caller, // per-caller upstream credentials
      endpoint: channel.endpoint, // curated endpoint
      traceIn: traceIn === undefined || session === undefined ? traceIn : { ...traceIn, sessionId: session.id },
      sessionId: session?.id,
      instanceHome: session?.instanceHome, // Redis store: calls forwarded to the replica holding the instances
      subscriptions: session === undefined ? undefined : deps.sessions.subscriptionsOf(session),
      // The question's route is made when a question is asked (most calls ask none); it is stateless.
      ask: async (question, signal) => await peer.ask(question, signal, this.questionRoute(session, responder))
    }
    const ctx = contextFor('legacy', meta, peer.legacy, revision, entry.controller.signal, scopedNotify(entry, responder), source)
    try {
      const response = await deps.dispatcher.handle(request, ctx)
      if (entry.cancelled) return { kind: 'withheld' }
      if (entry.controller.signal.aborted) return { kind: 'gone' }
      const refused = markedRefusal(response)
      if (refused !== undefined) return { kind: 'reply', status: refused.status, message: refused.message, headers: refused.headers }
      return { kind: 'reply', status: legacyStatus('error' in response ? response.error : undefined), message: response }
    } finally {
      session?.peer.untrack(entry)
      batch?.delete(entry, deps.requestSlots)
    }
  }

  /**
   * How a question reaches the client: on the request's own SSE stream, else on the session's GET
   * stream (which another replica may hold: the Redis store records where the answer must go first).
   */
  private questionRoute (session: Session | undefined, responder: Responder): QuestionRoute {
    if (session === undefined) return { send: (question) => responder.send(question) }
    const sessions = this.deps.sessions
    return {
      asking: async (id) => await sessions.questionAsked(session, id),
      send: (question) => responder.send(question) || sessions.sendToStream(session, question),
      settled: (id) => { sessions.questionSettled(session, id) }
    }
  }

  private notification (notification: JsonRpcNotification, session: Session | undefined): void {
    if (notification.method === 'notifications/cancelled' && session !== undefined) {
      // Only this session's own requests can be cancelled: isolation by construction (the store
      // looks among this session's requests only, on whichever replica runs them).
      this.deps.sessions.cancel(session, notification.params?.requestId)
    }
    this.deps.logger.debug({ method: notification.method }, 'notification accepted')
  }

  private async answer (response: JsonRpcResponse, session: Session | undefined): Promise<ItemOutcome> {
    if ((session?.peer ?? this.sessionless).answer(response)) return { kind: 'accepted' }
    // A question asked by a request running on another replica (Redis store) is forwarded there.
    if (session !== undefined && typeof response.id === 'string' && await this.deps.sessions.forwardAnswer(session, response)) return { kind: 'accepted' }
    // Seed: a response nothing is waiting for is 400.
    const message = errorResponse(undefined, INVALID_REQUEST, 'Invalid Request: no question is waiting for this response')
    return { kind: 'reply', status: legacyStatus(message.error), message }
  }

  /**
   * A 2025-03-26 batch: members are served in batch order, at most transport.maxBatchInFlight at
   * once (lib/connection/batch.ts), each classified only when it is taken; the replies keep the
   * members' order and ids. In a session the members also count against
   * transport.maxRequestsPerSession, as the session's other requests do.
   */
  private async serveBatch (elements: readonly unknown[], revision: Revision, context: LegacyPostContext, channel: PostChannel): Promise<void> {
    // Seed › Batches: only 2025-03-26 has them.
    const refused = batchRefusal(elements, revision)
    if (refused !== undefined) return reply(channel, legacyStatus(refused.error), refused)
    const responder = new Responder(channel)
    const batch = new BatchRun()
    // One listener for the whole batch, not one per member: the client going away (sessionless:
    // the only cancellation there is), or the reply stream ended past its hard limit (a session's
    // members are cancelled upstream), ends the members in progress, and none is started after.
    if (context.session === undefined) channel.onDisconnect(() => { batch.end('gone') })
    else responder.onOverflow(() => { batch.end('withheld') })
    let hasRequests = false
    const outcomes = await serveBounded(elements.length, this.deps.maxBatchInFlight, async (index): Promise<ItemOutcome> => {
      const item = classify(elements[index])
      if (item.kind === 'request' || item.kind === 'invalid') hasRequests = true
      if (batch.ended !== undefined) return { kind: batch.ended }
      return await this.handleItem(item, undefined, revision, context, responder, channel, batch)
    })
    if (!hasRequests) {
      // A batch of only notifications and responses: 202, unless a stray response made it 400.
      const refusedItem = outcomes.find(o => o.kind === 'reply')
      if (refusedItem !== undefined && refusedItem.kind === 'reply') return responder.finish(refusedItem.status, refusedItem.message)
      return responder.finish(ACCEPTED, undefined)
    }
    const replies: JsonRpcResponse[] = []
    for (const o of outcomes) if (o.kind === 'reply') replies.push(o.message)
    if (replies.length === 0) {
      if (outcomes.some(o => o.kind === 'withheld')) return responder.withhold()
      return responder.abandon()
    }
    responder.finish(200, replies)
  }
}

/**
 * The members of one batch in progress (at most transport.maxBatchInFlight), so that one
 * listener can end them all; once ended, no further member is started.
 */
class BatchRun {
  /** How the batch ended before all its members were served: `gone` (the client left), `withheld` (its reply stream overflowed). */
  ended: 'gone' | 'withheld' | undefined = undefined
  private readonly running = new Set<InFlight>()

  /** Request slots this batch holds beside its POST's: one per member in progress past the first. */
  private extraSlots = 0

  /**
   * Whether a request member may start now, as to transport.maxConcurrentRequests: with another
   * member in progress it takes a slot of its own (false: none is free). Called just before {@link add}.
   */
  admit (slots: RequestSlots): boolean {
    if (this.running.size === 0) return true // the POST's own slot covers it
    if (!slots.claim()) return false
    this.extraSlots++
    return true
  }

  /** A member started: it is ended with the batch (at once when the batch already ended). */
  add (entry: InFlight): void {
    this.running.add(entry)
    if (this.ended !== undefined) this.stop(entry)
  }

  /** A member finished: the slot it no longer needs goes back. */
  delete (entry: InFlight, slots: RequestSlots): void {
    this.running.delete(entry)
    if (this.extraSlots > Math.max(0, this.running.size - 1)) {
      this.extraSlots--
      slots.release()
    }
  }

  /** Ends the members in progress (cancelled upstream) and stops the batch from starting others. */
  end (how: 'gone' | 'withheld'): void {
    if (this.ended !== undefined) return
    this.ended = how
    for (const entry of this.running) this.stop(entry)
  }

  private stop (entry: InFlight): void {
    if (this.ended === 'withheld') {
      entry.cancelled = true
      entry.controller.abort(new Error('reply stream ended past transport.streamBufferMaxBytes'))
    } else {
      entry.controller.abort()
    }
  }
}

/** An in-flight entry for a request no Peer tracks (modern, sessionless legacy): cancelled only by its disconnect. */
function untracked (request: JsonRpcRequest): InFlight {
  return { id: request.id, controller: new Cancellation(), cancelled: false, done: false }
}
