/**
 * Fans the registry's change events out to every listener that asked for them: legacy GET
 * streams and stdio connections (list_changed, resources/updated for subscribed URIs) and modern
 * `subscriptions/listen` streams (DIGEST §6f; their filter and tagging: lib/connection/listen.ts). One registry listener per event, however many
 * sessions listen, so 10,000 sessions cost a Set entry each, not an EventEmitter listener each.
 */
import { instanceKeyOf, type InstanceEvent, type InstanceOwner } from '../upstreams/isolation.js'
import type { JsonObject, ListKind, JsonRpcNotification } from '../protocol/jsonrpc.js'
import type { UpstreamRegistry } from '../upstreams/contract.js'
import { Visibility } from '../policy/visibility.js'

/** One listener: what it wants, and where its notifications go. */
export interface HubListener {
  /** Which list_changed kinds to deliver. */
  lists: ReadonlySet<ListKind>
  /** URIs whose notifications/resources/updated to deliver (live set: may change after add). */
  uris: ReadonlySet<string>
  /** Delivers one notification. Must not throw. */
  send: (notification: JsonRpcNotification) => void
  /**
   * What the listener's caller sees on its endpoint now (Dispatcher.visibilityOf for its principal
   * and endpoint), read when the listener is added and again after every access change
   * ({@link NotificationHub.refreshViews}: a reload's new policy or curated endpoints), so an open
   * stream follows the live view, not the one it opened with. While it gives a view, list_changed
   * is delivered only when that view of the list changed, and resources/updated only for a URI the
   * caller sees. Absent, or undefined: everything, as the registry announces it. Must not throw.
   */
  view?: () => Visibility | undefined
  /**
   * Also deliver events another replica saw ({@link NotificationHub.relay}; lib/sessions/redis-store):
   * set by legacy GET streams, which a session may hold on any replica. Filtered as above.
   */
  relayed?: boolean
  /**
   * Whom the listener's calls serve, as they name it to the upstreams (UpstreamCallOptions
   * `owner`, `principalKey`): it then also gets what the isolated instance its calls use announces
   * ({@link InstanceEvent}), and no other instance's. Absent: no instance's events.
   */
  instanceOwner?: InstanceOwner
  /**
   * The legacy session (HTTP session id, or `stdio`) whose session-scoped notifications this
   * listener delivers ({@link NotificationHub.toSession}: 2025-11-25 `notifications/tasks/status`
   * of the tasks it created). Set by legacy GET streams and the stdio client's legacy listener only.
   */
  session?: string
}

/**
 * An upstream change another replica saw (lib/sessions/redis-store relays it over Redis pub/sub). A
 * list_changed carries `changed`: the catalogue keys (tool and prompt names, resource URIs and
 * uriTemplates) whose items were added, removed or altered on that replica, so a filtered listener
 * here can tell whether its view changed without that replica's lists ({@link ListSnapshots}).
 * Absent `changed` (an older replica): a filtered listener is told nothing.
 */
export type RelayedEvent = { kind: ListKind, changed?: readonly string[] } | { uri: string }

/** The list_changed notification method of each list kind (the one table; lib/sessions/redis-store relays with it too). */
export const LIST_CHANGED: Readonly<Record<ListKind, string>> = Object.freeze({
  tools: 'notifications/tools/list_changed',
  prompts: 'notifications/prompts/list_changed',
  resources: 'notifications/resources/list_changed'
})

/** Every list kind: what a legacy client gets once mcpx declared listChanged. */
export const ALL_LISTS: ReadonlySet<ListKind> = new Set<ListKind>(['tools', 'prompts', 'resources'])

export class NotificationHub {
  private readonly listeners = new Set<HubListener>()
  /** Each filtered listener's current view (its {@link HubListener.view} as last read). */
  private readonly views = new Map<HubListener, Visibility>()
  /** The last view each filtered listener was told about, per list kind (fingerprints, lib/policy/visibility). */
  private readonly seen = new Map<HubListener, Partial<Record<ListKind, string>>>()
  private readonly onListChanged = (kind: ListKind): void => {
    const notification: JsonRpcNotification = { jsonrpc: '2.0', method: LIST_CHANGED[kind] }
    for (const listener of this.listeners) {
      if (!listener.lists.has(kind)) continue
      const visibility = this.views.get(listener)
      if (visibility !== undefined) {
        // Only when this caller's view on this endpoint changed.
        const seen = this.seen.get(listener)
        const now = visibility.fingerprint(kind, this.registry)
        if (seen === undefined || seen[kind] === now) continue
        seen[kind] = now
      }
      listener.send(notification)
    }
  }

  private readonly onResourceUpdated = (uri: string): void => {
    const notification: JsonRpcNotification = { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } }
    for (const listener of this.listeners) if (listener.uris.has(uri) && this.views.get(listener)?.seesUri(uri) !== false) listener.send(notification)
  }

  /**
   * Delivers an event another replica saw to the listeners that asked for relayed events, under
   * the same filter as this replica's own: resources/updated only for a subscribed URI the
   * listener sees, list_changed only when one of the changed catalogue keys is visible to it
   * (notifications reach a caller only for what it can see). Never throws.
   */
  relay (event: RelayedEvent): void {
    if ('uri' in event) {
      const notification: JsonRpcNotification = { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: event.uri } }
      for (const listener of this.listeners) {
        if (listener.relayed === true && listener.uris.has(event.uri) && this.views.get(listener)?.seesUri(event.uri) !== false) listener.send(notification)
      }
      return
    }
    const kind = event.kind
    const notification: JsonRpcNotification = { jsonrpc: '2.0', method: LIST_CHANGED[kind] }
    for (const listener of this.listeners) {
      if (listener.relayed !== true || !listener.lists.has(kind)) continue
      const visibility = this.views.get(listener)
      if (visibility !== undefined && (event.changed === undefined || !event.changed.some(key => visibility.seesCatalogue(kind, key)))) continue
      listener.send(notification)
    }
  }

  /**
   * An isolated instance's list change or resource update: to the listeners whose
   * calls that instance serves (same key by {@link instanceKeyOf}), never another. A list change
   * goes to those that asked for that kind (the merged catalogue they then re-list is the shared
   * connection's: docs/upstreams.md › Isolated upstreams); a resource update to those subscribed to the URI
   * that see it.
   */
  private readonly onInstanceEvent = (event: InstanceEvent): void => {
    const notification: JsonRpcNotification = 'uri' in event
      ? { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: event.uri } }
      : { jsonrpc: '2.0', method: LIST_CHANGED[event.kind] }
    for (const listener of this.listeners) {
      const who = listener.instanceOwner
      if (who === undefined || instanceKeyOf(event.isolation, who) !== event.key) continue
      if ('uri' in event ? !listener.uris.has(event.uri) || this.views.get(listener)?.seesUri(event.uri) === false : !listener.lists.has(event.kind)) continue
      listener.send(notification)
    }
  }

  /**
   * An isolated instance's event that another replica saw (lib/sessions/redis-store.ts: the replica
   * running a legacy session's instances relays them to the one holding its GET stream),
   * delivered as a local one is. Never throws.
   */
  instanceEvent (event: InstanceEvent): void {
    this.onInstanceEvent(event)
  }

  constructor (private readonly registry: UpstreamRegistry) {
    registry.on('list_changed', this.onListChanged)
    registry.on('resource_updated', this.onResourceUpdated)
    registry.on('instance_event', this.onInstanceEvent)
  }

  /**
   * Delivers a notification meant for one legacy session (2025-11-25 task status: lib/dispatch/tasks.ts
   * Tasks.relayStatus) to the listeners of that session ({@link HubListener.session}): its GET stream
   * on this process, or the stdio client. @returns whether one took it. Never throws.
   */
  toSession (session: string, notification: JsonRpcNotification): boolean {
    let sent = false
    for (const listener of this.listeners) {
      if (listener.session !== session) continue
      listener.send(notification)
      sent = true
    }
    return sent
  }

  /**
   * Delivers a notification to the legacy listeners (GET streams, the stdio client) whose calls
   * serve principal `principalKey` (2025-11-25 `notifications/elicitation/complete` of a consent it
   * gave: docs/upstreams.md › Upstream identity). 2026-07-28 listeners get nothing: that revision
   * has no such notification. @returns whether one took it. Never throws.
   */
  toPrincipal (principalKey: string, notification: JsonRpcNotification): boolean {
    let sent = false
    for (const listener of this.listeners) {
      if (listener.session === undefined || listener.instanceOwner?.principalKey !== principalKey) continue
      listener.send(notification)
      sent = true
    }
    return sent
  }

  /** Adds a listener; returns the function that removes it. */
  add (listener: HubListener): () => void {
    this.listeners.add(listener)
    const visibility = listener.view?.()
    if (visibility !== undefined) {
      this.views.set(listener, visibility)
      const seen: Partial<Record<ListKind, string>> = {}
      for (const kind of listener.lists) seen[kind] = visibility.fingerprint(kind, this.registry)
      this.seen.set(listener, seen)
    }
    return () => { this.listeners.delete(listener); this.views.delete(listener); this.seen.delete(listener) }
  }

  /**
   * Reads every listener's view again, after the access rules changed (a reload's policy or
   * curated endpoints: lib/core.ts applyAccess). From then on each open stream filters by its
   * caller's new view: a resources/updated for a URI the caller can no longer see is not
   * delivered, and the list_changed that the reload then emits reaches exactly the listeners whose
   * view of that list differs from the one they were last told about (docs/policy.md › Policy:
   * a reload offers list_changed where a caller's view changed). A listener that was unfiltered
   * was told the whole catalogue, so that is what its new view is compared with. Never throws.
   */
  refreshViews (): void {
    for (const listener of this.listeners) {
      if (listener.view === undefined) continue
      const before = this.views.get(listener)
      const after = listener.view()
      if (after === before) continue
      if (after === undefined) {
        this.views.delete(listener)
        this.seen.delete(listener)
        continue
      }
      if (before === undefined) {
        const seen: Partial<Record<ListKind, string>> = {}
        for (const kind of listener.lists) seen[kind] = Visibility.ALL.fingerprint(kind, this.registry)
        this.seen.set(listener, seen)
      }
      this.views.set(listener, after)
    }
  }

  /** Number of listeners, for metrics. */
  get size (): number { return this.listeners.size }

  /** Detaches from the registry and forgets every listener. */
  close (): void {
    this.registry.off('list_changed', this.onListChanged)
    this.registry.off('resource_updated', this.onResourceUpdated)
    this.registry.off('instance_event', this.onInstanceEvent)
    this.listeners.clear()
    this.views.clear()
    this.seen.clear()
  }
}

type Lists = Pick<UpstreamRegistry, 'tools' | 'prompts' | 'resources' | 'resourceTemplates'>

/**
 * The last merged lists of a registry, to name what a list_changed changed (the `changed` of a
 * {@link RelayedEvent}). The registry replaces a list's array when it changes, so keeping the
 * arrays costs nothing; {@link changed} compares item by item (JSON), only on a list_changed.
 */
export class ListSnapshots {
  private readonly last: Record<ListKind, Map<string, string>>
  constructor (private readonly registry: Lists) {
    this.last = { tools: this.read('tools'), prompts: this.read('prompts'), resources: this.read('resources') }
  }

  /** The catalogue keys of `kind` added, removed or altered since the last call (or construction). */
  changed (kind: ListKind): string[] {
    const before = this.last[kind]
    const now = this.read(kind)
    this.last[kind] = now
    const out: string[] = []
    for (const [key, json] of now) if (before.get(key) !== json) out.push(key)
    for (const key of before.keys()) if (!now.has(key)) out.push(key)
    return out
  }

  private read (kind: ListKind): Map<string, string> {
    const out = new Map<string, string>()
    const add = (items: readonly JsonObject[], key: string): void => {
      for (const item of items) { const k = item[key]; if (typeof k === 'string') out.set(k, JSON.stringify(item)) }
    }
    if (kind === 'tools') add(this.registry.tools(), 'name')
    else if (kind === 'prompts') add(this.registry.prompts(), 'name')
    else { add(this.registry.resources(), 'uri'); add(this.registry.resourceTemplates(), 'uriTemplate') }
    return out
  }
}
