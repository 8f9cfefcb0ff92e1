/**
 * lib/ops/duration-histogram.ts against prom-client's own Histogram: the same observations, fed to
 * each in its own Registry, must read back byte for byte alike (the text exposition in both content
 * types, and the JSON), through observations on and past the bucket bounds, several label sets,
 * default labels, and a reset.
 */
import t from 'tap'
import { Histogram, Registry } from 'prom-client'
import { DurationHistogram } from '../../lib/ops/duration-histogram.js'
import { LATENCY_BUCKETS_SECONDS } from '../../lib/ops/metrics.js'

const OPTIONS = { name: 'mcpx_test_duration_seconds', help: 'A duration, seconds', labelNames: ['upstream', 'operation', 'outcome'], buckets: LATENCY_BUCKETS_SECONDS }

/** prom-client's Registry as its lib/registry.js is: its typings omit the constructor's content type. */
const RegistryOf = Registry as unknown as new (contentType: string) => Registry

/** Two registries of `contentType`: one with prom-client's Histogram, one with ours. */
function pair (contentType: string = Registry.PROMETHEUS_CONTENT_TYPE): { theirs: Registry, ours: Registry, observe: (labels: Record<string, string>, value: number) => void } {
  const theirs = new RegistryOf(contentType)
  const ours = new RegistryOf(contentType)
  const histogram = new Histogram({ ...OPTIONS, labelNames: [...OPTIONS.labelNames], buckets: [...OPTIONS.buckets], registers: [theirs] })
  const duration = new DurationHistogram({ ...OPTIONS, registers: [ours] })
  const series = new Map<string, ReturnType<DurationHistogram['seriesFor']>>()
  return {
    theirs,
    ours,
    observe (labels, value) {
      histogram.observe(labels, value)
      const key = JSON.stringify(labels)
      let s = series.get(key)
      if (s === undefined) series.set(key, s = duration.seriesFor(labels))
      s.observe(value)
    }
  }
}

/** Observations on every bound, between bounds, past the last one, and zero, over three label sets in interleaved order. */
function feed (observe: (labels: Record<string, string>, value: number) => void): void {
  const sets = [
    { upstream: 'files', operation: 'callTool', outcome: 'ok' },
    { upstream: 'files', operation: 'callTool', outcome: 'error' },
    { upstream: 'a "quoted" \\ name', operation: 'getPrompt', outcome: 'ok' }
  ]
  const values = [0, 0.001, ...LATENCY_BUCKETS_SECONDS, 0.0051, 0.3, 7, 59.9, 60.0001, 1000]
  values.forEach((value, i) => { observe(sets[i % 2], value); if (i % 3 === 0) observe(sets[2], value / 2) })
}

t.test('ops/metrics/duration-histogram-reads-as-prom-clients', async t => {
  for (const contentType of [Registry.PROMETHEUS_CONTENT_TYPE, Registry.OPENMETRICS_CONTENT_TYPE]) {
    const { theirs, ours, observe } = pair(contentType)
    t.equal(await ours.metrics(), await theirs.metrics(), `${contentType}: nothing observed, no series`)
    feed(observe)
    const text = await ours.metrics()
    // "ok" saw 0 and 0.005 at or under the first bound, "error" 0.001 only: a bound falls in its own bucket (le is inclusive).
    t.match(text, /mcpx_test_duration_seconds_bucket\{le="0.005",upstream="files",operation="callTool",outcome="ok"\} 2\n/, 'the bound itself falls in its bucket')
    t.match(text, /mcpx_test_duration_seconds_bucket\{le="0.005",upstream="files",operation="callTool",outcome="error"\} 1\n/, 'and only its own observations')
    t.equal(text, await theirs.metrics(), `${contentType}: the text exposition is prom-client's`)
    t.equal(JSON.stringify(await ours.getMetricsAsJSON()), JSON.stringify(await theirs.getMetricsAsJSON()), `${contentType}: the JSON is prom-client's, key order included`)
  }
})

t.test('ops/metrics/duration-histogram-default-labels-and-reset', async t => {
  const { theirs, ours, observe } = pair()
  for (const registry of [theirs, ours]) registry.setDefaultLabels({ instance: 'a' })
  feed(observe)
  t.equal(await ours.metrics(), await theirs.metrics(), 'with default labels')
  t.equal(JSON.stringify(await ours.getMetricsAsJSON()), JSON.stringify(await theirs.getMetricsAsJSON()), 'their JSON too')
  theirs.resetMetrics()
  ours.resetMetrics()
  t.equal(await ours.metrics(), await theirs.metrics(), 'after a reset: no series')
  observe({ upstream: 'a "quoted" \\ name', operation: 'getPrompt', outcome: 'ok' }, 0.2)
  observe({ upstream: 'files', operation: 'callTool', outcome: 'ok' }, 2)
  t.equal(await ours.metrics(), await theirs.metrics(), 'observed again: listed in the order of their new first observations')
})

t.test('ops/metrics/duration-histogram-refuses-a-wrong-label-set', async t => {
  const duration = new DurationHistogram({ ...OPTIONS, registers: [] })
  t.throws(() => duration.seriesFor({ upstream: 'files', operation: 'callTool' }), /outcome/, 'a missing label')
  t.throws(() => duration.seriesFor({ upstream: 'files', operation: 'callTool', outcome: 'ok', extra: 'x' }), /extra/, 'a stray label')
  t.throws(() => new DurationHistogram({ ...OPTIONS, registers: [(() => { const r = new Registry(); new DurationHistogram({ ...OPTIONS, registers: [r] }); return r })()] }), /already been registered/, 'a second metric of one name in one registry')
})
