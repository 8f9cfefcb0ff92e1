/**
 * Per-session isolated upstream instances across replicas (docs/upstreams.md › Isolated upstreams, under
 * `sessions.store: "redis"`). A legacy session's instances (every upstream with `isolation:
 * "per-session"`) live on ONE replica: the first that needed one claims them (the session hash's
 * `inst` field, lib/sessions/redis-store.ts). A call of that session arriving at another replica is
 * forwarded to that owner over the replica channels (`<prefix>r:<rid>`), the way questions and
 * answers already travel; nothing is served by another instance.
 *
 * What is forwarded is the upstream call, not the client's request: policy, rate limits, hidden
 * names, MRTR and result shaping ran on the receiving replica as for any call. The owner runs the
 * call on the session's instance (lib/upstreams/registry.ts `callUpstream`) and sends back, in
 * order on one channel, its progress, log lines, questions (the receiving replica relays them to
 * the client and the answer back) and its result or error. A cancelled call is stopped on the owner.
 * The session's `resources/subscribe` and `resources/unsubscribe` are not forwarded here: the owner
 * follows the session's stored subscriptions (lib/sessions/redis-store.ts: applied at its claim, then on
 * each bus `sub` message, which every replica gets, ahead of any call forwarded after it), so one
 * taken by any replica reaches the instance, whichever replica holds the shared subscription.
 *
 * Messages (JSON, on the replica channels, beside lib/sessions/redis-store.ts' `send` and `ans`):
 *   to the owner:     `fcall` (sid, upstream, method, params, options), `fstop`, `fqans` (a question's answer)
 *   to the forwarder: `fprog`, `fnote`, `fask` (a question), `fdone` (result or error)
 *
 * Bounds and failures:
 * - at most {@link MAX_FORWARDED_CALLS} forwarded calls in flight from a replica, and as many served
 *   by it; past either: the `forwardBusy` refusal (503 + Retry-After; -32603).
 * - an owner that says nothing for the upstream's `timeout` plus {@link FORWARD_GRACE_MS} (the clock
 *   stops while a question waits for the client): the call fails -32603 and is stopped on the owner.
 * - an owner that is gone (no subscriber on its channel: the process ended, its instances with
 *   it): the session is ended and the call answered with the `sessionInstanceLost` refusal (404,
 *   -32603), so the client starts a new session knowingly instead of meeting a fresh instance.
 * - Redis unreachable: the `storeUnavailable` refusal (503 + Retry-After).
 * The caller's access token never goes through Redis: a forwarded call carries its principal
 * without `token` (an HTTP upstream with `auth.type: "token_exchange"` then refuses it clearly).
 */
import type { Logger } from '../telemetry/log.js'
import { INTERNAL_ERROR, UPSTREAM_ERROR, UpstreamRpcError, type JsonObject } from '../protocol/jsonrpc.js'
import { REFUSALS } from '../protocol/http-status.js'
import { InstanceForwardError, InstancesExhaustedError, UpstreamBusyError } from '../upstreams/errors.js'
import type { UpstreamCallOptions, UpstreamQuestion, UpstreamRegistry } from '../upstreams/contract.js'

/** Most forwarded calls in flight from one replica, and most served by one replica, at once. */
export const MAX_FORWARDED_CALLS = 256
/** Added to the upstream's call timeout before a silent owner fails the call, ms. */
export const FORWARD_GRACE_MS = 5_000

/** A JSON-RPC error as it crosses: code, message, data, and the refusal row of a refusal. */
interface WireError { c: number, m: string, d?: unknown, rf?: 'instancesExhausted' | 'upstreamBusy' | 'forwardBusy' }
type Progress = Parameters<NonNullable<UpstreamCallOptions['onProgress']>>[0]
type Note = Parameters<NonNullable<UpstreamCallOptions['onNotification']>>[0]

/** What of a call's options crosses (the rest is rebuilt on the owner). */
interface ForwardedOptions {
  era?: UpstreamCallOptions['era']
  meta?: JsonObject
  extra?: JsonObject
  principalKey?: string
  principal?: unknown
  /** Which callbacks the forwarder has: progress, log lines, questions. */
  progress: boolean
  notes: boolean
  ask: boolean
}

/** Messages about forwarded calls on the replica channels. `from` is the forwarder's replica id. */
export type ForwardMessage =
  | { t: 'fcall', from: string, cid: number, sid: string, up: string, m: string, p: JsonObject, o: ForwardedOptions }
  | { t: 'fstop', from: string, cid: number }
  | { t: 'fqans', from: string, cid: number, qid: number, r?: JsonObject, e?: WireError }
  | { t: 'fprog', cid: number, v: Progress }
  | { t: 'fnote', cid: number, n: Note }
  | { t: 'fask', cid: number, qid: number, q: UpstreamQuestion }
  | { t: 'fdone', cid: number, r?: JsonObject, e?: WireError }

/** The `t` values of {@link ForwardMessage}. */
export const FORWARD_MESSAGE_TYPES: ReadonlySet<string> = new Set(['fcall', 'fstop', 'fqans', 'fprog', 'fnote', 'fask', 'fdone'])

export interface InstanceForwarderOptions {
  /** This replica's id (lib/sessions/redis-store.ts `replicaId`). */
  replicaId: string
  /** Publishes `payload` on replica `replica`'s channel; resolves with the number of receivers (0: nobody listens). Rejects when Redis is down. */
  publish: (replica: string, payload: string) => Promise<number>
  /** Ends session `sid` everywhere (the store's `end`): its owner is gone. Never rejects. */
  endSession: (sid: string) => Promise<unknown>
  /** Runs a forwarded call here (the registry's `callUpstream`). */
  upstreams: Pick<UpstreamRegistry, 'callUpstream'>
  logger: Logger
}

/** A call this replica forwarded, waiting for the owner. */
interface Outbound {
  readonly cid: number
  readonly owner: string
  readonly options: UpstreamCallOptions
  readonly silenceMs: number
  readonly label: string
  resolve: (result: JsonObject) => void
  reject: (err: Error) => void
  timer: NodeJS.Timeout | undefined
  /** The owner's questions waiting for the client, by the owner's question id. */
  readonly questions: Map<number, AbortController>
  readonly onAbort: () => void
}

/** A call this replica serves for another. */
interface Inbound {
  readonly controller: AbortController
  readonly questions: Map<number, { resolve: (result: JsonObject) => void, reject: (err: Error) => void }>
  nextQid: number
}

/** See the module comment. No public method throws. */
export class InstanceForwarder {
  private readonly outbound = new Map<number, Outbound>()
  private readonly inbound = new Map<string, Inbound>()
  private nextCid = 0
  private readonly log: Logger

  constructor (private readonly options: InstanceForwarderOptions) {
    this.log = options.logger
  }

  /** Forwarded calls in flight from / served by this replica (tests, metrics). */
  get load (): { outbound: number, inbound: number } { return { outbound: this.outbound.size, inbound: this.inbound.size } }

  /**
   * Forwards one call of session `sid` to replica `owner` (see InstanceHome.forward in
   * lib/upstreams/isolation.ts for the contract). Rejects with UpstreamRpcError or InstanceForwardError.
   */
  async forward (sid: string, owner: string, upstream: string, method: string, params: JsonObject, options: UpstreamCallOptions, timeoutMs: number): Promise<JsonObject> {
    if (this.outbound.size >= MAX_FORWARDED_CALLS) {
      throw new InstanceForwardError('forwardBusy', INTERNAL_ERROR, `upstream ${upstream}: ${MAX_FORWARDED_CALLS} calls already forwarded to other replicas; retry later`)
    }
    if (options.signal.aborted) throw new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${upstream}: ${method} cancelled`)
    const cid = ++this.nextCid
    const message: ForwardMessage = { t: 'fcall', from: this.options.replicaId, cid, sid, up: upstream, m: method, p: params, o: forwardedOptions(options) }
    const payload = JSON.stringify(message)
    return await new Promise<JsonObject>((resolve, reject) => {
      const entry: Outbound = {
        cid,
        owner,
        options,
        silenceMs: timeoutMs + FORWARD_GRACE_MS,
        label: `upstream ${upstream}: ${method}`,
        resolve,
        reject,
        timer: undefined,
        questions: new Map(),
        onAbort: () => {
          this.send(owner, { t: 'fstop', from: this.options.replicaId, cid })
          this.settle(entry, new UpstreamRpcError(UPSTREAM_ERROR, `${entry.label} cancelled`))
        }
      }
      this.outbound.set(cid, entry)
      options.signal.addEventListener('abort', entry.onAbort, { once: true })
      this.arm(entry)
      this.options.publish(owner, payload).then(receivers => {
        if (receivers > 0) return
        // Nobody listens on the owner's channel: that replica is gone, and the instance state with it.
        // The call is answered first: ending the session cancels its requests in flight here, this one too.
        // The END command still reaches Redis before the client can send its next request.
        this.log.warn({ session: sid, owner }, 'the replica holding a session\'s isolated instances is gone: session ended')
        this.settle(entry, new InstanceForwardError('sessionInstanceLost', INTERNAL_ERROR, REFUSALS.sessionInstanceLost.message))
        void this.options.endSession(sid)
      }, (err: unknown) => {
        this.log.debug({ err }, 'forward: session store unavailable')
        this.settle(entry, new InstanceForwardError('storeUnavailable', INTERNAL_ERROR, REFUSALS.storeUnavailable.message))
      })
    })
  }

  /** A message for this replica whose `t` is in {@link FORWARD_MESSAGE_TYPES}. Never throws. */
  receive (message: ForwardMessage): void {
    switch (message.t) {
      case 'fcall': this.serve(message); return
      case 'fstop': this.inbound.get(`${message.from} ${message.cid}`)?.controller.abort(); return
      case 'fqans': {
        const question = this.inbound.get(`${message.from} ${message.cid}`)?.questions.get(message.qid)
        if (question === undefined) return
        if (message.r !== undefined) question.resolve(message.r)
        else question.reject(errorOf(message.e))
        return
      }
    }
    const entry = this.outbound.get(message.cid)
    if (entry === undefined) return
    this.arm(entry)
    switch (message.t) {
      case 'fprog': entry.options.onProgress?.(message.v); return
      case 'fnote': entry.options.onNotification?.(message.n); return
      case 'fask': this.ask(entry, message.qid, message.q); return
      case 'fdone':
        if (message.r !== undefined) this.settle(entry, undefined, message.r)
        else this.settle(entry, errorOf(message.e))
    }
  }

  /** Shutdown: fails the calls forwarded from here and stops the ones served here. Never throws. */
  close (): void {
    for (const entry of [...this.outbound.values()]) this.settle(entry, new UpstreamRpcError(UPSTREAM_ERROR, `${entry.label} failed: shutting down`))
    for (const served of this.inbound.values()) served.controller.abort()
  }

  /* ---------------------------------------------------------------- forwarder side */

  /** (Re)starts the silence timer; stopped while a question waits for the client. */
  private arm (entry: Outbound): void {
    clearTimeout(entry.timer)
    entry.timer = undefined
    if (entry.questions.size > 0) return
    entry.timer = setTimeout(() => {
      this.send(entry.owner, { t: 'fstop', from: this.options.replicaId, cid: entry.cid })
      this.settle(entry, new InstanceForwardError(undefined, INTERNAL_ERROR, `${entry.label}: no answer from the replica holding this session's isolated instance within ${entry.silenceMs} ms`))
    }, entry.silenceMs)
    entry.timer.unref()
  }

  private settle (entry: Outbound, err: Error | undefined, result?: JsonObject): void {
    if (this.outbound.get(entry.cid) !== entry) return
    this.outbound.delete(entry.cid)
    clearTimeout(entry.timer)
    entry.options.signal.removeEventListener('abort', entry.onAbort)
    for (const controller of entry.questions.values()) controller.abort()
    if (err !== undefined) entry.reject(err)
    else entry.resolve(result as JsonObject)
  }

  /** The owner's upstream asked a question: the client is asked here, the answer goes back. */
  private ask (entry: Outbound, qid: number, question: UpstreamQuestion): void {
    const controller = new AbortController()
    entry.questions.set(qid, controller)
    this.arm(entry)
    const asking = entry.options.onQuestion === undefined
      ? Promise.reject(new UpstreamRpcError(-32_601, `Method not found: ${question.method}`))
      : entry.options.onQuestion(question, controller.signal)
    asking.then(result => {
      this.send(entry.owner, { t: 'fqans', from: this.options.replicaId, cid: entry.cid, qid, r: result })
    }, (err: unknown) => {
      this.send(entry.owner, { t: 'fqans', from: this.options.replicaId, cid: entry.cid, qid, e: wireError(err) })
    }).finally(() => {
      if (entry.questions.delete(qid) && this.outbound.get(entry.cid) === entry) this.arm(entry)
    })
  }

  /* ---------------------------------------------------------------- owner side */

  private serve (message: Extract<ForwardMessage, { t: 'fcall' }>): void {
    const { from, cid } = message
    const key = `${from} ${cid}`
    const upstreams = this.options.upstreams
    if (upstreams.callUpstream === undefined) {
      this.send(from, { t: 'fdone', cid, e: { c: INTERNAL_ERROR, m: `upstream ${message.up}: the replica holding the instance cannot serve forwarded calls (its registry has no callUpstream)` } })
      return
    }
    if (this.inbound.size >= MAX_FORWARDED_CALLS) {
      this.send(from, { t: 'fdone', cid, e: { c: INTERNAL_ERROR, m: `upstream ${message.up}: ${MAX_FORWARDED_CALLS} forwarded calls already served by the replica holding the instance; retry later`, rf: 'forwardBusy' } })
      return
    }
    const served: Inbound = { controller: new AbortController(), questions: new Map(), nextQid: 0 }
    this.inbound.set(key, served)
    const o = message.o
    const options: UpstreamCallOptions = { signal: served.controller.signal, owner: message.sid }
    if (o.era !== undefined) options.era = o.era
    if (o.meta !== undefined) options.meta = o.meta
    if (o.extra !== undefined) options.extraParams = o.extra
    if (o.principalKey !== undefined) options.principalKey = o.principalKey
    if (o.principal !== undefined) options.principal = o.principal
    if (o.progress) options.onProgress = v => { this.sendOrStop(from, served, { t: 'fprog', cid, v }) }
    if (o.notes) options.onNotification = n => { this.sendOrStop(from, served, { t: 'fnote', cid, n }) }
    if (o.ask) {
      options.onQuestion = async (q, signal) => await new Promise<JsonObject>((resolve, reject) => {
        const qid = ++served.nextQid
        const onAbort = (): void => { served.questions.delete(qid); reject(new UpstreamRpcError(UPSTREAM_ERROR, 'question cancelled')) }
        served.questions.set(qid, {
          resolve: r => { served.questions.delete(qid); signal.removeEventListener('abort', onAbort); resolve(r) },
          reject: e => { served.questions.delete(qid); signal.removeEventListener('abort', onAbort); reject(e) }
        })
        signal.addEventListener('abort', onAbort, { once: true })
        this.sendOrStop(from, served, { t: 'fask', cid, qid, q })
      })
    }
    // A method of the registry: called on it (the registry was once reached through a Proxy that bound it).
    upstreams.callUpstream(message.up, message.m, message.p, options).then(r => {
      this.send(from, { t: 'fdone', cid, r })
    }, (err: unknown) => {
      this.send(from, { t: 'fdone', cid, e: wireError(err) })
    }).finally(() => { this.inbound.delete(key) })
  }

  /** Sends to the forwarder; when nobody listens there any more, stops the call it asked for. */
  private sendOrStop (replica: string, served: Inbound, message: ForwardMessage): void {
    this.options.publish(replica, JSON.stringify(message)).then(receivers => {
      if (receivers === 0) served.controller.abort()
    }, () => {})
  }

  private send (replica: string, message: ForwardMessage): void {
    this.options.publish(replica, JSON.stringify(message)).catch((err: unknown) => { this.log.debug({ err }, 'forwarded call: publish failed') })
  }
}

/** The options of a call as they cross: no signal, no callbacks, no trace, the principal without its token. */
function forwardedOptions (options: UpstreamCallOptions): ForwardedOptions {
  const o: ForwardedOptions = { progress: options.onProgress !== undefined, notes: options.onNotification !== undefined, ask: options.onQuestion !== undefined }
  if (options.era !== undefined) o.era = options.era
  if (options.meta !== undefined) o.meta = options.meta
  if (options.extraParams !== undefined) o.extra = options.extraParams
  if (options.principalKey !== undefined) o.principalKey = options.principalKey
  if (options.principal !== undefined && options.principal !== null && typeof options.principal === 'object') {
    const { token: _token, ...rest } = options.principal as Record<string, unknown>
    o.principal = rest
  }
  return o
}

/** An error as it crosses: an UpstreamRpcError's code, message and data (and refusal row), else -32603. */
function wireError (err: unknown): WireError {
  if (err instanceof InstancesExhaustedError || err instanceof UpstreamBusyError) return { c: err.code, m: err.message, d: err.data, rf: err.refusal }
  if (err instanceof UpstreamRpcError) return { c: err.code, m: err.message, d: err.data }
  const code = (err as { code?: unknown } | undefined)?.code
  return { c: typeof code === 'number' ? code : INTERNAL_ERROR, m: err instanceof Error ? err.message : 'Internal error' }
}

/** The error a {@link WireError} stands for, refusals rebuilt so HTTP answers them by their rows. */
function errorOf (e: WireError | undefined): UpstreamRpcError {
  if (e === undefined) return new UpstreamRpcError(INTERNAL_ERROR, 'Internal error')
  if (e.rf === 'instancesExhausted') return new InstancesExhaustedError(e.m)
  if (e.rf === 'upstreamBusy') return new UpstreamBusyError(e.m)
  if (e.rf === 'forwardBusy') return new InstanceForwardError('forwardBusy', e.c, e.m)
  return new UpstreamRpcError(e.c, e.m, e.d)
}
