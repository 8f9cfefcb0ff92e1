/**
 * The stdio server: MCP over a byte stream, one JSON-RPC message (or batch) per line
 * (seed › "stdio, every revision"; DIGEST §2c, §3c, §6b, §6f, §6g).
 *
 * - Framing: UTF-8, one frame per `\n`-terminated line, in and out. A line that is not JSON is
 *   answered -32700 with no id (the SDK's ReadBuffer skips such lines; our rule is a clear error).
 *   Empty lines are ignored. A line longer than `maxLineBytes` is answered -32600 and discarded.
 * - Concurrency: requests run concurrently, each under its own cancellation (lib/base/cancel Cancellation). Notifications
 *   and `initialize` stay in line: a notification is processed, and `initialize` answered,
 *   before the next line is read. Writes are serialised, one whole frame per `write` call. A
 *   batch line's requests run at most `maxBatchInFlight` at once (lib/connection/batch.ts), the
 *   rest waiting unstarted; its notifications and responses are processed in line.
 * - Cancellation: `notifications/cancelled {requestId}` aborts the request (the signal reaches
 *   the upstream call) and suppresses its reply and any later progress for it.
 * - Notifications are never answered, not even with an error.
 * - Era: before `initialize`, legacy under {@link OLDEST_REVISION}; a request carrying modern
 *   `_meta` is served statelessly as modern at any time; `initialize` selects legacy semantics
 *   for the connection, and from then on list_changed (and resources/updated for subscribed URIs)
 *   is forwarded.
 * - EOF stops reading; in-flight requests get `drainMs` to answer, then are cancelled.
 * - Flow control (lib/connection/flow.ts): stdout writes honour backpressure under the same policy
 *   as every SSE stream (transport.streamBufferBytes / streamBufferMaxBytes), and while stdout is
 *   past its mark no input line is read: the host's writes back up until it reads again. Nor is
 *   one read while `maxInFlight` requests are in flight (a `notifications/cancelled` behind it
 *   waits too, until one of them answers).
 *
 * This module takes its streams as arguments and imports nothing from Fastify. It holds the
 * function that wires one transport, its input (LineReader, a pull loop over lib/protocol/lines)
 * and its connection (StdioConnection); the output is lib/stdio/writer.ts StdioWriter.
 */
import type { Readable, Writable } from 'node:stream'
import type { Logger } from '../telemetry/log.js'
import { parseBody, DEFAULT_MAX_BATCH_MEMBERS, errorResponse, isObject, INTERNAL_ERROR, INVALID_REQUEST, type JsonRpcNotification, type JsonRpcRequest, type JsonRpcResponse } from '../protocol/jsonrpc.js'
import { OLDEST_REVISION, ASSUMED_LEGACY_REVISION } from '../protocol/revisions.js'
import { classifyMessage, META_SUBSCRIPTION_ID, type InboundMessage, type MessageSource } from '../protocol/inbound.js'
import type { Dispatcher } from '../dispatch/dispatcher.js'
import { STDIO_SESSION, type DispatchContext } from '../dispatch/context.js'
import { LOCAL_PRINCIPAL } from '../auth/principal.js'
import type { Visibility } from '../policy/visibility.js'
import { ALL_LISTS, type NotificationHub } from '../connection/notify-hub.js'
import { Listen, checkListen } from '../connection/listen.js'
import { DEFAULT_STREAM_BUFFER_BYTES, DEFAULT_STREAM_BUFFER_MAX_BYTES, type FlowPolicy } from '../connection/flow.js'
import {
  Peer, QuestionFailed, batchRefusal, duplicateId, initializedState, contextFor, scopedNotify,
  type ContextSource, type InFlight, type QuestionRoute
} from '../connection/peer.js'
import { activeTracing, type TraceIn } from '../telemetry/trace.js'
import type { InstanceOwner } from '../upstreams/isolation.js'
import { Cancellation } from '../base/cancel.js'
import { LineSplitter } from '../protocol/lines.js'
import { StdioWriter, within } from './writer.js'
import { DEFAULT_MAX_BATCH_IN_FLIGHT, batchedRequestRefusal, serveBounded } from '../connection/batch.js'

/** Whom every request of a stdio connection serves (lib/dispatch/call-options.ts instanceOwnerOf of its contexts): its isolated instances' events reach it. */
const STDIO_OWNER: InstanceOwner = Object.freeze({ owner: STDIO_SESSION, principalKey: LOCAL_PRINCIPAL.key })

/** How the stdio face classifies what it reads (lib/protocol/inbound classifyMessage): no header. */
const STDIO_SOURCE: MessageSource = Object.freeze({ face: 'stdio' as const })

/** How it classifies a member of a batch line: a legacy request, whatever its method (lib/connection/batch.ts batchedRequestRefusal). */
const STDIO_BATCH_SOURCE: MessageSource = Object.freeze({ face: 'stdio' as const, batchMember: true })

/** Every stdio request's trace origin (tracing on only): no headers; `_meta.traceparent` is read by the dispatcher. */
const STDIO_TRACE_IN: TraceIn = Object.freeze({ transport: 'stdio' as const })

/** Largest stdio line accepted, in bytes, when the options name none (the config's transport.maxBodyBytes default). */
export const DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024

/** Most requests in flight before input waits, when the options name none (the config's transport.stdioMaxInFlight default). */
export const DEFAULT_MAX_IN_FLIGHT = 1024

/** After the drain cancels what is left, how long aborted requests get to settle, in ms. */
const SETTLE_AFTER_ABORT_MS = 1000

/** Options of {@link startStdioServer}. */
export interface StdioServerOptions {
  /** How long in-flight requests may still answer after stdin EOF or {@link StdioServer.close}, in ms (config transport.stdioDrain; default 5000). */
  drainMs?: number
  /** Largest line accepted, in bytes (config transport.maxBodyBytes; default {@link DEFAULT_MAX_LINE_BYTES}). */
  maxLineBytes?: number
  /** Where diagnostics go; in `mcpx serve` this logs to fd 2, never to the MCP output. */
  logger: Logger
  /**
   * Most requests (and batches) in flight before the next input line waits for one to answer
   * (config transport.stdioMaxInFlight; default 1024). Bounds what a host that writes without
   * reading can make mcpx hold; listens are not counted.
   */
  maxInFlight?: number
  /** Most members one batch line may hold (config transport.maxBatchMembers; default {@link DEFAULT_MAX_BATCH_MEMBERS}): a longer one is refused whole, id-less -32600. */
  maxBatchMembers?: number
  /**
   * Most members of one batch line in progress at once (config transport.maxBatchInFlight; default
   * {@link DEFAULT_MAX_BATCH_IN_FLIGHT}): the rest wait, unstarted, in batch order.
   */
  maxBatchInFlight?: number
  /** stdout's high-water mark, bytes (config transport.streamBufferBytes; default 1 MiB): past it stdin is not read. */
  streamBufferBytes?: number
  /** stdout's hard limit, bytes (config transport.streamBufferMaxBytes; default 8 MiB): past it the connection ends. */
  streamBufferMaxBytes?: number
  /** The curated endpoint served (`mcpx serve --server <name>`); undefined: the whole catalogue. */
  endpoint?: string
}

/** A running stdio server. */
export interface StdioServer {
  /**
   * Resolves once input has ended (EOF, input error, {@link close}, or an output error such as
   * EPIPE), in-flight requests have answered or been cancelled after the drain, and every frame
   * written has been flushed (or the output failed). Never rejects.
   */
  readonly closed: Promise<void>
  /** Stops reading now and runs the same drain as EOF (the SIGTERM/SIGINT path). Resolves with {@link closed}. Never rejects. */
  close: () => Promise<void>
  /** Requests (and batches) in flight, listens excluded. For tests and metrics. */
  readonly inFlight: number
}

/**
 * Serves MCP on a pair of byte streams.
 * @param input stdin (bytes or strings; read to EOF)
 * @param output stdout; receives nothing but JSON-RPC frames, one per line
 * @param dispatcher answers every request (its registry is used for listen subscriptions)
 * @param hub delivers list_changed / resources/updated after a legacy initialize and on listens
 * @param options drain (ms), line limit (bytes), logger
 * @returns the handle; the server starts reading immediately. Never throws.
 */
export function startStdioServer (input: Readable, output: Writable, dispatcher: Dispatcher, hub: NotificationHub, options: StdioServerOptions): StdioServer {
  const drainMs = options.drainMs ?? 5000
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES
  let connection: StdioConnection | undefined
  const flow: FlowPolicy = {
    highWaterBytes: options.streamBufferBytes ?? DEFAULT_STREAM_BUFFER_BYTES,
    maxBytes: options.streamBufferMaxBytes ?? DEFAULT_STREAM_BUFFER_MAX_BYTES,
    logger: options.logger
  }
  const writer = new StdioWriter(output, flow, options.logger, () => { void connection?.close(0) })
  connection = new StdioConnection(dispatcher, hub, writer, options.logger, drainMs, options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT, { members: options.maxBatchMembers ?? DEFAULT_MAX_BATCH_MEMBERS, inFlight: options.maxBatchInFlight ?? DEFAULT_MAX_BATCH_IN_FLIGHT }, options.endpoint)
  const conn = connection
  // Input waits while stdout is past its mark, and while the in-flight cap is reached.
  const reader = new LineReader(input, maxLineBytes, options.logger, () => writer.belowMark() ?? conn.belowCap())
  const reading = reader.read(
    async line => { await conn.line(line) },
    () => { writer.send(errorResponse(undefined, INVALID_REQUEST, `Invalid Request: line longer than ${maxLineBytes} bytes`)) }
  )
  conn.onStop(() => { reader.stop() })
  const closed = reading.then(async () => { await conn.close(drainMs) })
  return {
    closed,
    close: async () => { await conn.close(drainMs) },
    get inFlight () { return conn.tasks }
  }
}

// ---- framing: input -------------------------------------------------------------------------------

/** What the pull loop of {@link LineReader} takes from the splitter: a line, or a line gone over the bound. */
const TOO_LONG = Symbol('line too long')

/**
 * Reads a byte stream as lines through lib/protocol/lines LineSplitter (the bound, the discarding of
 * an oversized line up to its newline, a last line without its newline): a trailing `\r` is dropped,
 * blank lines are skipped, an oversized line is reported once, when it crosses the bound.
 */
class LineReader {
  private stopping = false
  private stopReading: () => void = () => {}
  private readonly stopped = new Promise<'stop'>(resolve => { this.stopReading = () => resolve('stop') })

  /**
   * @param ready undefined when the next line may be read; else a promise to wait for first
   *        (stdout past its high-water mark: resolves when it drains)
   */
  constructor (private readonly input: Readable, private readonly maxLineBytes: number, private readonly log: Logger, private readonly ready: () => Promise<void> | undefined) {}

  /** Waits while the output is past its mark (or until stopped). */
  private async backpressure (): Promise<void> {
    let wait = this.ready()
    while (wait !== undefined && !this.stopping) {
      await Promise.race([wait, this.stopped])
      wait = this.ready()
    }
  }

  /** Stops reading now (the pending read is abandoned; the input is released). */
  stop (): void {
    this.stopping = true
    this.stopReading()
  }

  /**
   * Reads to EOF (or {@link stop}, or an input error, treated as EOF), awaiting `onLine` for each
   * line before reading on. Never rejects.
   */
  async read (onLine: (line: Uint8Array) => Promise<void>, onTooLong: () => void): Promise<void> {
    const input = this.input
    const iterator = (input as AsyncIterable<Buffer | string>)[Symbol.asyncIterator]()
    // One chunk's lines, in order; the splitter runs synchronously, the lines are served one by one.
    const queue: Array<Buffer | typeof TOO_LONG> = []
    const splitter = new LineSplitter(this.maxLineBytes, {
      line: (bytes, start, end) => { queue.push(bytes.subarray(start, end)) },
      overflowing: () => { queue.push(TOO_LONG) },
      oversized: () => {} // answered when it crossed the bound
    })
    const serveQueued = async (): Promise<void> => {
      for (let i = 0; i < queue.length && !this.stopping; i++) {
        const line = queue[i]
        if (line === TOO_LONG) {
          this.log.debug({ maxLineBytes: this.maxLineBytes }, 'line too long; discarded')
          onTooLong()
          continue
        }
        const body = line.length > 0 && line[line.length - 1] === 0x0d ? line.subarray(0, line.length - 1) : line // tolerate CRLF
        if (isBlank(body)) continue
        await this.backpressure()
        if (this.stopping) break
        await onLine(body)
      }
      queue.length = 0
    }
    try {
      while (!this.stopping) {
        const next = await Promise.race([iterator.next(), this.stopped])
        if (next === 'stop' || next.done === true) break
        splitter.push(typeof next.value === 'string' ? Buffer.from(next.value, 'utf8') : next.value)
        await serveQueued()
      }
      // A last line without its newline is still a message.
      if (!this.stopping) {
        splitter.end()
        await serveQueued()
      }
    } catch (err) {
      this.log.debug({ err }, 'stdin failed; treating as EOF')
    } finally {
      // Stopped before EOF (signal, EPIPE): release the input, so an open stdin does not keep the process alive.
      if (!input.readableEnded) input.destroy()
      void Promise.resolve(iterator.return?.()).catch(() => {})
    }
  }
}

// ---- the connection -------------------------------------------------------------------------------

/**
 * One stdio connection: what each line means, on top of its {@link Peer} (requests in flight,
 * cancellation, questions, initialize state) and the shared {@link Dispatcher}.
 */
class StdioConnection {
  /** Sequential question ids; a request id may be reused once its reply is out. */
  private readonly peer = new Peer({ questionIds: 'sequential', duplicateIds: 'refuse' })
  /** resources/subscribe URIs of this connection; the same Set is the legacy hub listener's `uris`. */
  private readonly subscriptions = new Set<string>()
  private removeLegacyListener: (() => void) | undefined
  /** Requests and batches whose replies are pending: what the drain waits for. Listens are not in here. */
  private readonly pending = new Set<Promise<void>>()
  private stopping = false
  /** Set when the drain gives up and cancels what is in flight: no batch member starts after it. */
  private cancelled = false
  private closing: Promise<void> | undefined
  private readonly stopHandlers: Array<() => void> = []
  private readonly ask: NonNullable<DispatchContext['ask']>
  /**
   * Who sends every request of this connection (lib/connection/peer.ts ContextSource), made once:
   * stdio has one caller, whoever started the process (LOCAL_PRINCIPAL: the policy knows it as
   * `local`), and one client (STDIO_SESSION); `ask` and `subscriptions` reach legacy requests only.
   */
  private readonly source: ContextSource
  /** {@link source} with the stdio tracing input, for requests served while tracing is on. */
  private readonly tracedSource: ContextSource
  /** Wakes the reader waiting in {@link belowCap}. */
  private capWaiter: (() => void) | undefined

  constructor (
    private readonly dispatcher: Dispatcher,
    private readonly hub: NotificationHub,
    private readonly out: StdioWriter,
    private readonly log: Logger,
    private readonly drainMs: number,
    private readonly maxInFlight: number,
    /** Most members one batch line may hold, and of those, most in progress at once (lib/connection/batch.ts). */
    private readonly batchBounds: { members: number, inFlight: number },
    /** The curated endpoint served, or undefined. */
    private readonly endpoint?: string
  ) {
    const route: QuestionRoute = {
      send: (question) => out.send(question),
      // The client is told when mcpx stops waiting for its answer.
      withdrawn: (id) => { out.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'request cancelled' } }) }
    }
    this.ask = async (question, signal) => {
      // Closing: reading has stopped, so no answer could arrive.
      if (this.stopping) throw new QuestionFailed(INTERNAL_ERROR, 'mcpx is shutting down')
      return await this.peer.ask(question, signal, route)
    }
    this.source = { principal: LOCAL_PRINCIPAL.key, caller: LOCAL_PRINCIPAL, sessionId: STDIO_SESSION, endpoint, subscriptions: this.subscriptions, ask: this.ask }
    this.tracedSource = { ...this.source, traceIn: STDIO_TRACE_IN }
  }

  /** Requests (and batches) whose replies are pending, listens excluded. */
  get tasks (): number { return this.pending.size }

  /** Undefined while fewer than maxInFlight requests are in flight; else resolves when one answers. */
  belowCap (): Promise<void> | undefined {
    if (this.pending.size < this.maxInFlight) return undefined
    return new Promise<void>(resolve => { this.capWaiter = resolve })
  }

  /** Registers what stops the reading (called once, when closing starts). */
  onStop (fn: () => void): void { this.stopHandlers.push(fn) }

  /** One line: a message or a batch. Resolves once it is processed as far as the seed keeps it in line. */
  async line (line: Uint8Array): Promise<void> {
    const parsed = parseBody(line, this.batchBounds.members)
    if (!parsed.ok) {
      this.log.debug({ code: parsed.error.code }, 'line refused at parse time (not JSON, or nested too deep)')
      this.out.send(errorResponse(parsed.id, parsed.error.code, parsed.error.message))
      return
    }
    if (parsed.batch) { this.batch(parsed.value); return }
    const value = parsed.value
    const inbound = classifyMessage(value, STDIO_SOURCE)
    const element = inbound.item
    switch (element.kind) {
      case 'invalid':
        if (isNeverAnswered(value)) { this.log.debug({ reason: element.error.message }, 'malformed notification or response ignored'); return }
        this.out.send(errorResponse(element.id, element.error.code, element.error.message))
        return
      case 'notification':
        this.notification(element.message)
        return
      case 'response':
        this.answer(element.message)
        return
      case 'request': {
        const request = element.message
        if (request.method === 'initialize' && inbound.era === 'legacy') { await this.initialize(request, inbound); return }
        if (request.method === 'subscriptions/listen') { this.listen(request); return }
        this.addTask(this.serve(request, inbound).then(response => { if (response !== undefined) this.out.send(response) }))
      }
    }
  }

  /**
   * One batch line: judged by the connection's revision; one array reply, in batch order.
   * Notifications and responses in it are processed in line, as lone ones are; its requests are
   * served in batch order, at most maxBatchInFlight at once (lib/connection/batch.ts), the rest
   * waiting unstarted.
   */
  private batch (elements: unknown[]): void {
    // Seed › stdio › Batches: "from the connection's negotiated version, or 2025-03-26 before any initialize".
    const refused = batchRefusal(elements, this.peer.legacy?.revision ?? ASSUMED_LEGACY_REVISION)
    if (refused !== undefined) { this.out.send(refused); return }
    // One slot per answered member, in batch order; a request's slot is filled once it is served
    // (undefined: cancelled, its reply suppressed).
    const replies: Array<JsonRpcResponse | undefined> = []
    // The request members still to serve: their slot in `replies` and their classification.
    const slots: number[] = []
    const requests: InboundMessage[] = []
    for (const value of elements) {
      const inbound = classifyMessage(value, STDIO_BATCH_SOURCE)
      const element = inbound.item
      switch (element.kind) {
        case 'invalid':
          if (!isNeverAnswered(value)) replies.push(errorResponse(element.id, element.error.code, element.error.message))
          break
        case 'notification':
          this.notification(element.message)
          break
        case 'response':
          this.answer(element.message)
          break
        case 'request':
          const inPlace = batchedRequestRefusal(element.message)
          if (inPlace !== undefined) {
            replies.push(inPlace)
          } else {
            slots.push(replies.length)
            requests.push(inbound)
            replies.push(undefined)
          }
      }
    }
    if (replies.length === 0) return
    const served = serveBounded(requests.length, this.batchBounds.inFlight, async (index): Promise<void> => {
      const inbound = requests[index]
      const item = inbound.item
      // Once the drain has cancelled what was in flight, no further member starts (its reply is left out).
      if (this.cancelled || item.kind !== 'request') return
      replies[slots[index]] = await this.serve(item.message, inbound)
    })
    this.addTask(served.then(() => {
      const answered = replies.filter((r): r is JsonRpcResponse => r !== undefined)
      if (answered.length > 0) this.out.send(answered)
    }))
  }

  /** What the stdio caller sees (policy `local`, the served endpoint), for notifications. */
  private visibility (): Visibility | undefined {
    return this.dispatcher.visibilityOf(this.source) // its caller and endpoint
  }

  /**
   * The context a request is served in (lib/connection/peer.ts contextFor): modern when it was
   * classified modern, else the connection's legacy state, or before initialize the oldest
   * revision's shapes (seed › stdio › Before initialize). After a legacy initialize a modern request
   * is still served as modern: DIGEST A12 leaves it open, and a dual-era server accepts liberally
   * (versioning.mdx allows both eras on one process). A modern-only method without `_meta` is modern
   * too (lib/protocol/inbound classifyMessage).
   */
  private contextFor (inbound: InboundMessage, entry: InFlight): DispatchContext {
    // The source with the tracing input only while tracing is on (parent: the request's _meta.traceparent, lib/telemetry/trace.ts).
    const source = activeTracing() === undefined ? this.source : this.tracedSource
    return contextFor(inbound.era, inbound.meta ?? null, this.peer.legacy, OLDEST_REVISION, entry.controller.signal, scopedNotify(entry, this.out), source)
  }

  /**
   * Serves one request that is not `initialize` and not a listen.
   * @returns its reply, or undefined when it was cancelled (the reply is suppressed).
   */
  private async serve (request: JsonRpcRequest, inbound: InboundMessage): Promise<JsonRpcResponse | undefined> {
    const entry = this.peer.track(request.id)
    if (entry === undefined) {
      this.log.debug({ id: String(request.id) }, 'request id already in flight')
      return duplicateId(request.id)
    }
    try {
      const response = await this.dispatcher.handle(request, this.contextFor(inbound, entry))
      return entry.cancelled ? undefined : response
    } finally {
      this.peer.untrack(entry)
    }
  }

  /** Runs work the drain must wait for. */
  private addTask (work: Promise<void>): void {
    const task = work.catch(err => { this.log.error({ err }, 'stdio task failed') }).finally(() => {
      this.pending.delete(task)
      const wake = this.capWaiter
      this.capWaiter = undefined
      wake?.()
    })
    this.pending.add(task)
  }

  /** `initialize`, in line: settles the revision and capabilities of every later reply. */
  private async initialize (request: JsonRpcRequest, inbound: InboundMessage): Promise<void> {
    const entry: InFlight = { id: request.id, controller: new Cancellation(), cancelled: false, done: false }
    const response = await this.dispatcher.handle(request, this.contextFor(inbound, entry))
    entry.done = true
    const state = initializedState(request, response)
    if (state !== undefined) {
      this.peer.legacy = state
      // mcpx declares listChanged (and subscribe), so a legacy client gets them (seed › Found along the way).
      this.removeLegacyListener ??= this.hub.add({ lists: ALL_LISTS, uris: this.subscriptions, instanceOwner: STDIO_OWNER, session: STDIO_SESSION, send: (n) => { this.out.send(n) }, view: () => this.visibility() })
      this.log.debug({ revision: state.revision }, 'legacy initialize')
    }
    this.out.send(response)
  }

  /** A modern `subscriptions/listen`: acknowledgement, then tagged notifications until cancelled (DIGEST §6f). */
  private listen (request: JsonRpcRequest): void {
    const checked = checkListen(this.dispatcher, request)
    if (!checked.ok) { this.out.send(checked.error); return }
    const entry = this.peer.track(request.id)
    if (entry === undefined) { this.out.send(duplicateId(request.id)); return }
    const id = request.id
    const listen = new Listen(this.dispatcher, this.hub, this.log, id, checked.filter, (n) => { if (!entry.cancelled && !entry.done) this.out.send(n) }, () => this.visibility(), STDIO_OWNER)
    this.out.send(listen.ack)
    listen.start()
    void listen.subscribeUpstream()
    entry.endListen = (byServer) => {
      if (entry.done) return
      this.peer.untrack(entry)
      void listen.end()
      if (byServer && !this.out.broken) {
        // Server-ended listen on stdio: the result, then notifications/cancelled (DIGEST A10: do both on stdio).
        this.out.send({ jsonrpc: '2.0', id, result: { resultType: 'complete', _meta: { [META_SUBSCRIPTION_ID]: id } } })
        this.out.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'mcpx is shutting down' } })
      }
      // Ended by the client's notifications/cancelled: nothing further for it (DIGEST §6b).
    }
    entry.controller.signal.addEventListener('abort', () => { entry.endListen?.(false) }, { once: true })
  }

  /** A response line from the client: the answer to one of our questions. */
  private answer (response: JsonRpcResponse): void {
    if (!this.peer.answer(response)) this.log.debug({ id: String(response.id) }, 'response for no question in flight; ignored')
  }

  /** Processes a notification fully, in line. Never answers, not even with an error. */
  private notification (message: JsonRpcNotification): void {
    if (message.method === 'notifications/cancelled') {
      if (!this.peer.cancel(message.params?.requestId)) this.log.debug('cancellation for no request in flight; ignored')
      return
    }
    if (message.method === 'notifications/initialized') return
    this.log.debug({ method: message.method }, 'notification ignored')
  }

  /** Stops reading, drains for `waitMs`, cancels what is left, ends listens and flushes. Never rejects. */
  close (waitMs: number): Promise<void> {
    if (this.closing !== undefined) return this.closing
    this.stopping = true
    for (const stop of this.stopHandlers) stop()
    this.closing = (async () => {
      // No line is read any more, so no task starts after this snapshot.
      if (this.pending.size > 0 && waitMs > 0 && !this.out.broken) await within(Promise.allSettled([...this.pending]), waitMs)
      for (const entry of [...this.peer.requests()]) {
        if (entry.endListen !== undefined) entry.endListen(true)
      }
      this.cancelled = true
      this.peer.cancelAll('mcpx is shutting down')
      this.peer.end('mcpx is shutting down')
      this.removeLegacyListener?.()
      for (const uri of this.subscriptions) this.dispatcher.registry.unsubscribe(uri, STDIO_OWNER).catch(() => {})
      this.subscriptions.clear()
      // Aborted requests settle promptly; a batch whose other elements answered in time still
      // gets its (partial) array out. Bounded, so a stuck upstream cannot hold the exit.
      if (this.pending.size > 0) await within(Promise.allSettled([...this.pending]), SETTLE_AFTER_ABORT_MS)
      // Flush: the last write's callback runs once every earlier frame is handed to the OS.
      await this.out.finish(Math.max(this.drainMs, SETTLE_AFTER_ABORT_MS))
    })()
    return this.closing
  }
}

/**
 * True for an invalid element that must still get no reply: a notification in intent (a method,
 * no id), or a response in intent (a result or error, no method; e.g. `id: null`). Answering a
 * response could start an error ping-pong with the client.
 */
function isNeverAnswered (value: unknown): boolean {
  if (!isObject(value)) return false
  if (Object.hasOwn(value, 'method')) return !Object.hasOwn(value, 'id')
  return Object.hasOwn(value, 'result') || Object.hasOwn(value, 'error')
}

function isBlank (bytes: Uint8Array): boolean {
  for (const b of bytes) if (b !== 0x20 && b !== 0x09 && b !== 0x0d) return false
  return true
}
