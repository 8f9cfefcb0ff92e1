/**
 * Scenario 17 (docs/operating.md › The status page): what counting a call for the status page costs, in
 * process. Every caller's call to an upstream reads the clock before and after and records the
 * duration in its upstream's CallStats (lib/upstreams/call-stats.ts): that, and nothing else, is
 * measured here, with the garbage collections it caused (none expected: the window is fixed
 * typed arrays). The durations cycle over 1 µs … 5 s so every bucket range is hit, and the clock
 * moves through the 30 s slots as it would over hours of traffic.
 */
import { PerformanceObserver } from 'node:perf_hooks'
import { CallStats } from '../lib/upstreams/call-stats.js'

/** The figures of scenario 17. */
export interface CallStatsFigures {
  calls: number
  /** Wall time per call: two performance.now() reads and one record(), ns (median of 5 rounds). */
  perCallNs: number
  /** Of which record() alone, ns (median of 5 rounds). */
  recordNs: number
  /** Garbage collections during the timed rounds (0: allocation-free). */
  gcs: number
  /** Wall time of one snapshot (the status page reads one per upstream), µs. */
  snapshotUs: number
}

/** Measures the call stats alone (see module comment). Never throws. */
export async function callStatsCost (calls = 5_000_000): Promise<CallStatsFigures> {
  const stats = new CallStats()
  let sink = 0
  for (let i = 0; i < 100_000; i++) { const s = performance.now(); const e = performance.now(); stats.record(e - s + (i % 5000), i % 50 === 0, e) }
  let gcs = 0
  const observer = new PerformanceObserver(list => { gcs += list.getEntries().length })
  observer.observe({ entryTypes: ['gc'] })
  const whole: number[] = []
  const recordOnly: number[] = []
  for (let round = 0; round < 5; round++) {
    let start = process.hrtime.bigint()
    for (let i = 0; i < calls; i++) {
      const startMs = performance.now()
      const nowMs = performance.now()
      stats.record(nowMs - startMs, false, nowMs)
    }
    whole.push(Number(process.hrtime.bigint() - start) / calls)
    start = process.hrtime.bigint()
    for (let i = 0; i < calls; i++) stats.record((i % 5_000_000) / 1000, i % 50 === 0, i * 0.06)
    recordOnly.push(Number(process.hrtime.bigint() - start) / calls)
  }
  await new Promise(resolve => setTimeout(resolve, 250)) // gc entries are reported asynchronously
  observer.disconnect()
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < 1000; i++) sink += stats.snapshot(i * 1000).window.calls
  const snapshotUs = Number(process.hrtime.bigint() - t0) / 1000 / 1000
  if (sink < 0) throw new Error('unreachable')
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[2]
  return { calls, perCallNs: median(whole), recordNs: median(recordOnly), gcs, snapshotUs }
}
