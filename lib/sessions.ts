/**
 * Legacy Streamable HTTP sessions (seed › Streamable HTTP, 2025-03-26 … 2025-11-25; DIGEST §3d
 * rules 16–19). A session is minted by `initialize`, carries the negotiated revision and the
 * client's capabilities, holds at most one GET notification stream, its resource subscriptions,
 * its in-flight requests (for notifications/cancelled) and the questions upstreams asked its
 * client. It expires after `idleTimeoutMs` without a request (sliding).
 *
 * Session ids are 128 bits from the CSPRNG, base64url: visible ASCII only (rule 16).
 */
import { randomBytes } from 'node:crypto'
import type { Revision } from './revisions.js'
import type { JsonObject } from './upstreams/types.js'
import type { SseStream } from './sse.js'

/** A question mcpx asked the client on a session's behalf, waiting for the client's response POST. */
export interface PendingQuestion {
  resolve: (result: JsonObject) => void
  reject: (error: Error & { code?: number }) => void
}

/** One legacy session. Mutable state lives here; the store only finds and ends sessions. */
export interface Session {
  readonly id: string
  readonly revision: Revision
  readonly clientCapabilities: JsonObject
  /** ms since epoch of the last request, for idle expiry. */
  lastSeenMs: number
  /** The GET notification stream, when open (one per session: a second GET is 409). */
  stream: SseStream | undefined
  /** Resource URIs the client subscribed to with resources/subscribe. */
  readonly subscriptions: Set<string>
  /** In-flight requests by idKey, for notifications/cancelled. */
  readonly inflight: Map<string, AbortController>
  /** Questions asked of this session's client, by the id mcpx minted for them. */
  readonly questions: Map<string, PendingQuestion>
  /** Called once when the session ends (DELETE, expiry, shutdown). */
  onEnd: Array<() => void>
}

export interface SessionStoreOptions {
  /** A session idle this long expires, ms. */
  idleTimeoutMs: number
  /** Most sessions open at once; `mint` returns undefined past it. */
  maxSessions: number
}

/** Why `find` found no session. */
export type FindOutcome = { kind: 'found', session: Session } | { kind: 'unknown' }

/**
 * The in-memory session store (the default). Expiry is checked on every lookup and swept
 * every min(idle/2, 60 s) by an unref'd timer.
 */
export class SessionStore {
  private readonly sessions = new Map<string, Session>()
  private readonly sweeper: NodeJS.Timeout

  constructor (private readonly options: SessionStoreOptions) {
    const every = Math.max(1_000, Math.min(options.idleTimeoutMs / 2, 60_000))
    this.sweeper = setInterval(() => this.sweep(), every)
    this.sweeper.unref()
  }

  get size (): number { return this.sessions.size }

  /** Mints a session for a successful initialize. Returns undefined when maxSessions is reached. */
  mint (revision: Revision, clientCapabilities: JsonObject): Session | undefined {
    if (this.sessions.size >= this.options.maxSessions) {
      this.sweep()
      if (this.sessions.size >= this.options.maxSessions) return undefined
    }
    const session: Session = {
      id: randomBytes(16).toString('base64url'),
      revision,
      clientCapabilities,
      lastSeenMs: Date.now(),
      stream: undefined,
      subscriptions: new Set(),
      inflight: new Map(),
      questions: new Map(),
      onEnd: []
    }
    this.sessions.set(session.id, session)
    return session
  }

  /** Finds a live session and slides its expiry. An expired one is ended and reported unknown. */
  find (id: string): FindOutcome {
    const session = this.sessions.get(id)
    if (session === undefined) return { kind: 'unknown' }
    const now = Date.now()
    if (now - session.lastSeenMs > this.options.idleTimeoutMs && session.stream === undefined && session.inflight.size === 0) {
      this.end(id)
      return { kind: 'unknown' }
    }
    session.lastSeenMs = now
    return { kind: 'found', session }
  }

  /** Ends a session: closes its GET stream, aborts its in-flight requests, fails its questions. Returns false when unknown. */
  end (id: string): boolean {
    const session = this.sessions.get(id)
    if (session === undefined) return false
    this.sessions.delete(id)
    session.stream?.close()
    session.stream = undefined
    for (const controller of session.inflight.values()) controller.abort()
    for (const question of session.questions.values()) question.reject(Object.assign(new Error('session ended'), { code: -32_603 }))
    session.questions.clear()
    for (const fn of session.onEnd) {
      try { fn() } catch { /* a cleanup must not stop the others */ }
    }
    return true
  }

  /** Ends every session (shutdown). */
  closeAll (): void {
    clearInterval(this.sweeper)
    for (const id of [...this.sessions.keys()]) this.end(id)
  }

  /** Number of open GET streams, for the cap and metrics. */
  openStreams (): number {
    let n = 0
    for (const session of this.sessions.values()) if (session.stream !== undefined) n++
    return n
  }

  private sweep (): void {
    const now = Date.now()
    for (const [id, session] of this.sessions) {
      if (now - session.lastSeenMs > this.options.idleTimeoutMs && session.stream === undefined && session.inflight.size === 0) this.end(id)
    }
  }
}
