/**
 * Prometheus metrics of one mcpx instance (docs/operating.md › Metrics), built on `prom-client`.
 * Each mcpx instance owns its own `Registry` (never prom-client's global one), so two apps in
 * one process never collide. The daemon serves it at `GET /metrics`; a host app reads it from
 * `app.mcpxMetrics.registry` and exposes it wherever it likes.
 *
 * Metrics (names follow Prometheus conventions: `_total` counters, `_seconds` durations):
 * - `mcpx_requests_total{http_method, rpc_method, era, status}`: /mcp requests answered.
 * - `mcpx_request_duration_seconds{http_method, era}`: /mcp request duration.
 * - `mcpx_upstream_call_duration_seconds{upstream, operation, outcome}`: callTool, getPrompt,
 *   readResource and complete, timed by the upstream that serves the call (the clock reads of its
 *   call statistics, lib/upstreams/call-stats.ts: one timer per call), through the registry's
 *   `observeCalls`; a registry without it (a test double, a host's own) is wrapped in a timing proxy.
 * - `mcpx_open_sessions`, `mcpx_open_streams{kind}` (kind: `get` | `listen`).
 * - `mcpx_stream_dropped_total{stream, kind}`: messages a client that was not reading lost past
 *   transport.streamBufferBytes (lib/connection/flow.ts): `log` lines dropped, `progress`/`resource`/`list`
 *   notifications superseded by a newer one; stream `reply` | `get` | `listen`.
 * - `mcpx_stream_overflows_total{stream}`: streams ended past transport.streamBufferMaxBytes.
 * - `mcpx_upstream_restarts_total{upstream}`, `mcpx_upstream_up{upstream}`: from `status()`.
 * - `mcpx_upstream_unrouted_total{upstream, kind}`: an upstream's questions refused (`question`),
 *   log lines dropped (`log`) because they could not be tied to one call, and task status
 *   notifications dropped (`task`: 2025-11-25, a task mcpx did not create, or its session has no
 *   stream here; 2026-07-28, not tied to one call in flight)
 *   (the registry's 'unrouted' event).
 * - `mcpx_upstream_in_flight{upstream}`, `mcpx_upstream_queued{upstream}`,
 *   `mcpx_upstream_refused_total{upstream}` (queue full), `mcpx_upstream_oversized_messages_total{upstream}`
 *   (over maxMessageBytes), `mcpx_upstream_stdin_buffered_bytes{upstream}`: from `loads()`.
 * - `mcpx_config_reloads_total{trigger, outcome}`: config reloads, `applied` or `refused`.
 * - `mcpx_audit_lines_lost_total{reason}`: audit lines lost for good: `write` (the file could not be
 *   opened, writes kept failing past lib/policy/audit GIVE_UP_MS, or shutdown came first) or
 *   `dropped` (its buffer was full).
 * - `mcpx_audit_failures_total{reason}`: opens and writes of the audit file the system refused
 *   (`write`; a retried write counts each time) and lines dropped (`dropped`): trouble, not loss.
 * - `mcpx_rate_limit_refusals_total{reason}`: calls refused by a policy rate limit:
 *   `limited` (past the limit: JSON-RPC -31002, HTTP 429) or `unavailable` (the shared store,
 *   Redis, could not be asked: -32603, HTTP 503).
 *
 * Label values that come from the wire are bounded: an unknown JSON-RPC method counts as `other`.
 * lib/ imports nothing from Fastify.
 */
import { Registry, Counter, Gauge, Histogram } from 'prom-client'
import type { UpstreamRegistry } from '../upstreams/contract.js'
import type { JsonObject } from '../protocol/jsonrpc.js'
import type { FlowDrop, FlowStream } from '../connection/flow.js'

/** JSON-RPC methods counted under their own name; any other method is `other` (bounded cardinality). */
export const COUNTED_METHODS: ReadonlySet<string> = new Set([
  'initialize', 'ping', 'server/discover', 'logging/setLevel', 'completion/complete', 'subscriptions/listen',
  'tools/list', 'tools/call', 'prompts/list', 'prompts/get',
  'resources/list', 'resources/templates/list', 'resources/read', 'resources/subscribe', 'resources/unsubscribe',
  'skills/list', 'skills/get', 'resources/directory/read',
  'notifications/initialized', 'notifications/cancelled', 'notifications/progress', 'notifications/roots/list_changed'
])

/** Histogram buckets for upstream calls and requests, seconds (5 ms … 60 s). */
export const LATENCY_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

/** Labels of one answered /mcp request. */
export interface RequestLabels {
  /** `GET`, `POST`, `DELETE`, `OPTIONS`. */
  httpMethod: string
  /** The JSON-RPC method (any string; bounded here), `batch`, `response`, or '' when none. */
  rpcMethod: string
  /** `legacy` | `modern` | '' when the request was refused before its era was decided. */
  era: string
  status: number
  /** Duration of the request, ms. */
  durationMs: number
}

/** What the /mcp scope reports about its open sessions and streams; read at scrape time. */
export interface ScopeGauges {
  sessions: () => number
  streams: (kind: 'get' | 'listen') => number
}

/** The metrics of one mcpx instance. */
export interface McpxMetrics {
  /** The prom-client registry holding every mcpx metric: `await registry.metrics()`, `registry.contentType`. */
  readonly registry: Registry
  /** Counts one answered /mcp request. Never throws. */
  requestDone: (labels: RequestLabels) => void
  /**
   * Times callTool, getPrompt, readResource and complete of an upstream registry. A registry that
   * reports its calls (`observeCalls`, lib/upstreams/registry.ts) is returned as it is, observed: its
   * upstreams time each call once, for their call statistics and for this metric alike. Any other is
   * wrapped in a proxy that times those four and forwards everything else (events included) to the
   * original. Never throws.
   */
  instrument: (upstreams: UpstreamRegistry) => UpstreamRegistry
  /** Stops observing the registries {@link instrument} observed (the app closes; a host's registry may live on). Never throws. */
  release: () => void
  /** Lets the /mcp scope report its sessions and streams (called once, at registration). */
  bindScope: (gauges: ScopeGauges) => void
  /** Legacy sessions and SSE streams open now, as the gauges report them (0 before bindScope). Never throws. */
  open: () => { sessions: number, streams: { get: number, listen: number } }
  /** Counts one connection the daemon cut for sending its request too slowly. Never throws. */
  connectionTimedOut: (kind: ConnectionTimeoutKind) => void
  /** Counts a message taken out of an outgoing stream past its mark (lib/connection/flow.ts FlowPolicy.dropped). Never throws. */
  streamDropped: (stream: FlowStream, what: FlowDrop) => void
  /** Counts an outgoing stream ended past its hard limit (lib/connection/flow.ts FlowPolicy.overflowed). Never throws. */
  streamOverflowed: (stream: FlowStream) => void
  /** Counts one refused open or write of the audit file (`write`), or one line dropped at its buffer bound (`dropped`). Never throws. */
  auditFailed: (reason: 'write' | 'dropped') => void
  /** Counts audit lines lost for good (lib/policy/audit.ts): `write` (given up) or `dropped` (buffer full). Never throws. */
  auditLinesLost: (reason: 'write' | 'dropped', lines: number) => void
  /** Counts one config reload (lib/ops/reload.ts): trigger SIGHUP | watch | admin, outcome applied | refused. Never throws. */
  configReloaded: (trigger: string, outcome: 'applied' | 'refused') => void
  /** Counts one call refused by a rate limit (`limited`) or for want of its store (`unavailable`). Never throws. */
  rateLimitRefused: (reason: 'limited' | 'unavailable') => void
  /**
   * Counts one changed definition of a pinned upstream (lib/policy/integrity.ts), once per definition:
   * kind tool | prompt | template, change changed | new | renamed, action served (warn) | hidden (quarantine). Never throws.
   */
  integrityChanged: (upstream: string, kind: string, change: string, action: 'served' | 'hidden') => void
}

/**
 * Why a connection was cut: `silent` sent no byte within transport.headersTimeout (closed),
 * `head` did not finish its request head in time (408), `body` did not finish its body (408).
 */
export type ConnectionTimeoutKind = 'silent' | 'head' | 'body'

/**
 * The upstream a call on the catalogue name of a tool, a prompt or a resource goes to: the only
 * upstream when there is one, else the registry's own route ({@link UpstreamRegistry.ownerOf}), so a
 * custom `prefix` is labelled like the default `<upstream>__` one. `undefined` when no upstream owns
 * the name (unknown, or gone in a reload). Never throws.
 * @param kind what `name` names: a tool or prompt name, or a resource URI
 */
export function upstreamOf (upstreams: UpstreamRegistry, kind: 'tool' | 'prompt' | 'resource', name: string | undefined): string | undefined {
  const names = upstreams.upstreamNames?.() ?? upstreams.status().map(u => u.name)
  if (names.length === 1) return names[0]
  return name === undefined ? undefined : upstreams.ownerOf?.(kind, name)?.upstream
}

/** The bounded `rpc_method` label of a method name. */
export function methodLabel (method: string): string {
  return method === '' || method === 'batch' || method === 'response' || COUNTED_METHODS.has(method) ? method : 'other'
}

type Timed = 'callTool' | 'getPrompt' | 'readResource' | 'complete'

/** One label set of mcpx_requests_total: its count, and how much of it prom-client has been given. */
interface RequestCount { labels: { http_method: string, rpc_method: string, era: string, status: string }, count: number, published: number }

/**
 * Counts of mcpx_requests_total by label set, as nested maps of the label values (HTTP method,
 * JSON-RPC method label, era, status), so counting a request builds no key. {@link publish} hands
 * prom-client what was counted since the last scrape. Not exported.
 */
class RequestCounts {
  private readonly byMethod = new Map<string, Map<string, Map<string, Map<number, RequestCount>>>>()
  private readonly all: RequestCount[] = []

  add (httpMethod: string, rpcMethod: string, era: string, status: number): void {
    let byRpc = this.byMethod.get(httpMethod)
    if (byRpc === undefined) this.byMethod.set(httpMethod, byRpc = new Map())
    let byEra = byRpc.get(rpcMethod)
    if (byEra === undefined) byRpc.set(rpcMethod, byEra = new Map())
    let byStatus = byEra.get(era)
    if (byStatus === undefined) byEra.set(era, byStatus = new Map())
    let entry = byStatus.get(status)
    if (entry === undefined) {
      entry = { labels: { http_method: httpMethod, rpc_method: rpcMethod, era, status: String(status) }, count: 0, published: 0 }
      byStatus.set(status, entry)
      this.all.push(entry)
    }
    entry.count++
  }

  /** Calls `inc` with each label set's count since the last publish (label sets with none are skipped). */
  publish (inc: (labels: RequestCount['labels'], delta: number) => void): void {
    for (const entry of this.all) {
      const delta = entry.count - entry.published
      if (delta === 0) continue
      entry.published = entry.count
      inc(entry.labels, delta)
    }
  }
}

/**
 * Creates the metrics of one mcpx instance.
 * @param upstreams the registry whose `status()` feeds the restart and up gauges (read at scrape time)
 */
export function createMetrics (upstreams: UpstreamRegistry): McpxMetrics {
  const registry = new Registry()
  const registers = [registry]
  let scope: ScopeGauges | undefined

  // mcpx_requests_total is counted here, per label set, and handed to prom-client at scrape time
  // (collect): a request costs four Map lookups and an increment instead of prom-client's label
  // validation and key building on every request (with the upstream timer's move from
  // BigInts to performance.now below, 2.2 % fewer daemon instructions per call). A label set keeps one entry once seen, as prom-client's own does.
  const requestCounts = new RequestCounts()
  new Counter({
    name: 'mcpx_requests_total',
    help: 'MCP HTTP requests answered, by HTTP method, JSON-RPC method, era and status',
    labelNames: ['http_method', 'rpc_method', 'era', 'status'] as const,
    registers,
    collect () { requestCounts.publish((labels, delta) => { this.inc(labels, delta) }) }
  })
  const requestSeconds = new Histogram({
    name: 'mcpx_request_duration_seconds',
    help: 'Duration of MCP HTTP requests (SSE streams: until the stream ended), seconds',
    labelNames: ['http_method', 'era'] as const,
    buckets: LATENCY_BUCKETS_SECONDS,
    registers
  })
  const upstreamSeconds = new Histogram({
    name: 'mcpx_upstream_call_duration_seconds',
    help: 'Duration of calls routed to an upstream (tools/call, prompts/get, resources/read, completion/complete), seconds',
    labelNames: ['upstream', 'operation', 'outcome'] as const,
    buckets: LATENCY_BUCKETS_SECONDS,
    registers
  })
  new Gauge({
    name: 'mcpx_open_sessions',
    help: 'Legacy Streamable HTTP sessions open',
    registers,
    collect () { this.set(scope?.sessions() ?? 0) }
  })
  new Gauge({
    name: 'mcpx_open_streams',
    help: 'Long-lived SSE streams open: legacy GET notification streams and 2026-07-28 subscriptions/listen streams',
    labelNames: ['kind'] as const,
    registers,
    collect () {
      this.set({ kind: 'get' }, scope?.streams('get') ?? 0)
      this.set({ kind: 'listen' }, scope?.streams('listen') ?? 0)
    }
  })
  const connectionTimeouts = new Counter({
    name: 'mcpx_connection_timeouts_total',
    help: 'Connections cut for sending a request too slowly (transport.headersTimeout, bodyTimeout), by kind: silent, head, body',
    labelNames: ['kind'] as const,
    registers
  })
  const unrouted = new Counter({
    name: 'mcpx_upstream_unrouted_total',
    help: 'Questions refused (kind=question) and log lines dropped (kind=log) because they could not be tied to exactly one call of a shared upstream',
    labelNames: ['upstream', 'kind'] as const,
    registers
  })
  // Upstream names come from the config (bounded); kind is question | log.
  upstreams.on('unrouted', (upstream: string, kind: string) => { unrouted.inc({ upstream, kind }) })
  const streamDropped = new Counter({
    name: 'mcpx_stream_dropped_total',
    help: 'Messages a client that was not reading lost past transport.streamBufferBytes: log lines dropped (kind log), notifications superseded by a newer one (progress, resource, list), by stream (reply, get, listen)',
    labelNames: ['stream', 'kind'] as const,
    registers
  })
  const streamOverflows = new Counter({
    name: 'mcpx_stream_overflows_total',
    help: 'Outgoing streams ended because their client was not reading past transport.streamBufferMaxBytes, by stream (reply, get, listen)',
    labelNames: ['stream'] as const,
    registers
  })
  const auditFailures = new Counter({
    name: 'mcpx_audit_failures_total',
    help: 'Audit file troubles, not lines lost (see mcpx_audit_lines_lost_total): write (an open or a write the system refused, e.g. a full disk; a retried write counts each time) or dropped (a line dropped, its buffer was full)',
    labelNames: ['reason'] as const,
    registers
  })
  const auditLinesLost = new Counter({
    name: 'mcpx_audit_lines_lost_total',
    help: 'Audit lines lost for good: write (the file could not be opened, writes kept failing for 5 s, or shutdown came first) or dropped (its buffer was full)',
    labelNames: ['reason'] as const,
    registers
  })
  const rateLimitRefusals = new Counter({
    name: 'mcpx_rate_limit_refusals_total',
    help: 'Calls refused by a policy rate limit: limited (past the limit; JSON-RPC -31002, HTTP 429) or unavailable (the shared Redis store could not be asked; -32603, HTTP 503)',
    labelNames: ['reason'] as const,
    registers
  })
  const integrityChanges = new Counter({
    name: 'mcpx_integrity_changes_total',
    help: 'Definitions of pinned upstreams that differ from their pin (docs/policy.md › Integrity), once per definition: by upstream, kind, change (changed, new, renamed) and action (served, hidden)',
    labelNames: ['upstream', 'kind', 'change', 'action'] as const,
    registers
  })
  const reloads = new Counter({
    name: 'mcpx_config_reloads_total',
    help: 'Config reloads (SIGHUP, --watch, POST /admin/reload), by trigger and outcome: applied or refused',
    labelNames: ['trigger', 'outcome'] as const,
    registers
  })
  const seenRestarts = new Map<string, number>()
  new Counter({
    name: 'mcpx_upstream_restarts_total',
    help: 'Times an upstream was restarted after it went down',
    labelNames: ['upstream'] as const,
    registers,
    collect () {
      for (const u of upstreams.status()) {
        const delta = u.restarts - (seenRestarts.get(u.name) ?? 0)
        seenRestarts.set(u.name, u.restarts)
        this.inc({ upstream: u.name }, Math.max(0, delta))
      }
    }
  })
  new Gauge({
    name: 'mcpx_upstream_up',
    help: '1 when the upstream is connected (ready), 0 otherwise',
    labelNames: ['upstream'] as const,
    registers,
    // reset first: an upstream removed by a reload leaves the gauge.
    collect () { this.reset(); for (const u of upstreams.status()) this.set({ upstream: u.name }, u.state === 'ready' ? 1 : 0) }
  })

  // The per-upstream bounds, read from the registry at scrape time: once per scrape, for
  // the five series below (prom-client collects them in one turn; the snapshot is dropped after it).
  let scrapeLoads: ReturnType<NonNullable<UpstreamRegistry['loads']>> | undefined
  const loads = (): NonNullable<typeof scrapeLoads> => {
    if (scrapeLoads === undefined) {
      scrapeLoads = upstreams.loads?.() ?? []
      setImmediate(() => { scrapeLoads = undefined })
    }
    return scrapeLoads
  }
  new Gauge({
    name: 'mcpx_upstream_in_flight',
    help: 'Calls in flight to an upstream now (at most its maxInFlight)',
    labelNames: ['upstream'] as const,
    registers,
    collect () { this.reset(); for (const u of loads()) this.set({ upstream: u.name }, u.inFlight) }
  })
  new Gauge({
    name: 'mcpx_upstream_queued',
    help: 'Calls waiting for one of an upstream\'s maxInFlight slots now (at most its maxQueued)',
    labelNames: ['upstream'] as const,
    registers,
    collect () { this.reset(); for (const u of loads()) this.set({ upstream: u.name }, u.queued) }
  })
  new Gauge({
    name: 'mcpx_upstream_stdin_buffered_bytes',
    help: 'Bytes waiting in mcpx for a stdio upstream\'s stdin pipe (bounded by transport.streamBufferBytes plus one message)',
    labelNames: ['upstream'] as const,
    registers,
    collect () { this.reset(); for (const u of loads()) this.set({ upstream: u.name }, u.stdinBuffered) }
  })
  const seenLoad = new Map<string, { refused: number, oversized: number }>()
  const loadDelta = (name: string, key: 'refused' | 'oversized', value: number): number => {
    let seen = seenLoad.get(name)
    if (seen === undefined) { seen = { refused: 0, oversized: 0 }; seenLoad.set(name, seen) }
    const delta = Math.max(0, value - seen[key])
    seen[key] = value
    return delta
  }
  new Counter({
    name: 'mcpx_upstream_refused_total',
    help: 'Calls refused because the upstream had maxInFlight calls in flight and maxQueued waiting (JSON-RPC -32603; HTTP 503)',
    labelNames: ['upstream'] as const,
    registers,
    collect () { for (const u of loads()) this.inc({ upstream: u.name }, loadDelta(u.name, 'refused', u.refused)) }
  })
  new Counter({
    name: 'mcpx_upstream_oversized_messages_total',
    help: 'Messages from an upstream skipped for being larger than its maxMessageBytes',
    labelNames: ['upstream'] as const,
    registers,
    collect () { for (const u of loads()) this.inc({ upstream: u.name }, loadDelta(u.name, 'oversized', u.oversized)) }
  })

  // The label sets of mcpx_upstream_call_duration_seconds, made once per operation, upstream and
  // outcome (bounded by the configured upstreams, as prom-client's own label sets are): no label
  // object per call.
  type CallLabels = { upstream: string, operation: Timed, outcome: 'ok' | 'error' }
  const labelSets: Record<Timed, Map<string, { ok: CallLabels, error: CallLabels }>> = { callTool: new Map(), getPrompt: new Map(), readResource: new Map(), complete: new Map() }
  const labelsOf = (upstream: string, operation: Timed, failed: boolean): CallLabels => {
    const byUpstream = labelSets[operation]
    let sets = byUpstream.get(upstream)
    if (sets === undefined) byUpstream.set(upstream, sets = { ok: { upstream, operation, outcome: 'ok' }, error: { upstream, operation, outcome: 'error' } })
    return failed ? sets.error : sets.ok
  }

  /**
   * Wraps one of the routed calls (at most three arguments: callTool(name, args, options),
   * getPrompt(name, args, options), readResource(uri, options), complete(params, options)) of a
   * registry that does not report its calls (no `observeCalls`: a test double, a host's own) to time it.
   * Per call it allocates no argument array and no route tuple.
   */
  function timed (target: UpstreamRegistry, operation: Timed, call: (a: any, b: any, c: any) => Promise<JsonObject>, kindOf: (a: any) => 'tool' | 'prompt' | 'resource', nameOf: (a: any) => string | undefined) {
    return async function timedCall (a: unknown, b: unknown, c: unknown): Promise<JsonObject> {
      const startMs = performance.now()
      let failed = false
      try {
        return await call.call(target, a, b, c)
      } catch (err) {
        failed = true
        throw err
      } finally {
        const seconds = (performance.now() - startMs) / 1000
        upstreamSeconds.observe(labelsOf(upstreamOf(target, kindOf(a), nameOf(a)) ?? 'unknown', operation, failed), seconds)
      }
    }
  }

  /** What {@link McpxMetrics.release} undoes: one per registry observed. */
  const releases: Array<() => void> = []

  return {
    registry,
    requestDone (labels) {
      requestCounts.add(labels.httpMethod, methodLabel(labels.rpcMethod), labels.era, labels.status)
      requestSeconds.observe({ http_method: labels.httpMethod, era: labels.era }, labels.durationMs / 1000)
    },
    instrument (target) {
      if (target.observeCalls !== undefined) {
        // Timed by the upstream that serves the call (lib/upstreams/upstream.ts: the clock reads of
        // its call statistics): no second timer, no proxy in front of the registry. A call refused
        // before it reached an upstream counts as an error of what it named's upstream (duration 0).
        releases.push(target.observeCalls({
          settled (upstream, operation, durationMs, rejected) { upstreamSeconds.observe(labelsOf(upstream, operation, rejected), durationMs / 1000) },
          refused (operation, kind, name) { upstreamSeconds.observe(labelsOf(upstreamOf(target, kind, name) ?? 'unknown', operation, true), 0) }
        }))
        return target
      }
      // The timed methods, then every other method once bound to the registry: one Map lookup per
      // method read (the request path reads several per call); other properties are read live.
      const methods = new Map<PropertyKey, unknown>([
        ['callTool', timed(target, 'callTool', target.callTool, () => 'tool', (name: string) => name)],
        ['getPrompt', timed(target, 'getPrompt', target.getPrompt, () => 'prompt', (name: string) => name)],
        ['readResource', timed(target, 'readResource', target.readResource, () => 'resource', (uri: string) => uri)],
        // completion/complete's ref names a prompt (ref/prompt) or a resource template's URI (ref/resource).
        ['complete', timed(target, 'complete', target.complete, (params: JsonObject) => (params.ref as { type?: unknown } | undefined)?.type === 'ref/resource' ? 'resource' : 'prompt', (params: JsonObject) => {
          const ref = params.ref as { type?: unknown, name?: unknown, uri?: unknown } | undefined
          const name = ref?.type === 'ref/resource' ? ref.uri : ref?.name
          return typeof name === 'string' ? name : undefined
        })]
      ])
      return new Proxy(target, {
        get (obj, key) {
          const method = methods.get(key)
          if (method !== undefined) return method
          const value = Reflect.get(obj, key, obj) as unknown
          if (typeof value !== 'function') return value
          const fn = (value as (...a: unknown[]) => unknown).bind(obj)
          methods.set(key, fn)
          return fn
        }
      })
    },
    release () { for (const release of releases.splice(0)) release() },
    bindScope (gauges) { scope = gauges },
    open () {
      return { sessions: scope?.sessions() ?? 0, streams: { get: scope?.streams('get') ?? 0, listen: scope?.streams('listen') ?? 0 } }
    },
    connectionTimedOut (kind) { connectionTimeouts.inc({ kind }) },
    streamDropped (stream, what) { streamDropped.inc({ stream, kind: what }) },
    streamOverflowed (stream) { streamOverflows.inc({ stream }) },
    auditFailed (reason) { auditFailures.inc({ reason }) },
    auditLinesLost (reason, lines) { auditLinesLost.inc({ reason }, lines) },
    configReloaded (trigger, outcome) { reloads.inc({ trigger, outcome }) },
    rateLimitRefused (reason) { rateLimitRefusals.inc({ reason }) },
    integrityChanged (upstream, kind, change, action) { integrityChanges.inc({ upstream, kind, change, action }) }
  }
}
