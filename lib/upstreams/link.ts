/**
 * One live connection to an upstream (one SDK client on one transport, from a single connect
 * attempt): the calls in flight on it, and the routing of what the upstream sends back. The SDK
 * client did the handshake; after it, every call mcpx sends goes out here as a frame mcpx writes
 * itself, and every message that belongs to a call (its response, its progress, a log line) is
 * taken from the inbound stream before the SDK client sees it (see ./README.md, "The call path").
 * Sources: DIGEST §2e (cancellation, progress), §6a (eras), §6d (mirrored headers), §6f (MRTR).
 */
import { ProtocolError, type Client, type JSONRPCMessage } from '@modelcontextprotocol/client'
import { INTERNAL_ERROR, METHOD_NOT_FOUND, UPSTREAM_ERROR, copyObject, isObject, UpstreamRpcError, type JsonObject } from '../protocol/jsonrpc.js'
import { encodeHeaderValue } from '../protocol/header-values.js'
import { buildParamHeaders } from './mirror-headers.js'
import type { Era, Revision } from '../protocol/revisions.js'
import { UpstreamCall, type CallLink } from './call.js'
import { CLIENT_CAPABILITIES, CLIENT_INFO, isQuestion } from './client.js'
import type { HttpUpstreamTransport } from './http-transport.js'
import { EOF_GRACE_MS, StdioUpstreamTransport } from './stdio-transport.js'
import type { UpstreamCallOptions, UpstreamLogger } from './contract.js'
import { activeTracing } from '../telemetry/trace.js'
import { SequenceTable } from '../base/in-flight-table.js'

/** The SDK client's internals a link shares (read in its 2.4.0 sources); each has a fallback. */
interface ClientInternals {
  /** The request id counter: calls take their ids from it, so ids on the wire stay one sequence. */
  _requestMessageId?: number
  /** The modern `_meta` envelope the client adds to every request and notification. */
  _outboundMetaEnvelope?: () => JsonObject | undefined
}

/** How a caller's call is timed beyond its timeout (config resetTimeoutOnProgress, maxTotalTimeout). */
export interface CallTiming {
  /** Progress from the upstream restarts the call's timeout. */
  resetOnProgress: boolean
  /** Bound of the whole call (ms), whatever its progress; undefined: none. */
  maxTotalMs: number | undefined
}

/** What the link could not tie to one call: a question (refused upstream), a log line or a 2026-07-28 task status (dropped). */
export type UnroutedKind = 'question' | 'log' | 'task'

/** Most URL-mode elicitations a link remembers for their completion notification. */
const MAX_URL_ELICITATIONS = 1024

/** The body field `Mcp-Name` mirrors, per method (DIGEST §6d; the tasks methods: SEP-2663 "Routing Headers"). */
const NAME_FIELD: ReadonlyMap<string, string> = new Map([
  ['tools/call', 'name'], ['prompts/get', 'name'], ['resources/read', 'uri'],
  ['tasks/get', 'taskId'], ['tasks/update', 'taskId'], ['tasks/cancel', 'taskId']
])

/**
 * The JSON text of a request mcpx sends upstream: `{"method","params","jsonrpc","id"}`, as
 * JSON.stringify writes it. With `envelopeJson` (the 2026-07-28 `_meta` envelope, already JSON;
 * DIGEST §6b), `params` must have no `_meta` of its own: the envelope becomes its last member,
 * spliced into the serialised params instead of copied into a new object and serialised again on
 * every call. The text equals JSON.stringify of `{ method, params: { ...params, _meta: envelope }, jsonrpc: '2.0', id }`.
 * Never throws for JSON values.
 */
export function requestFrame (method: string, params: JsonObject, id: string | number, envelopeJson?: string): string {
  if (envelopeJson === undefined) return JSON.stringify({ method, params, jsonrpc: '2.0', id })
  const body = JSON.stringify(params)
  const withEnvelope = body === '{}' ? `{"_meta":${envelopeJson}}` : `${body.slice(0, -1)},"_meta":${envelopeJson}}`
  return `{"method":${JSON.stringify(method)},"params":${withEnvelope},"jsonrpc":"2.0","id":${JSON.stringify(id)}}`
}

/** One connection's client, transport, negotiated facts and calls in flight. */
export class Link implements CallLink {
  readonly calls = new SequenceTable<UpstreamCall>() // not a Map, nor a dictionary: lib/base/in-flight-table.ts
  readonly progress = new Map<string, UpstreamCall>()
  era: Era = 'legacy'
  revision: Revision = 'unknown'
  capabilities: JsonObject = {}
  upSince = 0
  /** The modern `_meta` envelope (undefined on a legacy connection). */
  private envelope: JsonObject | undefined
  /** {@link envelope} as JSON, for {@link requestFrame}. */
  private envelopeJson: string | undefined
  private progressTokens = 0
  private ownIds = 0
  /**
   * Where the upstream's `notifications/resources/updated` go (their `params.uri`), set by the
   * connection once established; unset: they reach the SDK client's handlers. Must not throw.
   */
  onResourceUpdated: ((uri: string) => void) | undefined
  /**
   * Where the upstream's `notifications/tasks/status` go (their params, 2025-11-25 experimental
   * tasks), set by a primary connection once established; unset: they reach the SDK client. Must not throw.
   */
  onTaskStatus: ((params: JsonObject) => void) | undefined
  /** `notifications/cancelled` POSTs still under way (legacy HTTP): dispose() waits for them, bounded. */
  private readonly cancelsInFlight = new Set<Promise<void>>()

  /**
   * @param role `primary` (the negotiated connection: catalogue, subscriptions) or `legacy` (a dual-era upstream's second one)
   * @param logFields `{ upstream }`, plus `{ connection: 'legacy' }` for the legacy role
   */
  /** Questions that came on a call's own HTTP reply stream: their upstream request id → that call. */
  private readonly questionCalls = new Map<string | number, UpstreamCall>()
  /**
   * URL-mode elicitations relayed for a call: their `elicitationId` → that call, so the upstream's
   * `notifications/elicitation/complete` reaches the client that got the elicitation and no other
   * (URL-mode elicitation). Bounded by MAX_URL_ELICITATIONS, oldest dropped first.
   */
  private readonly urlElicitations = new Map<string, UpstreamCall>()

  /**
   * @param unrouted told of each question refused, and each log line or task status dropped,
   *        because it could not be tied to exactly one call
   */
  constructor (
    readonly role: 'primary' | 'legacy',
    readonly upstream: string,
    readonly client: Client,
    readonly transport: StdioUpstreamTransport | HttpUpstreamTransport,
    private readonly logger: UpstreamLogger,
    private readonly logFields: JsonObject,
    private readonly unrouted: (kind: UnroutedKind) => void = () => {}
  ) {}

  /** The child's pid (stdio) while it runs. */
  get pid (): number | undefined {
    return this.transport instanceof StdioUpstreamTransport ? this.transport.runningPid : undefined
  }

  /** Bytes waiting in mcpx for the child's stdin pipe, the pending batch included (stdio; 0 for HTTP). */
  get stdinBuffered (): number {
    return this.transport instanceof StdioUpstreamTransport ? this.transport.buffered : 0
  }

  /** How the child ended on its own (stdio), once it has. */
  get exitInfo (): string | undefined {
    return this.transport instanceof StdioUpstreamTransport ? this.transport.exitInfo : undefined
  }

  /**
   * Called once the SDK client has connected: reads what was negotiated and puts the link in front
   * of the SDK client on the inbound stream. Never throws.
   */
  established (): void {
    const client = this.client
    this.era = client.getProtocolEra() ?? 'legacy'
    this.revision = client.getNegotiatedProtocolVersion() ?? 'unknown'
    this.capabilities = (client.getServerCapabilities() ?? {}) as JsonObject
    this.upSince = Date.now()
    if (this.era === 'modern') {
      this.envelope = (client as unknown as ClientInternals)._outboundMetaEnvelope?.() ?? {
        'io.modelcontextprotocol/protocolVersion': this.revision,
        'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
        'io.modelcontextprotocol/clientCapabilities': CLIENT_CAPABILITIES
      }
      this.envelopeJson = JSON.stringify(this.envelope)
    }
    const transport = this.transport
    const sdk = transport.onmessage
    transport.onmessage = (message: JSONRPCMessage, extra?: unknown) => {
      if (!this.intercept(message as unknown as JsonObject)) (sdk as ((m: JSONRPCMessage, e?: unknown) => void) | undefined)?.(message, extra)
    }
  }

  /**
   * Sends one request and resolves with the upstream's raw result object, as it came.
   * @param timeoutMs the call's bound (ms); past it the call fails and is cancelled upstream
   * @param tool the upstream's own tool definition, for Mcp-Param-* on a modern HTTP `tools/call`
   * @param setup true for the connection's own requests (lists, subscriptions): no header provider
   * @param timing the upstream's resetTimeoutOnProgress and maxTotalTimeout (ms), for callers' calls
   * @returns the result; rejects with UpstreamRpcError (the upstream's error unchanged, or UPSTREAM_ERROR)
   */
  async call (method: string, params: JsonObject, options: UpstreamCallOptions, timeoutMs: number, tool?: JsonObject, setup = false, timing?: CallTiming): Promise<JsonObject> {
    if (options.signal.aborted) throw new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.upstream}: ${method} cancelled`)
    if (options.extraParams !== undefined) params = { ...options.extraParams, ...params }
    const call = new UpstreamCall(this, this.upstream, method, options)
    call.setup = setup
    let meta: JsonObject | undefined = isObject(params._meta) ? params._meta : undefined
    if (options.meta !== undefined) meta = copyObject(meta, options.meta) // not a spread: lib/protocol/jsonrpc.ts copyObject
    const stdio = this.transport instanceof StdioUpstreamTransport
    // Tracing on only (lib/telemetry/trace.ts): a child span, its context in `_meta` (stdio) or the headers (HTTP).
    const traced = options.trace === undefined ? undefined : activeTracing()?.upstream(options.trace, this.upstream, method, params, stdio ? 'pipe' : 'tcp', this.era)
    if (traced !== undefined && stdio) meta = { ...meta, ...traced.carrier }
    if (options.onProgress !== undefined) {
      call.progressToken = `mcpx-${++this.progressTokens}`
      meta = { ...meta, progressToken: call.progressToken }
      this.progress.set(call.progressToken, call)
    }
    // The envelope alone (the common call: no `_meta` of the caller's, no progress, no trace) is
    // spliced into the frame as JSON serialised once per connection ({@link requestFrame}).
    let envelopeJson: string | undefined
    if (this.envelope !== undefined) {
      if (meta === undefined && !Object.hasOwn(params, '_meta')) envelopeJson = this.envelopeJson
      else meta = copyObject(this.envelope, meta)
    }
    if (meta !== undefined) {
      params = copyObject(params)
      params._meta = meta
    }
    const internals = this.client as unknown as ClientInternals
    const id = typeof internals._requestMessageId === 'number' ? internals._requestMessageId++ : `mcpx-call-${++this.ownIds}`
    call.id = id
    if (traced !== undefined) {
      traced.setId(id)
      call.promise.then(traced.ok, traced.fail)
    }
    this.calls.set(id, call)
    options.signal.addEventListener('abort', call)
    call.timeoutMs = timeoutMs
    if (timing !== undefined) {
      call.resetOnProgress = timing.resetOnProgress
      if (timing.maxTotalMs !== undefined) call.deadline = call.startedAt + timing.maxTotalMs
    }
    call.arm()
    const transport = this.transport
    if (transport instanceof StdioUpstreamTransport) {
      // The child's stdin past its high-water mark: wait for 'drain' before serialising
      // and writing (a waiting call holds no frame). Its timer runs and it can be cancelled
      // meanwhile; then nothing is written, nor a cancel.
      if (transport.congested) {
        call.unsent = true
        const settled = call.promise.then(() => {}, () => {})
        while (transport.congested && !call.done) await Promise.race([transport.drained(), settled])
        call.unsent = false
        if (call.done) return await call.promise
      }
      if (!transport.write(requestFrame(method, params, id, envelopeJson) + '\n')) call.fail(new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.upstream}: ${method} failed: Not connected`))
    } else {
      let headers = this.era === 'modern' ? this.modernHeaders(method, params, tool) : undefined
      if (traced !== undefined) headers = { ...headers, ...traced.carrier }
      transport.post(call, requestFrame(method, params, id, envelopeJson), headers, this.era === 'modern')
    }
    return await call.promise
  }

  /** Tells the upstream a call is abandoned: modern HTTP closes the call's stream; otherwise `notifications/cancelled`. */
  cancel (call: UpstreamCall, reason: string): void {
    if (call.unsent) return // never written: the upstream knows nothing of it
    const transport = this.transport
    if (!(transport instanceof StdioUpstreamTransport) && this.era === 'modern') {
      call.httpRequest?.abort(new Error(reason))
      return
    }
    const params: JsonObject = { requestId: call.id, reason }
    if (this.envelope !== undefined) params._meta = { ...this.envelope }
    const notification = { jsonrpc: '2.0' as const, method: 'notifications/cancelled', params }
    if (transport instanceof StdioUpstreamTransport) { transport.write(JSON.stringify(notification) + '\n'); return }
    // Legacy HTTP: a POST of the SDK transport; dispose() lets it finish (bounded) before closing the client.
    const sent = transport.send(notification as JSONRPCMessage).catch(() => {})
    this.cancelsInFlight.add(sent)
    void sent.then(() => this.cancelsInFlight.delete(sent))
  }

  /**
   * A message from the upstream over its maxMessageBytes was skipped: one warn line
   * naming both sizes; the call it answered, when its id is known, fails with an error that names
   * them too (the upstream did answer: nothing is cancelled). An id that is no call's is handed to
   * the SDK client as an error response (a handshake request). Without an id the skipped message
   * is only logged: a call it answered ends by its timeout, or (HTTP) when its reply ends.
   * @param bytes its size; with `atLeast`, the bytes received before the body was cut
   */
  oversized (bytes: number, maxBytes: number, id: string | number | undefined, atLeast = false): void {
    const size = `${atLeast ? 'more than ' : ''}${bytes} bytes`
    const call = id === undefined ? undefined : this.calls.get(id)
    this.logger.warn({ ...this.logFields, bytes, maxMessageBytes: maxBytes, id, method: call?.method },
      `upstream message of ${size} is over maxMessageBytes (${maxBytes}): skipped`)
    if (id === undefined) return
    const message = `upstream ${this.upstream}: ${call?.method ?? 'request'} failed: its reply is ${size}, over maxMessageBytes (${maxBytes})`
    if (call !== undefined) { call.fail(new UpstreamRpcError(UPSTREAM_ERROR, message)); return }
    this.transport.onmessage?.({ jsonrpc: '2.0', id, error: { code: UPSTREAM_ERROR, message } } as unknown as JSONRPCMessage)
  }

  /** Fails every call in flight on this link with `error`, telling the upstream (when it still listens). */
  failAll (error: UpstreamRpcError): void {
    for (const call of this.calls.values()) call.abandon(error)
  }

  /**
   * Routes a server→client question (legacy era) to the call it belongs to, never guessing
   * (a shared upstream never guesses whose message it holds): the call whose HTTP reply stream carried it;
   * else, when every caller's call in flight on this link serves one owner
   * (UpstreamCallOptions.owner: one session, one stdio client, or an isolated instance's owner),
   * that owner's latest call. With calls of several owners (or of none) in flight, nothing on the
   * wire says whose question it is: it is refused upstream (-32603) and counted. With no call in
   * flight: -32601, but `roots/list`, which mcpx answers itself with no roots (server-everything
   * asks right after initialize).
   * @param id the question's upstream request id
   * @returns the client's answer; throws ProtocolError for the upstream's error response
   */
  async answerQuestion (method: string, params: JsonObject | undefined, upstreamSignal: AbortSignal, id?: string | number): Promise<JsonObject> {
    const via = id === undefined ? undefined : this.questionCalls.get(id)
    if (id !== undefined) this.questionCalls.delete(id)
    const found = this.owning(via, 'onQuestion')
    if (found === 'ambiguous') {
      this.unrouted('question')
      throw new ProtocolError(INTERNAL_ERROR, `mcpx: ${method} cannot be tied to one of the calls in flight on upstream ${this.upstream} (several callers share it); refused rather than guessed. Configure the upstream with isolation "per-session" or "per-principal"`)
    }
    const target = found
    const onQuestion = target?.options.onQuestion
    if (target === undefined || onQuestion === undefined) {
      if (method === 'roots/list' && this.callerCalls() === 0) return { roots: [] }
      throw new ProtocolError(METHOD_NOT_FOUND, `mcpx: no request in flight on upstream ${this.upstream} can relay ${method}`)
    }
    const question = params === undefined ? { method } : { method, params }
    const elicitationId = method === 'elicitation/create' && params?.mode === 'url' && typeof params.elicitationId === 'string' ? params.elicitationId : undefined
    if (elicitationId !== undefined) {
      if (this.urlElicitations.size >= MAX_URL_ELICITATIONS) this.urlElicitations.delete(this.urlElicitations.keys().next().value as string)
      this.urlElicitations.set(elicitationId, target)
    }
    try {
      return await onQuestion(question, AbortSignal.any([target.questionSignal(), upstreamSignal]))
    } catch (error) {
      const code = (error as { code?: unknown }).code
      if (typeof code === 'number') throw new ProtocolError(code, (error as Error).message, (error as { data?: unknown }).data)
      throw new ProtocolError(INTERNAL_ERROR, `mcpx: ${method} could not be relayed: ${(error as Error).message}`)
    }
  }

  /**
   * Takes a message that belongs to a call: its response, its `notifications/progress` (by our
   * progressToken), or a `notifications/message` (routed like a question). A question that came
   * on a call's reply stream is noted for answerQuestion and left to the SDK client. @returns
   * false for anything the SDK client handles (its own responses, the upstream's requests, list_changed…).
   */
  private intercept (message: JsonObject): boolean {
    const method = message.method
    if (method === undefined) {
      const id = message.id
      // Ids match exactly (SequenceTable): an answer to call 7 that names "7" answers no call.
      const call = typeof id === 'number' || typeof id === 'string' ? this.calls.get(id) : undefined
      if (call === undefined) return false
      call.settle(message)
      return true
    }
    const via = this.transport instanceof StdioUpstreamTransport ? undefined : this.transport.replyCall
    if (message.id !== undefined) {
      const id = message.id
      // Only questions: each reaches answerQuestion, which takes its entry out (the map stays bounded).
      if (via !== undefined && isQuestion(method) && (typeof id === 'string' || typeof id === 'number')) this.questionCalls.set(id, via)
      return false
    }
    if (method === 'notifications/progress') {
      const params = isObject(message.params) ? message.params : undefined
      const token = params?.progressToken
      const call = typeof token === 'string' ? this.progress.get(token) : undefined
      if (call === undefined || params === undefined) return false
      call.onProgress(params)
      return true
    }
    if (method === 'notifications/resources/updated' && this.onResourceUpdated !== undefined) {
      // Taken here, not through the SDK client's notification handler: that path schema-parses and
      // copies every message, and a flooding upstream made its garbage the daemon's RSS.
      const uri = isObject(message.params) ? message.params.uri : undefined
      if (typeof uri === 'string') this.onResourceUpdated(uri)
      return true
    }
    if (method === 'notifications/message') {
      this.routeNotification(isObject(message.params) ? { method, params: message.params } : { method: method as string }, via)
      return true
    }
    if (method === 'notifications/elicitation/complete') {
      this.completeElicitation(isObject(message.params) ? message.params : {})
      return true
    }
    if (method === 'notifications/tasks/status') {
      // The Tasks extension (SEP-2663 › Task Status Notifications): request-scoped, on the SSE
      // stream of a tasks/get; routed like a log line to the call it belongs to, whose client
      // stream carries it on (lib/dispatch/tasks.ts). 2025-11-25: unsolicited, to the task's creator.
      if (this.era === 'modern') {
        this.routeNotification(isObject(message.params) ? { method, params: message.params } : { method }, via, 'task')
        return true
      }
      if (this.onTaskStatus === undefined) return false
      if (isObject(message.params)) this.onTaskStatus(message.params)
      return true
    }
    return false
  }

  /**
   * An upstream's `notifications/elicitation/complete` (2025-11-25): to the call that relayed the
   * URL-mode elicitation it names, while that call is in flight (its client's stream); otherwise
   * dropped (debug), never guessed. Never throws.
   */
  private completeElicitation (params: JsonObject): void {
    const id = params.elicitationId
    const call = typeof id === 'string' ? this.urlElicitations.get(id) : undefined
    if (typeof id === 'string') this.urlElicitations.delete(id)
    const onNotification = call === undefined || call.done ? undefined : call.options.onNotification
    if (onNotification === undefined) {
      this.logger.debug({ ...this.logFields, elicitationId: typeof id === 'string' ? id : undefined }, 'elicitation complete for no call in flight: dropped')
      return
    }
    try {
      onNotification({ method: 'notifications/elicitation/complete', params })
    } catch (error) {
      this.logger.debug({ ...this.logFields, err: error }, 'onNotification threw')
    }
  }

  /**
   * A request-scoped notification to the call it belongs to, found as for questions (see
   * answerQuestion). None → dropped (debug); not tied to one call → dropped and counted.
   */
  private routeNotification (notification: { method: string, params?: JsonObject }, via: UpstreamCall | undefined, kind: 'log' | 'task' = 'log'): void {
    const found = this.owning(via, 'onNotification')
    if (found === 'ambiguous') {
      this.unrouted(kind)
      return
    }
    const onNotification = found?.options.onNotification
    if (onNotification === undefined) {
      this.logger.debug({ ...this.logFields, method: notification.method }, 'upstream notification with no call to take it: dropped')
      return
    }
    try {
      onNotification(notification)
    } catch (error) {
      this.logger.debug({ ...this.logFields, err: error }, 'onNotification threw')
    }
  }

  /** How many callers' calls (not the connection's own lists and subscriptions) are in flight. */
  private callerCalls (): number {
    let count = 0
    for (const call of this.calls.values()) if (!call.setup) count++
    return count
  }

  /**
   * The call a question or log line belongs to: `via` (the call whose reply stream carried it)
   * while it runs; else, when the callers' calls in flight all serve one owner, that owner's most
   * recently started call that has `key` (undefined when none has it); `'ambiguous'` when calls of
   * several owners, or several calls without an owner, are in flight.
   */
  private owning (via: UpstreamCall | undefined, key: 'onQuestion' | 'onNotification'): UpstreamCall | 'ambiguous' | undefined {
    if (via !== undefined && !via.done) return via
    let target: UpstreamCall | undefined
    let owner: string | undefined
    let count = 0
    for (const call of this.calls.values()) {
      if (call.setup) continue
      const callOwner = call.options.owner
      if (count++ === 0) owner = callOwner
      else if (owner === undefined || callOwner !== owner) return 'ambiguous'
      if (call.options[key] !== undefined && (target === undefined || call.startedAt >= target.startedAt)) target = call
    }
    return target
  }

  /** MCP-Protocol-Version, Mcp-Method, Mcp-Name and Mcp-Param-* of a modern HTTP request (DIGEST §6d). */
  private modernHeaders (method: string, params: JsonObject, tool: JsonObject | undefined): Record<string, string> {
    const headers: Record<string, string> = { 'mcp-protocol-version': this.revision, 'mcp-method': method }
    const field = NAME_FIELD.get(method)
    const name = field === undefined ? undefined : params[field]
    if (typeof name === 'string') headers['mcp-name'] = encodeHeaderValue(name)
    if (tool !== undefined && method === 'tools/call') {
      const mirrored = buildParamHeaders(tool.inputSchema, params.arguments)
      for (const header of Object.keys(mirrored)) headers[header.toLowerCase()] = mirrored[header]
    }
    return headers
  }

  /**
   * Ends the connection, letting the cancels already sent reach the upstream first:
   * stdio closes the child's stdin once they are flushed and gives it EOF_GRACE_MS to exit before
   * SIGTERM (SIGKILL after `killGraceMs`); legacy HTTP lets their POSTs finish, at most
   * EOF_GRACE_MS. Then closes the client. Never rejects.
   */
  async dispose (killGraceMs: number): Promise<void> {
    const transport = this.transport
    if (transport instanceof StdioUpstreamTransport) await transport.kill(killGraceMs)
    else if (this.cancelsInFlight.size > 0) {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([Promise.all(this.cancelsInFlight), new Promise(resolve => { timer = setTimeout(resolve, EOF_GRACE_MS) })])
      clearTimeout(timer)
    }
    try { await this.client.close() } catch {}
    if (transport instanceof StdioUpstreamTransport) await transport.exited
  }
}
