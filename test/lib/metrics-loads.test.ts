/**
 * ops/metrics/…: the per-upstream load series (the upstream bounds) read the registry once per scrape, and
 * an upstream a reload removed leaves them.
 */
import t from 'tap'
import { EventEmitter } from 'node:events'
import { setImmediate as tick } from 'node:timers/promises'
import { createMetrics } from '../../lib/ops/metrics.js'
import type { UpstreamLoad } from '../../lib/upstreams/status.js'
import type { UpstreamRegistry } from '../../lib/upstreams/contract.js'

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

t.test('ops/metrics/request-counts-survive-scrapes', async t => {
  // mcpx_requests_total is counted by mcpx and handed to prom-client at scrape time: every request
  // counted once, whether the scrapes come between the requests or not, and label sets kept apart.
  const metrics = createMetrics(loadsRegistry([]).registry)
  const done = (rpcMethod: string, status: number): void => { metrics.requestDone({ httpMethod: 'POST', rpcMethod, era: 'modern', status, durationMs: 1 }) }
  const count = (text: string, rpcMethod: string, status: number): number | undefined => {
    const found = new RegExp(`^mcpx_requests_total\\{http_method="POST",rpc_method="${rpcMethod}",era="modern",status="${status}"\\} (\\d+)$`, 'm').exec(text)
    return found === null ? undefined : Number(found[1])
  }
  done('tools/call', 200)
  done('tools/call', 200)
  let text = await metrics.registry.metrics()
  t.equal(count(text, 'tools/call', 200), 2, 'two calls before the first scrape')
  t.equal(count(text, 'tools/list', 200), undefined, 'no series for a label set never seen')
  done('tools/call', 200)
  done('tools/list', 200)
  done('tools/call', 404)
  done('no/such-method', 200)
  text = await metrics.registry.metrics()
  t.equal(count(text, 'tools/call', 200), 3, 'one more after the first scrape')
  t.equal(count(text, 'tools/list', 200), 1)
  t.equal(count(text, 'tools/call', 404), 1, 'status is a label of its own')
  t.equal(count(text, 'other', 200), 1, 'an uncounted method is "other"')
  text = await metrics.registry.metrics()
  t.equal(count(text, 'tools/call', 200), 3, 'a scrape with no requests between changes nothing')
  t.match(text, /mcpx_request_duration_seconds_count\{http_method="POST",era="modern"\} 6/, 'the duration histogram saw all six')
})

t.test('ops/metrics/instrumented-registry-forwards-and-times', async t => {
  // metrics.instrument: callTool is timed (mcpx_upstream_call_duration_seconds); every other method
  // runs on the registry itself (its `this`), and plain properties are read live, not cached.
  const base = loadsRegistry([]).registry as unknown as Record<string, unknown>
  const target = Object.assign(base, {
    generation: 1,
    upstreamOf: (name: string) => name.split('__')[0],
    callTool: async function (this: { generation: number }, name: string) { return { name, generation: this.generation } },
    bump (this: { generation: number }) { this.generation++; return this.generation }
  })
  const metrics = createMetrics(target as unknown as UpstreamRegistry)
  const wrapped = metrics.instrument(target as unknown as UpstreamRegistry) as unknown as typeof target
  t.equal(wrapped.bump(), 2, 'an untimed method runs with the registry as this')
  t.equal(wrapped.bump, wrapped.bump, 'and is bound once')
  t.equal(wrapped.generation, 2, 'a plain property is read live')
  target.generation = 7
  t.equal(wrapped.generation, 7, 'and follows the registry')
  t.same(await wrapped.callTool('fixture__echo'), { name: 'fixture__echo', generation: 7 }, 'callTool answers as the registry does')
  t.match(await metrics.registry.metrics(), /mcpx_upstream_call_duration_seconds_count\{upstream="[^"]*",operation="callTool",outcome="ok"\} 1/, 'and is timed')
})
