/**
 * Pinned tool definitions (docs/policy.md › Integrity; config `integrity` and
 * `upstreams.<name>.integrity`): the registry's catalogue gate (lib/upstreams/contract.ts
 * CatalogueGate). Every tool, prompt and resource template of a pinned upstream is hashed: SHA-256
 * over its RFC 8785 canonical JSON (the `canonicalize` library) of the fields a model reads — tools:
 * name, title, description, inputSchema, outputSchema, annotations; prompts: name, title,
 * description, arguments; templates: name, title, description, uriTemplate, mimeType, annotations —
 * as the upstream listed them, before any endpoint's override. The first definitions seen of an
 * upstream are pinned (trust on first use, per upstream and kind). After that, on every rebuild of a
 * list (an upstream's list_changed, a reload, every re-list), an item whose hash differs from its
 * pin — or that has no pin — is a change:
 *
 * - `warn`: served; logged once per definition, counted, audited `definition_changed`;
 * - `quarantine`: also left out of the catalogue (the registry drops it from lists, routes and
 *   findTool), so every caller's view, list, search and call sees it absent, exactly as a name no
 *   upstream lists; until an operator approves the new definition (it becomes the pin) or the
 *   upstream restores the pinned one.
 *
 * A new item whose definition but for its name matches a pinned item of the same upstream and kind
 * that is no longer listed is a `renamed` change (from that name), else `new`. An item whose name,
 * or non-empty description, copies an item of an upstream earlier in config order is reported as
 * possible shadowing (logged and audited once; it is not hidden for that alone).
 *
 * Decisions are synchronous (the registry rebuilds synchronously) and read the records mirrored in
 * memory; the store (lib/policy/pin-store.ts) is written behind them. Until the store's records are
 * loaded (Redis, at start), a quarantined upstream's items are hidden (fail closed) and a warned
 * one's served unjudged.
 */
import { createHash } from 'node:crypto'
import canonicalize from 'canonicalize'
import type { JsonObject } from '../protocol/jsonrpc.js'
import type { CatalogueGate, GatedList } from '../upstreams/contract.js'
import type { Logger } from '../telemetry/log.js'
import type { IntegrityAuditEvent } from './audit.js'
import { recordKey, type ChangeKind, type PinRecord, type PinStore, type PinnedKind, type SeenDefinition } from './pin-store.js'

/** What a pinned upstream does with a changed definition. */
export type PinMode = 'off' | 'warn' | 'quarantine'

/** Config `integrity` (top level). */
export interface IntegrityConfig {
  /** Default `off`; each upstream's `integrity.pin` wins. */
  pin: PinMode
  /** The store file (without Redis); default: memory (pins then last until a restart). */
  store?: string
}

/** An item's state, as the status page and `mcpx integrity list` show it. */
export type PinState = 'pinned' | ChangeKind | 'rejected'

/** One item of a pinned upstream, as seen now (GET /admin/integrity). */
export interface IntegrityEntry {
  upstream: string
  kind: PinnedKind
  name: string
  mode: PinMode
  state: PinState
  /** Left out of the catalogue now. */
  hidden: boolean
  /** The definition seen (or, for a change another replica saw, its pending one). */
  hash: string
  definition: JsonObject
  /** The pin, when it differs from what is seen. */
  pinned?: { hash: string, definition: JsonObject, at: string, by: string }
  renamedFrom?: string
  shadows?: Array<{ upstream: string, by: 'name' | 'description' }>
  /** Whether this replica lists it now (false: a change another replica saw). */
  seenHere: boolean
}

/** The answer to an approval or rejection. */
export type IntegrityOutcome =
  | { kind: 'done', entry: { upstream: string, kind: PinnedKind, name: string, hash: string } }
  | { kind: 'unknown' }
  | { kind: 'stale', hash: string }

/** Options of {@link Integrity}. */
export interface IntegrityOptions {
  logger: Logger
  store: PinStore
  /** The top-level mode and each upstream's own (`upstreams.<name>.integrity.pin`). */
  modes: IntegrityModes
  /** Audit lines (the audit trail's recordIntegrity); default none. */
  audit?: (event: IntegrityAuditEvent) => void
  /** Counts a reported change (lib/ops/metrics mcpx_integrity_changes_total). */
  onChange?: (upstream: string, kind: PinnedKind, change: ChangeKind, action: 'served' | 'hidden') => void
}

/** The modes in force: the default, and per upstream. */
export interface IntegrityModes { pin: PinMode, upstreams: Record<string, PinMode> }

/**
 * Most changes one upstream may have waiting in the store. Past it, a further new or changed item
 * is still judged (hidden under quarantine) but neither stored, counted nor audited one by one: an
 * upstream that lists ever new names cannot grow the store without bound (logged once per upstream).
 */
export const MAX_PENDING_PER_UPSTREAM = 1_000

/** The marker record of an (upstream, kind) judged once (its definitions were pinned, maybe none): name ''. */
const MARKER = ''

const KIND_OF: Record<GatedList, PinnedKind> = { tools: 'tool', prompts: 'prompt', resourceTemplates: 'template' }
const FIELDS: Record<PinnedKind, readonly string[]> = {
  tool: ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations'],
  prompt: ['name', 'title', 'description', 'arguments'],
  template: ['name', 'title', 'description', 'uriTemplate', 'mimeType', 'annotations']
}

interface Hashed extends SeenDefinition { bodyHash: string }

function sha256 (text: string): string { return createHash('sha256').update(text).digest('hex') }

/**
 * The pinned fields of an item and their hashes: `hash` over all of them, `bodyHash` over all but
 * `name` (to tell a rename). RFC 8785 canonical JSON, so key order and number spelling never matter.
 * Never throws (a value canonicalize refuses hashes as its JSON.stringify).
 */
export function definitionOf (kind: PinnedKind, item: JsonObject): Hashed {
  const definition: JsonObject = {}
  for (const field of FIELDS[kind]) if (item[field] !== undefined) definition[field] = item[field]
  const { name: _name, ...body } = definition
  const text = (value: unknown): string => { try { return canonicalize(value) ?? 'null' } catch { return JSON.stringify(value) } }
  return { hash: sha256(text(definition)), bodyHash: sha256(text(body)), definition }
}

/** The item's pinned name: `name` (templates without one: their uriTemplate). */
function nameOf (kind: PinnedKind, item: JsonObject): string | undefined {
  if (typeof item.name === 'string') return item.name
  return kind === 'template' && typeof item.uriTemplate === 'string' ? item.uriTemplate : undefined
}

interface Observation {
  upstream: string
  kind: PinnedKind
  name: string
  seen: Hashed
  state: PinState
  mode: PinMode
  hidden: boolean
  renamedFrom?: string
  shadows: Array<{ upstream: string, by: 'name' | 'description' }>
}

/** The gate. See the module comment. */
export class Integrity implements CatalogueGate {
  changed?: () => void
  private modes: IntegrityModes
  private readonly records = new Map<string, PinRecord>()
  private loaded = false
  private readonly hashes = new WeakMap<JsonObject, Hashed>()
  /** The body hash of each pin (for renames), computed once per pin object. */
  private readonly pinBodyHashes = new WeakMap<object, string>()
  /** Upstreams whose pending changes reached {@link MAX_PENDING_PER_UPSTREAM} (logged once each). */
  private readonly overflowed = new Set<string>()
  /** Per list, what the last rebuild saw, by record key. */
  private readonly observed = new Map<GatedList, Map<string, Observation>>()
  /** Definitions already reported (key → hash), so each is logged, counted and audited once. */
  private readonly reported = new Map<string, string>()
  private readonly shadowReported = new Set<string>()
  private closed = false
  /** Store writes in flight: close() waits for them, so a pin seen just before shutdown is kept. */
  private readonly writes = new Set<Promise<unknown>>()

  constructor (private readonly options: IntegrityOptions) {
    this.modes = options.modes
    const initial = options.store.loadSync?.()
    if (initial !== undefined) {
      for (const record of initial) this.records.set(recordKey(record.upstream, record.kind, record.name), record)
      this.loaded = true
    } else {
      void this.reload()
    }
    options.store.watch(() => { void this.reload() })
  }

  /** Where the pins live (for the status page and logs). */
  get where (): string { return this.options.store.where }

  /** The mode of `upstream`. */
  modeOf (upstream: string): PinMode { return this.modes.upstreams[upstream] ?? this.modes.pin }

  /** A reload's modes: applied at once (the lists are judged again). */
  configure (modes: IntegrityModes): void {
    this.modes = modes
    this.changed?.()
  }

  /** Re-reads every record from the store, then has the lists judged again. Never rejects. */
  private async reload (): Promise<void> {
    try {
      const records = await this.options.store.load()
      if (this.closed) return
      this.records.clear()
      for (const record of records) this.records.set(recordKey(record.upstream, record.kind, record.name), record)
      this.loaded = true
      this.changed?.()
    } catch (err) {
      this.options.logger.warn({ err, store: this.where }, 'integrity: the pin store could not be read; judging with the pins held in memory')
    }
  }

  hidden (list: GatedList, lists: ReadonlyArray<{ upstream: string, ready: boolean, items: readonly JsonObject[] }>): ReadonlySet<JsonObject> {
    const kind = KIND_OF[list]
    const out = new Set<JsonObject>()
    const observed = new Map<string, Observation>()
    const byName = new Map<string, string>()
    const byDescription = new Map<string, string>()
    for (const { upstream, ready, items } of lists) {
      const mode = this.modeOf(upstream)
      const marker = this.records.get(recordKey(upstream, kind, MARKER))
      const firstSight = mode !== 'off' && this.loaded && ready && marker === undefined
      const names = new Set<string>()
      for (const item of items) { const name = nameOf(kind, item); if (name !== undefined) names.add(name) }
      for (const item of items) {
        const name = nameOf(kind, item)
        if (name === undefined) continue
        const shadows: Observation['shadows'] = []
        const nameOwner = byName.get(name)
        if (nameOwner !== undefined && nameOwner !== upstream) shadows.push({ upstream: nameOwner, by: 'name' })
        else byName.set(name, upstream)
        const description = typeof item.description === 'string' && item.description.trim() !== '' ? item.description : undefined
        if (description !== undefined) {
          const owner = byDescription.get(description)
          if (owner !== undefined && owner !== upstream) { if (!shadows.some(s => s.upstream === owner)) shadows.push({ upstream: owner, by: 'description' }) } else byDescription.set(description, upstream)
        }
        if (mode === 'off') continue
        if (!this.loaded) { if (mode === 'quarantine') out.add(item); continue }
        const seen = this.hash(kind, item)
        const key = recordKey(upstream, kind, name)
        const record = this.records.get(key)
        const observation: Observation = { upstream, kind, name, seen, state: 'pinned', mode, hidden: false, shadows }
        if (record?.pinned?.hash === seen.hash) {
          observation.state = 'pinned'
          // Only a change this replica reported is over: a pending one another replica saw stays for the operator.
          if (record.pending !== undefined && this.reported.get(key) === record.pending.hash) this.restored(record)
        } else if (firstSight && record?.pinned === undefined) {
          this.pinFirst(upstream, kind, name, seen)
        } else {
          if (record?.pinned !== undefined) {
            observation.state = 'changed'
          } else {
            const from = this.renamedFrom(upstream, kind, seen.bodyHash, names)
            observation.state = from === undefined ? 'new' : 'renamed'
            if (from !== undefined) observation.renamedFrom = from
          }
          if (record?.rejected?.hash === seen.hash) observation.state = 'rejected'
          observation.hidden = mode === 'quarantine'
          if (observation.hidden) out.add(item)
          this.report(observation, record)
        }
        if (shadows.length > 0) this.reportShadowing(observation)
        observed.set(key, observation)
      }
      if (firstSight) this.pinFirst(upstream, kind, MARKER, { hash: '', definition: {} })
    }
    this.observed.set(list, observed)
    return out
  }

  /** The item's hashes, computed once per item object (the registry keeps an upstream's list until it changes). */
  private hash (kind: PinnedKind, item: JsonObject): Hashed {
    let hashed = this.hashes.get(item)
    if (hashed === undefined) { hashed = definitionOf(kind, item); this.hashes.set(item, hashed) }
    return hashed
  }

  /** The pinned name of `upstream`'s vanished item (not in `listed`) whose definition but for its name is `bodyHash`. */
  private renamedFrom (upstream: string, kind: PinnedKind, bodyHash: string, listed: ReadonlySet<string>): string | undefined {
    for (const record of this.records.values()) {
      if (record.upstream !== upstream || record.kind !== kind || record.name === MARKER || listed.has(record.name) || record.pinned === undefined) continue
      const pinned = this.bodyHashOfPin(record)
      if (pinned === bodyHash) return record.name
    }
    return undefined
  }

  private bodyHashOfPin (record: PinRecord): string | undefined {
    const pinned = record.pinned
    if (pinned === undefined) return undefined
    let hash = this.pinBodyHashes.get(pinned)
    if (hash === undefined) { hash = definitionOf(record.kind, pinned.definition).bodyHash; this.pinBodyHashes.set(pinned, hash) }
    return hash
  }

  /** Pins a first-seen definition: in memory at once, in the store behind (another replica's first pin wins there, and here once read). */
  private pinFirst (upstream: string, kind: PinnedKind, name: string, seen: SeenDefinition): void {
    const record: PinRecord = { upstream, kind, name, pinned: { hash: seen.hash, definition: seen.definition, at: new Date().toISOString(), by: 'first-seen' } }
    const key = recordKey(upstream, kind, name)
    this.records.set(key, record)
    this.track(this.options.store.putIfUnpinned(record).then(stored => {
      if (this.closed || stored.pinned?.hash === record.pinned?.hash) return
      this.records.set(key, stored)
      this.changed?.()
    }, (err: unknown) => {
      this.options.logger.warn({ err, store: this.where, upstream, kind, name }, 'integrity: a first-seen pin could not be stored; it holds in memory')
    }))
  }

  /** The upstream serves the pinned definition again: its pending change and rejection are dropped from the store. */
  private restored (record: PinRecord): void {
    const { pending: _pending, rejected: _rejected, ...rest } = record
    const key = recordKey(record.upstream, record.kind, record.name)
    this.records.set(key, rest)
    this.reported.delete(key)
    this.track(this.options.store.put(rest).catch((err: unknown) => { this.options.logger.warn({ err, store: this.where }, 'integrity: a restored pin could not be stored') }))
  }

  /** Logs, counts, audits and stores (as pending) a changed definition, once per definition. */
  private report (observation: Observation, record: PinRecord | undefined): void {
    const { upstream, kind, name, seen, state } = observation
    const key = recordKey(upstream, kind, name)
    if (this.reported.get(key) === seen.hash) return
    if (record?.pending === undefined && this.pendingOf(upstream) >= MAX_PENDING_PER_UPSTREAM) {
      if (!this.overflowed.has(upstream)) {
        this.overflowed.add(upstream)
        this.options.logger.warn({ upstream, max: MAX_PENDING_PER_UPSTREAM }, `integrity: upstream ${upstream} has ${MAX_PENDING_PER_UPSTREAM} changes waiting; further ones are judged but no longer stored or reported one by one`)
      }
      return
    }
    this.reported.set(key, seen.hash)
    const action = observation.hidden ? 'hidden' : 'served'
    const change: ChangeKind = state === 'rejected' ? (record?.pinned !== undefined ? 'changed' : 'new') : state as ChangeKind
    this.options.logger.warn({ upstream, kind, name, change, action, hash: seen.hash, pinnedHash: record?.pinned?.hash, renamedFrom: observation.renamedFrom },
      `integrity: ${kind} ${name} of upstream ${upstream} ${change === 'renamed' ? `looks renamed from ${observation.renamedFrom ?? ''}` : change === 'new' ? 'is new on a pinned upstream' : 'changed its definition'}; ${action} (${observation.mode})`)
    this.options.onChange?.(upstream, kind, change, action)
    this.options.audit?.({
      event: 'definition_changed',
      upstream,
      kind,
      name,
      hash: seen.hash,
      ...(record?.pinned !== undefined ? { pinnedHash: record.pinned.hash } : {}),
      change,
      action,
      ...(observation.renamedFrom !== undefined ? { renamedFrom: observation.renamedFrom } : {})
    })
    if (state === 'rejected' || record?.pending?.hash === seen.hash) return
    const next: PinRecord = {
      ...(record ?? { upstream, kind, name }),
      pending: { hash: seen.hash, definition: seen.definition, change, ...(observation.renamedFrom !== undefined ? { renamedFrom: observation.renamedFrom } : {}), at: new Date().toISOString() }
    }
    this.records.set(key, next)
    this.track(this.options.store.put(next).catch((err: unknown) => {
      this.options.logger.warn({ err, store: this.where, upstream, kind, name }, 'integrity: a pending change could not be stored (other replicas do not see it)')
    }))
  }

  /** How many records of `upstream` hold a pending change. */
  private pendingOf (upstream: string): number {
    let count = 0
    for (const record of this.records.values()) if (record.upstream === upstream && record.pending !== undefined) count++
    return count
  }

  private reportShadowing (observation: Observation): void {
    const { upstream, kind, name, shadows } = observation
    const key = recordKey(upstream, kind, name)
    if (this.shadowReported.has(key)) return
    this.shadowReported.add(key)
    this.options.logger.warn({ upstream, kind, name, shadows }, `integrity: ${kind} ${name} of upstream ${upstream} copies the ${shadows.map(s => `${s.by} of upstream ${s.upstream}'s`).join(' and ')} ${kind}: possible shadowing`)
    this.options.audit?.({ event: 'possible_shadowing', upstream, kind, name, hash: observation.seen.hash, shadows })
  }

  /**
   * Every item of the pinned upstreams as seen now, and the changes other replicas stored that this
   * one does not list (config order, then list order). Never throws.
   */
  entries (): IntegrityEntry[] {
    const out: IntegrityEntry[] = []
    /** Keys whose change (if any) this replica shows from its own observation. */
    const seenKeys = new Set<string>()
    for (const list of ['tools', 'prompts', 'resourceTemplates'] as const) {
      for (const [key, o] of this.observed.get(list) ?? []) {
        const record = this.records.get(key)
        if (o.state !== 'pinned' || record?.pending === undefined) seenKeys.add(key)
        const entry: IntegrityEntry = { upstream: o.upstream, kind: o.kind, name: o.name, mode: o.mode, state: o.state, hidden: o.hidden, hash: o.seen.hash, definition: o.seen.definition, seenHere: true }
        if (record?.pinned !== undefined && o.state !== 'pinned') entry.pinned = record.pinned
        if (o.state === 'renamed' && o.renamedFrom !== undefined) {
          entry.renamedFrom = o.renamedFrom
          const from = this.records.get(recordKey(o.upstream, o.kind, o.renamedFrom))?.pinned
          if (from !== undefined) entry.pinned = from
        }
        if (o.shadows.length > 0) entry.shadows = o.shadows
        out.push(entry)
      }
    }
    for (const [key, record] of this.records) {
      if (seenKeys.has(key) || record.pending === undefined || record.name === MARKER) continue
      const mode = this.modeOf(record.upstream)
      const entry: IntegrityEntry = { upstream: record.upstream, kind: record.kind, name: record.name, mode, state: record.pending.change, hidden: mode === 'quarantine', hash: record.pending.hash, definition: record.pending.definition, seenHere: false }
      if (record.pinned !== undefined) entry.pinned = record.pinned
      if (record.pending.renamedFrom !== undefined) entry.renamedFrom = record.pending.renamedFrom
      out.push(entry)
    }
    return out
  }

  /** How many items are hidden now (status page, gauge). */
  quarantined (): number {
    let count = 0
    for (const observed of this.observed.values()) for (const o of observed.values()) if (o.hidden) count++
    return count
  }

  /**
   * Approves the definition whose hash is `hash` for the item (seen here, or stored pending by a
   * replica): it becomes the pin, the item is served again (the lists are judged again and clients
   * told), and the approval is audited with `by` (who: never a credential).
   * @returns done; unknown (no such item or pending change); stale (the definition now seen has
   *          another hash: the operator approved what they did not see). Rejects when the store fails.
   */
  async approve (upstream: string, kind: PinnedKind, name: string, hash: string, by: string): Promise<IntegrityOutcome> {
    const found = this.find(upstream, kind, name)
    if (found === undefined) return { kind: 'unknown' }
    if (found.hash !== hash) return { kind: 'stale', hash: found.hash }
    const key = recordKey(upstream, kind, name)
    const previous = this.records.get(key)
    const record: PinRecord = { upstream, kind, name, pinned: { hash, definition: found.definition, at: new Date().toISOString(), by } }
    await this.options.store.put(record)
    this.records.set(key, record)
    this.reported.delete(key)
    this.options.logger.info({ upstream, kind, name, hash, principal: by }, `integrity: ${kind} ${name} of upstream ${upstream} approved`)
    this.options.audit?.({ event: 'definition_approved', upstream, kind, name, hash, ...(previous?.pinned !== undefined ? { pinnedHash: previous.pinned.hash } : {}), principal: by })
    this.changed?.()
    return { kind: 'done', entry: { upstream, kind, name, hash } }
  }

  /**
   * Rejects the definition `hash` of the item: the pin stays (a quarantined item stays hidden until
   * the upstream restores the pinned definition or another is approved); audited with `by`.
   * @returns as {@link approve}. Rejects when the store fails.
   */
  async reject (upstream: string, kind: PinnedKind, name: string, hash: string, by: string): Promise<IntegrityOutcome> {
    const found = this.find(upstream, kind, name)
    if (found === undefined) return { kind: 'unknown' }
    if (found.hash !== hash) return { kind: 'stale', hash: found.hash }
    const key = recordKey(upstream, kind, name)
    const previous = this.records.get(key)
    const { pending: _pending, ...rest } = previous ?? { upstream, kind, name }
    const record: PinRecord = { ...rest, rejected: { hash, at: new Date().toISOString(), by } }
    await this.options.store.put(record)
    this.records.set(key, record)
    this.options.logger.info({ upstream, kind, name, hash, principal: by }, `integrity: ${kind} ${name} of upstream ${upstream} rejected`)
    this.options.audit?.({ event: 'definition_rejected', upstream, kind, name, hash, ...(previous?.pinned !== undefined ? { pinnedHash: previous.pinned.hash } : {}), principal: by })
    this.changed?.()
    return { kind: 'done', entry: { upstream, kind, name, hash } }
  }

  /** The changed definition of an item: as seen here, else as a replica stored it pending. */
  private find (upstream: string, kind: PinnedKind, name: string): SeenDefinition | undefined {
    const key = recordKey(upstream, kind, name)
    for (const observed of this.observed.values()) {
      const o = observed.get(key)
      if (o !== undefined && o.state !== 'pinned') return o.seen
    }
    return this.records.get(key)?.pending
  }

  /** Runs a store write behind a decision, tracked until it settles. Never rejects. */
  private track (write: Promise<unknown>): void {
    const settled = write.then(() => {}, () => {}).finally(() => { this.writes.delete(settled) })
    this.writes.add(settled)
  }

  /** Waits for the store writes in flight, then stops watching the store and closes it. Never rejects. */
  async close (): Promise<void> {
    this.closed = true
    this.changed = undefined
    await Promise.all([...this.writes])
    await this.options.store.close().catch(() => {})
  }
}

/** The modes a loaded config sets. */
export function modesOf (config: { integrity?: IntegrityConfig, upstreams: Record<string, { integrity?: { pin: PinMode } }> }): IntegrityModes {
  const upstreams: Record<string, PinMode> = {}
  for (const [name, upstream] of Object.entries(config.upstreams)) if (upstream.integrity !== undefined) upstreams[name] = upstream.integrity.pin
  return { pin: config.integrity?.pin ?? 'off', upstreams }
}

/** Whether any upstream (or the default) is pinned. */
export function pinsAnything (modes: IntegrityModes): boolean {
  return modes.pin !== 'off' || Object.values(modes.upstreams).some(mode => mode !== 'off')
}
