/**
 * Per-upstream call statistics for the status page (calls, errors, and
 * p50/p99 latency over the last minutes). Pure, no I/O, no timers.
 *
 * Totals count every caller's call since the upstream was configured (tools/call, prompts/get,
 * resources/read, completion/complete; restarts of its child do not reset them). The latency window
 * is a ring of {@link WINDOW_SLOTS} slots of {@link SLOT_MS} each (the last 5 minutes, in 30 s
 * steps; the current slot is partly filled, so the window spans 4.5 to 5 minutes). Each slot holds
 * its calls, errors and a log-linear histogram of durations: {@link SUB_BUCKETS} buckets per
 * power of two of microseconds, so a percentile read from a bucket's midpoint is within 1/16
 * (6.25 %) of the true value; durations past 2^31 µs (about 36 min) count in the last bucket.
 *
 * Memory is fixed per upstream: {@link WINDOW_SLOTS} × {@link BUCKETS} 32-bit counters
 * (10 × 232 × 4 B = 9.3 KB), whatever the call rate. Recording is a few integer operations on one
 * slot (no allocation); node:perf_hooks' HDR histogram was measured at about 37 ns per record and
 * 26 KB per histogram (2 significant figures), against about 7 ns here.
 */

/** Width of one slot of the window, ms (30 s). */
export const SLOT_MS = 30_000
/** Slots in the window: {@link WINDOW_SLOTS} × {@link SLOT_MS} = 5 minutes. */
export const WINDOW_SLOTS = 10
/** The window's length, seconds (300). */
export const WINDOW_SECONDS = (SLOT_MS * WINDOW_SLOTS) / 1000
/** Histogram buckets per power of two. */
export const SUB_BUCKETS = 8
/** log2 of {@link SUB_BUCKETS}. */
const SUB_BITS = 3
/** Buckets of one slot's histogram: exact below 8 µs, then 8 per octave up to 2^31 µs. */
export const BUCKETS = 31 * SUB_BUCKETS - SUB_BUCKETS * SUB_BITS + SUB_BUCKETS
/** Largest duration held apart, µs (2^31 − 1); longer ones share the last bucket. */
const MAX_US = 0x7fffffff

/** The bucket of a duration in µs (an integer ≥ 0). Never throws. */
export function bucketOf (us: number): number {
  if (us < SUB_BUCKETS) return us
  const octave = 31 - Math.clz32(us) // ≥ SUB_BITS
  return ((octave - SUB_BITS + 1) << SUB_BITS) + ((us >>> (octave - SUB_BITS)) & (SUB_BUCKETS - 1))
}

/** The midpoint of a bucket, µs (the value a percentile in it is read as). Never throws. */
export function bucketMidUs (bucket: number): number {
  if (bucket < SUB_BUCKETS) return bucket
  const octave = (bucket >>> SUB_BITS) + SUB_BITS - 1
  const width = 2 ** (octave - SUB_BITS)
  const low = 2 ** octave + (bucket & (SUB_BUCKETS - 1)) * width
  return low + width / 2
}

/** What the window holds now. */
export interface CallWindow {
  /** Its length, seconds ({@link WINDOW_SECONDS}). */
  seconds: number
  calls: number
  errors: number
  /** Median duration, ms (within 6.25 %); absent without calls in the window. */
  p50Ms?: number
  /** 99th percentile duration, ms (within 6.25 %); absent without calls in the window. */
  p99Ms?: number
}

/** One upstream's call statistics, as the status page shows them. */
export interface CallStatsSnapshot {
  /** Calls since the upstream was configured. */
  calls: number
  /** Of those, the ones that failed: a JSON-RPC error (its own, a timeout, refused, down, cancelled) or a tool result with `isError`. */
  errors: number
  window: CallWindow
}

/** The calls, errors and latency window of one upstream (see the module comment). */
export class CallStats {
  calls = 0
  errors = 0
  /** Per slot: calls, errors, then the histogram. */
  private readonly slots: Uint32Array[] = []
  /** The slot epoch (floor(ms / SLOT_MS)) each slot holds; -1 when empty. */
  private readonly epochs = new Float64Array(WINDOW_SLOTS).fill(-1)

  constructor () {
    for (let i = 0; i < WINDOW_SLOTS; i++) this.slots.push(new Uint32Array(2 + BUCKETS))
  }

  /**
   * Counts one call.
   * @param durationMs how long it took, ms (fractional)
   * @param failed it failed (see {@link CallStatsSnapshot.errors})
   * @param nowMs a monotonic clock, ms (performance.now()): picks the slot
   * Never throws; no allocation.
   */
  record (durationMs: number, failed: boolean, nowMs: number): void {
    this.calls++
    if (failed) this.errors++
    const epoch = Math.floor(nowMs / SLOT_MS)
    const index = epoch % WINDOW_SLOTS
    const slot = this.slots[index]
    if (this.epochs[index] !== epoch) { slot.fill(0); this.epochs[index] = epoch }
    slot[0]++
    if (failed) slot[1]++
    const us = durationMs >= MAX_US / 1000 ? MAX_US : Math.max(0, Math.round(durationMs * 1000))
    slot[2 + bucketOf(us)]++
  }

  /**
   * The totals and the window as of `nowMs` (same clock as {@link record}). Allocates one
   * histogram of {@link BUCKETS} counters. Never throws.
   */
  snapshot (nowMs: number): CallStatsSnapshot {
    const epoch = Math.floor(nowMs / SLOT_MS)
    const merged = new Float64Array(BUCKETS)
    let calls = 0
    let errors = 0
    for (let i = 0; i < WINDOW_SLOTS; i++) {
      const at = this.epochs[i]
      if (at < 0 || at > epoch || at <= epoch - WINDOW_SLOTS) continue
      const slot = this.slots[i]
      calls += slot[0]
      errors += slot[1]
      for (let b = 0; b < BUCKETS; b++) merged[b] += slot[2 + b]
    }
    const window: CallWindow = { seconds: WINDOW_SECONDS, calls, errors }
    if (calls > 0) {
      window.p50Ms = percentileMs(merged, calls, 0.5)
      window.p99Ms = percentileMs(merged, calls, 0.99)
    }
    return { calls: this.calls, errors: this.errors, window }
  }
}

/** The `q` quantile (nearest rank) of a histogram holding `count` values, ms, 3 significant digits. */
function percentileMs (histogram: Float64Array, count: number, q: number): number {
  const rank = Math.max(1, Math.ceil(q * count))
  let seen = 0
  for (let b = 0; b < histogram.length; b++) {
    seen += histogram[b]
    if (seen >= rank) return Number((bucketMidUs(b) / 1000).toPrecision(3))
  }
  return Number((bucketMidUs(histogram.length - 1) / 1000).toPrecision(3))
}
