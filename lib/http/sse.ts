/**
 * Server-Sent Events framing for /mcp (DIGEST §3d rules 7–12, §6c rule 9). Events carry no ids
 * (mcpx offers no resumption: seed › 2026-07-28 › "No Last-Event-ID, no SSE event ids"). Each
 * stream sends a `:` comment every keep-alive interval, so proxies keep it open.
 *
 * {@link StreamSlots} is the one tracker of long-lived streams (legacy GET streams and
 * 2026-07-28 `subscriptions/listen` streams): their cap, their count and their end at shutdown.
 */
import type { ServerResponse } from 'node:http'
import { encodeMessage, type JsonRpcMessage } from '../protocol/jsonrpc.js'
import type { OpenStream } from '../connection/peer.js'
import { DEFAULT_FLOW_POLICY, OutboundFlow, type FlowPolicy, type FlowStream } from '../connection/flow.js'

/** Headers of every SSE response mcpx sends. `X-Accel-Buffering: no` stops nginx buffering it. */
export const SSE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no'
})

/** The keep-alive comment frame, built once. */
export const KEEP_ALIVE_FRAME = ': keep-alive\n\n'

/** One SSE event carrying one JSON-RPC message (or batch). */
export function sseEvent (message: JsonRpcMessage | JsonRpcMessage[]): string {
  return 'event: message\ndata: ' + encodeMessage(message) + '\n\n'
}

/** The longest delay setTimeout honours, ms (2^31-1); a longer one fires at once. */
const MAX_TIMER_MS = 2_147_483_647

/** Options of an {@link SseStream}. */
export interface SseStreamOptions {
  /** Interval of keep-alive comments, ms (0 disables; transport.sseKeepAlive). */
  keepAliveMs: number
  /** Headers to add (CORS, Mcp-Session-Id). */
  headers?: Record<string, string | number | string[]>
  /** The outgoing-stream limits (lib/connection/flow.ts; transport.streamBufferBytes/MaxBytes). Default: {@link DEFAULT_FLOW_POLICY}. */
  flow?: FlowPolicy
  /** Which stream this is, for the flow's metric and log line. Default `reply`. */
  kind?: FlowStream
}

/**
 * An open SSE response. Owns its keep-alive timer (unref'd) and stops writing once the
 * response is closed from either side. Every event goes through one {@link OutboundFlow}
 * (a high-water mark on every outgoing stream): backpressure, coalescing and dropping past transport.streamBufferBytes, and past
 * transport.streamBufferMaxBytes the response is destroyed (the client sees its stream end and can
 * reconnect; {@link onOverflow} callbacks run first, so a reply's call is cancelled upstream).
 */
export class SseStream implements OpenStream {
  private timer: NodeJS.Timeout | undefined
  private expiry: NodeJS.Timeout | undefined
  private ended = false
  private ending = false
  private overflowed = false
  private readonly flow: OutboundFlow
  private readonly overflowHandlers: Array<() => void> = []
  /** Resolves when the stream is closed, by us or by the peer. */
  readonly closed: Promise<void>
  private resolveClosed!: () => void

  /**
   * @param res a response whose head has NOT been written yet
   * @param options keep-alive (ms), extra headers, flow policy and stream kind
   */
  constructor (private readonly res: ServerResponse, options: SseStreamOptions) {
    this.closed = new Promise(resolve => { this.resolveClosed = resolve })
    // setHeader, not writeHead(status, headers): headers given only to writeHead are invisible to
    // res.getHeader() (and to Fastify's onSend/onResponse consumers of the raw response).
    for (const [name, value] of Object.entries({ ...options.headers, ...SSE_HEADERS })) res.setHeader(name, value)
    res.writeHead(200)
    res.flushHeaders()
    res.on('close', () => this.finish())
    this.flow = new OutboundFlow(res, sseEvent, options.flow ?? DEFAULT_FLOW_POLICY, options.kind ?? 'reply', () => this.overflow())
    const keepAliveMs = options.keepAliveMs
    if (keepAliveMs > 0) {
      // A backed-up stream needs no keep-alive: bytes are waiting to go out on it anyway.
      this.timer = setInterval(() => { if (!this.ended && !this.ending) this.flow.keepAlive(KEEP_ALIVE_FRAME) }, keepAliveMs)
      this.timer.unref()
    }
  }

  /** True once closed (or closing: nothing more is accepted). */
  get isClosed (): boolean { return this.ended || this.ending }

  /** True when the stream was ended past transport.streamBufferMaxBytes. */
  get wasOverflowed (): boolean { return this.overflowed }

  /** Bytes waiting to go out on this stream (held by the response plus queued). */
  get bufferedBytes (): number { return this.flow.bufferedBytes }

  /** Runs `fn` if the stream is ended past its hard limit, before the response is destroyed. */
  onOverflow (fn: () => void): void { this.overflowHandlers.push(fn) }

  /**
   * Ends the stream at `atMs` (ms since the epoch) as {@link close} does, when the credential it
   * was opened with expires (lib/auth/principal.ts expiresAtOf): the client reconnects with a fresh
   * token. A time already past ends it at once. Timers hold at most ~24.8 days (2^31-1 ms), so a
   * later time is re-armed until it arrives. The timer is unref'd and cleared when the stream ends.
   */
  closeAt (atMs: number): void {
    if (this.ended || this.ending) return
    if (this.expiry !== undefined) clearTimeout(this.expiry)
    const wait = atMs - Date.now()
    if (wait <= 0) { this.close(); return }
    this.expiry = setTimeout(() => { this.expiry = undefined; this.closeAt(atMs) }, Math.min(wait, MAX_TIMER_MS))
    this.expiry.unref()
  }

  /**
   * Hands one message to the stream's flow (written, queued, coalesced, or a log line dropped past
   * the mark). Returns false when it goes nowhere: the stream is closed or just overflowed.
   */
  send (message: JsonRpcMessage | JsonRpcMessage[]): boolean {
    if (this.ended || this.ending) return false
    return this.flow.send(message)
  }

  /** Ends the stream once every queued event is out (idempotent). A response is never dropped. */
  close (): void {
    if (this.ended || this.ending) return
    this.ending = true
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
    void this.flow.idle().then(() => {
      if (!this.res.destroyed && !this.res.writableEnded) this.res.end()
      this.finish()
    })
  }

  /**
   * Ends the stream at shutdown: its final chunk (a clean end, not a reset), then its connection,
   * since an idle keep-alive socket would hold the HTTP server's close. Events still queued are
   * discarded (a client that is not reading would otherwise hold the shutdown). Resolves once the
   * response has closed. Never rejects.
   */
  async shutdown (): Promise<void> {
    if (this.res.writableEnded || this.res.destroyed) return
    const backedUp = this.flow.backedUp
    this.flow.stop()
    if (backedUp) {
      // The client is not reading: a clean end would wait on it. Reset the connection.
      this.res.destroy()
      this.finish()
      return
    }
    const socket = this.res.socket
    await new Promise<void>(resolve => {
      this.res.once('close', () => resolve())
      this.res.end(() => { socket?.end() })
    })
  }

  private overflow (): void {
    this.overflowed = true
    for (const fn of this.overflowHandlers) {
      try { fn() } catch { /* an owner's handler must not stop the end */ }
    }
    // The client stops reading: ending cleanly would wait on it forever. Reset the connection.
    this.res.destroy()
    this.finish()
  }

  private finish (): void {
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
    if (this.expiry !== undefined) clearTimeout(this.expiry)
    this.expiry = undefined
    this.flow.stop()
    if (!this.ended) {
      this.ended = true
    }
    this.resolveClosed()
  }
}

/** Kinds of long-lived streams. */
export type StreamKind = 'get' | 'listen'

/**
 * The long-lived SSE streams of one /mcp scope (legacy GET notification streams and 2026-07-28
 * subscriptions/listen streams): one cap for both, transport.maxGetStreams, "most streams open at
 * once"; a count per kind (metrics); and their end at shutdown. One instance per scope (the
 * mcpx-streams plugin), shared by GET and POST. Never throws.
 */
export class StreamSlots {
  private claimed = 0
  private readonly open: Record<StreamKind, Set<SseStream>> = { get: new Set(), listen: new Set() }
  /** @param max the cap (transport.maxGetStreams), streams */
  constructor (readonly max: number) {}
  /** True when no slot is free. */
  get full (): boolean { return this.claimed >= this.max }
  /** Takes a slot; false (nothing taken) when none is free. */
  claim (): boolean {
    if (this.claimed >= this.max) return false
    this.claimed++
    return true
  }

  /** Gives back a slot taken by {@link claim}. */
  release (): void { if (this.claimed > 0) this.claimed-- }

  /** Records an open stream (in a claimed slot) until it closes. */
  track (kind: StreamKind, stream: SseStream): void {
    const set = this.open[kind]
    set.add(stream)
    void stream.closed.then(() => set.delete(stream))
  }

  /** Open streams of a kind. */
  count (kind: StreamKind): number {
    let n = 0
    for (const stream of this.open[kind]) if (!stream.isClosed) n++
    return n
  }

  /** Ends every open stream ({@link SseStream.shutdown}); resolves with how many, once all have closed. */
  async shutdown (): Promise<number> {
    const ending: Array<Promise<void>> = []
    for (const set of Object.values(this.open)) for (const stream of set) if (!stream.isClosed) ending.push(stream.shutdown())
    await Promise.all(ending)
    return ending.length
  }
}
