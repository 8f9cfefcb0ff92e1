/**
 * Hot reload of the config (docs/operating.md › Reloading the config), for both faces: the daemon (SIGHUP,
 * `mcpx daemon --watch`, `POST /admin/reload`) and `mcpx serve` (SIGHUP). Pure of Fastify.
 *
 * A reload reads the config again from where it came from, validates it, and hands the new
 * `upstreams` to the registry's `reconcile` (lib/upstreams/registry.ts): changed upstreams are
 * restarted make before break (the new instance takes over once ready, the old one is drained for
 * at most {@link ReloaderOptions.drainMs}; one whose new instance cannot start keeps running under
 * its old config, and the result's `kept` says which and why), removed ones stopped (children
 * reaped), new ones started, unchanged ones keep running with their sessions, streams and in-flight
 * calls. Clients get list_changed through the registry's events when the catalogue changed.
 *
 * Refused (one error line; the running config stays): a config that cannot be read or is invalid,
 * a change of `daemon.address` (the listening socket is not moved), a change to an upstream's
 * `auth` (its credentials are read once, at start). `policy`, `servers`, `discovery`, `confirmation` and
 * `transport.pageSize` are applied live when the face gives `applyAccess` (the daemon
 * and `mcpx serve` do): requests that start after the reload see them. Other keys outside
 * `upstreams` (the rest of transport, auth, sessions…) are not applied live: the reload goes ahead
 * and its log line names them as "restart to apply" (`transport.<key>` for transport's).
 *
 * Reloads never overlap: one asked for while another runs waits for it, and several waiting are
 * coalesced into one (they all get its result).
 */
import { isDeepStrictEqual } from 'node:util'
import type { McpxConfig } from '../config/types.js'
import type { Logger } from '../telemetry/log.js'
import type { KeptUpstream, ReconcileSummary, UpstreamRegistry } from '../upstreams/contract.js'
import { modesOf } from '../policy/integrity.js'

/** What asked for a reload; logged and counted. */
export type ReloadTrigger = 'SIGHUP' | 'watch' | 'admin'

/** The outcome of one reload. */
export type ReloadResult =
  | ({ ok: true, trigger: ReloadTrigger, at: Date, changed: boolean, restartToApply: string[], kept: KeptUpstream[] } & ReconcileSummary)
  | { ok: false, trigger: ReloadTrigger, at: Date, reason: string }

/** Options of {@link Reloader}. */
export interface ReloaderOptions {
  /** The registry to reconcile (must implement `reconcile`, else every reload is refused). */
  registry: UpstreamRegistry
  /** The running config (after loadConfig). */
  config: McpxConfig
  /** Reads and validates the config again (throws McpxError MCPX_ERR_CONFIG naming what is wrong). */
  load: () => McpxConfig
  /** Where the config comes from (a file path, or "(embedded default)"): for logs and the status page. */
  source: string
  logger: Pick<Logger, 'info' | 'warn' | 'error'>
  /** Called after every reload, applied or refused (a metric). Must not throw. */
  onReload?: (result: ReloadResult) => void
  /**
   * Applies `policy`, `servers`, `discovery` and `transport.pageSize` live (lib/core.ts Core.applyAccess);
   * returns the keys it could not apply. Absent: those keys too are "restart to apply".
   */
  applyAccess?: (next: McpxConfig) => string[]
  /**
   * How long calls in flight on a restarted upstream's old instance may finish once the new one took
   * over, ms: the face's own shutdown bound (daemon `daemon.shutdownTimeout`, `mcpx serve`
   * `transport.stdioDrain`). Default the registry's (RELOAD_DRAIN_MS, 10 s).
   */
  drainMs?: number
}

/** The keys besides `upstreams` a reload applies live when the face gives {@link ReloaderOptions.applyAccess}. */
const ACCESS_KEYS = new Set(['policy', 'servers', 'discovery', 'confirmation', 'integrity'])
/** The `transport` keys a reload applies live with {@link ReloaderOptions.applyAccess}. */
const LIVE_TRANSPORT_KEYS = new Set(['pageSize'])

/** Runs reloads one at a time and remembers the last one. */
export class Reloader {
  /** The config running now (its upstreams part is what the registry runs). */
  current: McpxConfig
  /** When the running config was loaded (start, or the last applied reload). */
  loadedAt = new Date()
  /** The last reload, applied or refused; undefined before the first. */
  last: ReloadResult | undefined
  private running: Promise<ReloadResult> | undefined
  private queued: Promise<ReloadResult> | undefined

  constructor (private readonly options: ReloaderOptions) {
    this.current = options.config
  }

  /** Where the config is read from. */
  get source (): string { return this.options.source }

  /**
   * Reloads the config (see the file's comment). Never rejects: a refusal is a result with
   * `ok: false` and a one-line `reason`, also logged at error.
   */
  async reload (trigger: ReloadTrigger): Promise<ReloadResult> {
    if (this.running === undefined) return await this.run(trigger)
    // One is running: at most one more waits behind it, shared by every caller meanwhile.
    this.queued ??= this.running.then(async () => { this.queued = undefined; return await this.run(trigger) })
    return await this.queued
  }

  private async run (trigger: ReloadTrigger): Promise<ReloadResult> {
    this.running = this.apply(trigger).finally(() => { this.running = undefined })
    return await this.running
  }

  private async apply (trigger: ReloadTrigger): Promise<ReloadResult> {
    const at = new Date()
    const refuse = (reason: string): ReloadResult => {
      const result: ReloadResult = { ok: false, trigger, at, reason }
      this.options.logger.error({ trigger, config: this.source, reason }, `config reload refused, running config kept: ${reason}`)
      return this.done(result)
    }
    let next: McpxConfig
    try {
      next = this.options.load()
    } catch (err) {
      // The message already starts with "mcpx:" and names every bad field; keep it on one line.
      return refuse((err as Error).message.replace(/^mcpx: /, '').replace(/:\n\s*/g, ': ').replace(/\n\s*/g, '; '))
    }
    const registry = this.options.registry
    if (registry.reconcile === undefined) return refuse('this registry cannot reload its upstreams')
    if (next.daemon.address !== this.current.daemon.address) {
      return refuse(`daemon.address changed from ${this.current.daemon.address} to ${next.daemon.address}: restart mcpx to listen elsewhere`)
    }
    const authChanged = [...new Set([...Object.keys(this.current.upstreams), ...Object.keys(next.upstreams)])].filter(name => {
      const before = this.current.upstreams[name] as { auth?: unknown } | undefined
      const after = next.upstreams[name] as { auth?: unknown } | undefined
      return (before?.auth !== undefined || after?.auth !== undefined) && !isDeepStrictEqual(before?.auth, after?.auth)
    })
    if (authChanged.length > 0) return refuse(`upstreams.${authChanged.join(', upstreams.')}: auth changed; upstream credentials are read at start, restart mcpx to apply`)
    const differs = (key: string): boolean => !isDeepStrictEqual((this.current as unknown as Record<string, unknown>)[key], (next as unknown as Record<string, unknown>)[key])
    const applyAccess = this.options.applyAccess
    const restartToApply = Object.keys({ ...this.current, ...next }).filter(key => key !== 'upstreams' && key !== 'transport' && !(applyAccess !== undefined && ACCESS_KEYS.has(key)) && differs(key))
    // transport, key by key: pageSize applies live (with applyAccess), the rest at the next start.
    const transportBefore = this.current.transport as unknown as Record<string, unknown>
    const transportAfter = next.transport as unknown as Record<string, unknown>
    const transportChanged = Object.keys({ ...transportBefore, ...transportAfter }).filter(key => !isDeepStrictEqual(transportBefore[key], transportAfter[key]))
    for (const key of transportChanged) if (applyAccess === undefined || !LIVE_TRANSPORT_KEYS.has(key)) restartToApply.push(`transport.${key}`)
    const pageSizeChanged = applyAccess !== undefined && transportChanged.includes('pageSize')
    const summary = await registry.reconcile(next.upstreams, this.options.drainMs !== undefined ? { drainMs: this.options.drainMs } : {})
    const kept = summary.kept ?? []
    // The running config is the new one for upstreams (and policy, servers, transport.pageSize when
    // applied), except an upstream kept under its old config; the keys that need a restart keep
    // their running values.
    const upstreams = { ...next.upstreams }
    for (const { name } of kept) if (Object.hasOwn(this.current.upstreams, name)) upstreams[name] = this.current.upstreams[name]
    const running: McpxConfig = { ...this.current, upstreams }
    // integrity: the top-level key, or an upstream's own integrity.pin (which restarts nothing: lib/upstreams/registry.ts sameConnection).
    const pinsChanged = !isDeepStrictEqual(modesOf(this.current), modesOf(next)) || differs('integrity')
    const accessChanged = differs('policy') || differs('servers') || differs('discovery') || differs('confirmation') || pageSizeChanged || pinsChanged
    if (applyAccess !== undefined && accessChanged) {
      const notApplied = applyAccess(next)
      for (const key of notApplied) if (!ACCESS_KEYS.has(key)) restartToApply.push(key)
      for (const key of ACCESS_KEYS) {
        if (notApplied.includes(key)) { if (differs(key) || (key === 'integrity' && pinsChanged)) restartToApply.push(key); continue }
        ;(running as unknown as Record<string, unknown>)[key] = (next as unknown as Record<string, unknown>)[key]
      }
      if (pageSizeChanged) running.transport = { ...running.transport, pageSize: next.transport.pageSize }
    }
    this.current = running
    this.loadedAt = at
    const changed = summary.added.length + summary.removed.length + summary.restarted.length > 0 || (applyAccess !== undefined && accessChanged)
    const result: ReloadResult = { ok: true, trigger, at, changed, restartToApply, ...summary, kept }
    // A kept upstream makes the line a warning, naming it and why (the SIGHUP and --watch answer).
    const fields = { trigger, config: this.source, added: summary.added, removed: summary.removed, restarted: summary.restarted, unchanged: summary.unchanged.length, restartToApply, ...(kept.length > 0 ? { kept } : {}) }
    const message = `config reloaded: ${summary.added.length} added, ${summary.removed.length} removed, ${summary.restarted.length} restarted, ${summary.unchanged.length} unchanged` +
      (kept.length > 0 ? `; ${kept.map(k => `${k.name} kept its old config (${k.reason})`).join('; ')}` : '') +
      (restartToApply.length > 0 ? `; restart to apply ${restartToApply.join(', ')}` : '')
    if (kept.length > 0) this.options.logger.warn(fields, message)
    else this.options.logger.info(fields, message)
    return this.done(result)
  }

  private done (result: ReloadResult): ReloadResult {
    this.last = result
    this.options.onReload?.(result)
    return result
  }
}

/** How long `--watch` waits after the last change event before reloading, ms (editors write in several steps). */
export const WATCH_DEBOUNCE_MS = 300

/**
 * Watches the config file (`mcpx daemon --watch`) and reloads after changes, debounced by
 * {@link WATCH_DEBOUNCE_MS}. The file's directory is watched, not the file: editors and
 * `mv`-style deploys replace the file (a new inode), which a watch on the file itself would miss.
 * @param file absolute path of the config file
 * @returns a function that stops watching. Throws when the directory cannot be watched.
 */
export async function watchConfig (file: string, reloader: Reloader): Promise<() => void> {
  const { watch } = await import('node:fs')
  const { dirname, basename } = await import('node:path')
  const name = basename(file)
  let timer: NodeJS.Timeout | undefined
  const watcher = watch(dirname(file), { persistent: false }, (_event, changed) => {
    if (changed !== null && changed !== name) return
    clearTimeout(timer)
    timer = setTimeout(() => { void reloader.reload('watch') }, WATCH_DEBOUNCE_MS)
  })
  watcher.on('error', () => {})
  return () => { clearTimeout(timer); watcher.close() }
}
