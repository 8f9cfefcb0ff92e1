/**
 * Scenario 14 (config maxInFlight): what an upstream's in-flight cap (lib/upstreams/gate.ts CallGate) costs
 * a call, in process. Under the cap a call takes and gives back a slot (`tryAcquire`, `release`):
 * the hot path of every tools/call; it must allocate nothing, so the run counts the garbage
 * collections it caused (none expected: 5 million calls allocating even 8 bytes each would fill the
 * young generation several times). Over the cap a call waits in the queue (`wait`: a waiter object,
 * a promise, a timer) until a slot is released: the slow path, measured too.
 */
import { PerformanceObserver } from 'node:perf_hooks'
import { CallGate } from '../lib/upstreams/gate.js'

/** The figures of scenario 14. */
export interface GateFigures {
  /** Calls run under the cap. */
  calls: number
  /** Wall time per call under the cap (tryAcquire + release), ns: the median of 5 rounds. */
  hotNs: number
  /** Garbage collections during the hot rounds (0: allocation-free). */
  hotGcs: number
  /** Calls that went through the queue. */
  queuedCalls: number
  /** Wall time per queued call (wait, then the slot handed over by release), µs: the median of 5 rounds. */
  queuedUs: number
}

const silent = { debug () {}, info () {}, warn () {}, error () {} }

/** Measures the gate alone (see module comment). Never throws. */
export async function gateCost (calls = 5_000_000, queuedCalls = 50_000): Promise<GateFigures> {
  const gate = new CallGate('bench', 256, 1024, silent)
  let gcs = 0
  const observer = new PerformanceObserver(list => { gcs += list.getEntries().length })
  const hot: number[] = []
  // Warm-up (JIT), then 5 measured rounds.
  for (let i = 0; i < 100_000; i++) if (gate.tryAcquire()) gate.release()
  observer.observe({ entryTypes: ['gc'] })
  for (let round = 0; round < 5; round++) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < calls; i++) if (gate.tryAcquire()) gate.release()
    hot.push(Number(process.hrtime.bigint() - start) / calls)
  }
  await new Promise(resolve => setTimeout(resolve, 250)) // gc entries are reported asynchronously
  observer.disconnect()
  const hotGcs = gcs

  const queued: number[] = []
  const full = new CallGate('bench', 1, 1024, silent)
  const signal = new AbortController().signal
  for (let round = 0; round < 5; round++) {
    full.tryAcquire() // the one slot is taken: every call below queues
    const start = process.hrtime.bigint()
    for (let i = 0; i < queuedCalls; i++) {
      const waiting = full.wait('tools/call', signal, 60_000)
      full.release() // hands the slot to the waiter
      await waiting
    }
    queued.push(Number(process.hrtime.bigint() - start) / queuedCalls / 1000)
    full.release()
  }
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[2]
  return { calls, hotNs: median(hot), hotGcs, queuedCalls, queuedUs: median(queued) }
}
