/**
 * `subscriptions/listen` (2026-07-28; DIGEST §6f), for every transport: the request's filter, the
 * acknowledgement, the `subscriptionId` tag on every notification of the stream, and the upstream
 * resource subscriptions a listen holds while it is open. The transports decide only where the
 * stream goes (an SSE reply, or the stdio output) and how it ends.
 */
import { errorResponse, isObject, INVALID_PARAMS, type JsonRpcErrorResponse, type JsonRpcNotification, type JsonRpcRequest, type RequestId, type ListKind } from '../protocol/jsonrpc.js'
import { META_SUBSCRIPTION_ID } from '../protocol/inbound.js'
import type { NotificationHub } from './notify-hub.js'
import type { InstanceOwner } from '../upstreams/isolation.js'
import type { Dispatcher } from '../dispatch/dispatcher.js'
import type { Logger } from '../telemetry/log.js'
import type { Visibility } from '../policy/visibility.js'

/** The `notifications` filter of a `subscriptions/listen` request, as acknowledged. */
export interface ListenFilter {
  toolsListChanged?: boolean
  promptsListChanged?: boolean
  resourcesListChanged?: boolean
  resourceSubscriptions?: string[]
}

/** A listen request's filter, read: what to acknowledge and what to deliver. */
export interface ReadFilter {
  ack: ListenFilter
  lists: Set<ListKind>
  uris: Set<string>
}

/**
 * Reads a `subscriptions/listen` request's filter and decides what mcpx honours: every
 * list_changed kind asked for, and the resource subscriptions asked for (DIGEST §6f).
 * @returns the acknowledged filter, the lists and URIs to deliver, or an error text for bad params
 */
export function readListenFilter (params: Record<string, unknown> | undefined): ({ ok: true } & ReadFilter) | { ok: false, message: string } {
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

/**
 * Checks a listen request before any stream opens: the modern envelope (DIGEST §6a), then the
 * filter (-32602).
 * @returns the filter, or the error response to send instead
 */
export function checkListen (dispatcher: Dispatcher, request: JsonRpcRequest): { ok: true, filter: ReadFilter } | { ok: false, error: JsonRpcErrorResponse } {
  const rejected = dispatcher.checkModernEnvelope(request)
  if (rejected !== undefined) return { ok: false, error: rejected }
  const filter = readListenFilter(request.params)
  if (!filter.ok) return { ok: false, error: errorResponse(request.id, INVALID_PARAMS, filter.message) }
  return { ok: true, filter }
}

/**
 * One open listen: delivers the hub's notifications its filter asks for, tagged with its id, and
 * holds the upstream resource subscriptions it needs (the registry refcounts them) until it ends.
 * Never throws.
 */
export class Listen {
  private readonly subscribed: string[] = []
  private remove: (() => void) | undefined
  private ended = false

  /**
   * @param id the listen request's id (the subscriptionId)
   * @param send where the stream's notifications go; must not throw
   * @param view the caller's live view (Dispatcher.visibilityOf): URIs hidden when the listen opens
   *        are not subscribed upstream, and the hub filters notifications by the view as it is at
   *        each moment (a reload that hides a URI stops its updates on this open stream)
   */
  constructor (
    private readonly dispatcher: Dispatcher,
    private readonly hub: NotificationHub,
    private readonly logger: Logger,
    readonly id: RequestId,
    private readonly filter: ReadFilter,
    private readonly send: (notification: JsonRpcNotification) => void,
    /** What the listener's caller sees on its endpoint now (policy, curated endpoint); undefined: everything. */
    private readonly view: () => Visibility | undefined,
    /**
     * Whom the caller's upstream calls serve (lib/dispatch/call-options.ts instanceOwnerOf): its isolated
     * instances are subscribed to the filter's URIs, and what they announce reaches this stream
     * (isolated upstreams). Undefined: no instance's.
     */
    private readonly instanceOwner?: InstanceOwner
  ) {}

  /** The acknowledgement, the stream's first message. */
  get ack (): JsonRpcNotification { return acknowledgement(this.id, this.filter.ack) }

  /**
   * Subscribes upstream to the filter's URIs. A refused subscription is logged and skipped (the
   * listen still delivers what it can); one that lands after {@link end} is released at once.
   */
  async subscribeUpstream (): Promise<void> {
    const registry = this.dispatcher.registry
    const visibility = this.view()
    await Promise.all([...this.filter.uris].map(async uri => {
      if (visibility?.seesUri(uri) === false) return // hidden: never subscribed upstream (hidden things look absent)
      try {
        await registry.subscribe(uri, this.instanceOwner)
      } catch (err) {
        this.logger.debug({ err, uri }, 'listen: upstream subscribe refused')
        return
      }
      if (this.ended) await registry.unsubscribe(uri, this.instanceOwner).catch(() => {})
      else this.subscribed.push(uri)
    }))
  }

  /** Starts delivering notifications (after the acknowledgement has been sent). */
  start (): void {
    if (this.ended || this.remove !== undefined) return
    this.remove = this.hub.add({ lists: this.filter.lists, uris: this.filter.uris, ...(this.instanceOwner !== undefined ? { instanceOwner: this.instanceOwner } : {}), send: (n) => { if (!this.ended) this.send(tagWithSubscription(n, this.id)) }, view: this.view })
  }

  /** Stops delivering, and releases the upstream subscriptions no one else needs (idempotent). Never rejects. */
  async end (): Promise<void> {
    if (this.ended) return
    this.ended = true
    this.remove?.()
    const registry = this.dispatcher.registry
    await Promise.all(this.subscribed.splice(0).map(async uri => {
      await registry.unsubscribe(uri, this.instanceOwner).catch((err: unknown) => { this.logger.debug({ err, uri }, 'listen: upstream unsubscribe failed') })
    }))
  }
}
