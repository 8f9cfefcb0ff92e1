/**
 * The Redis session store (legacy sessions across replicas, docs/replicas.md › Running several replicas; seed › Streamable HTTP,
 * 2025-03-26 … 2025-11-25 for the rules it keeps). Selected by `sessions.store: "redis"`.
 *
 * Facts live in Redis, so any replica serves any request of a session:
 *   `<prefix>s:{<sid>}`          hash `rev` (negotiated revision), `caps` (client capabilities, JSON),
 *                                `inst` (id of the replica holding the session's isolated upstream instances),
 *                                `pr` (the principal key it was minted for, lib/auth/principal.ts, when any: its
 *                                subscriptions on per-principal instances are released as they were made)
 *   `<prefix>s:{<sid>}:subs`     set of resource URIs the client subscribed to
 *   `<prefix>s:{<sid>}:stream`   id of the replica holding the session's GET stream (SET NX, lease TTL)
 *   `<prefix>s:{<sid>}:q:<qid>`  id of the replica whose request asked question `qid`
 * The idle expiry is the keys' TTL (`transport.sessionIdleTimeout`), slid by PEXPIRE on every
 * request, so nothing in mcpx times sessions out. `{<sid>}` is a hash tag: a session's keys
 * share a cluster slot, so each script below touches one slot.
 *
 * Live objects (GET streams, and each session's lib/connection/peer.ts Peer: its requests in flight and the
 * questions they asked) stay in the replica that holds them; this store only relays cancellations
 * and answers to that replica's Peer, it does not re-implement them. Replicas reach each other over pub/sub, one subscriber connection
 * per replica, two channels each: `<prefix>bus` for every replica and `<prefix>r:<rid>` for one
 * (lib/sessions/redis-bus.ts says what travels on each).
 *
 * The Lua scripts (with their KEYS/ARGV contracts) are in lib/sessions/redis-scripts.ts, the messages
 * on the channels in lib/sessions/redis-bus.ts; this file is the store that runs and sends them.
 *
 * Hot path: `find` is ONE round trip (a Lua script: check the session exists, read its facts,
 * slide both TTLs). Everything else (mint, end, GET, questions, subscriptions) is off it.
 *
 * The GET stream slot is a lease: the owner refreshes the stream key every lease/3 (and with it
 * the session's TTL, so a session with an open stream does not idle out, as in memory) and
 * deletes it when the stream closes; a replica that dies without closing frees the slot within
 * one lease.
 *
 * Redis faults: commands fail fast (no offline queue, `commandTimeout`), every method reports
 * `unavailable` instead of throwing (the HTTP face answers 503), ioredis reconnects on its own,
 * and 'error' events are logged, never thrown. Redis itself may be one server, a Sentinel set-up
 * or a Cluster (`sessions.redis`, lib/base/redis.ts; docs/replicas.md › Surviving a Redis node): with Sentinel a failover is an
 * outage of a few seconds (503s) after which the sessions carry on on the promoted replica; on a
 * Cluster each script runs on the node of its session's slot, and the channels (classic pub/sub)
 * reach every node, so they carry no hash tag.
 */
import { randomBytes } from 'node:crypto'
import type { EventEmitter } from 'node:events'
import { createRedisConnection, describeRedisTarget, type RedisConnection, type RedisTarget } from '../base/redis.js'
import type { Revision } from '../protocol/revisions.js'
import { idKey, isObject, RawNumberId, INTERNAL_ERROR, INVALID_REQUEST, type JsonObject, type JsonRpcMessage, type JsonRpcNotification, type JsonRpcResponse, type ListKind } from '../protocol/jsonrpc.js'
import type { OpenStream } from '../connection/peer.js'
import type { Logger } from '../telemetry/log.js'
import { ListSnapshots, type RelayedEvent } from '../connection/notify-hub.js'
import type { InstanceEvent, InstanceHome, InstanceOwner } from '../upstreams/isolation.js'
import type { UpstreamRegistry } from '../upstreams/contract.js'
import { InstanceForwarder } from './instances.js'
import { SCRIPTS, type ScriptName, type ScriptRunner } from './redis-scripts.js'
import { receive, relayedEvent, replicaChannels, type BusMessage, type ReplicaChannels, type ReplicaMessage } from './redis-bus.js'
import { InstanceForwardError } from '../upstreams/errors.js'
import { REFUSALS } from '../protocol/http-status.js'
import {
  newSession, newSessionId, releaseLive,
  type EndOutcome, type FindOutcome, type MintOutcome, type Session, type SessionStore, type StreamOutcome,
  type SubscriptionSet, type UpstreamSubscriptions
} from './store.js'

export interface RedisSessionStoreOptions {
  /** Where Redis is: a URL, a Sentinel set-up or a Cluster (sessions.redis; lib/base/redis.ts). */
  redis: RedisTarget
  /** Prefix of every key and channel (sessions.keyPrefix, default `mcpx:`). */
  keyPrefix: string
  /** A session idle this long expires (Redis TTL), ms. */
  idleTimeoutMs: number
  /** TTL of the GET-stream owner key, refreshed every third of it by the owner, ms (sessions.streamLease). */
  streamLeaseMs: number
  /** The upstream registry: refcounted upstream subscriptions, and the change events to share. */
  upstreams: UpstreamSubscriptions & Pick<EventEmitter, 'on' | 'off'> & Pick<UpstreamRegistry, 'tools' | 'prompts' | 'resources' | 'resourceTemplates' | 'callUpstream' | 'instanceSubscription'>
  /**
   * Receives the upstream changes other replicas saw, for this replica's GET streams
   * (NotificationHub.relay: filtered per listener by what its caller sees on its endpoint).
   */
  relay: (event: RelayedEvent) => void
  /**
   * Receives what a session's isolated instance, running on another replica, announced (isolated upstreams:
   * NotificationHub.instanceEvent, which hands it to that session's GET stream if it is here).
   */
  relayInstance?: (event: InstanceEvent) => void
  logger: Logger
  /** How long one command may take before the store reports unavailable, ms. Default 1000. */
  commandTimeoutMs?: number
}

/** This replica's view of a session: the shared facts' mirror plus what this replica holds. */
interface Shadow extends Session {
  /** URIs this replica subscribed to upstream on this session's behalf (released on end/unsubscribe). */
  readonly upstreamSubs: Set<string>
  /**
   * Those of `upstreamSubs` its requests subscribed here (the registry counts them for the session
   * as `who`: a per-principal instance's subscription); the rest are held for its GET
   * stream. Each is released as it was made.
   */
  readonly instanceSubs: Set<string>
  /** The replica holding its per-session isolated instances (the hash's `inst`), once known. */
  instanceOwner: string | undefined
  readonly instanceHome: InstanceHome
}

/** See the module comment. Never throws from a public method. */
export class RedisSessionStore implements SessionStore {
  readonly kind = 'redis' as const
  /** This replica's id (random, per process): the value of the stream and question keys it owns. */
  readonly replicaId = randomBytes(9).toString('base64url')
  private readonly redis: RedisConnection
  private readonly sub: RedisConnection
  private readonly shadows = new Map<string, Shadow>()
  /** Sessions whose GET-stream lease this replica holds (or is releasing). */
  private readonly leases = new Set<string>()
  private readonly releasing = new Set<Promise<unknown>>()
  private readonly channels: ReplicaChannels
  private readonly heartbeat: NodeJS.Timeout
  private readonly sweeper: NodeJS.Timeout
  private readonly log: Logger
  private closed = false
  private down = false
  /** Calls of sessions whose isolated instances another replica holds, and the ones it sends here. */
  private readonly forwarder: InstanceForwarder
  /** Sessions whose isolated instances this replica holds: stopped when the session ends or expires. */
  private readonly homed = new Set<string>()

  /** This replica's last lists: what a list_changed changed travels with it (per-caller notification filtering). */
  private readonly snapshots: ListSnapshots
  private readonly onListChanged = (kind: ListKind): void => {
    this.publishBus({ t: 'ev', from: this.replicaId, kind, changed: this.snapshots.changed(kind) })
  }

  private readonly onResourceUpdated = (uri: string): void => {
    this.publishBus({ t: 'ev', from: this.replicaId, uri })
  }

  /** A session's instance held here announced something: to the replica holding its GET stream, wherever that is. */
  private readonly onInstanceEvent = (event: InstanceEvent): void => {
    if (event.isolation === 'per-session' && this.homed.has(event.key)) this.publishBus({ t: 'iev', from: this.replicaId, ev: event })
  }

  constructor (private readonly options: RedisSessionStoreOptions) {
    this.log = options.logger.child({ component: 'sessions', replica: this.replicaId })
    this.snapshots = new ListSnapshots(options.upstreams)
    // Fail fast rather than queue (a Redis fault is a prompt 503, never a hang); we subscribe on every 'ready' ourselves.
    const connection = { commandTimeoutMs: options.commandTimeoutMs ?? 1_000, autoResubscribe: false }
    this.redis = createRedisConnection(options.redis, connection)
    this.sub = createRedisConnection(options.redis, connection)
    for (const [name, script] of Object.entries(SCRIPTS)) this.redis.defineCommand(name, script)
    this.channels = replicaChannels(options.keyPrefix, this.replicaId)
    this.forwarder = new InstanceForwarder({
      replicaId: this.replicaId,
      publish: async (replica, payload) => await this.redis.publish(this.channels.replicaPrefix + replica, payload),
      endSession: async sid => await this.end(sid),
      upstreams: options.upstreams,
      logger: this.log
    })
    // No unhandled 'error' events: log the first failure of an outage, and the recovery.
    this.redis.on('error', (err: Error) => {
      if (!this.down) this.log.warn({ err }, 'session store (Redis) unreachable: session requests get 503 until it returns')
      this.down = true
    })
    this.redis.on('ready', () => {
      if (this.down) this.log.info('session store (Redis) reachable again')
      this.down = false
    })
    this.sub.on('error', (err: Error) => { this.log.debug({ err }, 'session store subscriber connection error') })
    this.sub.on('ready', () => {
      this.sub.subscribe(this.channels.bus, this.channels.replica).catch((err: unknown) => { this.log.warn({ err }, 'session store: subscribing failed') })
    })
    this.sub.on('message', (channel: string, payload: string) => { this.onMessage(channel, payload) })
    options.upstreams.on('list_changed', this.onListChanged)
    options.upstreams.on('resource_updated', this.onResourceUpdated)
    options.upstreams.on('instance_event', this.onInstanceEvent)
    this.heartbeat = setInterval(() => { void this.beat() }, Math.max(100, Math.floor(options.streamLeaseMs / 3)))
    this.heartbeat.unref()
    this.sweeper = setInterval(() => { this.sweep() }, Math.max(1_000, Math.min(options.idleTimeoutMs / 2, 60_000)))
    this.sweeper.unref()
  }

  /**
   * Connects both connections, waiting at most about one connect timeout. Resolves false (never
   * rejects) when Redis is unreachable; ioredis keeps retrying in the background.
   */
  async connect (): Promise<boolean> {
    const results = await Promise.allSettled([this.redis.connect(), this.sub.connect()])
    const ok = results.every(r => r.status === 'fulfilled')
    if (!ok) this.log.warn({ redis: describeRedisTarget(this.options.redis) }, 'session store (Redis) unreachable at startup: session requests get 503 until it is')
    return ok
  }

  get size (): number { return this.shadows.size }

  async mint (revision: Revision, clientCapabilities: JsonObject, principal?: string): Promise<MintOutcome> {
    const id = newSessionId(principal)
    const [sessionKey] = this.keys(id)
    // The principal key (a hash, already carried by forwarded calls) lets every replica release the session's subscriptions as made.
    const facts: Record<string, string> = { rev: revision, caps: JSON.stringify(clientCapabilities) }
    if (principal !== undefined) facts.pr = principal
    try {
      await this.redis.multi().hset(sessionKey, facts).pexpire(sessionKey, this.options.idleTimeoutMs).exec()
    } catch (err) {
      this.log.debug({ err }, 'mint: session store unavailable')
      return { kind: 'unavailable' }
    }
    const session = this.shadowFor(id, revision, clientCapabilities, principal)
    this.log.debug({ session: id }, 'session minted')
    return { kind: 'minted', session }
  }

  async find (id: string): Promise<FindOutcome> {
    const known = this.shadows.get(id)
    const [sessionKey, subsKey] = this.keys(id)
    let reply: [string, string | null, string[], string | null, string | null] | null
    try {
      reply = await this.script('mcpxFind')(sessionKey, subsKey, this.options.idleTimeoutMs, known === undefined ? '1' : '0') as typeof reply
    } catch (err) {
      this.log.debug({ err }, 'find: session store unavailable')
      return { kind: 'unavailable' }
    }
    if (reply === null) {
      if (known !== undefined) this.drop(known)
      this.stopInstances(id)
      return { kind: 'unknown' }
    }
    const [revision, caps, uris, owner, principal] = reply
    const session = known ?? this.shadowFor(id, revision, parseCaps(caps), principal ?? undefined)
    session.lastSeenMs = Date.now()
    session.instanceOwner = owner ?? undefined
    mirror(session.subscriptions, uris)
    if (session.stream !== undefined) for (const uri of uris) if (!session.upstreamSubs.has(uri)) void this.holdUpstream(session, uri)
    return { kind: 'found', session }
  }

  async end (id: string): Promise<EndOutcome> {
    const [sessionKey, subsKey, streamKey] = this.keys(id)
    let ended: unknown
    try {
      ended = await this.script('mcpxEnd')(sessionKey, subsKey, streamKey, this.channels.bus, JSON.stringify({ t: 'end', sid: id } satisfies BusMessage))
    } catch (err) {
      this.log.debug({ err }, 'end: session store unavailable')
      return 'unavailable'
    }
    const known = this.shadows.get(id)
    if (known !== undefined) this.drop(known)
    this.stopInstances(id) // here at once; the owner, wherever it is, on the bus message
    return ended === 1 ? 'ended' : 'unknown'
  }

  async openStream (session: Session, open: () => OpenStream): Promise<StreamOutcome> {
    const shadow = session as Shadow
    if (shadow.stream !== undefined && !shadow.stream.isClosed) return 'busy'
    const [sessionKey, , streamKey] = this.keys(session.id)
    let claimed: unknown
    try {
      claimed = await this.script('mcpxClaimStream')(sessionKey, streamKey, this.replicaId, this.options.streamLeaseMs)
    } catch (err) {
      this.log.debug({ err }, 'openStream: session store unavailable')
      return 'unavailable'
    }
    if (claimed !== 1 || (shadow.stream !== undefined && !shadow.stream.isClosed)) return 'busy'
    const stream = open()
    shadow.stream = stream
    // This replica now delivers the session's resources/updated: subscribe upstream here too, for
    // every URI the session subscribed to through any replica (each replica holds its own upstream connections).
    for (const uri of shadow.subscriptions) void this.holdUpstream(shadow, uri)
    this.leases.add(session.id)
    void stream.closed.then(() => {
      if (shadow.stream === stream) shadow.stream = undefined
      this.releaseLease(session.id)
    })
    return 'open'
  }

  async sendToStream (session: Session, message: JsonRpcMessage): Promise<boolean> {
    if (session.stream !== undefined && !session.stream.isClosed) return session.stream.send(message)
    const [, , streamKey] = this.keys(session.id)
    try {
      const receivers = await this.script('mcpxSendToStream')(streamKey, this.channels.replicaPrefix, JSON.stringify({ t: 'send', sid: session.id, msg: message } satisfies ReplicaMessage))
      return typeof receivers === 'number' && receivers > 0
    } catch (err) {
      this.log.debug({ err }, 'sendToStream: session store unavailable')
      return false
    }
  }

  subscriptionsOf (session: Session): SubscriptionSet {
    const shadow = session as Shadow
    return {
      // Whether THIS replica already holds an upstream subscription for this session's URI.
      has: uri => shadow.upstreamSubs.has(uri),
      // After the dispatcher's registry.subscribe with the session as `who` (lib/dispatch/call-options.ts instanceOwnerOf).
      add: async uri => {
        shadow.upstreamSubs.add(uri)
        shadow.instanceSubs.add(uri)
        shadow.subscriptions.add(uri)
        await this.recordSubscription(shadow, uri, true)
        // Its own instance, when here, at once (elsewhere: on the bus message, before any later forwarded call).
        if (this.homed.has(shadow.id)) await this.instanceSubscription(shadow.id, uri, true)
      },
      // true: the dispatcher releases it with the session as `who`, as it was made; one held for the GET stream is released here.
      delete: async uri => {
        shadow.subscriptions.delete(uri)
        await this.recordSubscription(shadow, uri, false)
        if (this.homed.has(shadow.id)) await this.instanceSubscription(shadow.id, uri, false)
        if (!shadow.upstreamSubs.delete(uri)) return false
        if (shadow.instanceSubs.delete(uri)) return true
        void this.options.upstreams.unsubscribe(uri).catch(() => {})
        return false
      }
    }
  }

  cancel (session: Session, requestId: unknown): void {
    if (session.peer.cancel(requestId)) return
    // The request may run on another replica: every replica looks among ITS requests of THIS session.
    if (typeof requestId === 'string' || (typeof requestId === 'number' && Number.isSafeInteger(requestId)) || requestId instanceof RawNumberId) this.publishBus({ t: 'cancel', sid: session.id, key: idKey(requestId) })
  }

  async questionAsked (session: Session, id: string): Promise<boolean> {
    try {
      await this.redis.set(this.questionKey(session.id, id), this.replicaId, 'PX', this.options.idleTimeoutMs)
      return true
    } catch (err) {
      this.log.debug({ err }, 'questionAsked: session store unavailable')
      return false
    }
  }

  questionSettled (session: Session, id: string): void {
    this.redis.del(this.questionKey(session.id, id)).catch(() => {})
  }

  async forwardAnswer (session: Session, response: JsonRpcResponse): Promise<boolean> {
    const qid = String(response.id)
    try {
      const receivers = await this.script('mcpxAnswer')(this.questionKey(session.id, qid), this.channels.replicaPrefix, JSON.stringify({ t: 'ans', sid: session.id, qid, res: response } satisfies ReplicaMessage))
      return typeof receivers === 'number' && receivers > 0
    } catch (err) {
      this.log.debug({ err }, 'forwardAnswer: session store unavailable')
      return false
    }
  }

  /**
   * Shutdown of this replica: releases its stream leases (so clients reopen elsewhere at once),
   * ends its live objects and upstream subscriptions, and closes both connections. Sessions
   * themselves live on in Redis for the other replicas.
   */
  async closeAll (): Promise<void> {
    if (this.closed) return
    this.closed = true
    clearInterval(this.heartbeat)
    clearInterval(this.sweeper)
    this.options.upstreams.off('list_changed', this.onListChanged)
    this.options.upstreams.off('resource_updated', this.onResourceUpdated)
    this.options.upstreams.off('instance_event', this.onInstanceEvent)
    this.forwarder.close()
    for (const shadow of [...this.shadows.values()]) this.drop(shadow) // closes streams: their leases are released
    for (const id of this.leases) this.releaseLease(id)
    await Promise.all(this.releasing)
    await Promise.all([quit(this.redis), quit(this.sub)])
  }

  /* ---------------------------------------------------------------- internals */

  private keys (id: string): [session: string, subs: string, stream: string] {
    const base = `${this.options.keyPrefix}s:{${id}}`
    return [base, `${base}:subs`, `${base}:stream`]
  }

  private questionKey (sid: string, qid: string): string {
    return `${this.options.keyPrefix}s:{${sid}}:q:${qid}`
  }

  private script (name: ScriptName): ScriptRunner {
    return (this.redis as unknown as Record<ScriptName, ScriptRunner>)[name].bind(this.redis)
  }

  private shadowFor (id: string, revision: Revision, clientCapabilities: JsonObject, principal: string | undefined): Shadow {
    const home: InstanceHome = {
      isHere: () => this.instancesHere(shadow),
      forward: async (upstream, method, params, options, timeoutMs) =>
        await this.forwarder.forward(id, shadow.instanceOwner ?? this.replicaId, upstream, method, params, options, timeoutMs)
    }
    const shadow: Shadow = Object.assign(newSession(id, revision, clientCapabilities), { upstreamSubs: new Set<string>(), instanceSubs: new Set<string>(), instanceOwner: undefined, instanceHome: home })
    if (principal !== undefined) shadow.principal = principal
    this.shadows.set(id, shadow)
    return shadow
  }

  /** Whom the session's requests subscribed as (lib/dispatch/call-options.ts instanceOwnerOf): released the same way. */
  private ownerOf (shadow: Shadow): InstanceOwner {
    return shadow.principal === undefined ? { owner: shadow.id, home: shadow.instanceHome } : { owner: shadow.id, principalKey: shadow.principal, home: shadow.instanceHome }
  }

  /**
   * This replica runs session `shadow`'s per-session instances from now on: they follow
   * its stored subscriptions (`s:{sid}:subs`, mirrored by its last find), whichever replica took
   * them, and later ones on the bus ('sub'). Once per session.
   */
  private homeHere (shadow: Shadow): void {
    if (this.homed.has(shadow.id)) return
    this.homed.add(shadow.id)
    for (const uri of shadow.subscriptions) void this.instanceSubscription(shadow.id, uri, true)
  }

  /** Session `sid`'s own per-session instances here subscribed to `uri` or not (idempotent). Never rejects. */
  private async instanceSubscription (sid: string, uri: string, add: boolean): Promise<void> {
    await this.options.upstreams.instanceSubscription?.(uri, sid, add).catch((err: unknown) => { this.log.debug({ err, uri }, 'isolated instance subscription failed') })
  }

  /**
   * Whether this replica holds the session's isolated instances: known from its last
   * find, else claimed now (one round trip, once per session). Rejects with InstanceForwardError
   * when Redis cannot be asked, or the session is gone.
   */
  private instancesHere (shadow: Shadow): boolean | Promise<boolean> {
    const owner = shadow.instanceOwner
    if (owner !== undefined) {
      if (owner === this.replicaId) this.homeHere(shadow)
      return owner === this.replicaId
    }
    return (async () => {
      let reply: [string, string[]] | null
      try {
        const [sessionKey, subsKey] = this.keys(shadow.id)
        reply = await this.script('mcpxClaimInstances')(sessionKey, subsKey, this.replicaId) as typeof reply
      } catch (err) {
        this.log.debug({ err }, 'claiming isolated instances: session store unavailable')
        throw new InstanceForwardError('storeUnavailable', INTERNAL_ERROR, REFUSALS.storeUnavailable.message)
      }
      if (reply === null) throw new InstanceForwardError('unknownSession', INVALID_REQUEST, REFUSALS.unknownSession.message)
      const [claimed, uris] = reply
      shadow.instanceOwner = claimed
      if (claimed !== this.replicaId) return false
      mirror(shadow.subscriptions, uris) // as of the claim: a later change comes on the bus, to the owner it names
      this.homeHere(shadow)
      return true
    })()
  }

  /** Stops session `sid`'s isolated instances if this replica holds them (its end, expiry). Never throws. */
  private stopInstances (sid: string): void {
    if (!this.homed.delete(sid)) return
    void this.options.upstreams.endSession?.(sid)
  }

  /** Forgets a session here: live objects ended, upstream subscriptions released. */
  private drop (shadow: Shadow): void {
    if (this.shadows.get(shadow.id) === shadow) this.shadows.delete(shadow.id)
    releaseLive(shadow)
    // Each as it was made: its requests' with the session as `who` (a per-principal instance's count
    // goes with it; its own per-session instances' end with them), the GET stream's without.
    const who = this.ownerOf(shadow)
    for (const uri of shadow.upstreamSubs) void this.options.upstreams.unsubscribe(uri, shadow.instanceSubs.has(uri) ? who : undefined).catch(() => {})
    shadow.upstreamSubs.clear()
    shadow.instanceSubs.clear()
  }

  /** Deletes this replica's GET-stream lease of session `id` (compare-and-delete); closeAll waits for it. */
  private releaseLease (id: string): void {
    if (!this.leases.delete(id)) return
    const release = this.script('mcpxReleaseStream')(this.keys(id)[2], this.replicaId).catch(() => {})
    this.releasing.add(release)
    void release.finally(() => this.releasing.delete(release))
  }

  private async holdUpstream (shadow: Shadow, uri: string): Promise<void> {
    if (shadow.upstreamSubs.has(uri)) return
    shadow.upstreamSubs.add(uri)
    try {
      await this.options.upstreams.subscribe(uri)
    } catch (err) {
      shadow.upstreamSubs.delete(uri)
      this.log.debug({ err, uri }, 'upstream subscription for a GET stream refused')
    }
  }

  private async recordSubscription (shadow: Shadow, uri: string, add: boolean): Promise<void> {
    const [sessionKey, subsKey] = this.keys(shadow.id)
    const payload = JSON.stringify({ t: 'sub', sid: shadow.id, uri, add } satisfies BusMessage)
    // Throws when Redis is down: the dispatcher then answers the subscribe with an error.
    await this.script('mcpxSubscription')(sessionKey, subsKey, this.options.idleTimeoutMs, uri, add ? '1' : '0', this.channels.bus, payload)
  }

  private publishBus (message: BusMessage): void {
    if (this.closed) return
    this.redis.publish(this.channels.bus, JSON.stringify(message)).catch((err: unknown) => { this.log.debug({ err }, 'publish failed') })
  }

  private onMessage (channel: string, payload: string): void {
    const received = receive(this.channels, channel, payload)
    if (received === undefined) return
    if (received.to === 'bus') this.onBus(received.message)
    else if (received.to === 'forward') this.forwarder.receive(received.message)
    else this.onReplica(received.message)
  }

  private onBus (message: BusMessage): void {
    if (message.t === 'ev') {
      if (message.from !== this.replicaId) this.deliverEvent(message)
      return
    }
    if (message.t === 'iev') {
      if (message.from !== this.replicaId) this.options.relayInstance?.(message.ev) // the local hub had our own
      return
    }
    if (message.t === 'end') this.stopInstances(message.sid) // ended on any replica
    // Made on any replica, for the session's instances running here (even with no shadow left here).
    if (message.t === 'sub' && this.homed.has(message.sid)) void this.instanceSubscription(message.sid, message.uri, message.add)
    const shadow = this.shadows.get(message.sid)
    if (shadow === undefined) return
    switch (message.t) {
      case 'end':
        this.drop(shadow)
        return
      case 'cancel':
        shadow.peer.cancelKey(message.key)
        return
      case 'sub':
        if (message.add) {
          shadow.subscriptions.add(message.uri)
          if (shadow.stream !== undefined) void this.holdUpstream(shadow, message.uri)
        } else {
          shadow.subscriptions.delete(message.uri)
          if (shadow.upstreamSubs.delete(message.uri)) void this.options.upstreams.unsubscribe(message.uri, shadow.instanceSubs.delete(message.uri) ? this.ownerOf(shadow) : undefined).catch(() => {})
        }
    }
  }

  /**
   * An upstream change another replica saw: to this replica's GET streams (the local hub delivers
   * our own), through the hub, so each stream's caller gets only what it sees.
   */
  private deliverEvent (message: Extract<BusMessage, { t: 'ev' }>): void {
    const event = relayedEvent(message)
    if (event !== undefined) this.options.relay(event)
  }

  private onReplica (message: ReplicaMessage): void {
    const shadow = this.shadows.get(message.sid)
    if (shadow === undefined) return
    if (message.t === 'send') {
      shadow.stream?.send(message.msg)
      return
    }
    // An answer relayed from the replica that received it: delivered by this replica's Peer.
    shadow.peer.answer(message.res)
  }

  /** Every lease/3: refresh the leases of the streams held here and the TTLs of sessions busy here. */
  private async beat (): Promise<void> {
    if (this.closed) return
    const busy = [...this.shadows.values()].filter(s => s.stream !== undefined || s.peer.inFlight > 0 || s.peer.pendingQuestions > 0)
    if (busy.length === 0) return
    // One script call per session, not one pipeline: on a Cluster a pipeline must stay in one slot,
    // and auto-pipelining batches these calls per node anyway.
    const heartbeat = this.script('mcpxHeartbeat')
    const results = await Promise.allSettled(busy.map(shadow => {
      const [sessionKey, subsKey, streamKey] = this.keys(shadow.id)
      return heartbeat(sessionKey, subsKey, streamKey, this.replicaId, this.options.streamLeaseMs, this.options.idleTimeoutMs, shadow.stream !== undefined ? '1' : '0')
    }))
    results.forEach((result, i) => {
      if (result.status !== 'fulfilled') return
      const shadow = busy[i]
      if (result.value === -1) this.drop(shadow) // expired or deleted while we missed the news
      else if (result.value === 0) { shadow.stream?.close(); shadow.stream = undefined } // another replica took the slot
    })
  }

  /** Forgets idle shadows that hold nothing live; the session itself lives on in Redis. Stops the instances of expired sessions. */
  private sweep (): void {
    if (this.homed.size > 0) void this.reapExpired()
    const now = Date.now()
    for (const shadow of [...this.shadows.values()]) {
      if (now - shadow.lastSeenMs <= this.options.idleTimeoutMs) continue
      if (shadow.stream !== undefined || shadow.peer.inFlight > 0 || shadow.peer.pendingQuestions > 0) continue
      this.drop(shadow)
    }
  }

  /**
   * Stops the isolated instances this replica holds for sessions that expired (a Redis TTL ends a
   * session without a word to anyone; ending a session, by DELETE or expiry, stops its isolated
   * instances). One EXISTS per such session, every sweep. Never rejects.
   */
  private async reapExpired (): Promise<void> {
    const sids = [...this.homed]
    const results = await Promise.allSettled(sids.map(async sid => await this.redis.exists(this.keys(sid)[0])))
    results.forEach((result, i) => { if (result.status === 'fulfilled' && result.value === 0) this.stopInstances(sids[i]) })
  }
}

/** Replaces a set's contents with `values` (the mirror of a Redis set). */
function mirror (target: Set<string>, values: string[]): void {
  if (target.size === values.length && values.every(v => target.has(v))) return
  target.clear()
  for (const v of values) target.add(v)
}

function parseCaps (text: string | null): JsonObject {
  if (text === null) return {}
  try {
    const value: unknown = JSON.parse(text)
    return isObject(value) ? value as JsonObject : {}
  } catch {
    return {}
  }
}

async function quit (connection: RedisConnection): Promise<void> {
  if (connection.status === 'ready') {
    await Promise.race([connection.quit().catch(() => {}), new Promise(resolve => setTimeout(resolve, 500).unref())])
  }
  connection.disconnect()
}

