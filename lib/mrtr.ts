/**
 * Multi-round-trip requests (MRTR) across eras (issue #10; DIGEST §6f "MRTR InputRequiredResult").
 *
 * - {@link StateSealer}: mcpx's `requestState` is opaque to the client and protected with
 *   HMAC-SHA256 under a key from config (`mrtr.stateKey`) or generated at start. It binds the
 *   originating method and name, what it continues (a parked call and its round, or an upstream's
 *   own state) and an expiry. The spec says a server must treat requestState as
 *   attacker-controlled (2026-07-28/basic/patterns/mrtr.mdx).
 * - {@link ParkedCall}: a call to a legacy upstream that asked its client a question while a
 *   modern (sessionless) client was waiting. The upstream call stays open; the question goes back
 *   to the client as an `InputRequiredResult`; the retry's `inputResponses` answer it. A parked
 *   call never resumed is cancelled upstream after `mrtr.parkTimeout`.
 *
 * The state is bound to the request, never to a session: modern traffic stays sessionless.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import type { JsonObject, UpstreamQuestion } from './upstreams/types.js'

/** What mcpx's requestState carries. `k: 'park'` continues a parked call; `k: 'wrap'` carries a modern upstream's own state. */
export interface StatePayload {
  /** 'park' | 'wrap' */
  k: 'park' | 'wrap'
  /** originating method */
  m: string
  /** originating tool/prompt name or resource URI */
  n: string
  /** expiry, ms since epoch */
  exp: number
  /** parked call id (k = 'park') */
  p?: string
  /** round of the parked call this state answers; a state for an older round is a replay (k = 'park') */
  r?: number
  /** the upstream's own requestState, verbatim (k = 'wrap'); absent when it sent none */
  u?: string
  /** the principal the state was issued to (lib/principal.ts Principal.key), when the caller had one */
  a?: string
  /** a nonce, so two states are never equal */
  x: string
}

/** Why a requestState was refused. */
export type StateRefusal = 'malformed' | 'tampered' | 'expired'

/**
 * Seals and opens requestState tokens: `v1.<base64url JSON>.<base64url HMAC-SHA256>`.
 * `open` never throws; it compares MACs in constant time.
 */
export class StateSealer {
  private readonly key: Buffer

  /** @param key at least 32 bytes; undefined generates a random key (states then die with the process) */
  constructor (key?: Buffer) {
    this.key = key ?? randomBytes(32)
    if (this.key.length < 32) throw new RangeError('mcpx: mrtr.stateKey must be at least 32 bytes')
  }

  /** Seals a payload (adds the nonce). */
  seal (payload: Omit<StatePayload, 'x'>): string {
    const body = Buffer.from(JSON.stringify({ ...payload, x: randomBytes(9).toString('base64url') })).toString('base64url')
    return `v1.${body}.${this.mac(body)}`
  }

  /** Opens a token: the payload, or why it is refused. */
  open (token: unknown, nowMs = Date.now()): { ok: true, payload: StatePayload } | { ok: false, reason: StateRefusal } {
    if (typeof token !== 'string') return { ok: false, reason: 'malformed' }
    const parts = token.split('.')
    if (parts.length !== 3 || parts[0] !== 'v1') return { ok: false, reason: 'malformed' }
    const expected = Buffer.from(this.mac(parts[1]), 'base64url')
    const given = Buffer.from(parts[2], 'base64url')
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'tampered' }
    let payload: StatePayload
    try {
      payload = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as StatePayload
    } catch {
      return { ok: false, reason: 'malformed' }
    }
    if (typeof payload.exp !== 'number' || payload.exp < nowMs) return { ok: false, reason: 'expired' }
    return { ok: true, payload }
  }

  private mac (body: string): string {
    return createHmac('sha256', this.key).update(body).digest('base64url')
  }
}

/** One event of a parked call: the upstream asked, finished, or failed. */
export type ParkedEvent =
  | { kind: 'question', question: UpstreamQuestion, answer: (result: JsonObject) => void, refuse: (error: Error & { code?: number }) => void }
  | { kind: 'result', result: JsonObject }
  | { kind: 'error', error: unknown }

/**
 * An upstream call that may park while its question waits for a modern client's retry.
 * Events arrive through {@link ParkedCall.next} in order.
 */
export class ParkedCall {
  private parkedId: string | undefined
  /** The id a requestState names; minted on first use, since most calls never park. */
  get id (): string { return (this.parkedId ??= randomBytes(12).toString('base64url')) }
  /** The round the next valid requestState must name; advanced on every question asked. */
  round = 0
  /** The question the client was asked and has not answered yet. */
  pending: { key: string, question: UpstreamQuestion, answer: (result: JsonObject) => void, refuse: (error: Error & { code?: number }) => void } | undefined
  /** Where the upstream's progress goes: the leg (request) waiting now. */
  progress: { onProgress: ((p: { progress: number, total?: number, message?: string }) => void) | undefined } | undefined
  /** Aborting it cancels the upstream call. */
  readonly controller = new AbortController()
  private readonly queue: ParkedEvent[] = []
  private waiter: ((event: ParkedEvent) => void) | undefined
  private timer: NodeJS.Timeout | undefined
  private questions = 0

  constructor (readonly method: string, readonly name: string) {}

  /** Feeds an event (from the upstream side). */
  push (event: ParkedEvent): void {
    const waiter = this.waiter
    if (waiter !== undefined) { this.waiter = undefined; waiter(event) } else this.queue.push(event)
  }

  /** The next event; resolves at once when one is queued. */
  async next (): Promise<ParkedEvent> {
    const queued = this.queue.shift()
    if (queued !== undefined) return queued
    return await new Promise(resolve => { this.waiter = resolve })
  }

  /** A fresh key for the next question (`q1`, `q2`, …). */
  nextKey (): string { return `q${++this.questions}` }

  /** Starts (or restarts) the park timer: on expiry `onExpire` runs (cancel upstream, forget the call). */
  park (timeoutMs: number, onExpire: () => void): void {
    this.unpark()
    this.timer = setTimeout(onExpire, timeoutMs)
    this.timer.unref()
  }

  /** Stops the park timer (a retry arrived). */
  unpark (): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
  }
}
