/**
 * A request's cancellation without an AbortController (no per-request allocations the
 * request does not use). Node's AbortController builds an EventTarget, its listener maps and an
 * AbortSignal per request: `createAbortSignal` with its EventTarget work was about 5 % of the
 * daemon's CPU per modern call (a `--cpu-prof` of bench scenario 3, before this). Every request mcpx serves
 * gets a {@link Cancellation}: a flag, a reason and an array of listeners, allocated on first use.
 * A real AbortSignal is made only where a library or `AbortSignal.any` needs one
 * ({@link abortSignalOf}), which the hot path never does.
 */

/** What listens for a cancellation: a function, or an object with `handleEvent` (as EventTarget takes them). */
export type AbortListener = (() => void) | { handleEvent: () => void }

/**
 * The part of AbortSignal mcpx's request path reads. A real AbortSignal satisfies it, so a caller
 * may pass either (setup calls and probes pass real ones).
 */
export interface CancelSignal {
  /** True once cancelled. */
  readonly aborted: boolean
  /** Why (an Error); undefined until cancelled. */
  readonly reason: unknown
  /** Calls `listener` once, when cancelled (not when already cancelled: read `aborted` first). Adding one twice adds it once. */
  addEventListener: (type: 'abort', listener: AbortListener, options?: { once?: boolean }) => void
  /** Forgets `listener`. */
  removeEventListener: (type: 'abort', listener: AbortListener) => void
}

/** What cancels a request: an AbortController, or a {@link Cancellation}. */
export interface Canceller {
  readonly signal: CancelSignal
  abort: (reason?: unknown) => void
}

/**
 * One request's cancellation: both its controller and its signal (`signal` is itself), so code
 * written for an AbortController (`controller.signal`, `controller.abort()`) reads the same.
 * Listeners run synchronously inside `abort()`, in the order they were added, as EventTarget runs
 * them; one that throws is reported as EventTarget reports it (an uncaught exception on the next
 * tick) and the rest still run.
 */
export class Cancellation implements CancelSignal, Canceller {
  aborted = false
  reason: unknown = undefined
  private listeners: AbortListener[] | undefined = undefined
  private real: AbortController | undefined = undefined

  /** This object: it is its own signal. */
  get signal (): CancelSignal { return this }

  addEventListener (_type: 'abort', listener: AbortListener): void {
    const listeners = this.listeners
    if (listeners === undefined) { this.listeners = [listener]; return }
    if (!listeners.includes(listener)) listeners.push(listener)
  }

  removeEventListener (_type: 'abort', listener: AbortListener): void {
    const listeners = this.listeners
    if (listeners === undefined) return
    const at = listeners.indexOf(listener)
    if (at !== -1) listeners.splice(at, 1)
  }

  /**
   * Cancels (once; later calls do nothing): sets `aborted` and `reason`, then runs every listener.
   * @param reason default: a DOMException named AbortError, as AbortController gives
   */
  abort (reason: unknown = new DOMException('This operation was aborted', 'AbortError')): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    const listeners = this.listeners
    this.listeners = undefined
    if (listeners !== undefined) {
      for (const listener of listeners) {
        try {
          if (typeof listener === 'function') listener()
          else listener.handleEvent()
        } catch (error) {
          process.nextTick(() => { throw error })
        }
      }
    }
    this.real?.abort(reason)
  }

  /** A real AbortSignal that aborts with this one (made once, on first use). */
  toAbortSignal (): AbortSignal {
    if (this.real === undefined) {
      this.real = new AbortController()
      if (this.aborted) this.real.abort(this.reason)
    }
    return this.real.signal
  }
}

/** `signal` as a real AbortSignal (for `AbortSignal.any` and libraries): itself when it is one. */
export function abortSignalOf (signal: CancelSignal): AbortSignal {
  if (signal instanceof Cancellation) return signal.toAbortSignal()
  return signal as unknown as AbortSignal
}
