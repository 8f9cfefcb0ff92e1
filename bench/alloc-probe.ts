/**
 * Allocation probe, preloaded into a bench server with `node --import <dist>/bench/alloc-probe.js`
 * (bench/alloc.ts). The first SIGUSR2 starts V8's sampling heap profiler (inspector
 * `HeapProfiler.startSampling`) with objects collected by minor and major GCs kept in the profile,
 * so the profile counts every byte allocated in the window, not only what is still alive; the
 * second SIGUSR2 stops it and writes `{ bytes, sites }` as JSON to `MCPX_BENCH_ALLOC_OUT`:
 * `bytes` is the sum of the sampled self sizes (V8 scales each sample to the bytes it stands for),
 * `sites` the 40 largest allocating frames (function, url:line, bytes); with
 * `MCPX_BENCH_ALLOC_RAW` set, the whole profile tree is written to that file too.
 *
 * Sampling interval: `MCPX_BENCH_ALLOC_INTERVAL` bytes (default 256; V8 draws the gap between
 * samples at random around it, so the sum is an unbiased estimate). Bench-only: nothing in mcpx loads it.
 */
import { Session } from 'node:inspector'
import { writeFileSync } from 'node:fs'

interface ProfileNode { callFrame: { functionName: string, url: string, lineNumber: number }, selfSize: number, children: ProfileNode[] }

const out = process.env.MCPX_BENCH_ALLOC_OUT
const interval = Number(process.env.MCPX_BENCH_ALLOC_INTERVAL ?? 256)
if (out !== undefined && out !== '') {
  const session = new Session()
  session.connect()
  let sampling = false
  process.on('SIGUSR2', function toggleSampling () {
    if (!sampling) {
      sampling = true
      session.post('HeapProfiler.startSampling', { samplingInterval: interval, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } as never, error => {
        writeFileSync(out + '.started', error === null ? 'ok' : String(error))
      })
      return
    }
    sampling = false
    session.post('HeapProfiler.stopSampling', (error, result) => {
      if (error !== null) { writeFileSync(out, JSON.stringify({ error: String(error) })); return }
      const sites = new Map<string, number>()
      let bytes = 0
      const walk = (node: ProfileNode): void => {
        bytes += node.selfSize
        if (node.selfSize > 0) {
          const f = node.callFrame
          const key = `${f.functionName === '' ? '(anonymous)' : f.functionName} ${f.url.replace(/^.*\/(node_modules|dist)\//, '$1/')}:${f.lineNumber + 1}`
          sites.set(key, (sites.get(key) ?? 0) + node.selfSize)
        }
        for (const child of node.children) walk(child)
      }
      const head = (result as unknown as { profile: { head: ProfileNode } }).profile.head
      walk(head)
      if (process.env.MCPX_BENCH_ALLOC_RAW !== undefined) writeFileSync(process.env.MCPX_BENCH_ALLOC_RAW, JSON.stringify(head))
      const top = [...sites].sort((a, b) => b[1] - a[1]).slice(0, 40).map(([site, n]) => ({ site, bytes: n }))
      writeFileSync(out, JSON.stringify({ bytes, sites: top }))
    })
  })
}
