/**
 * Fans the registry's change events out to every listener that asked for them: legacy GET
 * streams and stdio connections (list_changed, resources/updated for subscribed URIs) and modern
 * `subscriptions/listen` streams (DIGEST §6f). One registry listener per event, however many
 * sessions listen, so 10,000 sessions cost a Set entry each, not an EventEmitter listener each.
 */
import type { ListKind, UpstreamRegistry } from './upstreams/types.js'
import { META_SUBSCRIPTION_ID } from './inbound.js'
import { isObject, type JsonRpcNotification, type RequestId } from './jsonrpc.js'

/** One listener: what it wants, and where its notifications go. */
export interface HubListener {
  /** Which list_changed kinds to deliver. */
  lists: ReadonlySet<ListKind>
  /** URIs whose notifications/resources/updated to deliver (live set: may change after add). */
  uris: ReadonlySet<string>
  /** Delivers one notification. Must not throw. */
  send: (notification: JsonRpcNotification) => void
}

/** The list_changed notification method of each list kind (the one table; lib/redis-sessions relays with it too). */
export const LIST_CHANGED: Readonly<Record<ListKind, string>> = Object.freeze({
  tools: 'notifications/tools/list_changed',
  prompts: 'notifications/prompts/list_changed',
  resources: 'notifications/resources/list_changed'
})

/** Every list kind: what a legacy client gets once mcpx declared listChanged. */
export const ALL_LISTS: ReadonlySet<ListKind> = new Set<ListKind>(['tools', 'prompts', 'resources'])

export class NotificationHub {
  private readonly listeners = new Set<HubListener>()
  private readonly onListChanged = (kind: ListKind): void => {
    const notification: JsonRpcNotification = { jsonrpc: '2.0', method: LIST_CHANGED[kind] }
    for (const listener of this.listeners) if (listener.lists.has(kind)) listener.send(notification)
  }

  private readonly onResourceUpdated = (uri: string): void => {
    const notification: JsonRpcNotification = { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } }
    for (const listener of this.listeners) if (listener.uris.has(uri)) listener.send(notification)
  }

  constructor (private readonly registry: UpstreamRegistry) {
    registry.on('list_changed', this.onListChanged)
    registry.on('resource_updated', this.onResourceUpdated)
  }

  /** Adds a listener; returns the function that removes it. */
  add (listener: HubListener): () => void {
    this.listeners.add(listener)
    return () => { this.listeners.delete(listener) }
  }

  /** Number of listeners, for metrics. */
  get size (): number { return this.listeners.size }

  /** Detaches from the registry and forgets every listener. */
  close (): void {
    this.registry.off('list_changed', this.onListChanged)
    this.registry.off('resource_updated', this.onResourceUpdated)
    this.listeners.clear()
  }
}

/** The `notifications` filter of a modern `subscriptions/listen` request, read leniently. */
export interface ListenFilter {
  toolsListChanged?: boolean
  promptsListChanged?: boolean
  resourcesListChanged?: boolean
  resourceSubscriptions?: string[]
}

/**
 * Reads a `subscriptions/listen` request's filter and decides what mcpx honours: every
 * list_changed kind asked for, and the resource subscriptions asked for (DIGEST §6f).
 * @returns the acknowledged filter, the lists and URIs to deliver, or an error text for bad params
 */
export function readListenFilter (params: Record<string, unknown> | undefined): { ok: true, ack: ListenFilter, lists: Set<ListKind>, uris: Set<string> } | { ok: false, message: string } {
  const filter = params?.notifications
  if (!isObject(filter)) return { ok: false, message: 'Invalid params: notifications is required' }
  const ack: ListenFilter = {}
  const lists = new Set<ListKind>()
  for (const [key, kind] of [['toolsListChanged', 'tools'], ['promptsListChanged', 'prompts'], ['resourcesListChanged', 'resources']] as const) {
    const value = filter[key]
    if (value === undefined) continue
    if (typeof value !== 'boolean') return { ok: false, message: `Invalid params: notifications.${key} must be a boolean` }
    if (value) { ack[key] = true; lists.add(kind) }
  }
  const uris = new Set<string>()
  const subs = filter.resourceSubscriptions
  if (subs !== undefined) {
    if (!Array.isArray(subs) || subs.some(s => typeof s !== 'string')) return { ok: false, message: 'Invalid params: notifications.resourceSubscriptions must be an array of strings' }
    for (const uri of subs as string[]) uris.add(uri)
    ack.resourceSubscriptions = [...uris]
  }
  return { ok: true, ack, lists, uris }
}

/** Tags a notification with the listen request's id (`_meta` subscriptionId), as every listen-stream notification must be. */
export function tagWithSubscription (notification: JsonRpcNotification, subscriptionId: RequestId): JsonRpcNotification {
  const params = { ...(notification.params ?? {}) }
  params._meta = { ...(isObject(params._meta) ? params._meta : {}), [META_SUBSCRIPTION_ID]: subscriptionId }
  return { jsonrpc: '2.0', method: notification.method, params }
}

/** The first message of a listen stream: what mcpx will honour. */
export function acknowledgement (subscriptionId: RequestId, ack: ListenFilter): JsonRpcNotification {
  return tagWithSubscription({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: ack } }, subscriptionId)
}
