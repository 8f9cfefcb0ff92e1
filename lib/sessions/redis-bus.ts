/**
 * The Redis session store's pub/sub (lib/sessions/redis-store.ts; docs/replicas.md › Running several replicas): one
 * subscriber connection per replica, two channels each:
 *   `<prefix>bus`        every replica: session ended, cancellation, subscription added/removed
 *                        (the replica running the session's per-session instances applies it to
 *                        them), upstream change events (list_changed, resources/updated)
 *   `<prefix>r:<rid>`    one replica: a message for the GET stream it holds, an answer to a
 *                        question its request asked, and the messages of calls forwarded to the
 *                        replica holding their session's isolated instances (lib/sessions/instances.ts)
 * Here: the messages, the channel names, and what a received payload is for. The store reacts to them.
 */
import type { JsonRpcMessage, JsonRpcResponse, ListKind } from '../protocol/jsonrpc.js'
import type { RelayedEvent } from '../connection/notify-hub.js'
import type { InstanceEvent } from '../upstreams/isolation.js'
import { FORWARD_MESSAGE_TYPES, type ForwardMessage } from './instances.js'

/** Messages on the channels; short keys, JSON-encoded. */
export type BusMessage =
  | { t: 'end', sid: string }
  | { t: 'cancel', sid: string, key: string }
  | { t: 'sub', sid: string, uri: string, add: boolean }
  | { t: 'ev', from: string, kind?: ListKind, uri?: string, changed?: string[] }
  | { t: 'iev', from: string, ev: InstanceEvent }
export type ReplicaMessage =
  | { t: 'send', sid: string, msg: JsonRpcMessage }
  | { t: 'ans', sid: string, qid: string, res: JsonRpcResponse }

/** One replica's channels (names built once, per replica). */
export interface ReplicaChannels {
  /** `<prefix>bus`: heard by every replica. */
  readonly bus: string
  /** `<prefix>r:`: every replica's own channel is this plus its id (the scripts append the owner's). */
  readonly replicaPrefix: string
  /** `<prefix>r:<rid>`: this replica's own channel. */
  readonly replica: string
}

/** The channels of replica `replicaId` under `keyPrefix` (sessions.keyPrefix). Never throws. */
export function replicaChannels (keyPrefix: string, replicaId: string): ReplicaChannels {
  const replicaPrefix = `${keyPrefix}r:`
  return { bus: `${keyPrefix}bus`, replicaPrefix, replica: replicaPrefix + replicaId }
}

/** A payload received on a replica's channels, by what it is for: the bus, a forwarded call (lib/sessions/instances.ts), or this replica. */
export type Received =
  | { to: 'bus', message: BusMessage }
  | { to: 'forward', message: ForwardMessage }
  | { to: 'replica', message: ReplicaMessage }

/**
 * What a payload on `channel` is for. Never throws: undefined for a payload that is not JSON, or a
 * channel that is neither of `channels`.
 */
export function receive (channels: ReplicaChannels, channel: string, payload: string): Received | undefined {
  let message: BusMessage | ReplicaMessage
  try { message = JSON.parse(payload) as BusMessage | ReplicaMessage } catch { return undefined }
  if (channel === channels.bus) return { to: 'bus', message: message as BusMessage }
  if (channel !== channels.replica) return undefined
  if (FORWARD_MESSAGE_TYPES.has(message.t)) return { to: 'forward', message: message as unknown as ForwardMessage }
  return { to: 'replica', message: message as ReplicaMessage }
}

/**
 * The change an `ev` message from another replica carries, for this replica's notification hub
 * (lib/connection/notify-hub.ts relay): a list kind with the keys it changed, or a resource URI.
 * Never throws: undefined when the message names neither.
 */
export function relayedEvent (message: Extract<BusMessage, { t: 'ev' }>): RelayedEvent | undefined {
  if (message.kind === 'tools' || message.kind === 'prompts' || message.kind === 'resources') {
    const changed = Array.isArray(message.changed) ? message.changed.filter(key => typeof key === 'string') : undefined
    return changed !== undefined ? { kind: message.kind, changed } : { kind: message.kind }
  } else if (typeof message.uri === 'string') return { uri: message.uri }
  return undefined
}
