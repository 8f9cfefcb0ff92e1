/**
 * The upstream registry: every configured upstream (upstream.ts), their lists merged under
 * prefixed names, and the router that sends each call to the upstream that owns it
 * (the contract is contract.ts).
 *
 * Names: each upstream has a prefix. By default there is none when one upstream is configured,
 * and the upstream's name when there are several; an explicit `prefix` wins (`""` = none). A
 * prefixed name is `<prefix>__<name>` (e.g. `everything__echo`). Tool and prompt names are
 * prefixed; resource URIs are not, but for the `skill://` URIs of an upstream that declares the Skills
 * extension (SEP-2640), which get the prefix as a leading segment (lib/protocol/skills.ts; its skills are
 * merged with the resources, `rebuildSkills`). A name (or URI) claimed twice keeps the first upstream in
 * config order; the other is dropped with a warning naming both. A tool or prompt name collision
 * is warned once; a resource URI or template collision is warned whenever it appears (at start,
 * when an upstream comes back) and again on every re-list an upstream announces, since a client
 * reading that URI silently gets the first upstream's resource (docs/upstreams.md › Names and collisions).
 *
 * Over ~500 lines on purpose: it is the one implementation of the UpstreamRegistry contract, and
 * each of its methods is a few lines of routing over the same private tables (the upstreams in
 * config order, the routes `rebuild` keeps); split, every part would need those tables. What a
 * call means lives elsewhere (one upstream: upstream.ts; tasks: lib/dispatch/tasks.ts, which reads the
 * merged 2025-11-25 `tasks` capability from `legacyTasks` here, beside `capabilities`, since both
 * read every upstream's negotiated capabilities).
 */
import { EventEmitter } from 'node:events'
import { isDeepStrictEqual } from 'node:util'
import { INVALID_PARAMS, RESOURCE_NOT_FOUND, UPSTREAM_ERROR, isObject, UpstreamRpcError, type ListKind, type JsonObject } from '../protocol/jsonrpc.js'
import { Upstream } from './upstream.js'
import { TASKS_EXTENSION, declaresTasks } from '../protocol/tasks.js'
import { compileUriTemplate, type UriTemplateMatcher } from '../protocol/uri-template.js'
import { DIRECTORY_READ, SKILLS_EXTENSION, SKILLS_GET, SKILL_SCHEME, namespaceSkill, namespaceSkillUri, skillRootOf, skillsCapabilityOf } from '../protocol/skills.js'
import type { CallStats } from './call-stats.js'
import type { InstanceOwner } from './isolation.js'
import type { UpstreamHeaderProvider, UpstreamLogger, UpstreamCallOptions, UpstreamRegistry, ReconcileOptions, ReconcileSummary, CatalogueGate, CallObserver, CallOperation } from './contract.js'
import type { UpstreamConfig } from './config.js'
import type { UpstreamLoad, UpstreamStatus, CatalogueCounts, UpstreamCallStats, NameCollision } from './status.js'

/** Joins a prefix and an upstream name: `everything__echo`. */
export const PREFIX_SEPARATOR = '__'

/**
 * Default bound of a reload's drain, ms: how long calls in flight on a replaced upstream's old
 * instance may still finish once its new one took over (the default of `daemon.shutdownTimeout`,
 * which the daemon passes; `mcpx serve` passes `transport.stdioDrain`).
 */
export const RELOAD_DRAIN_MS = 10_000

/** Options of {@link createRegistry}. */
export interface RegistryOptions {
  /** Lifecycle lines and upstream children's stderr go here, tagged `{ upstream: name }`. */
  logger: UpstreamLogger
  /** Timeout of one upstream call (ms) for upstreams without their own `timeout`. */
  defaultTimeoutMs: number
  /**
   * Per-call request headers for HTTP upstreams, from the caller's principal (the per-caller credentials seam; see
   * UpstreamHeaderProvider). Default: none (every call carries the config's `headers` only).
   */
  headerProvider?: UpstreamHeaderProvider
  /**
   * High-water mark of each stdio upstream's stdin, bytes (config `transport.streamBufferBytes`;
   * default 1 MiB): past it, calls wait for the pipe to drain before they are written.
   */
  streamBufferBytes?: number
}

interface Route { upstream: Upstream, name: string, item: JsonObject }
interface TemplateRoute { upstream: Upstream, uriTemplate: string, pattern: UriTemplateMatcher }
/**
 * A listed skill (SEP-2640): its upstream, its `SKILL.md` URI and root in both forms (downstream:
 * as mcpx lists it; upstream: as its upstream serves it). A root ends with `/`.
 */
interface SkillRoute { upstream: Upstream, uri: string, root: string, upstreamRoot: string }

/** The downstream name of an upstream item. */
function prefixed (prefix: string, name: string): string {
  return prefix === '' ? name : `${prefix}${PREFIX_SEPARATOR}${name}`
}

/**
 * Whether two configs of one upstream connect alike: deep-equal but for `integrity`, which the
 * catalogue gate reads (lib/policy/integrity.ts), so a change of pin mode alone never restarts it.
 */
function sameConnection (a: UpstreamConfig, b: UpstreamConfig): boolean {
  const { integrity: _a, ...left } = a
  const { integrity: _b, ...right } = b
  return isDeepStrictEqual(left, right)
}

class Registry extends EventEmitter implements UpstreamRegistry {
  private readonly upstreams: Upstream[] = []
  /** upstreamNames(), made on first use and after a reload changed the upstreams. */
  private names: readonly string[] | undefined = undefined
  private readonly prefixes = new Map<Upstream, string>()
  private tools_: JsonObject[] = []
  private prompts_: JsonObject[] = []
  private resources_: JsonObject[] = []
  private templates_: JsonObject[] = []
  private toolRoutes = new Map<string, Route>()
  private promptRoutes = new Map<string, Route>()
  private resourceRoutes = new Map<string, Upstream>()
  private templateRoutes: TemplateRoute[] = []
  private skills_: JsonObject[] = []
  /** Listed skills by downstream `SKILL.md` URI, and by downstream root (the first upstream's, on a collision). */
  private skillRoutes = new Map<string, SkillRoute>()
  private skillRoots = new Map<string, SkillRoute>()
  /** The schemes (`skill://`, an upstream's own `baseUri` scheme) of the listed skills' roots: other URIs are no skill's at once. */
  private skillSchemes: readonly string[] = []
  /** The skill URI collisions of the last resources rebuild. */
  private skillCollisions: NameCollision[] = []
  /** Whether some ready upstream's `skill://` URIs are namespaced (it declares the extension and has a prefix). */
  private namespacesSkills = false
  private readonly warned = new Set<string>()
  /** The resource URI and template collisions of the last resources rebuild (keys as warned). */
  private resourceCollisions = new Map<string, NameCollision>()
  /** The tool and prompt name collisions of the last rebuild of each. */
  private nameCollisions: Record<'tools' | 'prompts', NameCollision[]> = { tools: [], prompts: [] }
  private readonly subscriptionCounts = new Map<string, { upstream: Upstream, count: number }>()
  private started: Promise<void> | undefined
  /** A reload's new instances still starting beside the old ones (make before break): close() stops them too. */
  private readonly pending = new Set<Upstream>()
  /** Set by close(): a reload's new instance that becomes ready later is closed, not switched to. */
  private closing = false
  /** The gate each rebuild asks which items to leave out (lib/policy/integrity.ts), if any. */
  private gate: CatalogueGate | undefined
  /**
   * Per list kind: the soonest moment (performance.now() ms) some upstream's lists of that kind turn
   * stale by its own `ttlMs`; Infinity when none will (no upstream gave a `ttlMs`: the common case
   * costs a reader one comparison, no clock read). See {@link freshen}.
   */
  private readonly staleAtMs: Record<ListKind, number> = { tools: Infinity, prompts: Infinity, resources: Infinity }

  constructor (config: Record<string, UpstreamConfig>, private readonly options: RegistryOptions) {
    super()
    for (const name of Object.keys(config)) this.upstreams.push(this.createUpstream(name, config[name]))
    this.assignPrefixes()
  }

  private createUpstream (name: string, config: UpstreamConfig, stats?: CallStats): Upstream {
    const upstream: Upstream = new Upstream(name, config, {
      ...(stats !== undefined ? { stats } : {}),
      logger: this.options.logger,
      defaultTimeoutMs: this.options.defaultTimeoutMs,
      ...(this.options.streamBufferBytes !== undefined ? { streamBufferBytes: this.options.streamBufferBytes } : {}),
      headerProvider: this.options.headerProvider,
      events: {
        // A replaced or removed upstream's last events (it going down, closed) change nothing here.
        catalogueChanged: (kind, announced) => { if (this.upstreams.includes(upstream)) this.rebuild(kind, announced) },
        resourceUpdated: uri => { if (this.upstreams.includes(upstream)) this.emit('resource_updated', uri) },
        // Only the running set's: a reload's new instance reports once it took over, its old one no more.
        stateChanged: status => { if (this.upstreams.includes(upstream)) this.emit('upstream_state', status) },
        unrouted: kind => this.emit('unrouted', name, kind),
        instanceEvent: event => { if (this.upstreams.includes(upstream)) this.emit('instance_event', event) },
        taskStatus: params => { if (this.upstreams.includes(upstream)) this.emit('task_status', name, params) },
        callSettled: (operation, durationMs, rejected) => { for (const observer of this.callObservers) observer.settled(name, operation, durationMs, rejected) }
      }
    })
    return upstream
  }

  /** Each upstream's prefix: its explicit `prefix`, else none when it is alone, else its name. */
  private assignPrefixes (): void {
    this.prefixes.clear()
    for (const upstream of this.upstreams) this.prefixes.set(upstream, upstream.config.prefix ?? (this.upstreams.length === 1 ? '' : upstream.name))
    this.callerDependent = this.upstreams.some(upstream => answersDependOnCaller(upstream.config))
  }

  private callerDependent = false

  /** The observers of the four routed calls (observeCalls); most often one (the app's metrics). */
  private callObservers: CallObserver[] = []

  observeCalls (observer: CallObserver): () => void {
    this.callObservers = [...this.callObservers, observer]
    return () => { this.callObservers = this.callObservers.filter(o => o !== observer) }
  }

  /**
   * `error`, after telling the call observer of a routed call refused before it reached an upstream
   * (what it named: `kind`, `name`). @returns `error`
   */
  private refused (operation: CallOperation, kind: 'tool' | 'prompt' | 'resource', name: string | undefined, error: UpstreamRpcError): UpstreamRpcError {
    for (const observer of this.callObservers) observer.refused(operation, kind, name)
    return error
  }

  /**
   * Whether some upstream may answer one caller differently from another: it is isolated
   * (`per-session`, `per-principal`) or reached with the caller's own identity (`token_exchange`,
   * `id-jag`, `oauth-user`). Then what mcpx serves from it is `cacheScope: "private"` on 2026-07-28
   * (server/utilities/caching.mdx: a public result may be shared between users). Follows reloads.
   */
  answersDependOnCaller (): boolean { return this.callerDependent }

  /**
   * Hot reload: makes the running set match `config` (docs/operating.md › Reloading the config).
   * An upstream whose config is deep-equal to its running one keeps running untouched (its
   * connection, children, in-flight calls and subscriptions); a removed one is closed (children
   * reaped before this resolves); a new one is created and, when the registry was started, started
   * without waiting for it (it joins the catalogue when ready, like any upstream coming up).
   *
   * One whose config changed is replaced make before break ({@link replace}): the new instance is
   * started beside the old one, which keeps serving meanwhile; once the new one is ready (handshake
   * done, lists read) the routes switch to it in one step, so the catalogue never lacks the
   * upstream's items and no call meets it "connecting"; then the old one is drained (its callers'
   * calls finish, at most `options.drainMs`) and closed. A new instance that does not become ready
   * in its first attempt is closed and the old one kept, under its old config: the summary's `kept`
   * names it with the reason. Before the registry was started there is nothing to keep: the
   * replacement is immediate.
   *
   * The merged lists are rebuilt and 'list_changed' emitted for each kind that changed (prefixes
   * too may change: a second upstream gives the first its default prefix). Subscriptions held on a
   * closed upstream are dropped; those of a replaced one move to its new instance.
   * @param config the new upstreams, keyed by name, in config order
   * @returns what was added, removed, restarted, kept and left unchanged (names in config order). Never rejects.
   */
  async reconcile (config: Record<string, UpstreamConfig>, options: ReconcileOptions = {}): Promise<ReconcileSummary> {
    const running = new Map(this.upstreams.map(upstream => [upstream.name, upstream]))
    const summary: Required<ReconcileSummary> = { added: [], removed: [], restarted: [], unchanged: [], kept: [] }
    const next: Upstream[] = []
    const stopping: Upstream[] = []
    const starting: Upstream[] = []
    const replacing: Array<{ old: Upstream, fresh: Upstream }> = []
    for (const [name, upstreamConfig] of Object.entries(config)) {
      const old = running.get(name)
      if (old !== undefined && sameConnection(old.config, upstreamConfig)) {
        next.push(old)
        summary.unchanged.push(name)
        continue
      }
      // A restarted upstream keeps counting its callers' calls where the old one left off (status page).
      const fresh = this.createUpstream(name, upstreamConfig, old?.stats)
      if (old === undefined) {
        next.push(fresh)
        starting.push(fresh)
        summary.added.push(name)
      } else if (this.started === undefined) {
        next.push(fresh)
        stopping.push(old)
      } else {
        next.push(old) // serves until its new instance is ready
        replacing.push({ old, fresh })
      }
    }
    for (const old of this.upstreams) {
      if (Object.hasOwn(config, old.name)) continue
      stopping.push(old)
      summary.removed.push(old.name)
    }
    this.upstreams.splice(0, this.upstreams.length, ...next)
    this.names = undefined
    this.assignPrefixes()
    for (const [uri, entry] of this.subscriptionCounts) if (stopping.includes(entry.upstream)) this.subscriptionCounts.delete(uri)
    for (const kind of ['tools', 'prompts', 'resources'] as const) this.rebuild(kind)
    if (this.started !== undefined) for (const upstream of starting) void upstream.start()
    const drainMs = options.drainMs ?? RELOAD_DRAIN_MS
    const [, outcomes] = await Promise.all([
      Promise.all(stopping.map(async upstream => await upstream.close())),
      Promise.all(replacing.map(async ({ old, fresh }) => await this.replace(old, fresh, drainMs)))
    ])
    const kept = new Map<string, string>()
    replacing.forEach(({ old }, i) => { const reason = outcomes[i]; if (reason !== undefined) kept.set(old.name, reason) })
    // restarted and kept in config order, like the rest.
    for (const name of Object.keys(config)) {
      const reason = kept.get(name)
      if (reason !== undefined) summary.kept.push({ name, reason })
      else if (running.has(name) && !summary.unchanged.includes(name)) summary.restarted.push(name)
    }
    return summary
  }

  /**
   * Make before break for one upstream whose config changed (see {@link reconcile}): starts `fresh`
   * beside `old` (which keeps its routes and subscriptions meanwhile) and waits for its first
   * attempt. Ready: `fresh` takes `old`'s place and routes in one synchronous step, the
   * subscriptions follow, then `old` is drained (at most `drainMs`) and closed. Not ready (a bad
   * command, an initialize or listing error, the setup timeout) while `old` is ready, or the
   * registry closed meanwhile: `fresh` is closed and `old` keeps serving. Not ready while `old` is
   * not ready either (down, connecting): `fresh` takes over all the same and keeps retrying.
   * @returns undefined when `fresh` took over, else why `old` was kept (one line, redacted). Never rejects.
   */
  private async replace (old: Upstream, fresh: Upstream, drainMs: number): Promise<string | undefined> {
    const logger = this.options.logger
    this.pending.add(fresh)
    fresh.inheritSubscriptions(old)
    await fresh.start()
    this.pending.delete(fresh)
    const state = fresh.status()
    const index = this.upstreams.indexOf(old)
    // Kept only while the old one serves: an old instance that is down itself has nothing to keep
    // serving, so the new config replaces it and retries with backoff, as any upstream down does.
    if (index < 0 || this.closing || (state.state !== 'ready' && old.status().state === 'ready')) {
      await fresh.close()
      const reason = index < 0 || this.closing ? 'mcpx is shutting down' : `its new config did not start: ${state.lastError ?? `the new instance is ${state.state}`}`
      logger.warn({ upstream: old.name, reason }, `upstream ${old.name} kept its old config: ${reason}`)
      return reason
    }
    // The switch: routes, prefixes and lists move to the new instance before anything else runs.
    this.upstreams[index] = fresh
    this.assignPrefixes()
    for (const entry of this.subscriptionCounts.values()) if (entry.upstream === old) entry.upstream = fresh
    for (const kind of ['tools', 'prompts', 'resources'] as const) this.rebuild(kind)
    this.emit('upstream_state', state)
    await fresh.takeOverSubscriptions(old)
    const left = await old.drain(drainMs)
    if (left > 0) logger.warn({ upstream: old.name, calls: left, drainMs }, `upstream ${old.name}: ${left} calls still in flight on its old instance after ${drainMs} ms; they fail`)
    await old.close()
    logger.info({ upstream: old.name, state: state.state, ...(state.pid !== undefined ? { pid: state.pid } : {}) }, `upstream ${old.name} switched to its new config`)
    return undefined
  }

  setCatalogueGate (gate: CatalogueGate | undefined): void {
    if (this.gate !== undefined) this.gate.changed = undefined
    this.gate = gate
    if (gate !== undefined) gate.changed = () => { if (this.gate === gate) for (const kind of ['tools', 'prompts', 'resources'] as const) this.rebuild(kind) }
    for (const kind of ['tools', 'prompts', 'resources'] as const) this.rebuild(kind)
  }

  /** The gate's verdict on one list: the items to leave out (none without a gate). */
  private hiddenOf (list: 'tools' | 'prompts' | 'resourceTemplates'): ReadonlySet<JsonObject> | undefined {
    if (this.gate === undefined) return undefined
    return this.gate.hidden(list, this.upstreams.map(upstream => ({ upstream: upstream.name, ready: upstream.status().state === 'ready', items: upstream.lists()[list] })))
  }

  /** Per upstream (config order): how many tools, prompts, resources, templates and skills (when any) it lists now (0 unless ready). */
  counts (): CatalogueCounts[] {
    return this.upstreams.map(upstream => {
      const lists = upstream.lists()
      const skills = lists.skills?.length ?? 0
      return { name: upstream.name, tools: lists.tools.length, prompts: lists.prompts.length, resources: lists.resources.length, resourceTemplates: lists.resourceTemplates.length, ...(skills > 0 ? { skills } : {}) }
    })
  }

  /** Per upstream (config order): its callers' calls, errors and latency window (call-stats.ts). */
  callStats (): UpstreamCallStats[] {
    const nowMs = performance.now()
    return this.upstreams.map(upstream => ({ name: upstream.name, ...upstream.stats.snapshot(nowMs) }))
  }

  /** Names and URIs claimed by two upstreams now (the later one's dropped), tools and prompts first. */
  collisions (): NameCollision[] {
    return [...this.nameCollisions.tools, ...this.nameCollisions.prompts, ...this.resourceCollisions.values(), ...this.skillCollisions]
  }

  async start (): Promise<void> {
    this.started ??= Promise.all([...this.upstreams].map(async upstream => await upstream.start())).then(() => {})
    return await this.started
  }

  async ready (): Promise<void> {
    return await this.start()
  }

  async close (): Promise<void> {
    this.closing = true
    await Promise.all([...this.upstreams, ...this.pending].map(async upstream => await upstream.close()))
  }

  loads (): UpstreamLoad[] {
    return this.upstreams.map(upstream => upstream.load())
  }

  /**
   * The error for a tool or prompt name no ready upstream lists. While the upstream the name would
   * belong to (by its prefix, or the only upstream) is down or connecting, its items are out of the
   * catalogue, but the name is not unknown: that is a transient UPSTREAM_ERROR, not -32602.
   */
  absent (kind: 'tool' | 'prompt', name: string): UpstreamRpcError {
    for (const upstream of this.upstreams) {
      const status = upstream.status()
      if (status.state === 'ready') continue
      const prefix = this.prefixes.get(upstream) ?? ''
      if (prefix === '' ? this.upstreams.length === 1 : name.startsWith(prefix + PREFIX_SEPARATOR)) {
        return new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${status.name} is ${status.state}: ${kind} ${name} is not available right now; retry later`)
      }
    }
    return new UpstreamRpcError(INVALID_PARAMS, `Unknown ${kind}: ${name}`)
  }

  status (): UpstreamStatus[] {
    return this.upstreams.map(upstream => upstream.status())
  }

  upstreamNames (): readonly string[] {
    return (this.names ??= this.upstreams.map(upstream => upstream.name))
  }

  async endSession (key: string): Promise<void> {
    await Promise.all(this.upstreams.map(async upstream => await upstream.endOwner(key)))
  }

  instancePids (name: string): number[] {
    return this.byName(name)?.instancePids() ?? []
  }

  async callUpstream (name: string, method: string, params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject> {
    const upstream = this.byName(name)
    if (upstream === undefined) throw new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${name} is not configured on this replica`)
    const lists = upstream.personal && options.principalKey !== undefined ? upstream.personalLists(options.principalKey) : upstream.lists()
    const tool = method === 'tools/call' ? lists.tools.find(t => t.name === params.name) : undefined
    return await upstream.forwardedCall(method, params, options, tool)
  }

  tools (): JsonObject[] { this.freshen('tools'); return this.tools_ }
  prompts (): JsonObject[] { this.freshen('prompts'); return this.prompts_ }
  resources (): JsonObject[] { this.freshen('resources'); return this.resources_ }
  resourceTemplates (): JsonObject[] { this.freshen('resources'); return this.templates_ }
  skills (): JsonObject[] { this.freshen('resources'); return this.skills_ }

  /**
   * A reader needs the merged `kind` lists: when some upstream's lists of that kind are stale by
   * its own `ttlMs` (2026-07-28 server/utilities/caching.mdx), re-list them in the background and
   * serve the current lists now (stale while revalidating: a list method or a tools/call route
   * lookup never waits on an upstream). The re-list is the one a list_changed starts
   * (connection.ts `relist`): the merged list is rebuilt through the catalogue gate, and clients
   * get list_changed when it changed. Lazy rather than on a timer: an idle gateway polls no
   * upstream, and a `ttlMs` of 0 ("re-fetch every time the result is needed") is honoured per need,
   * bounded by MIN_LIST_REFRESH_MS per upstream and kind. Never throws.
   */
  private freshen (kind: ListKind): void {
    const at = this.staleAtMs[kind]
    if (at === Infinity) return
    const nowMs = performance.now()
    if (nowMs < at) return
    for (const upstream of this.upstreams) {
      const relist = upstream.refreshIfStale(kind, nowMs)
      if (relist !== undefined) void relist.then(() => { this.restale(kind) })
    }
    this.restale(kind)
  }

  /** Recomputes {@link staleAtMs} for `kind` from the running upstreams. Never throws. */
  private restale (kind: ListKind): void {
    let at = Infinity
    for (const upstream of this.upstreams) at = Math.min(at, upstream.staleAtMs(kind))
    this.staleAtMs[kind] = at
  }

  skillOwning (uri: string): string | undefined {
    return this.skillRouteOf(uri)?.uri
  }

  async getSkill (uri: string, options: UpstreamCallOptions): Promise<JsonObject> {
    const route = this.skillRoutes.get(uri)
    if (route === undefined) throw unknownSkill(uri)
    const result = await route.upstream.request(SKILLS_GET, { uri: this.upstreamSkillUri(route, uri) }, options)
    const prefix = this.prefixes.get(route.upstream) ?? ''
    return isObject(result.skill) && prefix !== '' ? { ...result, skill: namespaceSkill(prefix, result.skill) } : result
  }

  async readSkillDirectory (uri: string, cursor: string | undefined, options: UpstreamCallOptions): Promise<JsonObject> {
    const route = this.skillRouteOf(uri)
    if (route === undefined || skillsCapabilityOf(route.upstream.serverCapabilities())?.directoryRead !== true) throw notADirectory(uri)
    const params: JsonObject = { uri: this.upstreamSkillUri(route, uri) }
    if (cursor !== undefined) params.cursor = cursor
    const result = await route.upstream.request(DIRECTORY_READ, params, options)
    const prefix = this.prefixes.get(route.upstream) ?? ''
    if (prefix === '' || !Array.isArray(result.resources)) return result
    return { ...result, resources: result.resources.map(item => isObject(item) && typeof item.uri === 'string' ? { ...item, uri: namespaceSkillUri(prefix, item.uri) } : item) }
  }

  /**
   * The listed skill a URI belongs to: its `SKILL.md`, a file or folder under its root, or the root
   * itself without its trailing `/`. Walks the URI's `/` from the longest root down: O(depth). Never throws.
   */
  private skillRouteOf (uri: string): SkillRoute | undefined {
    if (this.skillRoots.size === 0 || !this.skillSchemes.some(scheme => uri.startsWith(scheme))) return undefined
    const whole = this.skillRoots.get(uri + '/')
    if (whole !== undefined) return whole
    for (let end = uri.lastIndexOf('/'); end > 0; end = uri.lastIndexOf('/', end - 1)) {
      const route = this.skillRoots.get(uri.slice(0, end + 1))
      if (route !== undefined) return route
    }
    return undefined
  }

  /** The upstream's form of a URI under `route`'s skill. */
  private upstreamSkillUri (route: SkillRoute, uri: string): string {
    return uri.startsWith(route.root) ? route.upstreamRoot + uri.slice(route.root.length) : route.upstreamRoot.slice(0, -1)
  }

  /**
   * A `skill://` URI of an upstream whose skill URIs mcpx namespaces: under a listed skill, its
   * route; else the upstream whose prefix is the URI's first segment (an unlisted file, a folder
   * above the skills), in config order. Undefined for any other URI (routed as every resource).
   */
  private skillUpstreamOf (uri: string): { upstream: Upstream, uri: string, listed: boolean } | undefined {
    const route = this.skillRouteOf(uri)
    if (route !== undefined) return { upstream: route.upstream, uri: this.upstreamSkillUri(route, uri), listed: true }
    if (!uri.startsWith(SKILL_SCHEME)) return undefined
    for (const upstream of this.upstreams) {
      const prefix = this.prefixes.get(upstream) ?? ''
      if (prefix === '' || skillsCapabilityOf(upstream.serverCapabilities()) === undefined) continue
      const root = `${SKILL_SCHEME}${prefix}/`
      if (uri.startsWith(root)) return { upstream, uri: SKILL_SCHEME + uri.slice(root.length), listed: false }
    }
    return undefined
  }

  findTool (name: string): JsonObject | undefined {
    return this.toolRoutes.get(name)?.item
  }

  ownerOf (kind: 'tool' | 'prompt' | 'resource', name: string): { upstream: string, name: string } | undefined {
    if (kind === 'resource') {
      const upstream = this.ownerOfUri(name)
      return upstream === undefined ? undefined : { upstream: upstream.name, name }
    }
    const route = (kind === 'tool' ? this.toolRoutes : this.promptRoutes).get(name)
    return route === undefined ? undefined : { upstream: route.upstream.name, name: route.name }
  }

  capabilities (): JsonObject {
    const merged: Record<string, JsonObject> = {}
    for (const upstream of this.upstreams) {
      // An `oauth-user` upstream's lists reach each caller after consent, announced by list_changed.
      if (upstream.personal) {
        for (const key of ['tools', 'prompts', 'resources']) merged[key] = { ...merged[key], listChanged: true }
        continue
      }
      const caps = upstream.serverCapabilities()
      if (caps === undefined) continue
      for (const key of ['tools', 'prompts', 'resources', 'completions', 'logging']) {
        const value = caps[key]
        if (value === undefined || value === null) continue
        const target = merged[key] ??= {}
        if (!isObject(value)) continue
        if (value.listChanged === true) target.listChanged = true
        if (key === 'resources' && value.subscribe === true) target.subscribe = true
      }
      // The Tasks extension (SEP-2663) is passed through: declared when any ready upstream declares it.
      if (declaresTasks(caps)) merged.extensions = { ...(merged.extensions ?? {}), [TASKS_EXTENSION]: {} }
      // The Skills extension (SEP-2640) likewise; `directoryRead` when any of them serves directory reads.
      const skills = skillsCapabilityOf(caps)
      if (skills !== undefined) {
        const declared = (merged.extensions as JsonObject | undefined)?.[SKILLS_EXTENSION] as JsonObject | undefined
        merged.extensions = { ...(merged.extensions ?? {}), [SKILLS_EXTENSION]: skills.directoryRead === true || declared?.directoryRead === true ? { directoryRead: true } : {} }
      }
    }
    return merged
  }

  legacyTasks (): JsonObject | undefined {
    let offered = false
    let list = false
    let cancel = false
    for (const upstream of this.upstreams) {
      const tasks = upstream.legacyTasks()
      if (tasks === undefined) continue
      offered = true
      list ||= isObject(tasks.list)
      cancel ||= isObject(tasks.cancel)
    }
    if (!offered) return undefined
    // Key order as the spec's example (list, cancel, requests).
    const merged: JsonObject = {}
    if (list) merged.list = {}
    if (cancel) merged.cancel = {}
    merged.requests = { tools: { call: {} } }
    return merged
  }

  legacyTaskUpstreams (key: 'list' | 'cancel'): string[] {
    return this.upstreams.filter(upstream => isObject(upstream.legacyTasks()?.[key])).map(upstream => upstream.name)
  }

  async taskRequest (upstream: string, method: string, params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject> {
    const owner = this.byName(upstream)
    if (owner === undefined) throw new UpstreamRpcError(INVALID_PARAMS, `Unknown task: its upstream ${upstream} is not configured`)
    return await owner.request(method, params, options)
  }

  callTool (name: string, args: JsonObject | undefined, options: UpstreamCallOptions): Promise<JsonObject> {
    // Not async itself (one frame and one promise fewer per call); an absent tool still rejects, never throws.
    if (this.staleAtMs.tools !== Infinity) this.freshen('tools')
    const route = this.toolRoutes.get(name)
    if (route === undefined) return Promise.reject(this.refused('callTool', 'tool', name, this.absent('tool', name)))
    return route.upstream.callTool(route.name, args, options, route.item)
  }

  async getPrompt (name: string, args: Record<string, string> | undefined, options: UpstreamCallOptions): Promise<JsonObject> {
    const route = this.promptRoutes.get(name)
    if (route === undefined) throw this.refused('getPrompt', 'prompt', name, this.absent('prompt', name))
    const params: JsonObject = { name: route.name }
    if (args !== undefined) params.arguments = args
    return await route.upstream.request('prompts/get', params, options, 'getPrompt')
  }

  async readResource (uri: string, options: UpstreamCallOptions): Promise<JsonObject> {
    // A namespaced skill file (SEP-2640): read by its upstream's own URI, answered with ours.
    const skill = this.skillRoots.size === 0 && !this.namespacesSkills ? undefined : this.skillUpstreamOf(uri)
    if (skill !== undefined) {
      try {
        return namespacedContents(await skill.upstream.request('resources/read', { uri: skill.uri }, options, 'readResource'), this.prefixes.get(skill.upstream) ?? '')
      } catch (error) {
        // Under no listed skill, the upstream's "not found" (its own URI, its own code) is answered as
        // mcpx's own for a URI no upstream serves: what a hidden skill's file gets (hidden looks absent).
        if (!skill.listed && error instanceof UpstreamRpcError && (error.code === RESOURCE_NOT_FOUND || error.code === INVALID_PARAMS)) {
          throw new UpstreamRpcError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}`, { uri })
        }
        throw error
      }
    }
    const upstream = this.ownerOfUri(uri)
    if (upstream === undefined) throw this.refused('readResource', 'resource', uri, new UpstreamRpcError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}`, { uri }))
    return await upstream.request('resources/read', { uri }, options, 'readResource')
  }

  async complete (params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject> {
    const ref = params.ref
    if (!isObject(ref)) throw this.refused('complete', 'prompt', undefined, new UpstreamRpcError(INVALID_PARAMS, 'completion/complete: ref must be an object'))
    if (ref.type === 'ref/prompt' && typeof ref.name === 'string') {
      const route = this.promptRoutes.get(ref.name)
      if (route === undefined) throw this.refused('complete', 'prompt', ref.name, new UpstreamRpcError(INVALID_PARAMS, `Unknown prompt: ${ref.name}`))
      return await route.upstream.request('completion/complete', { ...params, ref: { ...ref, name: route.name } }, options, 'complete')
    }
    if (ref.type === 'ref/resource' && typeof ref.uri === 'string') {
      const uri = ref.uri
      const upstream = this.templateRoutes.find(route => route.uriTemplate === uri)?.upstream ?? this.ownerOfUri(uri)
      if (upstream === undefined) throw this.refused('complete', 'resource', uri, new UpstreamRpcError(INVALID_PARAMS, `Unknown resource or template: ${uri}`))
      return await upstream.request('completion/complete', params, options, 'complete')
    }
    // The label the metric gave this before (lib/ops/metrics.ts): a ref/resource's uri, else the ref's name.
    const named = ref.type === 'ref/resource' ? ref.uri : ref.name
    throw this.refused('complete', ref.type === 'ref/resource' ? 'resource' : 'prompt', typeof named === 'string' ? named : undefined,
      new UpstreamRpcError(INVALID_PARAMS, 'completion/complete: ref must be ref/prompt with a name or ref/resource with a uri'))
  }

  async subscribe (uri: string, who?: InstanceOwner): Promise<void> {
    const existing = this.subscriptionCounts.get(uri)
    if (existing !== undefined) {
      existing.count++
    } else {
      const upstream = this.ownerOfUri(uri)
      if (upstream === undefined) throw new UpstreamRpcError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}`, { uri })
      const entry = { upstream, count: 1 }
      this.subscriptionCounts.set(uri, entry)
      try {
        await upstream.subscribe(uri)
      } catch (error) {
        if (this.subscriptionCounts.get(uri) === entry && --entry.count === 0) this.subscriptionCounts.delete(uri)
        throw error
      }
    }
    // An isolated upstream: the caller's own instance is subscribed too, so what it
    // changes there is announced to them (the shared connection never sees it).
    const entry = this.subscriptionCounts.get(uri)
    if (who !== undefined && entry !== undefined) await entry.upstream.subscribeInstance(uri, who)
  }

  async unsubscribe (uri: string, who?: InstanceOwner): Promise<void> {
    const entry = this.subscriptionCounts.get(uri)
    if (entry === undefined) return
    const last = --entry.count === 0
    if (last) this.subscriptionCounts.delete(uri)
    if (who !== undefined) await entry.upstream.unsubscribeInstance(uri, who)
    if (last) await entry.upstream.unsubscribe(uri)
  }

  async instanceSubscription (uri: string, sid: string, add: boolean): Promise<void> {
    await this.ownerOfUri(uri)?.sessionSubscription(uri, sid, add)
  }

  /** The upstream configured as `name`, if any. */
  personalList (principalKey: string, kind: ListKind | 'resourceTemplates'): JsonObject[] {
    const items: JsonObject[] = []
    for (const upstream of this.upstreams) {
      if (!upstream.personal) continue
      const prefix = this.prefixes.get(upstream) ?? ''
      for (const item of upstream.personalLists(principalKey)[kind]) {
        if (kind === 'tools' || kind === 'prompts') {
          if (typeof item.name === 'string') items.push({ ...item, name: prefixed(prefix, item.name) })
        } else items.push(item)
      }
    }
    return items
  }

  personalResourceOwner (principalKey: string, uri: string): string | undefined {
    for (const upstream of this.upstreams) {
      if (!upstream.personal) continue
      const lists = upstream.personalLists(principalKey)
      if (lists.resources.some(item => item.uri === uri)) return upstream.name
      if (lists.resourceTemplates.some(item => typeof item.uriTemplate === 'string' && compileUriTemplate(item.uriTemplate).test(uri))) return upstream.name
    }
    return undefined
  }

  personalRoute (name: string): { upstream: string, name: string } | undefined {
    for (const upstream of this.upstreams) {
      if (!upstream.personal) continue
      const prefix = (this.prefixes.get(upstream) ?? '') + PREFIX_SEPARATOR
      if (name.startsWith(prefix) && name.length > prefix.length) return { upstream: upstream.name, name: name.slice(prefix.length) }
    }
    return undefined
  }

  async openPersonal (upstream: string, principalKey: string): Promise<void> {
    await this.byName(upstream)?.openPersonal(principalKey)
  }

  async closePersonal (upstream: string, principalKey: string): Promise<void> {
    await this.byName(upstream)?.closePersonal(principalKey)
  }

  private byName (name: string): Upstream | undefined {
    return this.upstreams.find(upstream => upstream.name === name)
  }

  /**
   * The upstream that listed `uri`, else the first whose template matches it (lib/protocol/uri-template.ts: the
   * matcher the policy judges a URI with too, so a URI routed through a template is judged as that template).
   */
  private ownerOfUri (uri: string): Upstream | undefined {
    return this.resourceRoutes.get(uri) ?? this.templateRoutes.find(route => route.pattern.test(uri))?.upstream
  }

  private warnOnce (key: string, message: string, fields: Record<string, unknown>): void {
    if (this.warned.has(key)) return
    this.warned.add(key)
    this.options.logger.warn(fields, message)
  }

  /**
   * Rebuilds the merged lists of `kind` from every ready upstream; emits 'list_changed' when they
   * changed, and whenever an upstream announced a change (`announced`: its list_changed, re-listed),
   * even if the merged list is the same: the upstream said it changed, mcpx relays (clients may
   * re-read for reasons mcpx cannot see, and the SEP-2575 suite expects the relay).
   */
  private rebuild (kind: ListKind, announced = false): void {
    this.restale(kind)
    if (kind === 'tools' || kind === 'prompts') {
      const routes = new Map<string, Route>()
      const merged: JsonObject[] = []
      const collisions: NameCollision[] = []
      const hidden = this.hiddenOf(kind)
      for (const upstream of this.upstreams) {
        const prefix = this.prefixes.get(upstream) ?? ''
        for (const item of upstream.lists()[kind]) {
          if (typeof item.name !== 'string' || hidden?.has(item) === true) continue
          const name = prefixed(prefix, item.name)
          const owner = routes.get(name)
          if (owner !== undefined) {
            if (owner.upstream !== upstream) {
              collisions.push({ kind: kind === 'tools' ? 'tool' : 'prompt', name, kept: owner.upstream.name, dropped: upstream.name })
              this.warnOnce(`${kind}\0${name}\0${upstream.name}`, `${kind === 'tools' ? 'tool' : 'prompt'} name collision: ${name} of upstream ${upstream.name} dropped, ${owner.upstream.name} keeps it`,
                { kind, name, kept: owner.upstream.name, dropped: upstream.name })
            }
            continue
          }
          const downstream = { ...item, name }
          routes.set(name, { upstream, name: item.name, item: downstream })
          merged.push(downstream)
        }
      }
      const before = kind === 'tools' ? this.tools_ : this.prompts_
      this.nameCollisions[kind] = collisions
      if (kind === 'tools') { this.tools_ = merged; this.toolRoutes = routes } else { this.prompts_ = merged; this.promptRoutes = routes }
      if (announced || JSON.stringify(before) !== JSON.stringify(merged)) this.emit('list_changed', kind)
      return
    }
    const resourceRoutes = new Map<string, Upstream>()
    const resources: JsonObject[] = []
    const templateRoutes: TemplateRoute[] = []
    const templates: JsonObject[] = []
    const collisions = new Map<string, NameCollision>()
    const previous = this.resourceCollisions
    const hiddenTemplates = this.hiddenOf('resourceTemplates')
    // Warned when new since the last rebuild, or on a re-list an upstream announced.
    const collide = (key: string, message: string, fields: { kind: string, uri?: string, uriTemplate?: string, kept: string, dropped: string }): void => {
      collisions.set(key, { kind: fields.uri !== undefined ? 'resource' : 'template', name: fields.uri ?? fields.uriTemplate ?? '', kept: fields.kept, dropped: fields.dropped })
      if (announced || !previous.has(key)) this.options.logger.warn(fields, message)
    }
    let namespacesSkills = false
    for (const upstream of this.upstreams) {
      const lists = upstream.lists()
      // An upstream that declares the Skills extension has its skill:// resources and templates namespaced (see rebuildSkills).
      const skillPrefix = skillsCapabilityOf(upstream.serverCapabilities()) === undefined ? '' : this.prefixes.get(upstream) ?? ''
      if (skillPrefix !== '') namespacesSkills = true
      for (const listed of lists.resources) {
        if (typeof listed.uri !== 'string') continue
        const uri = skillPrefix === '' ? listed.uri : namespaceSkillUri(skillPrefix, listed.uri)
        const item = uri === listed.uri ? listed : { ...listed, uri }
        const owner = resourceRoutes.get(uri)
        if (owner !== undefined) {
          if (owner !== upstream) {
            collide(`resource\0${uri}\0${upstream.name}`, `resource URI collision: ${uri} of upstream ${upstream.name} dropped, ${owner.name} keeps it`,
              { kind: 'resources', uri, kept: owner.name, dropped: upstream.name })
          }
          continue
        }
        resourceRoutes.set(uri, upstream)
        resources.push(item)
      }
      for (const listed of lists.resourceTemplates) {
        if (typeof listed.uriTemplate !== 'string' || hiddenTemplates?.has(listed) === true) continue
        const uriTemplate = skillPrefix === '' ? listed.uriTemplate : namespaceSkillUri(skillPrefix, listed.uriTemplate)
        const item = uriTemplate === listed.uriTemplate ? listed : { ...listed, uriTemplate }
        const owner = templateRoutes.find(route => route.uriTemplate === uriTemplate)
        if (owner !== undefined) {
          if (owner.upstream !== upstream) {
            collide(`template\0${uriTemplate}\0${upstream.name}`, `resource template collision: ${uriTemplate} of upstream ${upstream.name} dropped, ${owner.upstream.name} keeps it`,
              { kind: 'resourceTemplates', uriTemplate, kept: owner.upstream.name, dropped: upstream.name })
          }
          continue
        }
        templateRoutes.push({ upstream, uriTemplate, pattern: compileUriTemplate(uriTemplate) })
        templates.push(item)
      }
    }
    this.resourceCollisions = collisions
    this.namespacesSkills = namespacesSkills
    const before = JSON.stringify([this.resources_, this.templates_, this.skills_])
    this.resources_ = resources
    this.templates_ = templates
    this.resourceRoutes = resourceRoutes
    this.templateRoutes = templateRoutes
    this.rebuildSkills(announced)
    if (announced || before !== JSON.stringify([resources, templates, this.skills_])) this.emit('list_changed', 'resources')
  }

  /**
   * Rebuilds the merged skills (SEP-2640) with the resources (the extension signals its changes with
   * `resources/list_changed`): each upstream's entries in config order, URIs namespaced by its
   * prefix (lib/protocol/skills.ts), the first upstream keeping a `SKILL.md` URI two claim (the other's
   * skill dropped, warned as resource URI collisions are: when new, or on a re-list an upstream announced).
   */
  private rebuildSkills (announced: boolean): void {
    const routes = new Map<string, SkillRoute>()
    const roots = new Map<string, SkillRoute>()
    const skills: JsonObject[] = []
    const collisions: NameCollision[] = []
    const previous = new Set(this.skillCollisions.map(c => `${c.name}\0${c.dropped}`))
    for (const upstream of this.upstreams) {
      const listed = upstream.lists().skills
      if (listed === undefined || listed.length === 0) continue
      const prefix = this.prefixes.get(upstream) ?? ''
      for (const entry of listed) {
        if (typeof entry.uri !== 'string') continue
        const upstreamRoot = skillRootOf(entry.uri)
        if (upstreamRoot === undefined) continue
        const item = namespaceSkill(prefix, entry)
        const uri = item.uri as string
        const owner = routes.get(uri)
        if (owner !== undefined) {
          if (owner.upstream !== upstream) {
            collisions.push({ kind: 'skill', name: uri, kept: owner.upstream.name, dropped: upstream.name })
            if (announced || !previous.has(`${uri}\0${upstream.name}`)) {
              this.options.logger.warn({ kind: 'skills', uri, kept: owner.upstream.name, dropped: upstream.name }, `skill URI collision: ${uri} of upstream ${upstream.name} dropped, ${owner.upstream.name} keeps it`)
            }
          }
          continue
        }
        const route: SkillRoute = { upstream, uri, root: skillRootOf(uri) as string, upstreamRoot }
        routes.set(uri, route)
        if (!roots.has(route.root)) roots.set(route.root, route)
        skills.push(item)
      }
    }
    this.skills_ = skills
    this.skillRoutes = routes
    this.skillRoots = roots
    this.skillSchemes = [...new Set([...roots.keys()].map(root => root.slice(0, root.indexOf('://') + 3)))]
    this.skillCollisions = collisions
  }
}

/** The answer for a `skills/get` of a URI no upstream lists (the SDK server's words, SEP-2640). */
function unknownSkill (uri: string): UpstreamRpcError {
  return new UpstreamRpcError(INVALID_PARAMS, `No skill is served at ${uri}`)
}

/** The answer for a `resources/directory/read` of a URI that is no listed skill's folder (the SDK server's words). */
function notADirectory (uri: string): UpstreamRpcError {
  return new UpstreamRpcError(INVALID_PARAMS, `${uri} is not a directory resource`)
}

/** A skill file's `resources/read` result with each content's `skill://` URI in the downstream form (`prefix` as its first segment). */
function namespacedContents (result: JsonObject, prefix: string): JsonObject {
  if (prefix === '' || !Array.isArray(result.contents)) return result
  return { ...result, contents: result.contents.map(item => isObject(item) && typeof item.uri === 'string' ? { ...item, uri: namespaceSkillUri(prefix, item.uri) } : item) }
}

/**
 * How long the daemon and `mcpx serve` wait for the upstreams' first attempt before serving (ms).
 * One attempt can take far longer (the stdio era probe, 5 s, plus the setup timeout, 30 s), and
 * Fastify fails a plugin that has not started within its `pluginTimeout` (10 s): the wait must
 * stay well under that.
 */
export const UPSTREAM_START_WAIT_MS = 5_000

/**
 * Starts every upstream and waits for their first attempt, at most `waitMs`. Upstreams still
 * connecting then are logged at info and keep connecting in the background (they show as
 * `connecting` or `down` in `status()`, and come up when they can); `close()` kills their children.
 * @param waitMs longest wait (ms), default {@link UPSTREAM_START_WAIT_MS}
 * @returns the names of the upstreams not ready when the wait ended. Never rejects.
 */
export async function startUpstreams (registry: UpstreamRegistry, logger: UpstreamLogger, waitMs = UPSTREAM_START_WAIT_MS): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined
  const waited = new Promise<void>(resolve => { timer = setTimeout(resolve, waitMs) })
  try {
    await Promise.race([registry.start(), waited])
  } catch (err) {
    logger.error({ err }, 'upstreams failed to start')
  } finally {
    clearTimeout(timer)
  }
  const pending = registry.status().filter(status => status.state !== 'ready')
  const connecting = pending.filter(status => status.state === 'connecting').map(status => status.name)
  if (connecting.length > 0) logger.info({ upstreams: connecting, waitedMs: waitMs }, 'upstreams still connecting; serving without them until they are ready')
  return pending.map(status => status.name)
}

/**
 * Creates the registry for the configured upstreams (nothing is spawned until `start()`).
 * @param upstreams keyed by upstream name; insertion order is config order (it decides prefixes'
 *        defaults and who wins a name collision)
 * @param options.logger receives lifecycle lines, collision warnings and children's stderr
 * @param options.defaultTimeoutMs timeout of one upstream call (ms) unless the upstream sets `timeout`
 * @returns an {@link UpstreamRegistry} (EventEmitter: 'list_changed', 'resource_updated',
 *          'upstream_state'). Never throws; calls reject with UpstreamRpcError (lib/protocol/jsonrpc.ts).
 */
export function createRegistry (upstreams: Record<string, UpstreamConfig>, options: RegistryOptions): UpstreamRegistry {
  return new Registry(upstreams, options)
}

/** Whether one upstream's answers may depend on the caller (see UpstreamRegistry.answersDependOnCaller). */
function answersDependOnCaller (config: UpstreamConfig): boolean {
  if (config.isolation !== undefined && config.isolation !== 'shared') return true
  const type = 'url' in config ? config.auth?.type : undefined
  return type === 'token_exchange' || type === 'id-jag' || type === 'oauth-user'
}
