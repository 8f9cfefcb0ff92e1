/**
 * One upstream MCP server: the facade the registry (registry.ts) calls. It owns the primary
 * connection and, for a dual-era upstream, the lazily opened legacy one (both a
 * {@link SupervisedConnection}, connection.ts), and decides which connection each call takes.
 * The calls themselves, and the routing of questions and notifications to them, live on the
 * connection's link (link.ts). Design notes: ./README.md.
 * Sources: DIGEST §2e (cancellation, progress), §3a (timeouts), §6a (eras, dual-era), §6b (stdio
 * probe, restart), §6c (HTTP), §6d (mirrored headers), §6f (subscriptions/listen, MRTR).
 */
import { UPSTREAM_ERROR, isObject, UpstreamRpcError, type JsonObject, type ListKind } from '../protocol/jsonrpc.js'
import { LEGACY_TASKS_REVISION } from '../protocol/tasks.js'
import { EMPTY_CATALOGUE, SupervisedConnection, type ConnectionHost, type ConnectionState } from './connection.js'
import { CallGate } from './gate.js'
import { CallStats } from './call-stats.js'
import type { CallTiming, Link, UnroutedKind } from './link.js'
import { DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_QUEUED, DEFAULT_STREAM_BUFFER_BYTES, isPersonal, wantsLegacyConnection, type UpstreamConfig } from './config.js'
import { InstancesExhaustedError } from './errors.js'
import { instanceKeyOf, type InstanceOwner } from './isolation.js'
import type { UpstreamLoad, UpstreamStatus } from './status.js'
import type { CallOperation, UpstreamCallOptions, UpstreamCatalogue, UpstreamEvents, UpstreamHeaderProvider, UpstreamLogger } from './contract.js'
import { abortSignalOf, type CancelSignal } from '../base/cancel.js'

/** The requests a legacy-era call sends over the legacy connection of a dual-era upstream (DIGEST §6f: the ones that may ask or log). */
const LEGACY_ROUTED_METHODS = new Set(['tools/call', 'prompts/get', 'resources/read', 'completion/complete'])
/**
 * Shortest timeout (ms) of the setup exchanges (connect, lists, subscriptions), which are ours, not
 * a caller's: a short per-call `timeout` must not keep a slow-starting upstream down.
 */
export const SETUP_TIMEOUT_MS = 30_000

/** Default `maxInstances` of an isolated upstream. */
export const DEFAULT_MAX_INSTANCES = 16
/** Default `idleTimeout` of an isolated upstream's instances, ms (10 min). */
export const DEFAULT_IDLE_TIMEOUT_MS = 600_000

/** One isolated instance: its own connection (a child, or an HTTP connection), its calls in flight, its idle timer. */
interface Instance {
  key: string
  connection: SupervisedConnection
  inFlight: number
  idleTimer: NodeJS.Timeout | undefined
  /** Set when stopped: its connection never restarts. */
  stopped: { value: boolean }
  /** The latest caller it served (UpstreamCallOptions.principal): its own traffic's `principal` for the header provider (an `oauth-user` instance's own traffic carries that caller's grant). */
  caller: { value: unknown }
}

/** Options of one upstream. */
export interface UpstreamOptions {
  /** Where lifecycle lines and the child's stderr go (each line tagged `{ upstream: name }`). */
  logger: UpstreamLogger
  /** Timeout of one call (ms) when the config has no `timeout`. */
  defaultTimeoutMs: number
  events: UpstreamEvents
  /** Per-call request headers for an HTTP upstream (see UpstreamHeaderProvider); default none. */
  headerProvider?: UpstreamHeaderProvider
  /** High-water mark of a stdio upstream's stdin, bytes (default DEFAULT_STREAM_BUFFER_BYTES). */
  streamBufferBytes?: number
  /** Where its callers' calls are counted (the status page); default a fresh one. A reload's restart hands the old one on. */
  stats?: CallStats
}

/**
 * One upstream: connects, re-lists, restarts with backoff, routes calls. Used by the registry.
 * Calls reject with {@link UpstreamRpcError}: the upstream's own JSON-RPC error unchanged, or
 * `UPSTREAM_ERROR` (-31000) when it is down, exits mid-call, times out or the call is cancelled.
 */
export class Upstream implements ConnectionHost {
  readonly kind: 'stdio' | 'http'
  readonly timeoutMs: number
  /** Config resetTimeoutOnProgress and maxTotalTimeout, for callers' calls. */
  readonly timing: CallTiming
  readonly setupTimeoutMs: number
  readonly subscriptions = new Set<string>()
  closing = false
  /** Messages from this upstream skipped for being over maxMessageBytes, since start (counted by its links). */
  oversized = 0
  /** Config `legacyConnection` (default: HTTP yes, stdio no): whether legacy-era calls may open the second connection. */
  private readonly legacyConnectionEnabled: boolean
  private readonly primary: SupervisedConnection
  private readonly legacy: SupervisedConnection
  private firstAttempt: Promise<unknown> | undefined
  /** Aborted by close(): ends every wait for the legacy connection. */
  private readonly closed = new AbortController()
  /** The in-flight cap and queue (config maxInFlight, maxQueued). */
  private readonly gate: CallGate
  /** Isolated instances by key, when `isolation` is not shared. */
  private readonly instances = new Map<string, Instance>()
  /**
   * The resource subscriptions of each instance key: the URIs its owner subscribed
   * to, with how many of the owner's subscriptions hold each (two sessions of one principal,
   * per-principal). An instance subscribes to them when it starts (its connection's
   * `subscriptions`), and follows changes while it runs. A key leaves with its last URI, or when
   * its owner ends ({@link endOwner}).
   */
  private readonly ownerSubscriptions = new Map<string, Map<string, number>>()
  /** Callers' calls, errors and latency window (the status page; call-stats.ts). */
  readonly stats: CallStats
  /** `auth.type` is `oauth-user`: no shared connection, a catalogue per principal (config.ts isPersonal). */
  readonly personal: boolean
  /** The last catalogue each principal's instance listed (oauth-user upstreams); dropped with the grant. */
  private readonly personalCatalogues = new Map<string, UpstreamCatalogue>()
  /** Callers' calls not yet settled (queued, in flight, waiting for an instance or forwarded): what {@link drain} waits for. */
  private active = 0
  /** Set while {@link drain} waits: called when {@link active} drops to 0. */
  private idle: (() => void) | undefined

  constructor (readonly name: string, readonly config: UpstreamConfig, private readonly options: UpstreamOptions) {
    this.kind = 'command' in config ? 'stdio' : 'http'
    this.timeoutMs = config.timeout ?? options.defaultTimeoutMs
    this.timing = { resetOnProgress: config.resetTimeoutOnProgress === true, maxTotalMs: config.maxTotalTimeout }
    this.setupTimeoutMs = Math.max(this.timeoutMs, SETUP_TIMEOUT_MS)
    this.legacyConnectionEnabled = wantsLegacyConnection(config)
    this.primary = new SupervisedConnection('primary', this)
    this.legacy = new SupervisedConnection('legacy', this)
    this.gate = new CallGate(name, config.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT, config.maxQueued ?? DEFAULT_MAX_QUEUED, options.logger)
    this.stats = options.stats ?? new CallStats()
    this.personal = isPersonal(config)
  }

  get logger (): UpstreamLogger { return this.options.logger }
  get events (): UpstreamEvents { return this.options.events }
  get headerProvider (): UpstreamHeaderProvider | undefined { return this.options.headerProvider }
  get streamBufferBytes (): number { return this.options.streamBufferBytes ?? DEFAULT_STREAM_BUFFER_BYTES }

  /** Connects once; resolves when that attempt ended (ready or down, retrying). Never rejects. */
  async start (): Promise<void> {
    // An `oauth-user` upstream has no shared connection: mcpx cannot reach it as nobody. Each
    // principal's instance opens with that principal's token (docs/upstreams.md › Upstream identity).
    if (this.personal) return
    this.firstAttempt ??= this.primary.open()
    await this.firstAttempt
  }

  /**
   * A reload's new instance of this upstream, before it starts (registry.ts `reconcile`, make
   * before break): it takes `old`'s resource subscriptions, so it subscribes to them as it comes up
   * and is in step by the time it takes over. Never throws.
   */
  inheritSubscriptions (old: Upstream): void {
    for (const uri of old.subscriptions) this.subscriptions.add(uri)
  }

  /**
   * The moment this upstream takes over from `old` (a reload's switch): its isolated instances'
   * owners' subscriptions are `old`'s now (its instances start on their owners' next calls and
   * subscribe then), and the shared subscriptions taken or dropped on `old` while this one was
   * starting are pushed here. A refusal is logged. Never rejects.
   */
  async takeOverSubscriptions (old: Upstream): Promise<void> {
    this.ownerSubscriptions.clear()
    for (const [key, uris] of old.ownerSubscriptions) this.ownerSubscriptions.set(key, new Map(uris))
    const added = [...old.subscriptions].filter(uri => !this.subscriptions.has(uri))
    const dropped = [...this.subscriptions].filter(uri => !old.subscriptions.has(uri))
    for (const uri of added) await this.subscribe(uri).catch(error => this.logger.warn({ upstream: this.name, err: error, uri }, 'upstream subscription could not be moved to its new instance'))
    for (const uri of dropped) await this.unsubscribe(uri).catch(() => {})
  }

  /**
   * Waits until its callers' calls have all settled (in flight, queued, on isolated instances), at
   * most `maxMs`; new calls no longer reach it (a reload switched its routes to the new instance).
   * The calls left at the bound are failed by {@link close}. Never rejects.
   * @returns how many calls were still unsettled at the bound (0: drained)
   */
  async drain (maxMs: number): Promise<number> {
    if (this.active === 0) return 0
    let timer: NodeJS.Timeout | undefined
    await new Promise<void>(resolve => {
      this.idle = resolve
      timer = setTimeout(resolve, maxMs)
    })
    clearTimeout(timer)
    this.idle = undefined
    return this.active
  }

  private warnedUnrouted = false

  /**
   * A question refused, or a log line or task status dropped, because it could not be tied to one call (link.ts
   * `owning`): counted (the registry's 'unrouted' event, mcpx_upstream_unrouted_total), and warned
   * once per upstream, since the fix is the upstream's `isolation`. Never throws.
   */
  unrouted (kind: UnroutedKind): void {
    if (!this.warnedUnrouted) {
      this.warnedUnrouted = true
      this.logger.warn({ upstream: this.name, kind }, 'upstream sent a question or log line that cannot be tied to one caller (several share it): refused/dropped; configure isolation "per-session" or "per-principal" for it')
    }
    this.options.events.unrouted(kind)
  }

  /** Counts one message skipped for being over maxMessageBytes (ConnectionHost). */
  messageTooLarge (): void {
    this.oversized++
  }

  /** Reports the upstream's status to the registry. Never throws. */
  stateChanged (): void {
    this.options.events.stateChanged(this.status())
  }

  /** What /readyz reports. Never throws. */
  status (): UpstreamStatus {
    const primary = this.primary
    // An `oauth-user` upstream is ready to open its callers' connections as soon as it is configured.
    const state = (this.personal && primary.state === 'connecting' ? 'ready' : primary.state) as UpstreamStatus['state']
    const status: UpstreamStatus = { name: this.name, state, restarts: primary.restarts }
    const link = primary.link
    if (state === 'ready' && link !== undefined) {
      status.era = link.era
      status.revision = link.revision
    }
    const pid = primary.pid
    if (pid !== undefined && state !== 'closed') status.pid = pid
    if (state === 'down' && primary.lastError !== undefined) status.lastError = primary.lastError
    const legacy = this.legacy
    const legacyPid = legacy.pid
    if (this.kind === 'stdio' && state !== 'closed') {
      status.pids = [pid, legacyPid].filter((p): p is number => p !== undefined)
    }
    if (legacy.state !== 'idle' && legacy.state !== 'closed' && state !== 'closed') {
      status.legacy = { state: legacy.state, restarts: legacy.restarts }
      if (legacy.state === 'ready' && legacy.link !== undefined) status.legacy.revision = legacy.link.revision
      if (legacyPid !== undefined) status.legacy.pid = legacyPid
      if ((legacy.state === 'down' || legacy.state === 'unavailable') && legacy.lastError !== undefined) status.legacy.lastError = legacy.lastError
    }
    return status
  }

  /** Calls in flight and queued now, and what the bounds refused (metrics). Never throws. */
  load (): UpstreamLoad {
    const stdinBuffered = (this.primary.link?.stdinBuffered ?? 0) + (this.legacy.link?.stdinBuffered ?? 0)
    return { name: this.name, inFlight: this.gate.inFlight, queued: this.gate.queued, refused: this.gate.refused, oversized: this.oversized, stdinBuffered }
  }

  /** The raw lists; empty unless ready. */
  lists (): UpstreamCatalogue {
    return this.primary.state === 'ready' ? this.primary.catalogue : EMPTY_CATALOGUE
  }

  /**
   * When its `kind` lists turn stale by its own `ttlMs` (performance.now() ms; connection.ts
   * `staleAtMs`): Infinity for an upstream that gave none, is not ready, is re-listing that kind,
   * or has no shared catalogue (`oauth-user`). Never throws.
   */
  staleAtMs (kind: ListKind): number {
    return this.personal ? Infinity : this.primary.staleAtMs(kind)
  }

  /**
   * Re-lists `kind` in the background when its lists are stale at `nowMs` (docs/upstreams.md ›
   * Lists that expire). @returns that re-list (never rejects), or undefined when nothing was stale
   */
  refreshIfStale (kind: ListKind, nowMs: number): Promise<void> | undefined {
    return this.personal ? undefined : this.primary.refreshIfStale(kind, nowMs)
  }

  /**
   * The catalogue of principal `key`'s own instance of an `oauth-user` upstream: its live lists while
   * it runs, else the last it listed (an idle instance stops; its owner still sees its tools). Empty
   * before its first listing.
   */
  personalLists (key: string): UpstreamCatalogue {
    const connection = this.instances.get(key)?.connection
    if (connection?.state === 'ready') this.personalCatalogues.set(key, connection.catalogue)
    return this.personalCatalogues.get(key) ?? EMPTY_CATALOGUE
  }

  /**
   * Opens principal `key`'s instance (after a consent, so the caller's catalogue holds the upstream's
   * items at once) and tells that principal's listeners its lists changed. Never rejects: a failure
   * is logged, and the caller's next call opens it again.
   */
  async openPersonal (key: string): Promise<void> {
    try {
      await this.instance(key)
      this.personalLists(key)
      for (const kind of ['tools', 'prompts', 'resources'] as const) this.options.events.instanceEvent?.({ upstream: this.name, isolation: 'per-principal', key, kind })
    } catch (error) {
      this.logger.warn({ upstream: this.name, err: error }, 'could not open a consented caller\'s connection; it opens on their next call')
    }
  }

  /** Forgets principal `key`'s instance and catalogue (its grant went); resolves once it stopped. Never rejects. */
  async closePersonal (key: string): Promise<void> {
    this.personalCatalogues.delete(key)
    await this.stopInstance(key)
    for (const kind of ['tools', 'prompts', 'resources'] as const) this.options.events.instanceEvent?.({ upstream: this.name, isolation: 'per-principal', key, kind })
  }

  /** The server capabilities it announced, when ready. */
  serverCapabilities (): JsonObject | undefined {
    return this.primary.state === 'ready' ? this.primary.link?.capabilities : undefined
  }

  /**
   * Its 2025-11-25 experimental `tasks` capability (basic/utilities/tasks.mdx): the primary
   * connection's `capabilities.tasks` when it is ready, legacy, negotiated 2025-11-25 and declares
   * `requests.tools.call` (the one task-augmented request mcpx forwards). Undefined otherwise.
   */
  legacyTasks (): JsonObject | undefined {
    const link = this.primary.link
    if (this.primary.state !== 'ready' || link === undefined || link.era !== 'legacy' || link.revision !== LEGACY_TASKS_REVISION) return undefined
    const tasks = link.capabilities.tasks
    if (!isObject(tasks) || !isObject(tasks.requests) || !isObject(tasks.requests.tools) || !isObject(tasks.requests.tools.call)) return undefined
    return tasks
  }

  /**
   * Stops retrying, kills every child (SIGTERM, SIGKILL after 2 s), including one spawned by a
   * (re)start whose setup has not finished, and resolves once they have exited. Never rejects.
   */
  async close (): Promise<void> {
    if (this.primary.state === 'closed') return
    this.closing = true
    this.closed.abort()
    const shuttingDown = new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.name} is shutting down`)
    this.gate.close(shuttingDown)
    this.primary.link?.failAll(shuttingDown)
    this.legacy.link?.failAll(shuttingDown)
    // A connection still being set up (its child may never answer) is killed here too; its
    // connect() then fails and, seeing `closing`, schedules nothing.
    await Promise.all([this.primary.close(), this.legacy.close(), ...[...this.instances.keys()].map(async key => await this.stopInstance(key))])
    this.primary.setState('closed')
  }

  /**
   * Calls a tool by its upstream (unprefixed) name. `tool` is the upstream's own definition,
   * used for Mcp-Param-* mirroring on a modern HTTP connection (DIGEST §6d).
   * With `options.task` (2025-11-25 tasks) the result may be a CreateTaskResult (`{ task }`).
   * @returns the raw result object. Rejects with UpstreamRpcError.
   */
  callTool (name: string, args: JsonObject | undefined, options: UpstreamCallOptions, tool?: JsonObject): Promise<JsonObject> {
    // Not async itself (nothing below throws; {@link call} is): one frame and one promise fewer per call.
    const params: JsonObject = { name }
    if (args !== undefined) params.arguments = args
    // A 2025-11-25 task-augmented call (options.task): forwarded only to an upstream that declared
    // task-augmented tools/call; dropped for any other, which per the spec would ignore it anyway
    // (basic/utilities/tasks.mdx, Task Support and Handling 1). The tool's own execution.taskSupport
    // is the upstream's to enforce.
    if (options.task !== undefined && this.legacyTasks() !== undefined) params.task = options.task
    return this.call('tools/call', params, options, tool, 'callTool')
  }

  /**
   * Sends one request (`prompts/get`, `resources/read`, `completion/complete`, …) and returns
   * the raw result object. Rejects with UpstreamRpcError.
   * @param operation the registry's routed call this is, when it is one: told to `events.callSettled`
   */
  async request (method: string, params: JsonObject, options: UpstreamCallOptions, operation?: CallOperation): Promise<JsonObject> {
    return await this.call(method, params, options, undefined, operation)
  }

  /**
   * The owner replica's end of a call forwarded from another replica (isolated upstreams under Redis;
   * lib/sessions/instances.ts): a caller's call like any other, `tool` being this upstream's own
   * definition when it is a tools/call. Rejects with UpstreamRpcError.
   */
  async forwardedCall (method: string, params: JsonObject, options: UpstreamCallOptions, tool?: JsonObject): Promise<JsonObject> {
    return await this.call(method, params, options, tool)
  }

  /**
   * Subscribes upstream to `uri`: `resources/subscribe` on a legacy connection, a
   * `subscriptions/listen` with `resourceSubscriptions` on a modern one (DIGEST §6f).
   * Remembered across restarts. Rejects with UpstreamRpcError when the upstream refuses.
   */
  async subscribe (uri: string): Promise<void> {
    this.subscriptions.add(uri)
    await this.primary.pushSubscription('resources/subscribe', uri)
    await this.legacy.pushSubscription('resources/subscribe', uri)
  }

  /** Drops the upstream subscription to `uri`. Rejects with UpstreamRpcError when the upstream refuses. */
  async unsubscribe (uri: string): Promise<void> {
    if (!this.subscriptions.delete(uri)) return
    await this.primary.pushSubscription('resources/unsubscribe', uri)
    await this.legacy.pushSubscription('resources/unsubscribe', uri)
  }

  /**
   * The key of the isolated instance a call uses (docs/upstreams.md › Isolated upstreams): per-session,
   * the call's owner (legacy session, stdio client), else its principal (2026-07-28 traffic);
   * per-principal, its principal. `anonymous` when the call has neither. Undefined when shared.
   */
  private instanceKey (options: InstanceOwner): string | undefined {
    return instanceKeyOf(this.config.isolation, options)
  }

  /**
   * The live instance for `key`, started on first use. Rejects with UpstreamRpcError
   * INSTANCES_EXHAUSTED past `maxInstances`, UPSTREAM_ERROR when it could not be started.
   */
  private async instance (key: string, caller?: unknown): Promise<Instance> {
    let instance = this.instances.get(key)
    if (instance !== undefined && caller !== undefined) instance.caller.value = caller
    if (instance === undefined) {
      const max = this.config.maxInstances ?? DEFAULT_MAX_INSTANCES
      if (this.instances.size >= max) {
        throw new InstancesExhaustedError(`upstream ${this.name}: all ${max} isolated instances are in use (maxInstances); retry later`)
      }
      const stopped = { value: false }
      const callerRef = { value: caller }
      instance = { key, connection: new SupervisedConnection('primary', this.instanceHost(key, stopped, callerRef)), inFlight: 0, idleTimer: undefined, stopped, caller: callerRef }
      this.instances.set(key, instance)
      void instance.connection.open()
    }
    clearTimeout(instance.idleTimer)
    const connection = instance.connection
    if (connection.state !== 'ready') await connection.attempt
    if (connection.state !== 'ready' || connection.link === undefined) {
      throw new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.name}: its instance is ${connection.state}${connection.lastError === undefined ? '' : `: ${connection.lastError}`}`)
    }
    return instance
  }

  /**
   * A connection host for an isolated instance: the upstream's config; its owner's subscriptions;
   * the list changes it announces (after its re-list; not those of it coming up or going down)
   * and its resource updates relayed to its owner alone (the registry's 'instance_event').
   * The merged catalogue stays the shared connection's.
   */
  private instanceHost (key: string, stopped: { value: boolean }, caller: { value: unknown } = { value: undefined }): ConnectionHost {
    const upstream = this
    const isolation = this.config.isolation === 'per-principal' ? 'per-principal' : 'per-session'
    const relay = this.options.events.instanceEvent
    const name = this.name
    const provider = this.headerProvider
    return {
      name: this.name,
      config: this.config,
      kind: this.kind,
      logger: this.logger,
      headerProvider: provider === undefined ? undefined : async request => await provider({ ...request, instanceKey: key, ...(request.principal === undefined && caller.value !== undefined ? { principal: caller.value } : {}) }),
      setupTimeoutMs: this.setupTimeoutMs,
      get subscriptions () { return new Set(upstream.ownerSubscriptions.get(key)?.keys()) },
      get closing () { return upstream.closing || stopped.value },
      events: {
        catalogueChanged (kind, announced) { if (announced && !stopped.value) relay?.({ upstream: name, isolation, key, kind }) },
        resourceUpdated (uri) { if (!stopped.value) relay?.({ upstream: name, isolation, key, uri }) },
        stateChanged () {},
        unrouted: kind => upstream.options.events.unrouted(kind)
      },
      stateChanged () {},
      unrouted: kind => upstream.unrouted(kind),
      streamBufferBytes: this.streamBufferBytes,
      messageTooLarge: () => upstream.messageTooLarge()
    }
  }

  /**
   * Subscribes `who`'s isolated instance to `uri`: remembered for the instance's key,
   * and pushed to the instance when it runs (a refusal there is logged: the shared connection
   * already accepted the subscription). A session's own instance (key = `who.owner`) holds a URI
   * once, however often it is asked. Nothing for a shared upstream, nor for a session whose
   * instances have a `home` (the Redis store applies its stored set: {@link sessionSubscription}).
   * Never rejects.
   */
  async subscribeInstance (uri: string, who: InstanceOwner): Promise<void> {
    const key = this.instanceKey(who)
    if (key === undefined || (key === who.owner && who.home !== undefined)) return
    let uris = this.ownerSubscriptions.get(key)
    if (uris === undefined) this.ownerSubscriptions.set(key, uris = new Map())
    const count = uris.get(uri) ?? 0
    if (count > 0 && key === who.owner) return
    uris.set(uri, count + 1)
    if (count === 0) await this.pushInstance(key, 'resources/subscribe', uri)
  }

  /**
   * Session `sid`'s own instance subscribed to `uri` (`add`) or not, when this upstream is
   * `per-session` (the Redis store's end of isolated upstreams: the session's stored subscriptions, on the
   * replica running its instance). Idempotent. Never rejects.
   */
  async sessionSubscription (uri: string, sid: string, add: boolean): Promise<void> {
    if (this.config.isolation !== 'per-session') return
    if (add) await this.subscribeInstance(uri, { owner: sid })
    else await this.unsubscribeInstance(uri, { owner: sid })
  }

  /** Drops one of `who`'s subscriptions to `uri` on its instance; the last one unsubscribes it there (as {@link subscribeInstance} counts them). Never rejects. */
  async unsubscribeInstance (uri: string, who: InstanceOwner): Promise<void> {
    const key = this.instanceKey(who)
    if (key !== undefined && key === who.owner && who.home !== undefined) return
    const uris = key === undefined ? undefined : this.ownerSubscriptions.get(key)
    const count = uris?.get(uri)
    if (key === undefined || uris === undefined || count === undefined) return
    if (count > 1) { uris.set(uri, count - 1); return }
    uris.delete(uri)
    if (uris.size === 0) this.ownerSubscriptions.delete(key)
    await this.pushInstance(key, 'resources/unsubscribe', uri)
  }

  private async pushInstance (key: string, method: 'resources/subscribe' | 'resources/unsubscribe', uri: string): Promise<void> {
    const instance = this.instances.get(key)
    if (instance === undefined) return
    try {
      await instance.connection.pushSubscription(method, uri)
    } catch (error) {
      this.logger.warn({ upstream: this.name, err: error, uri }, `isolated upstream instance: ${method} failed`)
    }
  }

  /** The owner `key` is gone (its session ended): its instance stops and its subscriptions are forgotten. Never rejects. */
  async endOwner (key: string): Promise<void> {
    this.ownerSubscriptions.delete(key)
    await this.stopInstance(key)
  }

  /** Stops the instance of `key` (its session ended, or it sat idle); resolves once its child exited. Never rejects. */
  async stopInstance (key: string): Promise<void> {
    const instance = this.instances.get(key)
    if (instance === undefined) return
    this.instances.delete(key)
    clearTimeout(instance.idleTimer)
    instance.connection.link?.failAll(new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.name}: its instance was stopped`))
    instance.stopped.value = true
    await instance.connection.close()
    this.logger.info({ upstream: this.name }, 'isolated upstream instance stopped')
  }

  /** The instances running (pids of stdio ones), for status and tests. */
  instancePids (): number[] {
    return [...this.instances.values()].map(i => i.connection.pid).filter((p): p is number => p !== undefined)
  }

  private async callIsolated (key: string, method: string, params: JsonObject, options: UpstreamCallOptions, tool?: JsonObject): Promise<JsonObject> {
    const instance = await this.instance(key, options.principal)
    const link = instance.connection.link as Link
    instance.inFlight++
    try {
      return await link.call(method, params, { ...options, owner: key }, this.timeoutMs, tool, false, this.timing)
    } finally {
      if (--instance.inFlight === 0 && this.instances.get(key) === instance) {
        const idleMs = this.config.idleTimeout ?? DEFAULT_IDLE_TIMEOUT_MS
        instance.idleTimer = setTimeout(() => { void this.stopInstance(key) }, idleMs)
        instance.idleTimer.unref()
      }
    }
  }

  /**
   * A caller's call: takes one of the upstream's maxInFlight slots (at once under the cap, else
   * after waiting in its queue; see gate.ts), sends it, and gives the slot back when it settles.
   */
  private async call (method: string, params: JsonObject, options: UpstreamCallOptions, tool?: JsonObject, operation?: CallOperation): Promise<JsonObject> {
    // Counted for the status page (call-stats.ts): two clock reads and a few integer operations. The
    // same two reads time the call for the metrics (events.callSettled): one timer per call.
    const startMs = performance.now()
    let result: JsonObject | undefined
    this.active++
    try {
      const key = this.instanceKey(options)
      if (key !== undefined) {
        // A legacy session's instances live on one replica (under Redis): elsewhere its
        // calls are forwarded there. Per-principal keys stay per replica (docs/upstreams.md › Isolated upstreams across replicas).
        const home = options.home
        if (home !== undefined && key === options.owner) {
          const here = home.isHere()
          if (!(here === true || (here !== false && await here))) return (result = await home.forward(this.name, method, params, options, this.timeoutMs))
        }
        return (result = await this.callIsolated(key, method, params, options, tool)) // bounded by maxInstances, not the gate
      }
      const gate = this.gate
      let timeoutMs = this.timeoutMs
      if (!gate.tryAcquire()) {
        this.primaryLink() // a down upstream fails at once, it does not queue
        timeoutMs = await gate.wait(method, options.signal, timeoutMs)
      }
      try {
        return (result = await this.send(method, params, options, timeoutMs, tool))
      } finally {
        gate.release()
      }
    } finally {
      const nowMs = performance.now()
      this.stats.record(nowMs - startMs, result === undefined || result.isError === true, nowMs)
      if (operation !== undefined) this.options.events.callSettled?.(operation, nowMs - startMs, result === undefined)
      if (--this.active === 0) this.idle?.()
    }
  }

  /** The ready primary link. @throws UpstreamRpcError (UPSTREAM_ERROR) naming the state when not ready */
  private primaryLink (): Link {
    const primary = this.primary
    const link = primary.link
    if (primary.state !== 'ready' || link === undefined) {
      throw new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.name} is ${primary.state}${primary.lastError === undefined ? '' : `: ${primary.lastError}`}`)
    }
    return link
  }

  /**
   * Sends one call on the connection it takes (holding a slot). Not async itself on the common path
   * (the primary link's call is returned as it is); throws UpstreamRpcError synchronously when the
   * upstream is not ready, which {@link call} awaits inside its try, as it would a rejection.
   */
  private send (method: string, params: JsonObject, options: UpstreamCallOptions, timeoutMs: number, tool?: JsonObject): Promise<JsonObject> {
    const link = this.primaryLink()
    if (options.era === 'legacy' && link.era === 'modern' && this.legacyConnectionEnabled && LEGACY_ROUTED_METHODS.has(method)) {
      return this.sendOnLegacyLink(link, method, params, options, timeoutMs, tool)
    }
    return link.call(method, params, options, timeoutMs, tool, false, this.timing)
  }

  /** {@link send} for a legacy-era call to a modern upstream: on the legacy connection when it has one, else on `primary`. */
  private async sendOnLegacyLink (primary: Link, method: string, params: JsonObject, options: UpstreamCallOptions, timeoutMs: number, tool?: JsonObject): Promise<JsonObject> {
    const link = await this.legacyLink(method, options.signal) ?? primary
    return await link.call(method, params, options, timeoutMs, tool, false, this.timing)
  }

  /**
   * The legacy connection's link for a legacy-era call: opened on first use, awaited while it (re)connects.
   * @returns it, or undefined when the upstream refused a legacy session (the caller then uses the
   *          primary connection). Rejects with UpstreamRpcError (UPSTREAM_ERROR) when it could not be
   *          opened (it keeps retrying with backoff), or when the call is cancelled or mcpx closes.
   */
  private async legacyLink (method: string, signal: CancelSignal): Promise<Link | undefined> {
    const legacy = this.legacy
    if (legacy.state === 'unavailable') return undefined
    if (legacy.state === 'ready' && legacy.link !== undefined) return legacy.link
    if (legacy.state === 'idle') void legacy.open()
    const stopped = AbortSignal.any([abortSignalOf(signal), this.closed.signal])
    let onStop: () => void = () => {}
    const stop = new Promise<never>((_resolve, reject) => {
      onStop = () => reject(new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.name}: ${method} ${this.closing ? 'failed: shutting down' : 'cancelled'}`))
      if (stopped.aborted) onStop()
      else stopped.addEventListener('abort', onStop, { once: true })
    })
    stop.catch(() => {})
    try {
      await Promise.race([legacy.attempt, stop])
    } finally {
      stopped.removeEventListener('abort', onStop)
    }
    // Read the state again: the attempt may have found the upstream modern-only.
    const state = legacy.state as ConnectionState
    if (state === 'unavailable') return undefined
    if (state === 'ready' && legacy.link !== undefined) return legacy.link
    throw new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.name}: its legacy connection is ${state}${legacy.lastError === undefined ? '' : `: ${legacy.lastError}`}`)
  }
}
