/**
 * A Prometheus histogram for durations observed on every request, exposed through a prom-client
 * `Registry` exactly as prom-client's own `Histogram` would be (same `# HELP`/`# TYPE` lines, the
 * same `_bucket{le=…}`, `_sum` and `_count` series in the same order, the same JSON).
 *
 * Why not prom-client's `Histogram`: its `observe(labels, value)` validates the label object, builds
 * a hash string of the label values and looks the series up by it on every call (~1.4 µs of the
 * daemon's main thread per request, measured under load, for the two histograms a `tools/call`
 * feeds). Here a caller takes its {@link HistogramSeries} once per label set and keeps it; an
 * observation is then a bucket search and three additions.
 *
 * It implements what prom-client's `Registry` reads of a metric (`name`, `help`, `type`,
 * `aggregator`, `get()`, `getForPromString()`, `reset()`), and is registered with
 * `registerMetric`.
 */
import type { Metric, Registry } from 'prom-client'

/** One series (label set) of a {@link DurationHistogram}. */
export class HistogramSeries {
  /** Observations per bucket (not cumulative): `counts[i]` those ≤ `bounds[i]` and > `bounds[i - 1]`. */
  readonly counts: Float64Array
  sum = 0
  count = 0
  /** Whether the exposition lists it: from its first observation (since the last reset), as prom-client lists a label set. */
  listed = false

  constructor (readonly labels: Readonly<Record<string, string>>, private readonly bounds: readonly number[], private readonly list: (series: HistogramSeries) => void) {
    this.counts = new Float64Array(bounds.length)
  }

  /** Counts one observation of `value` (seconds). A value that is not a finite number is ignored (prom-client throws). */
  observe (value: number): void {
    if (!Number.isFinite(value)) return
    if (!this.listed) { this.listed = true; this.list(this) }
    const bounds = this.bounds
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]) { this.counts[i]++; break }
    }
    this.sum += value
    this.count++
  }
}

/** A value of a metric as prom-client's `Registry` reads it. */
interface ExportedValue {
  labels: Record<string, string | number>
  sharedLabels?: Readonly<Record<string, string>>
  value: number
  metricName: string
  exemplar?: null
}

/** Options of {@link DurationHistogram}: prom-client's `Histogram` options mcpx uses. */
export interface DurationHistogramOptions {
  name: string
  help: string
  /** The label names, in the order the exposition writes them. */
  labelNames: readonly string[]
  /** Upper bounds of the buckets, ascending (seconds). */
  buckets: readonly number[]
  registers: Registry[]
}

/**
 * A histogram whose series are taken once and observed directly (see the module comment).
 * @throws Error when a registry already holds a metric of that name (prom-client's own error)
 */
export class DurationHistogram {
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  readonly name: string
  readonly help: string
  private readonly labelNames: readonly string[]
  private readonly bounds: readonly number[]
  /** The series observed since the last reset, in the order of their first observation. */
  private series: HistogramSeries[] = []

  constructor (options: DurationHistogramOptions) {
    this.name = options.name
    this.help = options.help
    this.labelNames = options.labelNames
    this.bounds = options.buckets
    for (const registry of options.registers) registry.registerMetric(this as unknown as Metric)
  }

  /**
   * A new series for `labels` (every label name, once each). The exposition lists it from its first
   * observation on, in the order of first observations, as prom-client's `Histogram` lists label
   * sets. The caller keeps it: asking twice for one label set makes two series, which the
   * exposition would write twice.
   * @throws Error naming the label, when `labels` lacks one of the label names or has another
   */
  seriesFor (labels: Readonly<Record<string, string>>): HistogramSeries {
    const names = Object.keys(labels)
    const stray = names.find(name => !this.labelNames.includes(name)) ?? this.labelNames.find(name => !names.includes(name))
    if (stray !== undefined) throw new Error(`${this.name}: label set ${JSON.stringify(labels)} does not match the label names ${this.labelNames.join(', ')} (${stray})`)
    return new HistogramSeries(labels, this.bounds, series => { this.series.push(series) })
  }

  /**
   * Forgets every observation (prom-client's `Registry.resetMetrics`): the exposition lists no
   * series until each is observed again, as after prom-client's `Histogram.reset()`.
   */
  reset (): void {
    for (const series of this.series) { series.counts.fill(0); series.sum = 0; series.count = 0; series.listed = false }
    this.series = []
  }

  /** What prom-client's `Registry.metrics()` writes: series labels kept apart as `sharedLabels`, as prom-client's `Histogram` does. */
  async getForPromString (): Promise<{ name: string, help: string, type: string, values: ExportedValue[], aggregator: string }> {
    const values: ExportedValue[] = []
    const bucket = `${this.name}_bucket`
    for (const series of this.series) {
      // One labels object per series, as prom-client's: its Registry caches the formatted labels by object.
      const shared = series.labels
      let cumulative = 0
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += series.counts[i]
        values.push({ labels: { le: this.bounds[i] }, sharedLabels: shared, value: cumulative, metricName: bucket, exemplar: null })
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels: shared, value: series.count, metricName: bucket, exemplar: null })
      values.push({ labels: {}, sharedLabels: shared, value: series.sum, metricName: `${this.name}_sum`, exemplar: undefined })
      values.push({ labels: {}, sharedLabels: shared, value: series.count, metricName: `${this.name}_count`, exemplar: undefined })
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator }
  }

  /** What `Registry.getMetricsAsJSON()` returns: each value's labels with its series labels merged in, as prom-client's `Histogram.get()`. */
  async get (): Promise<{ name: string, help: string, type: string, values: ExportedValue[], aggregator: string }> {
    const data = await this.getForPromString()
    // Keys in prom-client's order (its splayLabels): value, metricName, exemplar, then the merged labels.
    data.values = data.values.map(({ labels, sharedLabels, value, metricName, exemplar }) => ({ value, metricName, exemplar, labels: { ...labels, ...sharedLabels } }))
    return data
  }
}
