/**
 * The in-flight cap of one upstream (config `maxInFlight`): at most
 * `maxInFlight` calls are sent to it at once (both its connections together); the others wait in
 * a FIFO queue of at most `maxQueued`; past that a call is refused at once with
 * {@link UpstreamBusyError} (-32603; over HTTP 503 with Retry-After, lib/protocol/http-status.ts `upstreamBusy`).
 * A queued call that is cancelled (its caller's signal), times out (its `timeout` counts from the
 * moment it was queued) or is still waiting when the upstream closes leaves the queue and never
 * reaches the upstream.
 *
 * Under the cap, taking and giving back a slot is two counter updates: no allocation, no closure
 * (bench/run.ts row "upstream in-flight cap"). Only a queued call allocates (its waiter, a timer).
 * The connection's own requests (lists, subscriptions) do not take slots: they are few, and a
 * full queue must not stop the catalogue from being read.
 */
import { UPSTREAM_ERROR, UpstreamRpcError } from '../protocol/jsonrpc.js'
import { UpstreamBusyError } from './errors.js'
import type { UpstreamLogger } from './contract.js'
import type { CancelSignal } from '../base/cancel.js'

/** Least time between two "queue full" warn lines of one upstream, ms (the count since the last line is logged). */
export const QUEUE_FULL_LOG_INTERVAL_MS = 10_000

/** One call waiting for a slot. It is its own abort listener and its timer's argument. */
class QueuedCall {
  timer: NodeJS.Timeout | undefined = undefined
  readonly queuedAt = performance.now()
  private resolve!: () => void
  private reject!: (error: UpstreamRpcError) => void
  readonly promise: Promise<void>

  constructor (readonly gate: CallGate, readonly method: string, readonly signal: CancelSignal, readonly timeoutMs: number) {
    this.promise = new Promise<void>((resolve, reject) => { this.resolve = resolve; this.reject = reject })
  }

  /** The caller's signal fired while queued: leave the queue (EventTarget listener object). */
  handleEvent (): void {
    this.leave(new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.gate.upstream}: ${this.method} cancelled`))
  }

  /** A slot is this call's now (the gate counted it). */
  admit (): void {
    this.detach()
    this.resolve()
  }

  /** Leaves the queue without a slot, failing the call with `error`. */
  leave (error: UpstreamRpcError): void {
    if (!this.gate.drop(this)) return
    this.detach()
    this.reject(error)
  }

  private detach (): void {
    clearTimeout(this.timer)
    this.signal.removeEventListener('abort', this)
  }
}

/** Timer callback: a queued call ran out of time before it got a slot. */
function queueTimeOut (waiter: QueuedCall): void {
  waiter.leave(new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${waiter.gate.upstream} timed out after ${waiter.timeoutMs} ms (${waiter.method}, waiting for one of its ${waiter.gate.maxInFlight} in-flight slots)`))
}

/** The in-flight slots and the queue of one upstream (see module comment). */
export class CallGate {
  /** Calls holding a slot. */
  inFlight = 0
  /** Calls refused because the queue was full, since start. */
  refused = 0
  /** The waiting calls, oldest first: a Set keeps insertion order and lets a cancelled call leave in O(1). */
  private readonly waiting = new Set<QueuedCall>()
  private refusedAtLastLog = 0
  private lastLogAt = -Infinity

  /**
   * @param upstream the upstream's name (messages, log lines)
   * @param maxInFlight ≥ 1
   * @param maxQueued ≥ 0
   */
  constructor (readonly upstream: string, readonly maxInFlight: number, readonly maxQueued: number, private readonly logger: UpstreamLogger) {}

  /** Calls waiting now. */
  get queued (): number {
    return this.waiting.size
  }

  /** Takes a slot when one is free and nobody is waiting (FIFO). @returns whether it did. Allocation-free. */
  tryAcquire (): boolean {
    if (this.inFlight >= this.maxInFlight || this.waiting.size > 0) return false
    this.inFlight++
    return true
  }

  /**
   * Queues a call for a slot (after {@link tryAcquire} said no).
   * @param timeoutMs the call's whole bound, ms; the time spent queued counts against it
   * @returns the ms left of `timeoutMs` once the slot is taken (at least 1)
   * Rejects with UpstreamBusyError when the queue is full, with UpstreamRpcError (UPSTREAM_ERROR)
   * when the call is cancelled or times out while queued, or the gate is closed.
   */
  async wait (method: string, signal: CancelSignal, timeoutMs: number): Promise<number> {
    if (signal.aborted) throw new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.upstream}: ${method} cancelled`)
    if (this.waiting.size >= this.maxQueued) {
      this.refused++
      this.logRefusals()
      throw new UpstreamBusyError(`Server busy: upstream ${this.upstream} has ${this.inFlight} calls in flight (maxInFlight ${this.maxInFlight}) ` +
        `and ${this.waiting.size} queued (maxQueued ${this.maxQueued}); retry later`)
    }
    const waiter = new QueuedCall(this, method, signal, timeoutMs)
    this.waiting.add(waiter)
    signal.addEventListener('abort', waiter)
    waiter.timer = setTimeout(queueTimeOut, timeoutMs, waiter)
    await waiter.promise
    return Math.max(1, Math.round(timeoutMs - (performance.now() - waiter.queuedAt)))
  }

  /** Gives a slot back: the oldest waiting call takes it, else it is free. */
  release (): void {
    if (this.waiting.size === 0) { this.inFlight--; return } // the hot path: no iterator
    for (const next of this.waiting) {
      this.waiting.delete(next)
      next.admit() // the slot passes to it: inFlight unchanged
      return
    }
    this.inFlight--
  }

  /** Fails every waiting call with `error` (the upstream is closing). */
  close (error: UpstreamRpcError): void {
    for (const waiter of [...this.waiting]) waiter.leave(error)
  }

  /** Removes a waiter (cancel, timeout, close). @returns false when it had already left. */
  drop (waiter: QueuedCall): boolean {
    return this.waiting.delete(waiter)
  }

  /** One warn line per QUEUE_FULL_LOG_INTERVAL_MS at most, with the refusals since the last one. */
  private logRefusals (): void {
    const now = performance.now()
    if (now - this.lastLogAt < QUEUE_FULL_LOG_INTERVAL_MS) return
    this.lastLogAt = now
    const refused = this.refused - this.refusedAtLastLog
    this.refusedAtLastLog = this.refused
    this.logger.warn({ upstream: this.upstream, maxInFlight: this.maxInFlight, maxQueued: this.maxQueued, refused },
      'upstream queue full: calls refused (maxInFlight, maxQueued)')
  }
}
