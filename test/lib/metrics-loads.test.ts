/**
 * ops/metrics/…: the per-upstream load series (issue #20) read the registry once per scrape, and
 * an upstream a reload removed leaves them.
 */
import t from 'tap'
import { EventEmitter } from 'node:events'
import { setImmediate as tick } from 'node:timers/promises'
import { createMetrics } from '../../lib/metrics.js'
import type { UpstreamLoad, UpstreamRegistry } from '../../lib/upstreams/types.js'

/** A registry whose only live parts are its events, status() (none) and loads() (counted); a scrape reads nothing else. */
function loadsRegistry (initial: UpstreamLoad[]): { registry: UpstreamRegistry, set: (next: UpstreamLoad[]) => void, reads: () => number } {
  let current = initial
  let reads = 0
  const registry = Object.assign(new EventEmitter(), {
    status: () => [],
    loads: () => { reads++; return current }
  }) as unknown as UpstreamRegistry
  return { registry, set: next => { current = next }, reads: () => reads }
}

const load = (name: string, inFlight: number): UpstreamLoad => ({ name, inFlight, queued: 1, refused: 2, oversized: 3, stdinBuffered: 4 })

t.test('ops/metrics/upstream-loads-read-once-per-scrape', async t => {
  const { registry, reads } = loadsRegistry([load('a', 5), load('b', 6)])
  const metrics = createMetrics(registry)
  const text = await metrics.registry.metrics()
  t.equal(reads(), 1, 'five series, one loads() call')
  t.match(text, /mcpx_upstream_in_flight\{upstream="a"\} 5/)
  t.match(text, /mcpx_upstream_refused_total\{upstream="b"\} 2/)
  await tick()
  await metrics.registry.metrics()
  t.equal(reads(), 2, 'the next scrape reads again')
})

t.test('ops/metrics/removed-upstream-leaves-the-load-gauges', async t => {
  const { registry, set } = loadsRegistry([load('a', 5), load('gone', 6)])
  const metrics = createMetrics(registry)
  t.match(await metrics.registry.metrics(), /mcpx_upstream_queued\{upstream="gone"\} 1/)
  set([load('a', 7)])
  await tick()
  const text = await metrics.registry.metrics()
  t.match(text, /mcpx_upstream_in_flight\{upstream="a"\} 7/, 'a fresh figure, not the last scrape\'s')
  t.notMatch(text, /mcpx_upstream_(in_flight|queued|stdin_buffered_bytes)\{upstream="gone"\}/)
})
