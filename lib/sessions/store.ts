/**
 * Legacy Streamable HTTP sessions (seed › Streamable HTTP, 2025-03-26 … 2025-11-25; DIGEST §3d
 * rules 16–19). A session is minted by `initialize`, carries the negotiated revision
 * and the client's capabilities, holds at most one GET notification stream, its resource
 * subscriptions, its in-flight requests (for notifications/cancelled) and the questions upstreams
 * asked its client. It expires after `idleTimeoutMs` without a request (sliding).
 *
 * {@link SessionStore} is the interface the HTTP face uses; two implementations:
 * - {@link MemorySessionStore} (default, `sessions.store: "memory"`): everything in this process.
 * - `RedisSessionStore` (lib/sessions/redis-store.ts, `sessions.store: "redis"`): the facts (revision,
 *   capabilities, subscriptions, sliding expiry as Redis TTLs) in Redis, so any replica serves
 *   any request of a session; live objects (streams, cancellations, question resolvers) stay
 *   in the replica that holds them, reached through Redis pub/sub.
 *
 * Every lookup is a Promise so that the Redis store can answer; the memory store's promises are
 * already resolved. A store reports `unavailable` (never throws) when its backend is down: the
 * HTTP face then answers 503.
 *
 * Session ids are 128 bits from the CSPRNG, base64url: visible ASCII only (rule 16).
 */
import { createHash, randomBytes } from 'node:crypto'
import type { Revision } from '../protocol/revisions.js'
import type { InstanceHome, InstanceOwner } from '../upstreams/isolation.js'
import type { JsonObject, JsonRpcMessage, JsonRpcResponse } from '../protocol/jsonrpc.js'
import type { SubscriptionSet } from '../dispatch/context.js'
import { Peer, type OpenStream } from '../connection/peer.js'

export type { SubscriptionSet }

/**
 * One legacy session as this process sees it. The facts (`revision`, `clientCapabilities`,
 * `subscriptions`) are the store's; the live objects (`stream`, `peer`) belong to this process.
 * With the Redis store, `subscriptions` mirrors the set kept in Redis.
 */
export interface Session {
  readonly id: string
  readonly revision: Revision
  readonly clientCapabilities: JsonObject
  /** ms since epoch of the last request seen by this process. */
  lastSeenMs: number
  /** The GET notification stream, when this process holds it (one per session: a second GET is 409). */
  stream: OpenStream | undefined
  /** Resource URIs the client subscribed to with resources/subscribe (live set, read by the hub). */
  readonly subscriptions: Set<string>
  /**
   * The principal key the session was minted for (it is bound to it), when known here: its
   * subscriptions are released as its requests made them (lib/dispatch/call-options.ts instanceOwnerOf).
   */
  principal?: string
  /**
   * The connection core (lib/connection/peer.ts) of this session in this process: its requests in flight here
   * (for notifications/cancelled) and the questions they asked its client.
   */
  readonly peer: Peer
  /**
   * Where its per-session isolated upstream instances live, when replicas share the
   * session (Redis store: lib/sessions/instances.ts). Undefined: this process (the memory store).
   */
  readonly instanceHome?: InstanceHome
  /**
   * The binding key this session's id was last proved bound to ({@link sessionUsableBy}): a memo
   * that spares the SHA-256 of {@link sessionBoundTo} on each later request of the same caller.
   * `''` stands for no key (no auth and no Authorization header).
   */
  boundKey?: string
}

/** The part of the upstream registry a store uses: refcounted upstream resource subscriptions. */
export interface UpstreamSubscriptions {
  subscribe: (uri: string) => Promise<void>
  unsubscribe: (uri: string, who?: InstanceOwner) => Promise<void>
  /** Stops the session's isolated upstream instances. Never rejects. */
  endSession?: (key: string) => Promise<void>
}

export interface SessionStoreOptions {
  /** A session idle this long expires, ms. */
  idleTimeoutMs: number
  /** Most sessions open at once (memory store: in this process); `mint` answers `full` past it. */
  maxSessions: number
  /** Upstream subscriptions to release when a session ends. */
  upstreams?: UpstreamSubscriptions
}

export type FindOutcome = { kind: 'found', session: Session } | { kind: 'unknown' } | { kind: 'unavailable' }
export type MintOutcome = { kind: 'minted', session: Session } | { kind: 'full' } | { kind: 'unavailable' }
export type EndOutcome = 'ended' | 'unknown' | 'unavailable'
/** Outcome of claiming a session's one GET stream: opened, 409, or 503 (store down). */
export type StreamOutcome = 'open' | 'busy' | 'unavailable'

/** The session store the HTTP face uses. No method throws; backend failures are `unavailable`. */
export interface SessionStore {
  /** Which implementation this is. */
  readonly kind: 'memory' | 'redis'
  /** Sessions this process holds state for (metrics). */
  readonly size: number
  /** Mints a session for a successful initialize. */
  mint: (revision: Revision, clientCapabilities: JsonObject, principal?: string) => Promise<MintOutcome>
  /**
   * Finds a live session and slides its expiry. An expired, deleted or never-minted one is unknown.
   * The memory store answers at once (no promise: a legacy request's lookup costs no microtask
   * turn); the Redis store answers with a promise (one round trip).
   */
  find: (id: string) => FindOutcome | Promise<FindOutcome>
  /** Ends a session everywhere: closes its GET stream, aborts its requests, fails its questions. */
  end: (id: string) => Promise<EndOutcome>
  /**
   * Claims the session's one GET stream slot and, when granted, calls `open` (synchronously) to
   * start the stream, which this process then holds until it closes (the slot is freed then).
   */
  openStream: (session: Session, open: () => OpenStream) => Promise<StreamOutcome>
  /** Sends a message on the session's GET stream, wherever it is held. Resolves false when none is open. */
  sendToStream: (session: Session, message: JsonRpcMessage) => Promise<boolean>
  /** The subscription set a request of this session acts on. */
  subscriptionsOf: (session: Session) => SubscriptionSet
  /** notifications/cancelled: cancels the session's request `requestId` (the notification's param, as parsed), wherever it runs. */
  cancel: (session: Session, requestId: unknown) => void
  /** Records that a question `id` asked here waits for this session's client. Resolves false when that could not be recorded. */
  questionAsked: (session: Session, id: string) => Promise<boolean>
  /** Forgets question `id` (answered, cancelled or failed). */
  questionSettled: (session: Session, id: string) => void
  /**
   * Delivers a client's response that no question of this process waits for to the process that
   * asked it. Resolves true when one was waiting (the POST is then 202), else false (400).
   */
  forwardAnswer: (session: Session, response: JsonRpcResponse) => Promise<boolean>
  /** Shutdown: releases what this process holds (the memory store ends every session). */
  closeAll: () => Promise<void>
}

/** Mints a session id: 128 bits from the CSPRNG, base64url. */
export function newSessionId (principal = ''): string {
  const secret = randomBytes(16).toString('base64url')
  return secret + '.' + sessionTag(secret, principal)
}

/**
 * The tag that binds a session id to the caller that minted it: the first 64 bits of
 * SHA-256(secret part + principal), base64url. Only a request from the same principal
 * (lib/auth/principal.ts Principal.key) can use the session; anyone else gets 404, as
 * for an unknown session, even with a leaked id. Stateless: it works on every replica.
 */
function sessionTag (secret: string, principal: string): string {
  return createHash('sha256').update(secret).update('\0').update(principal).digest('base64url').slice(0, 11)
}

/** True when `id` was minted for `principal` (see {@link newSessionId}). Never throws. */
export function sessionBoundTo (id: string, principal = ''): boolean {
  const dot = id.indexOf('.')
  if (dot <= 0) return false
  return id.slice(dot + 1) === sessionTag(id.slice(0, dot), principal)
}

/**
 * True when a request whose binding key is `key` (lib/auth/principal.ts bindingKeyOf; undefined:
 * none) may use `session`: its id is bound to that key ({@link sessionBoundTo}). The last key
 * proved is kept on the session ({@link Session.boundKey}), so a caller's later requests compare
 * two strings instead of hashing; another key is hashed, and a key that fails is never kept.
 */
export function sessionUsableBy (session: Session, key: string | undefined): boolean {
  const wanted = key ?? ''
  if (session.boundKey === wanted) return true
  if (!sessionBoundTo(session.id, wanted)) return false
  session.boundKey = wanted
  return true
}

/** A session object with empty live state. */
export function newSession (id: string, revision: Revision, clientCapabilities: JsonObject, subscriptions: Iterable<string> = []): Session {
  // Random question ids (no other client can answer one); a reused request id takes over cancellation.
  const peer = new Peer({ questionIds: 'random', duplicateIds: 'replace', legacy: { revision, clientCapabilities } })
  return { id, revision, clientCapabilities, lastSeenMs: Date.now(), stream: undefined, subscriptions: new Set(subscriptions), peer }
}

/** Ends a session's live state in this process: stream closed, requests cancelled (replies withheld), questions failed. */
export function releaseLive (session: Session): void {
  session.stream?.close()
  session.stream = undefined
  session.peer.cancelAll('session ended')
  session.peer.end('session ended')
}

/** True when a session holds an open GET stream in this process. */
function hasOpenStream (session: Session): boolean {
  return session.stream !== undefined && !session.stream.isClosed
}

/**
 * The in-memory session store (the default). Expiry is checked on every lookup and swept
 * every min(idle/2, 60 s) by an unref'd timer. A session with an open GET stream or a request
 * in flight does not expire.
 */
export class MemorySessionStore implements SessionStore {
  readonly kind = 'memory' as const
  private readonly sessions = new Map<string, Session>()
  private readonly claimed = new WeakSet<Session>()
  private readonly sweeper: NodeJS.Timeout

  constructor (private readonly options: SessionStoreOptions) {
    const every = Math.max(1_000, Math.min(options.idleTimeoutMs / 2, 60_000))
    this.sweeper = setInterval(() => this.sweep(), every)
    this.sweeper.unref()
  }

  get size (): number { return this.sessions.size }

  async mint (revision: Revision, clientCapabilities: JsonObject, principal?: string): Promise<MintOutcome> {
    if (this.sessions.size >= this.options.maxSessions) {
      this.sweep()
      if (this.sessions.size >= this.options.maxSessions) return { kind: 'full' }
    }
    const session = newSession(newSessionId(principal), revision, clientCapabilities)
    if (principal !== undefined) session.principal = principal
    this.sessions.set(session.id, session)
    return { kind: 'minted', session }
  }

  find (id: string): FindOutcome {
    const session = this.sessions.get(id)
    if (session === undefined) return { kind: 'unknown' }
    const now = Date.now()
    if (this.idle(session, now)) {
      this.endNow(id)
      return { kind: 'unknown' }
    }
    session.lastSeenMs = now
    return { kind: 'found', session }
  }

  async end (id: string): Promise<EndOutcome> {
    return this.endNow(id) ? 'ended' : 'unknown'
  }

  async openStream (session: Session, open: () => OpenStream): Promise<StreamOutcome> {
    if (this.claimed.has(session) || hasOpenStream(session)) return 'busy'
    const stream = open()
    session.stream = stream
    this.claimed.add(session)
    void stream.closed.then(() => {
      this.claimed.delete(session)
      if (session.stream === stream) session.stream = undefined
    })
    return 'open'
  }

  async sendToStream (session: Session, message: JsonRpcMessage): Promise<boolean> {
    return session.stream?.send(message) ?? false
  }

  subscriptionsOf (session: Session): SubscriptionSet { return session.subscriptions }

  cancel (session: Session, requestId: unknown): void {
    // Only this session's own requests can be cancelled: isolation by construction.
    session.peer.cancel(requestId)
  }

  async questionAsked (): Promise<boolean> { return true }
  questionSettled (): void {}
  async forwardAnswer (): Promise<boolean> { return false }

  async closeAll (): Promise<void> {
    clearInterval(this.sweeper)
    for (const id of [...this.sessions.keys()]) this.endNow(id)
  }

  private idle (session: Session, now: number): boolean {
    return now - session.lastSeenMs > this.options.idleTimeoutMs && session.stream === undefined && session.peer.inFlight === 0
  }

  private endNow (id: string): boolean {
    const session = this.sessions.get(id)
    if (session === undefined) return false
    this.sessions.delete(id)
    releaseLive(session)
    const upstreams = this.options.upstreams
    // The owner its subscriptions were made as (lib/dispatch/call-options.ts instanceOwnerOf: its id and principal).
    const owner = session.principal === undefined ? { owner: id } : { owner: id, principalKey: session.principal }
    if (upstreams !== undefined) for (const uri of session.subscriptions) void upstreams.unsubscribe(uri, owner).catch(() => {})
    // Its isolated upstream instances stop with it (DELETE, expiry, shutdown).
    if (upstreams?.endSession !== undefined) void upstreams.endSession(id)
    return true
  }

  private sweep (): void {
    const now = Date.now()
    for (const [id, session] of this.sessions) if (this.idle(session, now)) this.endNow(id)
  }
}
