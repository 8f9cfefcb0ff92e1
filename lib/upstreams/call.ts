/**
 * One call mcpx sends to an upstream on a caller's behalf, without the SDK client's request funnel
 * (see ./README.md, "The call path"): its wire id, its reply, its progress, its timeout and its
 * cancellation. The object is its own abort listener (`handleEvent`) and its timer's argument, so a
 * call allocates no closures, no AbortController and no random bytes unless it needs them (a
 * question from the upstream, which gets a lazy AbortController).
 * Sources: DIGEST §2e (cancellation, progress), §3a (timeouts).
 */
import { INTERNAL_ERROR, UPSTREAM_ERROR, isObject, UpstreamRpcError, type JsonObject } from '../protocol/jsonrpc.js'
import type { UpstreamCallOptions } from './contract.js'
import { abortSignalOf } from '../base/cancel.js'
import type { SequenceTable } from '../base/in-flight-table.js'

/** Where a call travels: the live connection that sent it (see connection.ts `Link`). */
export interface CallLink {
  /** The calls in flight on this connection, by wire id. */
  readonly calls: SequenceTable<UpstreamCall>
  /** The calls that asked for progress, by the progressToken mcpx sent. */
  readonly progress: Map<string, UpstreamCall>
  /** Tells the upstream a call is abandoned (`notifications/cancelled`, or closing its HTTP stream). Never throws. */
  cancel: (call: UpstreamCall, reason: string) => void
}

/**
 * A call in flight. Created by the facade (upstream.ts), registered in its link's `calls`, settled
 * exactly once: by the upstream's response (`settle`), or by `fail` (timeout, caller's abort,
 * connection lost, shutdown). Settling removes it from every table and clears its timer.
 */
export class UpstreamCall {
  /** Wire id (the SDK client's own counter, so ids on the wire are as they were). */
  id: string | number = 0
  progressToken: string | undefined = undefined
  readonly startedAt = performance.now()
  done = false
  /** A request of the connection's own (lists, subscriptions): no caller, no header provider. */
  setup = false
  /** True while it waits for a congested stdin to drain, not yet written: nothing to cancel upstream. */
  unsent = false
  timer: NodeJS.Timeout | undefined = undefined
  /** The call's timeout (ms): its timer's bound, restarted on progress when `resetOnProgress`. */
  timeoutMs = 0
  /** Config resetTimeoutOnProgress: progress from the upstream restarts the timeout. */
  resetOnProgress = false
  /** Config maxTotalTimeout: when the whole call must end (performance.now() ms), however much progress it sends. */
  deadline: number | undefined = undefined
  /** Which bound the running timer stands for: the call's timeout, or its maxTotalTimeout. */
  timerBound: 'timeout' | 'total' = 'timeout'
  /** Set by the HTTP transport while its request runs (undici's controller): aborting it closes the call's stream. */
  httpRequest: { abort: (reason: Error) => void } | undefined = undefined
  /** Aborted when the call settles; made only when the upstream asks a question during the call. */
  private questionAbort: AbortController | undefined = undefined
  private resolve!: (result: JsonObject) => void
  private reject!: (error: UpstreamRpcError) => void
  readonly promise: Promise<JsonObject>

  constructor (
    readonly link: CallLink,
    readonly upstream: string,
    readonly method: string,
    readonly options: UpstreamCallOptions
  ) {
    this.promise = new Promise<JsonObject>((resolve, reject) => { this.resolve = resolve; this.reject = reject })
  }

  /** The caller's signal fired: fail the call and tell the upstream (EventTarget listener object). */
  handleEvent (): void {
    this.abandon(new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.upstream}: ${this.method} cancelled`))
  }

  /** Fails the call and tells the upstream it is abandoned (timeout, cancellation, shutdown). */
  abandon (error: UpstreamRpcError): void {
    if (this.done) return
    this.fail(error)
    this.link.cancel(this, String(error))
  }

  /** Settles the call with the upstream's JSON-RPC response (result or error). */
  settle (response: JsonObject): void {
    if (this.done) return
    const error = response.error
    if (error !== undefined) {
      const e = isObject(error) ? error : {}
      this.fail(new UpstreamRpcError(typeof e.code === 'number' ? e.code : INTERNAL_ERROR, typeof e.message === 'string' ? e.message : 'upstream error', e.data))
      return
    }
    const result = response.result
    if (!isObject(result)) { this.fail(new UpstreamRpcError(INTERNAL_ERROR, `upstream ${this.upstream}: ${this.method} returned no result object`)); return }
    this.finish()
    this.resolve(result)
  }

  /** Rejects the call with `error` (once), without telling the upstream. */
  fail (error: UpstreamRpcError): void {
    if (this.done) return
    this.finish()
    this.reject(error)
  }

  /**
   * Starts (or, on progress with `resetOnProgress`, restarts) the call's timer: `timeoutMs` from
   * now, or less when the call's `deadline` (maxTotalTimeout) comes first. Either ends the call
   * with UPSTREAM_ERROR and `notifications/cancelled` upstream ({@link timeOut}).
   */
  arm (): void {
    clearTimeout(this.timer)
    let ms = this.timeoutMs
    this.timerBound = 'timeout'
    if (this.deadline !== undefined) {
      const left = Math.max(0, this.deadline - performance.now())
      if (left <= ms) { ms = left; this.timerBound = 'total' }
    }
    this.timer = setTimeout(timeOut, ms, this)
  }

  /** Hands one `notifications/progress` params to the caller, in the shape UpstreamCallOptions promises. */
  onProgress (params: JsonObject): void {
    if (this.resetOnProgress && !this.done) this.arm()
    const onProgress = this.options.onProgress
    if (onProgress === undefined || typeof params.progress !== 'number') return
    const progress: { progress: number, total?: number, message?: string } = { progress: params.progress }
    if (typeof params.total === 'number') progress.total = params.total
    if (typeof params.message === 'string') progress.message = params.message
    onProgress(progress)
  }

  /** The signal a relayed question is cancelled by: the caller's, or this call ending. */
  questionSignal (): AbortSignal {
    this.questionAbort ??= new AbortController()
    if (this.done) this.questionAbort.abort()
    return AbortSignal.any([abortSignalOf(this.options.signal), this.questionAbort.signal])
  }

  private finish (): void {
    this.done = true
    clearTimeout(this.timer)
    this.options.signal.removeEventListener('abort', this)
    this.link.calls.delete(this.id)
    if (this.progressToken !== undefined) this.link.progress.delete(this.progressToken)
    this.questionAbort?.abort()
  }
}

/** Timer callback: the call ran out of time, its timeout or its maxTotalTimeout (ms in the message). */
export function timeOut (call: UpstreamCall): void {
  const message = call.timerBound === 'total'
    ? `upstream ${call.upstream}: ${call.method} exceeded its maxTotalTimeout of ${Math.round((call.deadline ?? performance.now()) - call.startedAt)} ms`
    : `upstream ${call.upstream} timed out after ${call.timeoutMs} ms (${call.method})`
  call.abandon(new UpstreamRpcError(UPSTREAM_ERROR, message))
}
