/**
 * The status model behind `GET /status` and `GET /status.json` (docs/operating.md › The status page): one
 * plain object read from the state the server itself runs on (the registry's `status()`,
 * `counts()`, `loads()`, `callStats()` and `collisions()`, the open sessions and streams, the
 * reloader's source and times), so the page, its JSON and /metrics cannot disagree. Pure of
 * Fastify; rendering to HTML is lib/ops/status-page.ts.
 *
 * Secrets never appear: an HTTP upstream's URL goes through redactUrl (userinfo and query string
 * become `***`), error texts through redactText; a stdio upstream shows its pid, never its command
 * line, `env` or `cwd`; no header, token or refused reload's reason (which may quote the config)
 * is copied. A kept upstream's reason (its new instance's failed start) is shown, redacted, as a
 * down upstream's `lastError` is.
 */
import type { Integrity, IntegrityEntry } from '../policy/integrity.js'
import { SERVER_VERSION } from '../base/version.js'
import { redactText, redactUrl } from '../base/redact.js'
import { WINDOW_SECONDS, type CallWindow } from '../upstreams/call-stats.js'
import type { NameCollision, UpstreamStatus } from '../upstreams/status.js'
import type { UpstreamConfig } from '../upstreams/config.js'
import type { UpstreamRegistry } from '../upstreams/contract.js'

/** One upstream's row. */
export interface UpstreamReport {
  name: string
  /** `stdio` (a child process) or `http`. */
  kind: 'stdio' | 'http'
  state: UpstreamStatus['state']
  /** Once ready: `modern` | `legacy`, and the revision negotiated. */
  era?: string
  revision?: string
  /** stdio: the child's pid while running. */
  pid?: number
  /** http: the URL, credentials and query redacted. */
  url?: string
  restarts: number
  /** Why it is down (redacted), while it is down. */
  lastError?: string
  /** A dual-era upstream's second, legacy connection, once opened. */
  legacy?: { state: string, revision?: string, restarts: number, lastError?: string }
  /** Config `isolation` when not `shared` (`per-session` | `per-principal`). */
  isolation?: string
  tools: number
  prompts: number
  resources: number
  resourceTemplates: number
  /** Skills it lists (the Skills extension; docs/skills.md); absent when none. */
  skills?: number
  /** Callers' calls since the upstream was configured, and how many failed. */
  calls: number
  errors: number
  /** Calls in flight and waiting for a slot now (maxInFlight, maxQueued). */
  inFlight: number
  queued: number
  /** The last minutes: calls, errors, p50/p99 in ms (see lib/upstreams/call-stats.ts). */
  window: CallWindow
}

/** The whole report (the body of `/status.json`). */
export interface StatusReport {
  mcpx: {
    version: string
    /** ISO 8601 times, UTC. */
    startedAt: string
    now: string
    uptimeSeconds: number
  }
  config: {
    /** The file the config was read from, or `(embedded default)`. */
    source: string
    /** When the running config was loaded (start, or the last applied reload). */
    loadedAt: string
    /**
     * The last reload asked for, applied or refused (a refusal's reason is in the log, not here).
     * `kept`: the upstreams whose changed config could not start, left running under their old
     * config, and why (redacted); empty when none.
     */
    lastReload?: { at: string, trigger: string, outcome: 'applied' | 'refused', kept: Array<{ name: string, reason: string }> }
  }
  /** Legacy sessions open on this process, and long-lived SSE streams (legacy GET, 2026-07-28 listen). */
  sessions: number
  streams: { get: number, listen: number }
  /** Length of the latency window, seconds. */
  windowSeconds: number
  upstreams: UpstreamReport[]
  /** Names and URIs two upstreams claim: the later one's is left out. */
  collisions: NameCollision[]
  /**
   * Pinned definitions (lib/policy/integrity.ts), when any upstream is pinned: where the pins live,
   * how many items are hidden, and every item of the pinned upstreams with its pin state.
   */
  integrity?: { store: string, quarantined: number, entries: IntegrityEntry[] }
}

/** Where {@link collectStatus} reads from; every function is called once per report. */
export interface StatusSources {
  registry: UpstreamRegistry
  /** The running upstreams' config (kind, URL, isolation), as reloads leave it. */
  upstreamConfigs: () => Record<string, UpstreamConfig>
  /** Open legacy sessions and SSE streams of the /mcp scope. */
  open: () => { sessions: number, streams: { get: number, listen: number } }
  /** The config's source, when it was loaded, and the last reload. */
  config: () => { source: string, loadedAt: Date, lastReload?: { at: Date, trigger: string, ok: boolean, kept?: Array<{ name: string, reason: string }> } }
  /** When this process started serving. */
  startedAt: Date
  /** The integrity gate, when any upstream is pinned. */
  integrity?: () => Integrity | undefined
}

/**
 * Builds the report now (see the module comment for what is redacted).
 * @returns a JSON-ready {@link StatusReport}. Never throws for a registry without the optional
 *          `counts`, `loads`, `callStats`, `collisions` (their fields are 0 or empty).
 */
export function collectStatus (sources: StatusSources, now = new Date()): StatusReport {
  const registry = sources.registry
  const configs = sources.upstreamConfigs()
  const counts = new Map((registry.counts?.() ?? []).map(c => [c.name, c]))
  const loads = new Map((registry.loads?.() ?? []).map(l => [l.name, l]))
  const stats = new Map((registry.callStats?.() ?? []).map(s => [s.name, s]))
  const upstreams = registry.status().map(status => {
    const config = configs[status.name] as UpstreamConfig | undefined
    const kind: 'stdio' | 'http' = config !== undefined && 'url' in config ? 'http' : 'stdio'
    const count = counts.get(status.name)
    const load = loads.get(status.name)
    const stat = stats.get(status.name)
    const legacy = status.legacy
    const row: UpstreamReport = {
      name: status.name,
      kind,
      state: status.state,
      ...(status.era !== undefined ? { era: status.era } : {}),
      ...(status.revision !== undefined ? { revision: status.revision } : {}),
      ...(kind === 'stdio' && status.pid !== undefined ? { pid: status.pid } : {}),
      ...(config !== undefined && 'url' in config ? { url: redactUrl(config.url) } : {}),
      restarts: status.restarts,
      ...(status.lastError !== undefined ? { lastError: redactText(status.lastError) } : {}),
      ...(legacy !== undefined
        ? { legacy: { state: legacy.state, ...(legacy.revision !== undefined ? { revision: legacy.revision } : {}), restarts: legacy.restarts, ...(legacy.lastError !== undefined ? { lastError: redactText(legacy.lastError) } : {}) } }
        : {}),
      tools: count?.tools ?? 0,
      prompts: count?.prompts ?? 0,
      resources: count?.resources ?? 0,
      resourceTemplates: count?.resourceTemplates ?? 0,
      ...(count?.skills !== undefined && count.skills > 0 ? { skills: count.skills } : {}),
      calls: stat?.calls ?? 0,
      errors: stat?.errors ?? 0,
      inFlight: load?.inFlight ?? 0,
      queued: load?.queued ?? 0,
      window: stat?.window ?? { seconds: WINDOW_SECONDS, calls: 0, errors: 0 }
    }
    const isolation = config?.isolation
    if (isolation !== undefined && isolation !== 'shared') row.isolation = isolation
    return row
  })
  const config = sources.config()
  const open = sources.open()
  const report: StatusReport = {
    mcpx: {
      version: SERVER_VERSION,
      startedAt: sources.startedAt.toISOString(),
      now: now.toISOString(),
      uptimeSeconds: Math.max(0, Math.round((now.getTime() - sources.startedAt.getTime()) / 1000))
    },
    config: { source: config.source, loadedAt: config.loadedAt.toISOString() },
    sessions: open.sessions,
    streams: { get: open.streams.get, listen: open.streams.listen },
    windowSeconds: WINDOW_SECONDS,
    upstreams,
    collisions: registry.collisions?.() ?? []
  }
  const integrity = sources.integrity?.()
  if (integrity !== undefined) report.integrity = { store: redactText(integrity.where), quarantined: integrity.quarantined(), entries: integrity.entries() }
  if (config.lastReload !== undefined) {
    const { at, trigger, ok, kept = [] } = config.lastReload
    report.config.lastReload = { at: at.toISOString(), trigger, outcome: ok ? 'applied' : 'refused', kept: kept.map(k => ({ name: k.name, reason: redactText(k.reason) })) }
  }
  return report
}
