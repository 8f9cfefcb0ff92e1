/**
 * One supervised connection to an upstream, used for both roles: the `primary` connection (the
 * negotiated one: catalogue, list_changed, subscriptions) and a dual-era upstream's `legacy` one
 * (opened lazily for legacy-era calls; see ./README.md). It connects (the SDK client's handshake),
 * lists and re-lists (primary), keeps the upstream's listen stream in step with the subscriptions,
 * and when the link drops: fails its calls, goes down, and restarts with backoff.
 * Sources: DIGEST §6a (eras, dual-era), §6b (stdio probe, restart), §6c (HTTP), §6f (listen).
 */
import { createInterface } from 'node:readline'
import { ProtocolError, SdkError, SdkErrorCode, type McpSubscription } from '@modelcontextprotocol/client'
import { UPSTREAM_ERROR, isObject, UpstreamRpcError, type JsonObject, type ListKind } from '../protocol/jsonrpc.js'
import { SKILLS_LIST, skillsCapabilityOf } from '../protocol/skills.js'
import { createUpstreamClient } from './client.js'
import type { HttpUpstreamTransport } from './http-transport.js'
import { Link, type UnroutedKind } from './link.js'
import { redactText } from '../base/redact.js'
import { KILL_GRACE_MS, StdioUpstreamTransport } from './stdio-transport.js'
import { DEFAULT_MAX_MESSAGE_BYTES, type UpstreamConfig } from './config.js'
import type { UpstreamCatalogue, UpstreamEvents, UpstreamHeaderProvider, UpstreamLogger } from './contract.js'

/** First restart delay (ms); doubles per failed attempt. */
export const RESTART_INITIAL_DELAY_MS = 100
/** Longest restart delay (ms). */
export const RESTART_MAX_DELAY_MS = 10_000
/** A connection up this long (ms) resets the backoff. */
export const RESTART_RESET_AFTER_MS = 10_000
/**
 * Most pages mcpx reads from one upstream list, following its `nextCursor` (paged
 * catalogues; a defence against a cursor that never ends). Past it, or past {@link MAX_LIST_ITEMS},
 * the list is cut there: what was read is served, and one warn line names the upstream and list.
 */
export const MAX_LIST_PAGES = 100
/** Most items mcpx keeps from one upstream list (tools, prompts, resources or templates); see {@link MAX_LIST_PAGES}. */
export const MAX_LIST_ITEMS = 10_000
/**
 * The floor of the re-lists an upstream's own `ttlMs` asks for, ms: one list kind of one upstream
 * is re-listed for staleness at most once per this long after its last listing, whatever `ttlMs`
 * says (0 included), so an upstream cannot make mcpx poll it per request
 * (docs/upstreams.md › Lists that expire).
 */
export const MIN_LIST_REFRESH_MS = 1_000

const LIST_KINDS: readonly ListKind[] = ['tools', 'prompts', 'resources']

/** One upstream list read in full: its items, and the smallest valid `ttlMs` its pages carried (undefined: none did). */
interface Listed {
  items: JsonObject[]
  ttlMs: number | undefined
}
/** A list not asked for (the upstream does not declare it): a fresh empty array each time, as before. */
function unlisted (): Listed {
  return { items: [], ttlMs: undefined }
}

/** The smaller of two optional `ttlMs` values (ms); undefined when both are. */
function minTtl (a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b)
}

/**
 * A list result's `ttlMs` (2026-07-28 caching; schema `CacheableResult`: an integer ≥ 0, ms), or
 * undefined when it carries none or one that is not a finite number ≥ 0 (then it is ignored).
 */
function ttlOf (result: JsonObject): number | undefined {
  const ttlMs = result.ttlMs
  return typeof ttlMs === 'number' && Number.isFinite(ttlMs) && ttlMs >= 0 ? ttlMs : undefined
}
export const EMPTY_CATALOGUE: UpstreamCatalogue = Object.freeze({ tools: [], prompts: [], resources: [], resourceTemplates: [], skills: [] }) as UpstreamCatalogue

/** What a connection needs from the upstream it belongs to (the facade, upstream.ts). */
export interface ConnectionHost {
  readonly name: string
  readonly config: UpstreamConfig
  readonly kind: 'stdio' | 'http'
  readonly logger: UpstreamLogger
  readonly events: UpstreamEvents
  readonly headerProvider: UpstreamHeaderProvider | undefined
  /** Bound of the setup exchanges (connect, lists, subscriptions), ms. */
  readonly setupTimeoutMs: number
  /** The resource URIs subscribed upstream (kept across restarts). */
  readonly subscriptions: ReadonlySet<string>
  /** True once close() began: nothing reconnects. */
  readonly closing: boolean
  /** A connection's state changed: report the upstream's status. */
  stateChanged: () => void
  /**
   * A question (`question`) or log line (`log`) the upstream sent could not be tied to exactly one
   * call, so it was refused or dropped (mcpx never guesses whose message it holds). Never throws.
   */
  unrouted: (kind: UnroutedKind) => void
  /** High-water mark of a stdio child's stdin, bytes (transport.streamBufferBytes). */
  readonly streamBufferBytes: number
  /** A message over maxMessageBytes was skipped (counted for metrics). */
  messageTooLarge: () => void
}

/** A connection's state: `idle` (legacy role, never needed yet) and `unavailable` (legacy refused) are the legacy role's. */
export type ConnectionState = 'idle' | 'connecting' | 'ready' | 'down' | 'unavailable' | 'closed'

/** The backoff before restart attempt number `failures + 1`, ms: RESTART_INITIAL_DELAY_MS doubling, capped at RESTART_MAX_DELAY_MS. */
function restartDelayMs (failures: number): number {
  return Math.min(RESTART_INITIAL_DELAY_MS * 2 ** failures, RESTART_MAX_DELAY_MS)
}

/**
 * Whether a failed legacy `connect` means the upstream refuses legacy sessions (modern-only): it
 * answered `initialize` with a JSON-RPC error (stdio: -32022 with its `supported` list), or an
 * HTTP 4xx. A timeout, an exit or a network error is not a verdict (restart with backoff).
 */
function refusedLegacy (error: unknown): boolean {
  if (error instanceof ProtocolError) return true
  const status = (error as { data?: { status?: unknown } }).data?.status
  return error instanceof SdkError && typeof status === 'number' && status >= 400 && status < 500
}

/** A setup request's options: never cancelled by a caller. */
function setupOptions (): { signal: AbortSignal } {
  return { signal: new AbortController().signal }
}

/** One supervised connection (see module comment). */
export class SupervisedConnection {
  state: ConnectionState
  /** The link once connected (set before listing, so a list can run on it), until it drops. */
  link: Link | undefined
  /** The running attempt, or (when down) the scheduled one: resolves with the link, or undefined when it failed. */
  attempt: Promise<Link | undefined> | undefined
  restarts = 0
  lastError: string | undefined
  /** The raw lists (primary role). */
  catalogue: UpstreamCatalogue = EMPTY_CATALOGUE
  private failures = 0
  private restartTimer: NodeJS.Timeout | undefined
  private stableTimer: NodeJS.Timeout | undefined
  private cancelRestart: (() => void) | undefined
  /** Use plain `initialize` (a stdio server that died on the probe; remembered across restarts). */
  private forceLegacy = false
  /** Links still being set up: their child already runs, so status() reports its pid and close() kills it. */
  private readonly settingUp = new Set<Link>()
  private readonly logFields: JsonObject

  constructor (readonly role: 'primary' | 'legacy', private readonly host: ConnectionHost) {
    this.state = role === 'primary' ? 'connecting' : 'idle'
    this.logFields = role === 'primary' ? { upstream: host.name } : { upstream: host.name, connection: 'legacy' }
  }

  /** The child's pid (stdio): the live link's, or one being set up. */
  get pid (): number | undefined {
    const pid = this.link?.pid
    if (pid !== undefined) return pid
    for (const link of this.settingUp) if (link.pid !== undefined) return link.pid
    return undefined
  }

  /** Starts an attempt now. @returns it (see `attempt`). Never rejects. */
  open (): Promise<Link | undefined> {
    this.attempt = this.connect()
    return this.attempt
  }

  /** Stops restarting and kills the link and any being set up; resolves once their children exited. Never rejects. */
  async close (): Promise<void> {
    clearTimeout(this.restartTimer)
    clearTimeout(this.stableTimer)
    this.cancelRestart?.()
    const links = [...this.settingUp]
    if (this.link !== undefined) links.push(this.link)
    await Promise.all(links.map(async link => await link.dispose(KILL_GRACE_MS)))
    if (this.role === 'legacy') await this.attempt
  }

  setState (state: ConnectionState): void {
    this.state = state
    this.host.stateChanged()
  }

  /**
   * One attempt: handshake, then (primary) the lists, or (legacy) the subscriptions mirrored. Ends
   * ready, or down with a restart scheduled, or (legacy) `unavailable`. Never rejects.
   */
  private async connect (): Promise<Link | undefined> {
    const host = this.host
    if (host.closing) return undefined
    this.setState('connecting')
    // undici loads only when an HTTP upstream is configured (a stdio-only gateway starts without it).
    const http = host.kind === 'http' ? await import('./http-transport.js') : undefined
    if (host.closing) return undefined
    const link = this.buildLink(http?.HttpUpstreamTransport)
    this.settingUp.add(link)
    try {
      const options = this.role === 'legacy' || this.forceLegacy
        ? { timeout: host.setupTimeoutMs, prior: { kind: 'legacy' as const } }
        : { timeout: host.setupTimeoutMs }
      await link.client.connect(link.transport, options)
    } catch (error) {
      await link.dispose(KILL_GRACE_MS)
      this.settingUp.delete(link)
      if (host.closing) return undefined
      const message = (error as Error).message
      if (this.role === 'primary' && host.kind === 'stdio' && !this.forceLegacy && error instanceof SdkError &&
          error.code === SdkErrorCode.EraNegotiationFailed && /closed/.test(message)) {
        // The child exited on the in-place server/discover probe: a legacy server that dies on
        // unknown pre-initialize requests. Remember it and connect with plain initialize.
        host.logger.info({ upstream: host.name, exit: link.exitInfo }, 'upstream exited on the server/discover probe; using initialize')
        this.forceLegacy = true
        return await this.connect()
      }
      if (this.role === 'legacy' && refusedLegacy(error)) {
        const reason = redactText(message)
        this.lastError = `legacy initialize refused: ${reason}`
        host.logger.info({ upstream: host.name, reason }, 'upstream refuses a legacy session; legacy-era calls use its modern connection')
        this.setState('unavailable')
        return undefined
      }
      this.down(this.setupFailure(this.role === 'primary' ? 'connect' : 'legacy connect', error, link))
      return undefined
    }
    this.settingUp.delete(link)
    if (host.closing) { await link.dispose(KILL_GRACE_MS); return undefined }
    link.established()
    this.link = link
    const client = link.client
    client.onerror = err => host.logger.debug({ ...this.logFields, reason: redactText(err.message) }, 'upstream client error')
    client.onclose = () => this.onClosed(link)
    // The legacy link's list_changed is not relayed: the catalogue is the primary connection's.
    if (this.role === 'primary') {
      for (const kind of LIST_KINDS) client.setNotificationHandler(`notifications/${kind}/list_changed`, () => { this.refresh(link, kind) })
    }
    // resources/updated bypass the SDK client (Link.intercept): one per message of a flood.
    link.onResourceUpdated = uri => { host.events.resourceUpdated(uri) }
    // 2025-11-25 task status: relayed from the primary connection only (an isolated instance's or a
    // dual-era upstream's legacy connection's are left to the SDK client, i.e. dropped; docs/wire.md › Tasks).
    const taskStatus = host.events.taskStatus
    if (this.role === 'primary' && taskStatus !== undefined) link.onTaskStatus = params => { taskStatus(params) }
    return this.role === 'primary' ? await this.primaryReady(link) : await this.legacyReady(link)
  }

  private async primaryReady (link: Link): Promise<Link | undefined> {
    const host = this.host
    try {
      const catalogue = await this.listAll(link)
      if (this.link !== link) return undefined
      this.catalogue = catalogue
    } catch (error) {
      if (this.link !== link) return undefined
      await link.dispose(KILL_GRACE_MS)
      this.link = undefined
      this.down(this.setupFailure('listing', error, link))
      return undefined
    }
    this.lastError = undefined
    this.setState('ready')
    host.logger.info({ upstream: host.name, era: link.era, revision: link.revision, pid: link.pid }, 'upstream ready')
    for (const kind of LIST_KINDS) host.events.catalogueChanged(kind, false)
    this.armStableTimer()
    await this.restoreSubscriptions(link)
    return link
  }

  private async legacyReady (link: Link): Promise<Link | undefined> {
    const host = this.host
    for (const uri of host.subscriptions) await this.mirrorSubscription('resources/subscribe', uri, link)
    if (host.closing) { await link.dispose(KILL_GRACE_MS); return undefined }
    if (this.link !== link) return undefined // it died meanwhile (onClosed scheduled a restart)
    // No logging/setLevel: with none, the v2 server SDK sends every level in a legacy session
    // (McpServer.buildContext: no threshold, no filter; Server.isMessageIgnored: false). A legacy
    // client's own logging/setLevel is answered by mcpx (lib/dispatch/dispatcher.ts), never sent here.
    this.lastError = undefined
    this.setState('ready')
    host.logger.info({ upstream: host.name, connection: 'legacy', revision: link.revision, pid: link.pid }, 'upstream legacy connection ready')
    this.armStableTimer()
    return link
  }

  private armStableTimer (): void {
    clearTimeout(this.stableTimer)
    this.stableTimer = setTimeout(() => { this.failures = 0 }, RESTART_RESET_AFTER_MS).unref()
  }

  private buildLink (Http: typeof HttpUpstreamTransport | undefined): Link {
    const host = this.host
    const config = host.config
    let transport: StdioUpstreamTransport | HttpUpstreamTransport
    const maxMessageBytes = config.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES
    if ('command' in config) {
      transport = new StdioUpstreamTransport({ command: config.command, args: config.args, env: config.env, cwd: config.cwd, maxMessageBytes, highWaterBytes: host.streamBufferBytes })
      const lines = createInterface({ input: transport.stderr, crlfDelay: Infinity })
      lines.on('line', line => host.logger.info({ ...this.logFields, stderr: line }, 'upstream stderr'))
    } else {
      if (Http === undefined) throw new Error('buildLink: the HTTP transport module is not loaded')
      transport = new Http(new URL(config.url), config.headers, host.name, host.headerProvider, maxMessageBytes)
    }
    const holder: { link?: Link } = {}
    const client = createUpstreamClient(async (method, params, signal, id) => {
      if (holder.link === undefined) throw new ProtocolError(-32_601, `mcpx: no request in flight on upstream ${host.name} can relay ${method}`)
      return await holder.link.answerQuestion(method, params, signal, id)
    })
    holder.link = new Link(this.role, host.name, client, transport, host.logger, this.logFields, kind => host.unrouted(kind))
    transport.onoversized = (bytes, id, atLeast) => {
      host.messageTooLarge()
      holder.link?.oversized(bytes, maxMessageBytes, id, atLeast)
    }
    return holder.link
  }

  /**
   * The reason text of a failed setup step (`lastError`, the 'upstream down' line), redacted by the
   * caller: a timeout says so with its bound (ms); a child that ended says how (exit code or signal).
   */
  private setupFailure (step: string, error: unknown, link: Link): string {
    if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) return `${step}: setup timed out after ${this.host.setupTimeoutMs} ms`
    const exit = link.exitInfo
    const what = `${step} failed: ${(error as Error).message}`
    return exit === undefined ? what : `${what} (child exited: ${exit})`
  }

  private onClosed (link: Link): void {
    const host = this.host
    if (this.link !== link || host.closing) return
    this.link = undefined
    const exitInfo = link.exitInfo
    const exited = exitInfo === undefined ? '' : ` (${exitInfo})`
    const reason = this.role === 'primary'
      ? (host.kind === 'stdio' ? `upstream ${host.name} exited${exited}` : `upstream ${host.name} closed the connection`)
      : (host.kind === 'stdio' ? `upstream ${host.name} (legacy connection) exited${exited}` : `upstream ${host.name} closed the legacy connection`)
    link.failAll(new UpstreamRpcError(UPSTREAM_ERROR, reason))
    const wasReady = this.state === 'ready'
    this.down(reason)
    if (this.role === 'primary' && wasReady) for (const kind of LIST_KINDS) host.events.catalogueChanged(kind, false)
    void link.dispose(KILL_GRACE_MS)
  }

  /**
   * Marks the connection down and schedules the next attempt (backoff); calls arriving meanwhile
   * may wait for it (`attempt`). Logs one warn line per call, i.e. at most one per backoff step.
   */
  private down (reason: string): void {
    const host = this.host
    if (host.closing) return
    clearTimeout(this.stableTimer)
    reason = redactText(reason)
    this.lastError = reason
    this.setState('down')
    const delayMs = restartDelayMs(this.failures)
    this.failures++
    host.logger.warn({ ...this.logFields, reason, failures: this.failures, restartInMs: delayMs }, 'upstream down')
    clearTimeout(this.restartTimer)
    this.attempt = new Promise(resolve => {
      this.cancelRestart = () => resolve(undefined)
      this.restartTimer = setTimeout(() => {
        if (host.closing) { resolve(undefined); return }
        this.restarts++
        resolve(this.connect())
      }, delayMs)
      this.restartTimer.unref()
    })
  }

  // ── lists (primary) ──

  private async listAll (link: Link): Promise<UpstreamCatalogue> {
    const caps = link.capabilities
    const [tools, prompts, resources, resourceTemplates, skills] = await Promise.all([
      caps.tools !== undefined ? this.listPages(link, 'tools/list', 'tools') : unlisted(),
      caps.prompts !== undefined ? this.listPages(link, 'prompts/list', 'prompts') : unlisted(),
      caps.resources !== undefined ? this.listPages(link, 'resources/list', 'resources') : unlisted(),
      caps.resources !== undefined ? this.listPages(link, 'resources/templates/list', 'resourceTemplates') : unlisted(),
      this.listSkills(link)
    ])
    const nowMs = performance.now()
    this.relistFailed.clear()
    this.listed(link, 'tools', tools.ttlMs, nowMs)
    this.listed(link, 'prompts', prompts.ttlMs, nowMs)
    this.listed(link, 'resources', minTtl(minTtl(resources.ttlMs, resourceTemplates.ttlMs), skills.ttlMs), nowMs)
    return { tools: tools.items, prompts: prompts.items, resources: resources.items, resourceTemplates: resourceTemplates.items, skills: skills.items }
  }

  /**
   * Its skills (SEP-2640 `skills/list`, every page), when it declares the Skills extension; else none,
   * without a request. Bounded as every list ({@link listPages}).
   */
  private async listSkills (link: Link): Promise<Listed> {
    return skillsCapabilityOf(link.capabilities) === undefined ? unlisted() : await this.listPages(link, SKILLS_LIST, 'skills')
  }

  /**
   * Reads a whole upstream list, following the upstream's own `nextCursor` (paged
   * catalogues), so an upstream that pages is merged in full. Bounded: past MAX_LIST_PAGES pages
   * or MAX_LIST_ITEMS items the list is cut (served as read so far) with one warn line.
   * @returns the items, and the smallest `ttlMs` (ms) its pages carried (2026-07-28 caching: each
   *          page is a CacheableResult of its own; the list is as fresh as its stalest page)
   * @throws when a page fails (the caller treats that as a failed listing)
   */
  private async listPages (link: Link, method: string, key: string): Promise<Listed> {
    const items: JsonObject[] = []
    let ttlMs: number | undefined
    let cursor: string | undefined
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      if (this.link !== link) throw new Error('connection replaced')
      const result = await link.call(method, cursor === undefined ? {} : { cursor }, setupOptions(), this.host.setupTimeoutMs, undefined, true)
      ttlMs = minTtl(ttlMs, ttlOf(result))
      const list = result[key]
      if (Array.isArray(list)) {
        for (const item of list) {
          if (!isObject(item)) continue
          if (items.length === MAX_LIST_ITEMS) return { items: this.truncated(method, items, `more than ${MAX_LIST_ITEMS} items`), ttlMs }
          items.push(item)
        }
      }
      cursor = typeof result.nextCursor === 'string' && result.nextCursor !== '' ? result.nextCursor : undefined
      if (cursor === undefined) return { items, ttlMs }
    }
    return { items: this.truncated(method, items, `more than ${MAX_LIST_PAGES} pages`), ttlMs }
  }

  private truncated (method: string, items: JsonObject[], why: string): JsonObject[] {
    this.host.logger.warn({ ...this.logFields, method, kept: items.length, maxPages: MAX_LIST_PAGES, maxItems: MAX_LIST_ITEMS },
      `upstream ${method} has ${why}: mcpx serves the first ${items.length} items and ignores the rest`)
    return items
  }

  // ── staleness (the upstream's own ttlMs; docs/upstreams.md › Lists that expire) ──

  /** Per list kind: when its lists turn stale (performance.now() ms); Infinity: never (no ttlMs, or a 0 that list_changed covers). */
  private readonly staleAt: Record<ListKind, number> = { tools: Infinity, prompts: Infinity, resources: Infinity }
  /** Per list kind: re-lists in flight (list_changed or staleness); a stale kind is not re-listed again meanwhile. */
  private readonly relisting: Record<ListKind, number> = { tools: 0, prompts: 0, resources: 0 }
  /** The kinds whose last staleness re-list failed (warned once; the next failures of the streak go to debug). */
  private readonly relistFailed = new Set<ListKind>()

  /**
   * Records when `kind`'s lists, just read on `link` at `nowMs`, turn stale (2026-07-28
   * server/utilities/caching.mdx; schema `CacheableResult.ttlMs`):
   * - no `ttlMs`: never on a clock (a legacy upstream; list_changed alone re-lists it);
   * - `ttlMs` > 0: "fresh for this many milliseconds after receiving the response", then stale;
   * - `ttlMs` 0: "SHOULD be considered immediately stale; the client MAY re-fetch every time the
   *   result is needed": stale at once, bounded by the floor below. But a kind the upstream
   *   announces changes of (`capabilities.<kind>.listChanged`, on the listen stream mcpx holds,
   *   DIGEST §6f: "a relevant list_changed notification invalidates the cached list") is not
   *   re-listed for a 0: the re-fetch is a MAY, and 0 is the v2 server SDK's default on every
   *   result, so honouring it would re-list every SDK upstream once a floor for nothing.
   * Either way no sooner than {@link MIN_LIST_REFRESH_MS} from now: whatever the upstream says,
   * one kind of one upstream is re-listed for staleness at most once per floor.
   */
  private listed (link: Link, kind: ListKind, ttlMs: number | undefined, nowMs: number): void {
    if (this.link !== link) return
    const caps = link.capabilities[kind]
    const announced = isObject(caps) && caps.listChanged === true
    this.staleAt[kind] = ttlMs === undefined || (ttlMs === 0 && announced)
      ? Infinity
      : nowMs + Math.max(ttlMs, MIN_LIST_REFRESH_MS)
  }

  /**
   * When `kind`'s lists turn stale (performance.now() ms): Infinity when not ready, while a re-list
   * of that kind is in flight, or when its upstream gave no `ttlMs`. Never throws.
   */
  staleAtMs (kind: ListKind): number {
    return this.state !== 'ready' || this.link === undefined || this.relisting[kind] > 0 ? Infinity : this.staleAt[kind]
  }

  /**
   * Re-lists `kind` in the background when its lists are stale at `nowMs` (the upstream's own
   * `ttlMs` passed): the same re-list a list_changed starts, but the registry is told with
   * `announced` false, so clients get list_changed only when the merged list changed. One re-list
   * per kind at a time (a second stale reader joins nothing: the kind is not stale while one runs).
   * @returns the re-list, settled when it ended (never rejects), or undefined when nothing was stale
   */
  refreshIfStale (kind: ListKind, nowMs: number): Promise<void> | undefined {
    const link = this.link
    if (link === undefined || this.staleAtMs(kind) > nowMs) return undefined
    return this.relist(link, kind, false)
  }

  /** Re-lists one kind after a list_changed, then tells the registry. Never throws. */
  private refresh (link: Link, kind: ListKind): void {
    void this.relist(link, kind, true)
  }

  /**
   * Re-lists one kind on `link`, then tells the registry (`announced`: the upstream's list_changed
   * asked for it; false: its lists went stale, {@link refreshIfStale}). A failure keeps the lists
   * as they were: a list_changed one is warned each time, as always; a staleness one is warned
   * once per streak of failures (then debug), and the kind is stale again after the floor.
   * Resolves when done. Never rejects.
   */
  private async relist (link: Link, kind: ListKind, announced: boolean): Promise<void> {
    this.relisting[kind]++
    let lists: Partial<UpstreamCatalogue>
    let ttlMs: number | undefined
    try {
      if (kind === 'tools') {
        const tools = await this.listPages(link, 'tools/list', 'tools')
        lists = { tools: tools.items }
        ttlMs = tools.ttlMs
      } else if (kind === 'prompts') {
        const prompts = await this.listPages(link, 'prompts/list', 'prompts')
        lists = { prompts: prompts.items }
        ttlMs = prompts.ttlMs
      } else {
        // The Skills extension announces a change of its skills with resources/list_changed (SEP-2640).
        const [resources, resourceTemplates, skills] = await Promise.all([
          this.listPages(link, 'resources/list', 'resources'),
          this.listPages(link, 'resources/templates/list', 'resourceTemplates'),
          this.listSkills(link)
        ])
        lists = { resources: resources.items, resourceTemplates: resourceTemplates.items, skills: skills.items }
        ttlMs = minTtl(minTtl(resources.ttlMs, resourceTemplates.ttlMs), skills.ttlMs)
      }
    } catch (error) {
      this.relisting[kind]--
      if (announced) {
        this.host.logger.warn({ upstream: this.host.name, err: error, kind }, 'upstream re-list failed')
        return
      }
      if (this.link !== link || this.host.closing) return
      // Stale again after the floor; its last lists are served meanwhile.
      this.staleAt[kind] = performance.now() + MIN_LIST_REFRESH_MS
      const fields = { ...this.logFields, err: error, kind, retryAfterMs: MIN_LIST_REFRESH_MS }
      if (this.relistFailed.has(kind)) {
        this.host.logger.debug(fields, 'upstream re-list for staleness failed again; serving its last lists')
      } else {
        this.relistFailed.add(kind)
        this.host.logger.warn(fields, 'upstream re-list for staleness failed; serving its last lists')
      }
      return
    }
    this.relisting[kind]--
    if (this.link !== link) return
    this.catalogue = { ...this.catalogue, ...lists }
    this.listed(link, kind, ttlMs, performance.now())
    if (this.relistFailed.delete(kind)) this.host.logger.info({ ...this.logFields, kind }, 'upstream re-list for staleness succeeded again')
    this.host.events.catalogueChanged(kind, announced)
  }

  // ── subscriptions ──

  /**
   * Tells a ready link about a subscription change. Primary: the listen filter (modern) or the
   * method itself (legacy); rejects with UpstreamRpcError when the upstream refuses. Legacy role:
   * the method, mirrored (a refusal is logged, never thrown).
   */
  async pushSubscription (method: 'resources/subscribe' | 'resources/unsubscribe', uri: string): Promise<void> {
    const link = this.link
    if (this.state !== 'ready' || link === undefined) return
    if (this.role === 'legacy') { await this.mirrorSubscription(method, uri, link); return }
    if (link.era === 'modern') await this.syncListen(link)
    else if (subscribable(link)) await link.call(method, { uri }, setupOptions(), this.host.setupTimeoutMs, undefined, true)
  }

  /**
   * A subscription change on the legacy link: a stdio server's second child has its own state, so
   * a resource a legacy-era call changed there is announced there. A refusal is logged, never thrown.
   */
  private async mirrorSubscription (method: 'resources/subscribe' | 'resources/unsubscribe', uri: string, link: Link): Promise<void> {
    if (!subscribable(link)) return
    try {
      await link.call(method, { uri }, setupOptions(), this.host.setupTimeoutMs, undefined, true)
    } catch (error) {
      this.host.logger.warn({ upstream: this.host.name, connection: 'legacy', err: error, uri }, `upstream legacy connection: ${method} failed`)
    }
  }

  private async restoreSubscriptions (link: Link): Promise<void> {
    try {
      if (link.era === 'modern') {
        await this.syncListen(link)
      } else if (subscribable(link)) {
        for (const uri of this.host.subscriptions) await link.call('resources/subscribe', { uri }, setupOptions(), this.host.setupTimeoutMs, undefined, true)
      }
    } catch (error) {
      this.host.logger.warn({ upstream: this.host.name, err: error }, 'upstream subscriptions could not be restored')
    }
  }

  private listen: McpSubscription | undefined
  private listenKey: string | undefined
  private listenLink: Link | undefined
  /** The last {@link syncListen} queued: each runs after the one before has settled. */
  private listenQueue: Promise<void> = Promise.resolve()

  /**
   * Modern upstreams send change notifications only on a `subscriptions/listen` stream
   * (DIGEST §6f). One listen per link carries the list-changed kinds the server announces plus
   * every subscribed URI; when the URI set changes a new listen is opened before the old one is closed.
   * Runs one at a time: two subscription changes at once (a client's listen subscribes all its
   * URIs together) would otherwise each open a listen while neither knew of the other's, and the
   * one left behind would deliver every update a second time. A queued run reads the subscriptions
   * as they are when it starts, so a burst of changes costs at most one listen more.
   * @throws what the upstream's listen throws (this run's only; the queue goes on)
   */
  private async syncListen (link: Link): Promise<void> {
    const run = this.listenQueue.then(async () => { await this.syncListenNow(link) })
    this.listenQueue = run.catch(() => {})
    await run
  }

  private async syncListenNow (link: Link): Promise<void> {
    const caps = link.capabilities
    const listChanged = (key: string): boolean => isObject(caps[key]) && (caps[key] as JsonObject).listChanged === true
    const filter: Record<string, unknown> = {}
    if (listChanged('tools')) filter.toolsListChanged = true
    if (listChanged('prompts')) filter.promptsListChanged = true
    if (listChanged('resources')) filter.resourcesListChanged = true
    const subscriptions = this.host.subscriptions
    if (subscriptions.size > 0 && subscribable(link)) filter.resourceSubscriptions = [...subscriptions].sort()
    const key = JSON.stringify(filter)
    if (this.listenLink === link && key === this.listenKey && this.listen !== undefined) return
    const previous = this.listenLink === link ? this.listen : undefined
    this.listenLink = link
    this.listenKey = key
    this.listen = undefined
    if (Object.keys(filter).length > 0) {
      const subscription = await link.client.listen(filter as never)
      this.listen = subscription
      void subscription.closed.then(cause => {
        if (cause === 'remote' && !this.host.closing && this.listen === subscription && this.link === link) {
          this.host.logger.warn({ upstream: this.host.name }, 'upstream subscriptions/listen stream ended; reopening')
          this.listenKey = undefined
          this.listen = undefined
          this.syncListen(link).catch(error => this.host.logger.warn({ upstream: this.host.name, err: error }, 'upstream listen failed'))
        }
      })
    }
    if (previous !== undefined) await previous.close().catch(() => {})
  }
}

/** Whether the link's server announced `resources.subscribe`. */
function subscribable (link: Link): boolean {
  const resources = link.capabilities.resources
  return isObject(resources) && resources.subscribe === true
}
