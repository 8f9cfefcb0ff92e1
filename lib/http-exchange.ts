/**
 * One POST /mcp exchange, in either era, written against a small transport-neutral
 * {@link PostChannel} so that lib/ knows nothing of Fastify (routes/mcp/post.ts adapts).
 *
 * A reply starts "pending". If something must be sent before the response is ready (a progress
 * notification, a question for the client) and the client accepts `text/event-stream`, it
 * becomes an SSE stream; otherwise the response goes as one JSON body. Seed sections:
 * "Streamable HTTP, 2026-07-28" and "Streamable HTTP, 2025-03-26 … 2025-11-25".
 */
import { randomBytes } from 'node:crypto'
import {
  classify, encodeMessage, errorResponse, idKey, isObject,
  INVALID_REQUEST, INTERNAL_ERROR,
  type Classified, type JsonRpcErrorObject, type JsonRpcMessage, type JsonRpcNotification, type JsonRpcRequest, type JsonRpcResponse
} from './jsonrpc.js'
import { modernStatus, legacyStatus, refusal, type Refusal } from './status.js'
import { ASSUMED_LEGACY_REVISION, batchAllowed, type Revision } from './revisions.js'
import { META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, type InboundBatch, type InboundMessage } from './inbound.js'
import type { NotificationHub } from './notify-hub.js'
import { readListenFilter, acknowledgement, tagWithSubscription } from './listen.js'
import type { Dispatcher } from './dispatch.js'
import type { DispatchContext } from './dispatch-types.js'
import type { Session, SessionStore, PendingQuestion } from './sessions.js'
import type { SseStream } from './sse.js'
import type { JsonObject, UpstreamQuestion } from './upstreams/types.js'
import type { Logger } from './log.js'

/** What a route supplies to write one reply. */
export interface PostChannel {
  /** True when the client's Accept admits text/event-stream. */
  readonly acceptsSse: boolean
  /** True when the client's Accept admits application/json (absent: true). */
  readonly acceptsJson?: boolean
  /** Sends a whole reply. `body` undefined sends no body (202). */
  json (status: number, body: string | undefined, headers?: Record<string, string>): void
  /** Starts an SSE reply (status 200) and returns the stream. */
  sse (headers?: Record<string, string>): SseStream
  /** Registers a callback for the client going away before the reply is finished. */
  onDisconnect (fn: () => void): void
  /** The caller's opaque identity (lib/principal.ts Principal.key, made once by mcpx-auth), if any. */
  readonly principal?: string
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
  /** The long-lived streams' cap (transport.maxGetStreams), shared with GET /mcp. */
  streamSlots: StreamSlots
}

/**
 * Counts long-lived SSE streams open at once (legacy GET notification streams and 2026-07-28
 * subscriptions/listen streams) against transport.maxGetStreams, "most streams open at once".
 * One instance per /mcp scope, shared by GET and POST. Never throws.
 */
export class StreamSlots {
  private open = 0
  /** @param max the cap (transport.maxGetStreams), streams */
  constructor (readonly max: number) {}
  /** True when no slot is free. */
  get full (): boolean { return this.open >= this.max }
  /** Takes a slot; false (nothing taken) when none is free. */
  claim (): boolean {
    if (this.open >= this.max) return false
    this.open++
    return true
  }
  /** Gives back a slot taken by {@link claim}. */
  release (): void { if (this.open > 0) this.open-- }
}

/** The id-less 202 acknowledgement has no body (DIGEST §3d rule 6). */
const ACCEPTED = 202

/**
 * A reply that may turn from pending into an SSE stream. Sends nothing once finished or
 * withheld.
 */
class Responder {
  private stream: SseStream | undefined
  private done = false

  constructor (private readonly channel: PostChannel, private readonly headers: Record<string, string> = {}) {}

  get streaming (): boolean { return this.stream !== undefined }
  get finished (): boolean { return this.done }

  /** Sends a message ahead of the response; switches to SSE when allowed. Returns false when it could not be sent. */
  event (message: JsonRpcMessage): boolean {
    if (this.done) return false
    if (this.stream === undefined) {
      if (!this.channel.acceptsSse) return false
      this.stream = this.channel.sse(this.headers)
    }
    return this.stream.send(message)
  }

  /** Finishes with a response (or a batch of them, or nothing: 202). */
  finish (status: number, message: JsonRpcMessage | JsonRpcMessage[] | undefined): void {
    if (this.done) return
    this.done = true
    if (this.stream !== undefined) {
      if (Array.isArray(message)) for (const m of message) this.stream.send(m)
      else if (message !== undefined) this.stream.send(message)
      this.stream.close()
      return
    }
    this.channel.json(message === undefined ? ACCEPTED : status, message === undefined ? undefined : encodeMessage(message), this.headers)
  }

  /** Ends the reply as an event stream with nothing on it (a withheld, cancelled reply: seed › legacy › Cancellation). */
  withhold (): void {
    if (this.done) return
    this.done = true
    if (this.stream === undefined) this.stream = this.channel.sse(this.headers)
    this.stream.close()
  }

  /** Switches a pending reply to SSE now (no-op once streaming or finished). */
  startStream (): void {
    if (this.done || this.stream !== undefined) return
    this.stream = this.channel.sse(this.headers)
  }

  /** Marks the reply finished without writing (the client is gone). */
  abandon (): void { this.done = true }

}

function reply (channel: PostChannel, status: number, message: JsonRpcMessage, headers?: Record<string, string>): void {
  channel.json(status, encodeMessage(message), headers)
}

/** Sends a lib/status refusal as it is. */
function sendRefusal (channel: PostChannel, refused: Refusal): void {
  channel.json(refused.status, refused.body, { ...refused.headers })
}

/** An id-less -32600 refusal, its status from the era's status function (lib/status). */
function refuse (channel: PostChannel, statusOf: (error: JsonRpcErrorObject) => number, message: string): void {
  const refused = errorResponse(undefined, INVALID_REQUEST, message)
  reply(channel, statusOf(refused.error), refused)
}

/* ------------------------------------------------------------------ modern */

/**
 * Serves one modern POST whose headers already passed the modern header checks.
 * @param inbound the body as lib/inbound classified it (never a batch: the modern-headers plugin refused those)
 * Never throws.
 */
export async function serveModernPost (deps: ExchangeDeps, inbound: InboundMessage, channel: PostChannel): Promise<void> {
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
  if (request.method === 'subscriptions/listen') return await serveListen(deps, request, channel)
  const controller = new AbortController()
  // Seed › Closing the stream is cancellation: the request runs under the HTTP request's lifetime.
  channel.onDisconnect(() => controller.abort())
  const responder = new Responder(channel)
  const meta = inbound.meta ?? {}
  const ctx: DispatchContext = {
    era: 'modern',
    revision: String(meta[META_PROTOCOL_VERSION]),
    clientCapabilities: isObject(meta[META_CLIENT_CAPABILITIES]) ? meta[META_CLIENT_CAPABILITIES] : {},
    signal: controller.signal,
    ...(channel.principal !== undefined ? { principal: channel.principal } : {}),
    notify: (n) => { if (!controller.signal.aborted) responder.event(n) }
  }
  const response = await deps.dispatcher.handle(request, ctx)
  if (controller.signal.aborted) { responder.abandon(); return } // nothing is written after a cancel
  const status = modernStatus('error' in response ? response.error : undefined)
  // Seed › Responses are JSON or SSE as Accept allows: a client that accepts only
  // text/event-stream gets its 200 as an event stream. A 400/404 stays JSON: an SSE reply is a
  // 200, and the status must stay a function of the response (modernStatus).
  if (status === 200 && channel.acceptsJson === false && channel.acceptsSse) responder.startStream()
  responder.finish(status, response)
}

async function serveListen (deps: ExchangeDeps, request: JsonRpcRequest, channel: PostChannel): Promise<void> {
  const rejected = deps.dispatcher.checkModernEnvelope(request)
  if (rejected !== undefined) return reply(channel, modernStatus(rejected.error), rejected)
  const filter = readListenFilter(request.params)
  if (!filter.ok) {
    const error = errorResponse(request.id, -32_602, filter.message)
    return reply(channel, modernStatus(error.error), error)
  }
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
    const stream = channel.sse()
    const subscribed: string[] = []
    for (const uri of filter.uris) {
      try {
        await deps.dispatcher.registry.subscribe(uri)
        subscribed.push(uri)
      } catch (err) {
        deps.logger.debug({ err, uri }, 'listen: resource subscription refused')
      }
    }
    stream.send(acknowledgement(request.id, filter.ack))
    const remove = deps.hub.add({ lists: filter.lists, uris: filter.uris, send: (n) => { stream.send(tagWithSubscription(n, request.id)) } })
    await stream.closed
    remove()
    // Closing the stream releases upstream subscriptions that no one else needs (the registry refcounts).
    for (const uri of subscribed) await deps.dispatcher.registry.unsubscribe(uri).catch(() => {})
  } finally {
    deps.streamSlots.release()
  }
}

/* ------------------------------------------------------------------ legacy */

/** Where a legacy POST belongs: its session (found by the legacy-sessions plugin) or none. */
export interface LegacyPostContext {
  session: Session | undefined
  /** MCP-Protocol-Version when present (already checked to be a legacy revision), else undefined. */
  headerRevision: Revision | undefined
}

/** Questions asked during sessionless requests, by minted id; answered by sessionless POSTs only. */
const sessionlessQuestions = new Map<string, PendingQuestion>()

/**
 * Serves one legacy POST (a message or a batch). Never throws.
 * The session, when named, was found by the legacy-sessions plugin (404s are answered there).
 */
export async function serveLegacyPost (deps: ExchangeDeps, inbound: InboundMessage | InboundBatch, context: LegacyPostContext, channel: PostChannel): Promise<void> {
  const { session } = context
  // Seed: in a session the negotiated version governs; sessionless, the header or ASSUMED_LEGACY_REVISION.
  const revision = session?.revision ?? context.headerRevision ?? ASSUMED_LEGACY_REVISION
  if (inbound.kind === 'batch') return await serveLegacyBatch(deps, inbound.elements, revision, context, channel)
  const item = inbound.item
  if (item.kind === 'request' && item.message.method === 'initialize') return await serveInitialize(deps, item.message, channel)
  const responder = new Responder(channel)
  const outcome = await handleLegacyItem(deps, item, revision, context, responder, channel)
  if (outcome.kind === 'reply') responder.finish(outcome.status, outcome.message)
  else if (outcome.kind === 'accepted') responder.finish(ACCEPTED, undefined)
  else if (outcome.kind === 'withheld') responder.withhold()
  else responder.abandon()
}

type ItemOutcome =
  | { kind: 'reply', status: number, message: JsonRpcResponse }
  | { kind: 'accepted' }
  | { kind: 'withheld' }
  | { kind: 'gone' }

async function serveInitialize (deps: ExchangeDeps, request: JsonRpcRequest, channel: PostChannel): Promise<void> {
  const controller = new AbortController()
  const response = await deps.dispatcher.handle(request, { era: 'legacy', revision: ASSUMED_LEGACY_REVISION, clientCapabilities: {}, signal: controller.signal })
  if ('error' in response) return reply(channel, legacyStatus(response.error), response)
  const capabilities = isObject(request.params?.capabilities) ? request.params.capabilities : {}
  const minted = await deps.sessions.mint(String(response.result.protocolVersion), capabilities, channel.principal)
  if (minted.kind === 'full') return sendRefusal(channel, refusal('tooManySessions', request.id))
  if (minted.kind === 'unavailable') return sendRefusal(channel, refusal('storeUnavailable', request.id))
  const session = minted.session
  deps.logger.debug({ session: session.id, revision: session.revision }, 'session minted')
  reply(channel, 200, response, { 'mcp-session-id': session.id })
}

async function handleLegacyItem (deps: ExchangeDeps, item: Classified, revision: Revision, context: LegacyPostContext, responder: Responder, channel: PostChannel): Promise<ItemOutcome> {
  const { session } = context
  switch (item.kind) {
    case 'invalid': {
      const message = errorResponse(item.id, item.error.code, item.error.message)
      return { kind: 'reply', status: legacyStatus(item.error), message }
    }
    case 'notification':
      handleLegacyNotification(deps, item.message, session)
      return { kind: 'accepted' }
    case 'response':
      return await deliverResponse(deps, item.message, session)
    case 'request':
      break
  }
  const request = item.message
  if (request.method === 'initialize') {
    // 2025-03-26 lifecycle: initialize MUST NOT be batched; it mints nothing here.
    // Only ever a batch element (a lone initialize is served above): the batch's own status applies.
    const message = errorResponse(request.id, INVALID_REQUEST, 'Invalid Request: initialize must not be part of a JSON-RPC batch')
    return { kind: 'reply', status: legacyStatus(message.error), message }
  }
  const controller = new AbortController()
  const key = idKey(request.id)
  let cancelled = false
  if (session !== undefined) {
    if (session.inflight.size >= deps.maxRequestsPerSession) {
      const refused = refusal('sessionBusy', request.id)
      return { kind: 'reply', status: refused.status, message: refused.message }
    }
    // Seed: in a session a dropped connection is not a cancellation; notifications/cancelled is.
    session.inflight.set(key, controller)
    controller.signal.addEventListener('abort', () => { cancelled = true }, { once: true })
  } else {
    // Without a session no cancellation could ever reach the request, so the disconnect is the signal.
    channel.onDisconnect(() => controller.abort())
  }
  const ctx: DispatchContext = {
    era: 'legacy',
    revision,
    clientCapabilities: session?.clientCapabilities ?? {},
    signal: controller.signal,
    notify: (n) => { if (!controller.signal.aborted) responder.event(n) },
    ask: async (question, signal) => await askClient(deps, session, responder, question, signal),
    subscriptions: session === undefined ? undefined : deps.sessions.subscriptionsOf(session)
  }
  try {
    const response = await deps.dispatcher.handle(request, ctx)
    if (cancelled) return { kind: 'withheld' }
    if (controller.signal.aborted) return { kind: 'gone' }
    return { kind: 'reply', status: legacyStatus('error' in response ? response.error : undefined), message: response }
  } finally {
    if (session?.inflight.get(key) === controller) session.inflight.delete(key)
  }
}

function handleLegacyNotification (deps: ExchangeDeps, notification: JsonRpcNotification, session: Session | undefined): void {
  if (notification.method === 'notifications/cancelled' && session !== undefined) {
    const requestId = notification.params?.requestId
    if (typeof requestId === 'string' || typeof requestId === 'number') {
      // Only this session's own requests can be cancelled: isolation by construction (the store
      // looks the key up among this session's requests only, on whichever replica runs them).
      deps.sessions.cancel(session, idKey(requestId))
    }
  }
  deps.logger.debug({ method: notification.method }, 'notification accepted')
}

async function deliverResponse (deps: ExchangeDeps, response: JsonRpcResponse, session: Session | undefined): Promise<ItemOutcome> {
  const questions = session?.questions ?? sessionlessQuestions
  const id = response.id
  const pending = typeof id === 'string' ? questions.get(id) : undefined
  if (pending === undefined || typeof id !== 'string') {
    // A question asked by a request running on another replica (Redis store) is forwarded there.
    if (session !== undefined && typeof id === 'string' && await deps.sessions.forwardAnswer(session, response)) return { kind: 'accepted' }
    // Seed: a response nothing is waiting for is 400.
    const message = errorResponse(undefined, INVALID_REQUEST, 'Invalid Request: no question is waiting for this response')
    return { kind: 'reply', status: legacyStatus(message.error), message }
  }
  questions.delete(id)
  if ('error' in response) pending.reject(Object.assign(new Error(response.error.message), { code: response.error.code, data: response.error.data }))
  else pending.resolve(isObject(response.result) ? response.result : {})
  return { kind: 'accepted' }
}

/**
 * Asks the client a question for an upstream: on the request's own SSE stream, else on the
 * session's GET stream; under an id mcpx mints (128 random bits, so no other client can answer it).
 */
async function askClient (deps: ExchangeDeps, session: Session | undefined, responder: Responder, question: UpstreamQuestion, signal: AbortSignal): Promise<JsonObject> {
  const questions = session?.questions ?? sessionlessQuestions
  const id = 'mcpx-q-' + randomBytes(12).toString('base64url')
  const message: JsonRpcRequest = { jsonrpc: '2.0', id, method: question.method, ...(question.params !== undefined ? { params: question.params } : {}) }
  // The Redis store records where the answer must go before the client can see the question.
  if (session !== undefined && !await deps.sessions.questionAsked(session, id)) {
    throw Object.assign(new Error('the session store cannot be reached to record the question'), { code: -32_603 })
  }
  return await new Promise<JsonObject>((resolve, reject) => {
    const cleanup = (): void => {
      questions.delete(id)
      signal.removeEventListener('abort', onAbort)
      if (session !== undefined) deps.sessions.questionSettled(session, id)
    }
    const onAbort = (): void => { cleanup(); reject(Object.assign(new Error('question cancelled'), { code: -32_800 })) }
    const noStream = (): void => {
      cleanup()
      reject(Object.assign(new Error('no stream to ask the client on: accept text/event-stream or open the GET stream'), { code: -32_603 }))
    }
    questions.set(id, {
      resolve: (r) => { cleanup(); resolve(r) },
      reject: (e) => { cleanup(); reject(e) }
    })
    signal.addEventListener('abort', onAbort, { once: true })
    if (responder.event(message)) return
    if (session === undefined) { noStream(); return }
    // Else on the session's GET stream, which another replica may hold (Redis store).
    deps.sessions.sendToStream(session, message).then(sent => { if (!sent && questions.has(id)) noStream() }, noStream)
  })
}

async function serveLegacyBatch (deps: ExchangeDeps, elements: readonly unknown[], revision: Revision, context: LegacyPostContext, channel: PostChannel): Promise<void> {
  // Seed › Batches: only 2025-03-26 has them.
  if (!batchAllowed(revision)) {
    return refuse(channel, legacyStatus, `Invalid Request: JSON-RPC batches are not allowed in revision ${revision}`)
  }
  if (elements.length === 0) return refuse(channel, legacyStatus, 'Invalid Request: empty batch')
  const responder = new Responder(channel)
  const items = elements.map(classify)
  const outcomes = await Promise.all(items.map(async item => await handleLegacyItem(deps, item, revision, context, responder, channel)))
  const replies = outcomes.flatMap(o => o.kind === 'reply' ? [o.message] : [])
  const hasRequests = items.some(i => i.kind === 'request' || i.kind === 'invalid')
  if (!hasRequests) {
    // A batch of only notifications and responses: 202, unless a stray response made it 400.
    const refused = outcomes.find(o => o.kind === 'reply')
    if (refused !== undefined && refused.kind === 'reply') return responder.finish(refused.status, refused.message)
    return responder.finish(ACCEPTED, undefined)
  }
  if (replies.length === 0) {
    if (outcomes.some(o => o.kind === 'withheld')) return responder.withhold()
    return responder.abandon()
  }
  responder.finish(200, replies)
}
