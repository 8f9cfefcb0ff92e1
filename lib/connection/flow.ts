/**
 * Flow control of every outgoing stream to a client (a high-water mark on every
 * outgoing stream): SSE replies to POSTs, legacy GET streams, `subscriptions/listen` streams and
 * stdout in `mcpx serve` all write through one {@link OutboundFlow}. The policy lives here, once:
 *
 * - Every write honours backpressure: after `write()` returns false nothing more is handed to the
 *   transport until its `drain` event; frames wait in a queue, in order.
 * - Below the high-water mark (`transport.streamBufferBytes`, bytes waiting in the transport plus
 *   the queue) every frame is kept.
 * - Past the mark:
 *   - a `notifications/progress` replaces the one still queued for the same progressToken (the
 *     client gets the latest value, in the older one's place); `notifications/resources/updated`
 *     (per URI) and `notifications/…/list_changed` (per method) are coalesced the same way, as they
 *     carry no more than "this changed";
 *   - a `notifications/message` (a log line) is dropped and counted;
 *   - everything else (responses, questions to the client, other notifications) is queued.
 * - Past the hard limit (`transport.streamBufferMaxBytes`) a frame that is not a response ends the
 *   stream (the owner ends the connection; a client can reconnect). A response is never dropped
 *   and never ends a stream: it waits for `drain` like any queued frame.
 *
 * Nothing here knows HTTP or stdio: the owner passes the transport (a Node Writable or an HTTP
 * ServerResponse), the frame encoder and what to do when the stream overflows.
 */
import type { JsonRpcMessage } from '../protocol/jsonrpc.js'
import type { Logger } from '../telemetry/log.js'
import { META_SUBSCRIPTION_ID } from '../protocol/inbound.js'

/** Default high-water mark of an outgoing stream, bytes (transport.streamBufferBytes: 1 MiB). */
export const DEFAULT_STREAM_BUFFER_BYTES = 1024 * 1024
/** Default hard limit of an outgoing stream, bytes (transport.streamBufferMaxBytes: 8 MiB). */
export const DEFAULT_STREAM_BUFFER_MAX_BYTES = 8 * 1024 * 1024

/** Which stream a flow writes: an SSE reply to a POST, a legacy GET stream, a listen stream, stdout of `mcpx serve`. */
export type FlowStream = 'reply' | 'get' | 'listen' | 'stdio'

/**
 * What the policy took out of a stream past its mark: a log line dropped, or a notification
 * superseded by a newer one for the same token, URI or list (`progress`, `resource`, `list`).
 */
export type FlowDrop = 'log' | 'progress' | 'resource' | 'list'

/** The limits and observers every flow of one mcpx instance shares (built once from config). */
export interface FlowPolicy {
  /** The high-water mark, bytes (transport.streamBufferBytes). */
  readonly highWaterBytes: number
  /** The hard limit, bytes (transport.streamBufferMaxBytes); at least highWaterBytes. */
  readonly maxBytes: number
  /** Counts what was taken out of a stream (the mcpx_stream_dropped_total metric). Must not throw. */
  readonly dropped?: (stream: FlowStream, what: FlowDrop) => void
  /** Counts a stream ended past its hard limit (mcpx_stream_overflows_total). Must not throw. */
  readonly overflowed?: (stream: FlowStream) => void
  /** Where the one warn line per stream goes. */
  readonly logger?: Logger
}

/** A policy with the default limits and no observers (tests, host apps that pass none). */
export const DEFAULT_FLOW_POLICY: FlowPolicy = Object.freeze({
  highWaterBytes: DEFAULT_STREAM_BUFFER_BYTES,
  maxBytes: DEFAULT_STREAM_BUFFER_MAX_BYTES
})

/**
 * What a flow writes to: a Node Writable (stdout) or an http.ServerResponse. `write` returns
 * false when the caller must wait for `drain`; `writableLength` is the bytes it holds.
 */
export interface FlowTarget {
  write: (chunk: string, callback: (err?: Error | null) => void) => boolean
  readonly writableLength: number
  once: (event: 'drain', listener: () => void) => unknown
  removeListener: (event: 'drain', listener: () => void) => unknown
}

/**
 * A queued frame. `key` is set for coalescable notifications, which keep their `message` and are
 * encoded only when written (a flood replaces them many times: encoding each would be garbage);
 * their `bytes` is the size of the first value encoded in that place (an estimate for later ones).
 */
interface Entry {
  frame: string | undefined
  message: JsonRpcMessage | JsonRpcMessage[] | undefined
  bytes: number
  key: string | undefined
}

/** How a message is treated past the mark. */
type Kind = 'response' | 'log' | 'coalesce' | 'other'

const PROGRESS = 'notifications/progress'
const LOG = 'notifications/message'
const RESOURCE_UPDATED = 'notifications/resources/updated'
const LIST_CHANGED_SUFFIX = '/list_changed'

/**
 * One outgoing stream's flow control (see the module comment). Owned by one SseStream or one
 * stdio writer. No method throws.
 */
export class OutboundFlow {
  private queue: Entry[] = []
  /** Index of the first live entry in {@link queue} (shifting is O(n); the array is compacted on drain). */
  private head = 0
  private queuedBytes = 0
  /** The latest queued entry per coalescing key. */
  private readonly keyed = new Map<string, Entry>()
  /** A write returned false: nothing is written until `drain`. */
  private waiting = false
  /** Writes handed to the target whose callback has not run yet. */
  private unflushed = 0
  private stopped = false
  private warned = false
  private idleWaiters: Array<() => void> = []
  private markWaiters: Array<() => void> = []
  private readonly onDrain = (): void => { this.flush() }
  private readonly onWritten = (): void => {
    this.unflushed--
    if (this.unflushed === 0 && this.queue.length === this.head) this.wakeIdle()
  }

  /** Messages dropped or superseded on this stream (for tests and logs). */
  droppedCount = 0

  /**
   * @param target the transport (stdout, or a ServerResponse whose head is written)
   * @param encode a message to the bytes of one frame (an SSE event, a stdio line)
   * @param policy the limits and observers
   * @param stream which stream this is (metric label, log field)
   * @param overflow called once when a frame would take the stream past its hard limit; the
   *        owner must end the stream. Nothing is written after that.
   */
  constructor (
    private readonly target: FlowTarget,
    private readonly encode: (message: JsonRpcMessage | JsonRpcMessage[]) => string,
    private readonly policy: FlowPolicy,
    readonly stream: FlowStream,
    private readonly overflow: () => void
  ) {}

  /** Bytes waiting to go out: held by the transport plus queued here. */
  get bufferedBytes (): number { return this.target.writableLength + this.queuedBytes }

  /** True while the stream is past its high-water mark (stdio stops reading its input then). */
  get overMark (): boolean { return this.bufferedBytes >= this.policy.highWaterBytes }

  /** True while frames wait for `drain`. */
  get backedUp (): boolean { return this.waiting }

  /**
   * Hands one message to the stream under the policy.
   * @returns true when it was written, queued, coalesced or dropped by policy (a log line past the
   *          mark); false once the flow is stopped (the message goes nowhere). Never throws.
   */
  send (message: JsonRpcMessage | JsonRpcMessage[]): boolean {
    if (this.stopped) return false
    if (!this.waiting) {
      // The hot path: nothing waits, so the frame goes straight to the transport.
      this.write(this.encode(message))
      return !this.stopped
    }
    const kind = kindOf(message)
    const buffered = this.bufferedBytes
    const pastMark = buffered >= this.policy.highWaterBytes
    let key: string | undefined
    if (kind === 'coalesce') {
      key = coalesceKey(message as { method: string, params?: Record<string, unknown> })
      const queued = key === undefined ? undefined : this.keyed.get(key)
      if (pastMark && queued !== undefined) {
        queued.message = message
        queued.frame = undefined
        this.drop(dropOf(message as { method: string }))
        return true
      }
    } else if (kind === 'log' && pastMark) {
      this.drop('log')
      return true
    }
    const frame = this.encode(message)
    if (kind !== 'response' && buffered + frame.length > this.policy.maxBytes) {
      this.stop()
      this.policy.overflowed?.(this.stream)
      this.policy.logger?.warn({ stream: this.stream, bufferedBytes: buffered, streamBufferMaxBytes: this.policy.maxBytes },
        'client not reading: stream ended past transport.streamBufferMaxBytes')
      this.overflow()
      return false
    }
    const entry: Entry = { frame, message: key === undefined ? undefined : message, bytes: frame.length, key }
    this.queue.push(entry)
    this.queuedBytes += entry.bytes
    if (key !== undefined) this.keyed.set(key, entry)
    return true
  }

  /**
   * Writes a frame that may be skipped (an SSE keep-alive comment): only when nothing waits, since
   * a backed-up stream has bytes going out anyway. Never throws.
   */
  keepAlive (frame: string): void {
    if (!this.stopped && !this.waiting) this.write(frame)
  }

  /**
   * Undefined while the stream is under its high-water mark; past it, a promise that resolves at
   * the first `drain` that brings it back under (or when the flow stops). `mcpx serve` awaits it
   * before reading its next input line. Never rejects.
   */
  belowMark (): Promise<void> | undefined {
    // Not waiting for drain: the transport holds less than its own high-water mark (16 KiB), so
    // there is nothing to wait for even when streamBufferBytes is set below that.
    if (this.stopped || !this.waiting || !this.overMark) return undefined
    return new Promise<void>(resolve => { this.markWaiters.push(resolve) })
  }

  /**
   * Resolves once nothing is queued and every frame handed to the transport has been flushed by it
   * (or the flow was stopped). Never rejects.
   */
  async idle (): Promise<void> {
    if (this.stopped || (this.queue.length === this.head && this.unflushed === 0)) return
    await new Promise<void>(resolve => { this.idleWaiters.push(resolve) })
  }

  /** Stops the flow: the queue is discarded and nothing more is written (the stream ended). Idempotent. */
  stop (): void {
    if (this.stopped) return
    this.stopped = true
    this.queue = []
    this.head = 0
    this.queuedBytes = 0
    this.keyed.clear()
    if (this.waiting) this.target.removeListener('drain', this.onDrain)
    this.waiting = false
    this.wakeIdle()
    this.wakeMark()
  }

  private write (frame: string): void {
    this.unflushed++
    let ok: boolean
    try {
      ok = this.target.write(frame, this.onWritten)
    } catch {
      // A destroyed transport; its owner sees 'close' or 'error'.
      this.unflushed--
      this.stop()
      return
    }
    if (!ok && !this.stopped) {
      this.waiting = true
      this.target.once('drain', this.onDrain)
    }
  }

  /** `drain`: writes queued frames until the transport pushes back again or the queue is empty. */
  private flush (): void {
    this.waiting = false
    while (this.head < this.queue.length && !this.waiting && !this.stopped) {
      const entry = this.queue[this.head]
      this.queue[this.head++] = undefined as unknown as Entry
      this.queuedBytes -= entry.bytes
      if (entry.key !== undefined && this.keyed.get(entry.key) === entry) this.keyed.delete(entry.key)
      this.write(entry.frame ?? this.encode(entry.message as JsonRpcMessage))
    }
    if (this.head === this.queue.length) {
      this.queue = []
      this.head = 0
      if (this.unflushed === 0) this.wakeIdle()
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head)
      this.head = 0
    }
    if (this.markWaiters.length > 0 && (!this.waiting || !this.overMark)) this.wakeMark()
  }

  private drop (what: FlowDrop): void {
    this.droppedCount++
    this.policy.dropped?.(this.stream, what)
    if (!this.warned) {
      this.warned = true
      this.policy.logger?.warn({ stream: this.stream, streamBufferBytes: this.policy.highWaterBytes },
        'client not reading fast enough: past transport.streamBufferBytes, log notifications are dropped and progress is coalesced on this stream')
    }
  }

  private wakeMark (): void {
    const waiters = this.markWaiters
    if (waiters.length === 0) return
    this.markWaiters = []
    for (const wake of waiters) wake()
  }

  private wakeIdle (): void {
    const waiters = this.idleWaiters
    if (waiters.length === 0) return
    this.idleWaiters = []
    for (const wake of waiters) wake()
  }
}

/** How a message is treated past the mark. A batch holding a response is a response. */
function kindOf (message: JsonRpcMessage | JsonRpcMessage[]): Kind {
  if (Array.isArray(message)) return message.some(m => !('method' in m)) ? 'response' : 'other'
  if (!('method' in message)) return 'response'
  if ('id' in message) return 'other' // a question to the client
  const method = message.method
  if (method === LOG) return 'log'
  if (method === PROGRESS || method === RESOURCE_UPDATED || method.endsWith(LIST_CHANGED_SUFFIX)) return 'coalesce'
  return 'other'
}

/**
 * The coalescing key of a progress (its token), resources/updated (its URI) or list_changed (its
 * method) notification, with the listen stream's subscriptionId when tagged (several listens share
 * stdout). Undefined when the notification lacks what it would be keyed by.
 */
function coalesceKey (message: { method: string, params?: Record<string, unknown> }): string | undefined {
  const params = message.params
  const meta = params?._meta as Record<string, unknown> | undefined
  const subscription = meta === undefined || meta === null || typeof meta !== 'object' ? '' : stringOf(meta[META_SUBSCRIPTION_ID])
  if (message.method === PROGRESS) {
    const token = params?.progressToken
    return typeof token === 'string' ? `p\0s${token}` : typeof token === 'number' ? `p\0n${token}` : undefined
  }
  if (message.method === RESOURCE_UPDATED) {
    const uri = params?.uri
    return typeof uri === 'string' ? `r\0${subscription}\0${uri}` : undefined
  }
  return `l\0${subscription}\0${message.method}`
}

function stringOf (value: unknown): string {
  return typeof value === 'string' ? 's' + value : typeof value === 'number' ? 'n' + String(value) : ''
}

function dropOf (message: { method: string }): FlowDrop {
  return message.method === PROGRESS ? 'progress' : message.method === RESOURCE_UPDATED ? 'resource' : 'list'
}
