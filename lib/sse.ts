/**
 * Server-Sent Events framing for /mcp (DIGEST §3d rules 7–12, §6c rule 9). Events carry no ids
 * (mcpx offers no resumption: seed › 2026-07-28 › "No Last-Event-ID, no SSE event ids"). Each
 * stream sends a `:` comment every keep-alive interval, so proxies keep it open.
 */
import type { ServerResponse } from 'node:http'
import { encodeMessage, type JsonRpcMessage } from './jsonrpc.js'

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

/**
 * An open SSE response. Owns its keep-alive timer (unref'd) and stops writing once the
 * response is closed from either side.
 */
export class SseStream {
  private timer: NodeJS.Timeout | undefined
  private ended = false
  /** Resolves when the stream is closed, by us or by the peer. */
  readonly closed: Promise<void>
  private resolveClosed!: () => void

  /**
   * @param res a response whose head has NOT been written yet
   * @param keepAliveMs interval of keep-alive comments, ms (0 disables)
   * @param extraHeaders headers to add (CORS, Mcp-Session-Id)
   */
  constructor (private readonly res: ServerResponse, keepAliveMs: number, extraHeaders: Record<string, string | number | string[]> = {}) {
    this.closed = new Promise(resolve => { this.resolveClosed = resolve })
    // setHeader, not writeHead(status, headers): headers given only to writeHead are invisible to
    // res.getHeader(), and mcpx-streams recognises an open stream by its content-type when it ends
    // streams at shutdown (without this a listen stream held app.close() open).
    for (const [name, value] of Object.entries({ ...extraHeaders, ...SSE_HEADERS })) res.setHeader(name, value)
    res.writeHead(200)
    res.flushHeaders()
    res.on('close', () => this.finish())
    if (keepAliveMs > 0) {
      this.timer = setInterval(() => { if (!this.ended) res.write(KEEP_ALIVE_FRAME) }, keepAliveMs)
      this.timer.unref()
    }
  }

  /** True once closed. */
  get isClosed (): boolean { return this.ended }

  /** Writes one message as an event; a no-op once closed. Returns false when it was not written. */
  send (message: JsonRpcMessage | JsonRpcMessage[]): boolean {
    if (this.ended) return false
    this.res.write(sseEvent(message))
    return true
  }

  /** Ends the stream (idempotent). */
  close (): void {
    if (this.ended) return
    this.res.end()
    this.finish()
  }

  private finish (): void {
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
    if (!this.ended) {
      this.ended = true
    }
    this.resolveClosed()
  }
}
