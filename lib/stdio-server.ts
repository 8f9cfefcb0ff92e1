/**
 * The stdio server: MCP over a byte stream, one JSON-RPC message (or batch) per line
 * (seed › "stdio, every revision"; DIGEST §2c, §3c, §6b, §6f, §6g).
 *
 * - Framing: UTF-8, one frame per `\n`-terminated line, in and out. A line that is not JSON is
 *   answered -32700 with no id (the SDK's ReadBuffer skips such lines; our rule is a clear error).
 *   Empty lines are ignored. A line longer than `maxLineBytes` is answered -32600 and discarded.
 * - Concurrency: requests run concurrently, each under its own AbortController. Notifications
 *   and `initialize` stay in line: a notification is processed, and `initialize` answered,
 *   before the next line is read. Writes are serialised, one whole frame per `write` call.
 * - Cancellation: `notifications/cancelled {requestId}` aborts the request (the signal reaches
 *   the upstream call) and suppresses its reply and any later progress for it.
 * - Notifications are never answered, not even with an error.
 * - Era: before `initialize`, legacy under {@link OLDEST_REVISION}; a request carrying modern
 *   `_meta` is served statelessly as modern at any time; `initialize` selects legacy semantics
 *   for the connection, and from then on list_changed (and resources/updated for subscribed URIs)
 *   is forwarded.
 * - EOF stops reading; in-flight requests get `drainMs` to answer, then are cancelled.
 *
 * This module takes its streams as arguments and imports nothing from Fastify.
 */
import type { Readable, Writable } from 'node:stream'
import type { Logger } from './log.js'
import {
  parseBody, classify, encodeMessage, errorResponse, idKey, isObject, RawNumberId,
  INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST,
  type JsonRpcMessage, type JsonRpcNotification, type JsonRpcRequest, type JsonRpcResponse, type RequestId
} from './jsonrpc.js'
import { ASSUMED_LEGACY_REVISION, OLDEST_REVISION, FIRST_MODERN_REVISION, batchAllowed, type Revision } from './revisions.js'
import { hasModernMeta, metaOf, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, META_SUBSCRIPTION_ID } from './inbound.js'
import type { Dispatcher } from './dispatch.js'
import type { DispatchContext } from './dispatch-types.js'
import { LOCAL_PRINCIPAL } from './principal.js'
import { ALL_LISTS, acknowledgement, readListenFilter, tagWithSubscription, type NotificationHub } from './notify-hub.js'
import { UpstreamRpcError, type JsonObject, type UpstreamQuestion } from './upstreams/types.js'

/** Largest stdio line accepted, in bytes, when the options name none (the config's transport.maxBodyBytes default). */
export const DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024

/** After the drain cancels what is left, how long aborted requests get to settle, in ms. */
const SETTLE_AFTER_ABORT_MS = 1000

/** Methods that exist only in the modern era: served as modern even without `_meta`, so the envelope check explains what is missing. */
const MODERN_ONLY = new Set(['server/discover', 'subscriptions/listen'])

/** Options of {@link startStdioServer}. */
export interface StdioServerOptions {
  /** How long in-flight requests may still answer after stdin EOF or {@link StdioServer.close}, in ms (config transport.stdioDrain; default 5000). */
  drainMs?: number
  /** Largest line accepted, in bytes (config transport.maxBodyBytes; default {@link DEFAULT_MAX_LINE_BYTES}). */
  maxLineBytes?: number
  /** Where diagnostics go; in `mcpx serve` this logs to fd 2, never to the MCP output. */
  logger: Logger
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

/** One request being served. */
interface Running {
  id: RequestId
  controller: AbortController
  /** Cancelled by the client or by the drain: nothing more is written for it. */
  cancelled: boolean
  /** Answered: no progress after the reply. */
  done: boolean
  /** Set for a `subscriptions/listen` stream: how to end it. */
  endListen?: (byServer: boolean) => void
}

/** A question mcpx asked the client and is waiting on. */
interface Question {
  resolve: (result: JsonObject) => void
  reject: (err: Error) => void
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
  const log = options.logger
  const drainMs = options.drainMs ?? 5000
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES

  /** Set by a successful legacy `initialize`. */
  let legacy: { revision: Revision, clientCapabilities: JsonObject } | undefined
  /** resources/subscribe URIs of this connection; the same Set is the legacy hub listener's `uris`. */
  const subscriptions = new Set<string>()
  let removeLegacyListener: (() => void) | undefined

  const running = new Map<string, Running>()
  /** Requests and batches whose replies are pending: what the drain waits for. Listens are not in here. */
  const tasks = new Set<Promise<void>>()
  const questions = new Map<string, Question>()
  let questionSeq = 0

  let stopping = false
  let outputBroken = false
  /** Set once closing is complete: nothing is written after that. */
  let finished = false
  let lastWrite: Promise<void> = Promise.resolve()
  let stopReading: () => void = () => {}
  const stopSignal = new Promise<'stop'>(resolve => { stopReading = () => resolve('stop') })

  // ---- output -------------------------------------------------------------------------------

  function onOutputError (err: NodeJS.ErrnoException): void {
    if (outputBroken) return
    outputBroken = true
    // EPIPE: the host went away. Nothing can be answered any more; exit quietly.
    log.debug({ err }, 'stdout failed; stopping')
    void close(0)
  }
  output.on('error', onOutputError)

  /** Writes one frame. Serialised: each call is one whole line handed to the stream in order. Never throws. */
  function write (message: JsonRpcMessage | JsonRpcMessage[]): void {
    if (outputBroken || finished) return
    const frame = encodeMessage(message) + '\n'
    lastWrite = new Promise<void>(resolve => {
      try {
        output.write(frame, () => resolve())
      } catch (err) {
        onOutputError(err as NodeJS.ErrnoException)
        resolve()
      }
    })
  }

  // ---- requests -----------------------------------------------------------------------------

  /** The context a request is served in: modern when it carries modern `_meta`, else the connection's legacy state. */
  function contextFor (request: JsonRpcRequest, entry: Running): DispatchContext {
    const notify = (notification: JsonRpcNotification): void => {
      // Request-scoped notifications stop at the reply, and never follow a cancellation (DIGEST §6b).
      if (!entry.cancelled && !entry.done) write(notification)
    }
    if (hasModernMeta(request) || MODERN_ONLY.has(request.method)) {
      // After a legacy initialize a modern request is still served as modern: DIGEST A12 leaves it
      // open, and a dual-era server accepts liberally (versioning.mdx allows both eras on one process).
      const meta = metaOf(request)
      const version = meta?.[META_PROTOCOL_VERSION]
      const capabilities = meta?.[META_CLIENT_CAPABILITIES]
      // No ask: a modern connection never gets server→client requests (DIGEST §6b).
      return {
        era: 'modern',
        revision: typeof version === 'string' ? version : FIRST_MODERN_REVISION,
        clientCapabilities: isObject(capabilities) ? capabilities : {},
        signal: entry.controller.signal,
        notify,
        principal: LOCAL_PRINCIPAL.key // stdio has one caller: whoever started the process (issue #16)
      }
    }
    return {
      era: 'legacy',
      revision: legacy?.revision ?? OLDEST_REVISION,
      clientCapabilities: legacy?.clientCapabilities ?? {},
      signal: entry.controller.signal,
      notify,
      ask,
      subscriptions,
      principal: LOCAL_PRINCIPAL.key
    }
  }

  /** Registers a request as running; undefined when its id is already in flight. */
  function track (request: JsonRpcRequest): Running | undefined {
    const key = idKey(request.id)
    if (running.has(key)) return undefined
    const entry: Running = { id: request.id, controller: new AbortController(), cancelled: false, done: false }
    running.set(key, entry)
    return entry
  }

  function untrack (entry: Running): void {
    const key = idKey(entry.id)
    if (running.get(key) === entry) running.delete(key)
  }

  /**
   * Serves one request that is not `initialize` and not a listen.
   * @returns its reply, or undefined when it was cancelled (the reply is suppressed).
   */
  async function serve (request: JsonRpcRequest): Promise<JsonRpcResponse | undefined> {
    const entry = track(request)
    if (entry === undefined) {
      log.debug({ id: String(request.id) }, 'request id already in flight')
      return errorResponse(request.id, INVALID_REQUEST, 'Invalid Request: a request with this id is already in flight')
    }
    try {
      const response = await dispatcher.handle(request, contextFor(request, entry))
      return entry.cancelled ? undefined : response
    } finally {
      entry.done = true
      untrack(entry)
    }
  }

  /** Runs work the drain must wait for. */
  function addTask (work: Promise<void>): void {
    const task = work.catch(err => { log.error({ err }, 'stdio task failed') }).finally(() => { tasks.delete(task) })
    tasks.add(task)
  }

  /** `initialize`, in line: settles the revision and capabilities of every later reply. */
  async function initialize (request: JsonRpcRequest): Promise<void> {
    const controller = new AbortController()
    const entry: Running = { id: request.id, controller, cancelled: false, done: false }
    const ctx = contextFor(request, entry)
    const response = await dispatcher.handle(request, ctx)
    entry.done = true
    if (ctx.era === 'legacy' && 'result' in response) {
      const params = request.params ?? {}
      legacy = {
        revision: typeof response.result.protocolVersion === 'string' ? response.result.protocolVersion : OLDEST_REVISION,
        clientCapabilities: isObject(params.capabilities) ? params.capabilities : {}
      }
      // mcpx declares listChanged (and subscribe), so a legacy client gets them (seed › Found along the way).
      removeLegacyListener ??= hub.add({ lists: ALL_LISTS, uris: subscriptions, send: write })
      log.debug({ revision: legacy.revision }, 'legacy initialize')
    }
    write(response)
  }

  /** A modern `subscriptions/listen`: acknowledgement, then tagged notifications until cancelled (DIGEST §6f). */
  function listen (request: JsonRpcRequest): void {
    const rejected = dispatcher.checkModernEnvelope(request)
    if (rejected !== undefined) { write(rejected); return }
    const filter = readListenFilter(request.params)
    if (!filter.ok) { write(errorResponse(request.id, INVALID_PARAMS, filter.message)); return }
    const entry = track(request)
    if (entry === undefined) {
      write(errorResponse(request.id, INVALID_REQUEST, 'Invalid Request: a request with this id is already in flight'))
      return
    }
    const id = request.id
    const registry = dispatcher.registry
    const subscribed: string[] = []
    write(acknowledgement(id, filter.ack))
    const remove = hub.add({
      lists: filter.lists,
      uris: filter.uris,
      send: (notification) => { if (!entry.cancelled && !entry.done) write(tagWithSubscription(notification, id)) }
    })
    for (const uri of filter.uris) {
      registry.subscribe(uri).then(
        () => { if (entry.done) void registry.unsubscribe(uri).catch(() => {}); else subscribed.push(uri) },
        (err: unknown) => { log.debug({ err, uri }, 'listen: upstream subscribe failed') }
      )
    }
    entry.endListen = (byServer) => {
      if (entry.done) return
      entry.done = true
      remove()
      untrack(entry)
      for (const uri of subscribed) registry.unsubscribe(uri).catch((err: unknown) => { log.debug({ err, uri }, 'listen: upstream unsubscribe failed') })
      if (byServer && !outputBroken) {
        // Server-ended listen on stdio: the result, then notifications/cancelled (DIGEST A10: do both on stdio).
        write({ jsonrpc: '2.0', id, result: { resultType: 'complete', _meta: { [META_SUBSCRIPTION_ID]: id } } })
        write({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'mcpx is shutting down' } })
      }
      // Ended by the client's notifications/cancelled: nothing further for it (DIGEST §6b).
    }
    entry.controller.signal.addEventListener('abort', () => { entry.endListen?.(false) }, { once: true })
  }

  // ---- questions to the client (legacy only) ------------------------------------------------

  /** ctx.ask: a server→client request with an mcpx-minted id; resolves with the client's result. */
  function ask (question: UpstreamQuestion, signal: AbortSignal): Promise<JsonObject> {
    return new Promise<JsonObject>((resolve, reject) => {
      if (stopping || outputBroken) { reject(new UpstreamRpcError(INTERNAL_ERROR, 'mcpx is shutting down')); return }
      if (signal.aborted) { reject(new UpstreamRpcError(INTERNAL_ERROR, 'Request cancelled')); return }
      const id = `mcpx-q-${++questionSeq}`
      const key = idKey(id)
      const onAbort = (): void => {
        if (!questions.delete(key)) return
        write({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'request cancelled' } })
        reject(new UpstreamRpcError(INTERNAL_ERROR, 'Request cancelled'))
      }
      signal.addEventListener('abort', onAbort, { once: true })
      questions.set(key, {
        resolve: (result) => { signal.removeEventListener('abort', onAbort); resolve(result) },
        reject: (err) => { signal.removeEventListener('abort', onAbort); reject(err) }
      })
      const message: JsonRpcRequest = question.params === undefined
        ? { jsonrpc: '2.0', id, method: question.method }
        : { jsonrpc: '2.0', id, method: question.method, params: question.params }
      write(message)
    })
  }

  /** A response line from the client: the answer to one of our questions. */
  function deliver (response: JsonRpcResponse): void {
    const key = idKey(response.id as RequestId)
    const question = questions.get(key)
    if (question === undefined) {
      log.debug({ id: String(response.id) }, 'response for no question in flight; ignored')
      return
    }
    questions.delete(key)
    if ('error' in response) {
      question.reject(new UpstreamRpcError(response.error.code, response.error.message, response.error.data))
    } else {
      question.resolve(isObject(response.result) ? response.result : {})
    }
  }

  // ---- notifications ------------------------------------------------------------------------

  /** Processes a notification fully, in line. Never answers, not even with an error. */
  function notification (message: JsonRpcNotification): void {
    if (message.method === 'notifications/cancelled') {
      const entry = findRunning(message.params?.requestId)
      if (entry === undefined) {
        log.debug('cancellation for no request in flight; ignored')
        return
      }
      entry.cancelled = true
      entry.controller.abort(new Error('cancelled by the client'))
      return
    }
    if (message.method === 'notifications/initialized') return
    log.debug({ method: message.method }, 'notification ignored')
  }

  /** The running request a cancellation names. */
  function findRunning (requestId: unknown): Running | undefined {
    if (typeof requestId === 'string' || (typeof requestId === 'number' && Number.isFinite(requestId))) {
      const entry = running.get(idKey(requestId))
      if (entry !== undefined) return entry
      // A huge numeric requestId was rounded by JSON.parse; match it against the exact ids in flight.
      if (typeof requestId === 'number' && !Number.isSafeInteger(requestId)) {
        for (const candidate of running.values()) {
          if (candidate.id instanceof RawNumberId && Number(candidate.id.raw) === requestId) return candidate
        }
      }
    }
    return undefined
  }

  // ---- lines and batches ----------------------------------------------------------------------

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

  async function handleLine (line: Uint8Array): Promise<void> {
    const parsed = parseBody(line)
    if (!parsed.ok) {
      log.debug({ code: parsed.error.code }, 'line refused at parse time (not JSON, or nested too deep)')
      write(errorResponse(parsed.id, parsed.error.code, parsed.error.message))
      return
    }
    if (parsed.batch) { batch(parsed.value); return }
    const value = parsed.value
    const element = classify(value)
    switch (element.kind) {
      case 'invalid':
        if (isNeverAnswered(value)) { log.debug({ reason: element.error.message }, 'malformed notification or response ignored'); return }
        write(errorResponse(element.id, element.error.code, element.error.message))
        return
      case 'notification':
        notification(element.message)
        return
      case 'response':
        deliver(element.message)
        return
      case 'request': {
        const request = element.message
        if (request.method === 'initialize' && !hasModernMeta(request)) { await initialize(request); return }
        if (request.method === 'subscriptions/listen') { listen(request); return }
        addTask(serve(request).then(response => { if (response !== undefined) write(response) }))
      }
    }
  }

  /** One batch line: judged by the connection's revision; elements run concurrently; one array reply. */
  function batch (elements: unknown[]): void {
    const revision = legacy?.revision ?? ASSUMED_LEGACY_REVISION
    if (elements.length === 0) { write(errorResponse(undefined, INVALID_REQUEST, 'Invalid Request: empty batch')); return }
    if (elements.some(hasModernMeta)) { write(errorResponse(undefined, INVALID_REQUEST, 'Invalid Request: batches do not exist in the modern era')); return }
    if (!batchAllowed(revision)) { write(errorResponse(undefined, INVALID_REQUEST, `Invalid Request: batches are not allowed in revision ${revision}`)); return }
    const replies: Array<Promise<JsonRpcResponse | undefined>> = []
    for (const value of elements) {
      const element = classify(value)
      switch (element.kind) {
        case 'invalid':
          if (!isNeverAnswered(value)) replies.push(Promise.resolve(errorResponse(element.id, element.error.code, element.error.message)))
          break
        case 'notification':
          notification(element.message)
          break
        case 'response':
          deliver(element.message)
          break
        case 'request':
          if (element.message.method === 'initialize') {
            // 2025-03-26 lifecycle: initialize MUST NOT be batched. It initializes nothing.
            replies.push(Promise.resolve(errorResponse(element.message.id, INVALID_REQUEST, 'Invalid Request: initialize must not be batched')))
          } else if (element.message.method === 'subscriptions/listen') {
            replies.push(Promise.resolve(errorResponse(element.message.id, INVALID_REQUEST, 'Invalid Request: subscriptions/listen must not be batched')))
          } else {
            replies.push(serve(element.message))
          }
      }
    }
    if (replies.length === 0) return
    addTask(Promise.all(replies).then(all => {
      const answered = all.filter((r): r is JsonRpcResponse => r !== undefined)
      if (answered.length > 0) write(answered)
    }))
  }

  // ---- reading ------------------------------------------------------------------------------

  async function readLoop (): Promise<void> {
    const iterator = (input as AsyncIterable<Buffer | string>)[Symbol.asyncIterator]()
    let pending: Buffer[] = []
    let pendingBytes = 0
    let discarding = false
    const tooLong = (): void => {
      log.debug({ maxLineBytes }, 'line too long; discarded')
      write(errorResponse(undefined, INVALID_REQUEST, `Invalid Request: line longer than ${maxLineBytes} bytes`))
    }
    const lineDone = async (line: Buffer): Promise<void> => {
      let end = line.length
      if (end > 0 && line[end - 1] === 0x0d) end-- // tolerate CRLF
      const body = line.subarray(0, end)
      if (isBlank(body)) return
      await handleLine(body)
    }
    try {
      while (!stopping) {
        const next = await Promise.race([iterator.next(), stopSignal])
        if (next === 'stop' || next.done === true) break
        const chunk = typeof next.value === 'string' ? Buffer.from(next.value, 'utf8') : next.value
        let start = 0
        while (!stopping) {
          const newline = chunk.indexOf(0x0a, start)
          if (newline === -1) {
            const rest = chunk.subarray(start)
            if (!discarding && rest.length > 0) {
              pending.push(rest)
              pendingBytes += rest.length
              if (pendingBytes > maxLineBytes) { tooLong(); discarding = true; pending = []; pendingBytes = 0 }
            }
            break
          }
          const piece = chunk.subarray(start, newline)
          start = newline + 1
          if (discarding) { discarding = false; continue }
          const line = pending.length === 0 ? piece : Buffer.concat([...pending, piece])
          pending = []
          pendingBytes = 0
          if (line.length > maxLineBytes) { tooLong(); continue }
          await lineDone(line)
        }
      }
      // A last line without its newline is still a message.
      if (!stopping && !discarding && pending.length > 0) await lineDone(Buffer.concat(pending))
    } catch (err) {
      log.debug({ err }, 'stdin failed; treating as EOF')
    } finally {
      // Stopped before EOF (signal, EPIPE): release the input, so an open stdin does not keep the process alive.
      if (!input.readableEnded) input.destroy()
      void Promise.resolve(iterator.return?.()).catch(() => {})
    }
  }

  // ---- shutdown -----------------------------------------------------------------------------

  let closing: Promise<void> | undefined

  /** Stops reading, drains for `waitMs`, cancels what is left, ends listens and flushes. */
  function close (waitMs: number): Promise<void> {
    if (closing !== undefined) return closing
    stopping = true
    stopReading()
    closing = (async () => {
      // No line is read any more, so no task starts after this snapshot.
      if (tasks.size > 0 && waitMs > 0 && !outputBroken) await within(Promise.allSettled([...tasks]), waitMs)
      for (const entry of running.values()) {
        if (entry.endListen !== undefined) { entry.endListen(true); continue }
        entry.cancelled = true
        entry.controller.abort(new Error('mcpx is shutting down'))
      }
      for (const question of questions.values()) question.reject(new UpstreamRpcError(INTERNAL_ERROR, 'mcpx is shutting down'))
      questions.clear()
      removeLegacyListener?.()
      for (const uri of subscriptions) dispatcher.registry.unsubscribe(uri).catch(() => {})
      subscriptions.clear()
      // Aborted requests settle promptly; a batch whose other elements answered in time still
      // gets its (partial) array out. Bounded, so a stuck upstream cannot hold the exit.
      if (tasks.size > 0) await within(Promise.allSettled([...tasks]), SETTLE_AFTER_ABORT_MS)
      finished = true
      // Flush: the last write's callback runs once every earlier frame is handed to the OS.
      if (!outputBroken) await within(lastWrite, Math.max(drainMs, SETTLE_AFTER_ABORT_MS))
      output.off('error', onOutputError)
      // Late errors (EPIPE after we are done) must not crash the process.
      output.on('error', () => {})
    })()
    return closing
  }

  const reading = readLoop()
  const closed = reading.then(() => close(drainMs))

  return {
    closed,
    close: () => close(drainMs),
    get inFlight () { return tasks.size }
  }
}

/** Resolves when `work` settles or after `ms`, whichever comes first. Never rejects. */
async function within (work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<void>(resolve => { timer = setTimeout(resolve, ms) })
  await Promise.race([work.then(() => {}, () => {}), expired])
  clearTimeout(timer)
}

function isBlank (bytes: Uint8Array): boolean {
  for (const b of bytes) if (b !== 0x20 && b !== 0x09 && b !== 0x0d) return false
  return true
}
