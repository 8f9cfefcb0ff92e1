/**
 * The Streamable HTTP transport of an upstream. Two paths share one session:
 * - The SDK's `StreamableHTTPClientTransport` (subclassed) carries the connection's own traffic: the
 *   handshake (era probe, `initialize`, `Mcp-Session-Id`), the GET stream for server notifications,
 *   `subscriptions/listen` streams, answers to the upstream's questions, and `notifications/cancelled`.
 * - Calls go through {@link HttpUpstreamTransport.post}: one POST on an undici `Pool` with keep-alive,
 *   driven by a dispatch handler (no `fetch`, no web streams, no per-call AbortController). A JSON
 *   reply is parsed once; an SSE reply is parsed as it streams, so progress, log lines and questions
 *   that precede the response reach the call in order.
 * Every message either path receives goes to `onmessage` (which connection.ts wraps so a call's
 * own messages are taken first).
 * Sources: DIGEST §6c (HTTP upstreams), §6d (mirrored headers); MCP Streamable HTTP transport.
 */
import { Pool, type Dispatcher } from 'undici'
import { StreamableHTTPClientTransport, type JSONRPCMessage } from '@modelcontextprotocol/client'
import { UPSTREAM_ERROR, isObject, UpstreamRpcError } from '../protocol/jsonrpc.js'
import { redactText } from '../base/redact.js'
import type { UpstreamCall } from './call.js'
import { LineSplitter, recoverResponseId, type LineSink } from '../protocol/lines.js'
import { DEFAULT_MAX_MESSAGE_BYTES } from './config.js'
import type { UpstreamHeaderProvider } from './contract.js'

/** How long an idle keep-alive socket to an HTTP upstream is kept (ms). */
export const HTTP_KEEP_ALIVE_MS = 30_000

/**
 * The config's `headers` as a flat undici header list (`[name, value, …]`, names lowercased), then
 * `content-type` and `accept`. Each call copies it ({@link setHeader} keeps one entry per name).
 */
function baseHeaderList (headers: Record<string, string> | undefined): string[] {
  const list: string[] = []
  if (headers !== undefined) for (const name of Object.keys(headers)) setHeader(list, name.toLowerCase(), headers[name])
  const configured = headerValue(list, 'accept')
  const accept = configured === undefined ? [] : configured.split(',').map(s => s.trim().toLowerCase())
  setHeader(list, 'accept', [...new Set([...accept, 'application/json', 'text/event-stream'])].join(', '))
  setHeader(list, 'content-type', 'application/json')
  return list
}

/**
 * Sets `name` (lowercase) to `value` in a flat header list: the entry's value when the name is
 * there, else a new entry at the end. A call's list holds a handful of names, so a scan is cheap.
 * Why a list: the object this replaced (`{ ...base }`, then `Object.assign` of the call's own
 * headers) made V8 create a new hidden class (map) on every call (perf: `Factory::NewMap` under
 * `ObjectAssign`), about a tenth of the HTTP upstream path's CPU; copying a list makes none.
 */
function setHeader (list: string[], name: string, value: string): void {
  for (let i = 0; i < list.length; i += 2) {
    if (list[i] === name) { list[i + 1] = value; return }
  }
  list.push(name, value)
}

/** The value of `name` (lowercase) in a flat header list, or undefined. */
function headerValue (list: string[], name: string): string | undefined {
  for (let i = 0; i < list.length; i += 2) if (list[i] === name) return list[i + 1]
  return undefined
}

/**
 * The SDK transport's `authProvider` for the connection's own traffic (handshake, GET and listen
 * streams): the header provider asked with `own: true`, its `authorization` as the bearer token;
 * after a 401 it is asked again with `afterUnauthorized` and the SDK retries once.
 */
function ownTrafficAuth (upstream: string, provider: UpstreamHeaderProvider): { token: () => Promise<string | undefined>, onUnauthorized: () => Promise<void> } {
  const bearer = (headers: Record<string, string> | undefined): string | undefined => {
    const value = headers?.authorization ?? headers?.Authorization
    return value === undefined ? undefined : value.replace(/^Bearer\s+/i, '')
  }
  return {
    token: async () => bearer(await provider({ upstream, principal: undefined, own: true, afterUnauthorized: false })),
    onUnauthorized: async () => { await provider({ upstream, principal: undefined, own: true, afterUnauthorized: true }) }
  }
}

/** The SDK Streamable HTTP transport plus a lean POST path for calls (see module comment). */
export class HttpUpstreamTransport extends StreamableHTTPClientTransport {
  private readonly pool: Pool
  private readonly path: string
  /** config headers + content-type + accept, a flat list with lowercase names: copied per call. */
  private readonly baseHeaders: string[]
  /**
   * A message of a call's reply over `maxMessageBytes` was skipped (a JSON body, or one SSE event):
   * its size (bytes; `atLeast` when the body was cut before its end and had no Content-Length), and
   * the id of the response it carried when known (a JSON body: the call's).
   */
  onoversized?: (bytes: number, id: string | number | undefined, atLeast?: boolean) => void

  /**
   * @param url the upstream's endpoint
   * @param headers the config's `headers`, sent on every request
   * @param upstream the upstream's name, for error messages
   * @param headerProvider per-call headers (see UpstreamHeaderProvider), or undefined
   * @param maxMessageBytes bound of one message of a call's reply (a JSON body, an SSE event), bytes
   */
  constructor (url: URL, headers: Record<string, string> | undefined, readonly upstream: string, readonly headerProvider: UpstreamHeaderProvider | undefined,
    readonly maxMessageBytes = DEFAULT_MAX_MESSAGE_BYTES) {
    super(url, { requestInit: { headers: headers ?? {} }, ...(headerProvider !== undefined ? { authProvider: ownTrafficAuth(upstream, headerProvider) } : {}) })
    this.path = url.pathname + url.search
    this.pool = new Pool(url.origin, { keepAliveTimeout: HTTP_KEEP_ALIVE_MS, headersTimeout: 0, bodyTimeout: 0 })
    this.baseHeaders = baseHeaderList(headers)
  }

  /**
   * POSTs one call's request. Its response (and anything before it on an SSE reply) is handed to
   * `onmessage`; an HTTP failure fails the call (UPSTREAM_ERROR), except a modern 400 carrying the
   * call's JSON-RPC error, which is delivered as that error. Never throws.
   * @param body the serialised request
   * @param headers the call's own headers (modern: mirrored headers), lowercase names
   * @param modern whether the request carries the 2026-07-28 envelope (cancellation closes the stream)
   */
  post (call: UpstreamCall, body: string, headers: Record<string, string> | undefined, modern: boolean, afterUnauthorized = false, challenge?: string): void {
    const provider = this.headerProvider
    if (provider === undefined) { this.dispatchPost(call, body, headers, this.headersFor(undefined, headers, modern), modern, afterUnauthorized); return }
    // The connection's own calls (lists, subscriptions) ask for mcpx's own credentials (`own`).
    const request = call.setup
      ? { upstream: this.upstream, principal: undefined, own: true, afterUnauthorized }
      : { upstream: this.upstream, principal: call.options.principal, afterUnauthorized }
    provider(challenge === undefined ? request : { ...request, challenge }).then(
      extra => { if (!call.done) this.dispatchPost(call, body, headers, this.headersFor(extra, headers, modern), modern, afterUnauthorized) },
      (error: unknown) => call.fail(new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.upstream}: ${call.method} failed: request headers: ${redactText((error as Error).message)}`))
    )
  }

  override async close (): Promise<void> {
    await super.close()
    await this.pool.destroy().catch(() => {})
  }

  /**
   * Request headers, a flat undici list (`[name, value, …]`, lowercase names, one entry per name):
   * config, then the provider's (never content-type, accept or mcp-*), then the ones mcpx owns
   * (session, legacy protocol version, the call's own), each overriding the ones before.
   */
  private headersFor (extra: Record<string, string> | undefined, own: Record<string, string> | undefined, modern: boolean): string[] {
    const headers = this.baseHeaders.slice()
    if (extra !== undefined) {
      for (const name of Object.keys(extra)) {
        const lower = name.toLowerCase()
        if (lower !== 'content-type' && lower !== 'accept' && !lower.startsWith('mcp-')) setHeader(headers, lower, extra[name])
      }
    }
    const session = this.sessionId
    if (session !== undefined) setHeader(headers, 'mcp-session-id', session)
    // The SDK sets protocolVersion after a legacy initialize; modern requests carry their own (body-derived).
    const version = this.protocolVersion
    if (!modern && version !== undefined) setHeader(headers, 'mcp-protocol-version', version)
    if (own !== undefined) for (const name of Object.keys(own)) setHeader(headers, name, own[name])
    return headers
  }

  private dispatchPost (call: UpstreamCall, body: string, own: Record<string, string> | undefined, headers: string[], modern: boolean, afterUnauthorized: boolean): void {
    try {
      this.pool.dispatch({ path: this.path, method: 'POST', headers, body }, new CallReply(this, call, body, own, modern, afterUnauthorized))
    } catch (error) {
      call.fail(new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.upstream}: ${call.method} failed: ${redactText((error as Error).message)}`))
    }
  }

  /**
   * The call whose reply stream carried the message being delivered, while `onmessage` runs (so
   * the link can tie a question or a log line on that stream to exactly that call, never guessed).
   */
  replyCall: UpstreamCall | undefined = undefined

  /** Hands one message of `call`'s reply on (connection.ts routes it). */
  deliver (message: unknown, call: UpstreamCall): void {
    if (!isObject(message)) return
    this.replyCall = call
    try {
      this.onmessage?.(message as JSONRPCMessage)
    } finally {
      this.replyCall = undefined
    }
  }
}

/** Reads one call's HTTP reply: JSON (whole body) or SSE (event by event). undici dispatch handler. */
class CallReply implements Dispatcher.DispatchHandler {
  private status = 0
  private mode: 'json' | 'sse' | 'error' | 'retry' | 'ignore' = 'ignore'
  private chunks: Buffer[] = []
  private received = 0
  private sse: SseReader | undefined
  private challenge: string | undefined
  /** Bytes of an SSE event skipped for its size whose id could not be read (named if the response never comes). */
  private skippedEventBytes = 0

  constructor (
    private readonly transport: HttpUpstreamTransport,
    private readonly call: UpstreamCall,
    private readonly body: string,
    private readonly own: Record<string, string> | undefined,
    private readonly modern: boolean,
    private readonly afterUnauthorized: boolean
  ) {}

  onRequestStart (controller: Dispatcher.DispatchController): void {
    if (this.call.done) { controller.abort(new Error('call settled')); return }
    this.call.httpRequest = controller
  }

  onResponseStart (controller: Dispatcher.DispatchController, status: number, headers: Record<string, string | string[] | undefined>): void {
    this.status = status
    const type = String(headers['content-type'] ?? '').split(';')[0].trim().toLowerCase()
    if (status === 401 && this.transport.headerProvider !== undefined && !this.afterUnauthorized) {
      this.mode = 'retry'
      const challenge = headers['www-authenticate']
      this.challenge = Array.isArray(challenge) ? challenge.join(', ') : challenge
    } else if (status < 200 || status >= 300) this.mode = 'error'
    else if (status === 202) this.mode = 'ignore'
    else if (type === 'text/event-stream') { this.mode = 'sse'; this.sse = new SseReader(this.transport, this, this.call) }
    else if (type === 'application/json') this.mode = 'json'
    else this.fail(`Unexpected content type: ${type}`)
    const declared = Number(headers['content-length'])
    if ((this.mode === 'json' || this.mode === 'error') && declared > this.transport.maxMessageBytes) this.tooLarge(controller, declared, false)
  }

  onResponseData (controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.mode === 'sse') this.sse?.push(chunk)
    else if (this.mode === 'json' || this.mode === 'error') {
      this.received += chunk.length
      if (this.received > this.transport.maxMessageBytes) { this.tooLarge(controller, this.received, true); return }
      this.chunks.push(chunk)
    }
  }

  /**
   * A JSON (or error) body over maxMessageBytes: reported (the link fails the call naming both
   * sizes), its request aborted. Only this call's request is affected.
   */
  private tooLarge (controller: Dispatcher.DispatchController, bytes: number, atLeast: boolean): void {
    this.mode = 'ignore'
    this.chunks = []
    this.transport.onoversized?.(bytes, this.call.id, atLeast)
    if (!this.call.done) this.fail(`its reply is ${atLeast ? 'more than ' : ''}${bytes} bytes, over maxMessageBytes (${this.transport.maxMessageBytes})`)
    controller.abort(new Error('reply over maxMessageBytes'))
  }

  /** An SSE event of this reply was skipped for its size (SseReader); `id` when its edges told it. */
  oversizedEvent (bytes: number, id: string | number | undefined): void {
    if (id === undefined) this.skippedEventBytes = bytes
    this.transport.onoversized?.(bytes, id)
  }

  onResponseEnd (): void {
    const call = this.call
    this.call.httpRequest = undefined
    if (this.mode === 'retry') { if (!call.done) this.transport.post(call, this.body, this.own, this.modern, true, this.challenge); return }
    if (this.mode === 'json') {
      let data: unknown
      // One chunk (a small reply) is read in place, not copied by Buffer.concat first.
      const body = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.received)
      try { data = JSON.parse(body.toString('utf8')) } catch { this.fail('the reply is not JSON'); return }
      if (Array.isArray(data)) for (const message of data) this.transport.deliver(message, call)
      else this.transport.deliver(data, call)
    } else if (this.mode === 'error') {
      const text = Buffer.concat(this.chunks).toString('utf8')
      if (this.status === 400 && this.modern) {
        // A modern upstream's JSON-RPC error for this request arrives with 400 (SEP-2243): deliver it.
        try {
          const parsed: unknown = JSON.parse(text)
          if (isObject(parsed) && parsed.id === call.id && isObject(parsed.error)) { this.transport.deliver(parsed, call); return }
        } catch {}
      }
      this.fail(`Error POSTing to endpoint: ${text}`)
      return
    } else if (this.mode === 'sse') this.sse?.end()
    // A 202, or a stream that ended without the response: the call waits for its timeout, as with the SDK transport.
    if (!call.done && this.mode === 'sse') {
      this.fail(this.skippedEventBytes > 0
        ? `the SSE stream ended without the response after an event of ${this.skippedEventBytes} bytes, over maxMessageBytes (${this.transport.maxMessageBytes}), was skipped`
        : 'the SSE stream ended before the response')
    }
  }

  onResponseError (_controller: Dispatcher.DispatchController, error: Error): void {
    this.call.httpRequest = undefined
    this.fail(error.message)
  }

  private fail (reason: string): void {
    this.mode = 'ignore'
    const call = this.call
    call.fail(new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${call.upstream}: ${call.method} failed: ${redactText(reason)}`))
  }
}

/**
 * A minimal server-sent-events reader (WHATWG HTML › Server-sent events › parsing): `data:` lines
 * joined by '\n', dispatched on a blank line for events named `message` (or unnamed); `id:`,
 * `retry:` and comments are ignored. Each event's data is one JSON-RPC message (or a batch).
 * Bounded: a line, or an event's data, over the transport's maxMessageBytes is skipped
 * to the event's end without being buffered whole, and reported to the call's reply.
 */
class SseReader implements LineSink {
  private readonly lines: LineSplitter
  private data: Buffer[] = []
  private dataBytes = 0
  private hasData = false
  private event = ''
  /** The current event is being skipped for its size: its bytes so far, and the id its data line told. */
  private skipping = false
  private skippedBytes = 0
  private skippedId: string | number | undefined = undefined

  constructor (private readonly transport: HttpUpstreamTransport, private readonly reply: CallReply, private readonly call: UpstreamCall) {
    this.lines = new LineSplitter(transport.maxMessageBytes, this)
  }

  push (chunk: Buffer): void {
    this.lines.push(chunk)
  }

  end (): void {
    this.lines.end()
    this.line(EMPTY_LINE, 0, 0)
  }

  /** One line (LineSink). */
  line (bytes: Buffer, start: number, end: number): void {
    if (end > start && bytes[end - 1] === 0x0d) end--
    if (end === start) { this.dispatch(); return }
    if (bytes[start] === 0x3a) return // a comment
    let colon = bytes.indexOf(0x3a, start)
    if (colon === -1 || colon >= end) colon = end
    const field = bytes.toString('latin1', start, colon)
    let value = colon === end ? end : colon + 1
    if (value < end && bytes[value] === 0x20) value++
    if (field === 'event') { this.event = bytes.toString('utf8', value, end); return }
    if (field !== 'data') return
    const size = end - value + (this.hasData ? 1 : 0)
    if (this.skipping || this.dataBytes + size > this.transport.maxMessageBytes) {
      this.skip(this.dataBytes + size, undefined)
      return
    }
    if (this.hasData) this.data.push(NEWLINE_BYTE)
    this.data.push(bytes.subarray(value, end))
    this.dataBytes += size
    this.hasData = true
  }

  /** A line over the bound (LineSink): a `data:` line makes its event skipped; any other is dropped. */
  oversized (bytes: number, head: Buffer, tail: Buffer): void {
    if (head.toString('latin1', 0, 5) !== 'data:') return
    const valueStart = head[5] === 0x20 ? 6 : 5
    this.skip(this.dataBytes + bytes - valueStart, recoverResponseId(head.subarray(valueStart), tail))
  }

  private skip (bytes: number, id: string | number | undefined): void {
    if (!this.skipping) { this.skipping = true; this.skippedBytes = 0 }
    this.skippedBytes += bytes
    this.skippedId ??= id
    this.data = []
    this.dataBytes = 0
  }

  private dispatch (): void {
    const event = this.event
    this.event = ''
    if (this.skipping) {
      const bytes = this.skippedBytes
      const id = this.skippedId
      this.skipping = false
      this.skippedBytes = 0
      this.skippedId = undefined
      this.hasData = false
      if (event === '' || event === 'message') this.reply.oversizedEvent(bytes, id)
      return
    }
    if (!this.hasData) return
    const data = Buffer.concat(this.data, this.dataBytes).toString('utf8')
    this.data = []
    this.dataBytes = 0
    this.hasData = false
    if (event !== '' && event !== 'message') return
    let message: unknown
    try { message = JSON.parse(data) } catch { return }
    if (Array.isArray(message)) for (const m of message) this.transport.deliver(m, this.call)
    else this.transport.deliver(message, this.call)
  }
}

const EMPTY_LINE = Buffer.alloc(0)
const NEWLINE_BYTE = Buffer.from('\n')
