/**
 * Multi-round-trip requests (MRTR) across eras (DIGEST §6f "MRTR InputRequiredResult").
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
 * - {@link MrtrBridge}: the bridge itself, used by the dispatcher for tools/call, prompts/get and
 *   resources/read, and the one capability rule for questions to a client.
 * - A legacy (2025-11-25) upstream's `-32042` URLElicitationRequired error, which 2026-07-28 must
 *   not emit (DIGEST §6e), reaches a modern client as the InputRequiredResult that revision has for
 *   it: its `data.elicitations` as URL-mode `elicitation/create` inputRequests (without the
 *   2025-only elicitationId); the retry sends the original request to the upstream again.
 *
 * The state is bound to the request, never to a session: modern traffic stays sessionless.
 *
 * Over ~500 lines on purpose: the sealer, the parked call and the bridge share one state format and
 * one capability rule; apart, each would have to re-derive what the others bind.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { errorResponse, isObject, INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, MISSING_REQUIRED_CLIENT_CAPABILITY, URL_ELICITATION_REQUIRED, type JsonRpcErrorResponse, type JsonRpcRequest, type RequestId, UpstreamRpcError, type JsonObject } from '../protocol/jsonrpc.js'
import type { UpstreamCallOptions, UpstreamQuestion } from '../upstreams/contract.js'
import type { DispatchContext } from './context.js'
import type { Logger } from '../telemetry/log.js'
import { Cancellation, type Canceller } from '../base/cancel.js'

/**
 * What mcpx's requestState carries. `k: 'park'` continues a parked call; `k: 'wrap'` carries a
 * modern upstream's own state; `k: 'again'` answers a legacy upstream's -32042: the retry sends the
 * original request again (2025-11-25 client/elicitation.mdx: retry once the elicitation is done).
 */
export interface StatePayload {
  /** 'park' | 'wrap' | 'again', or 'confirm': the confirmation gate's question (lib/dispatch/confirm-gate.ts) */
  k: 'park' | 'wrap' | 'again' | 'confirm'
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
  /** the principal the state was issued to (lib/auth/principal.ts Principal.key), when the caller had one */
  a?: string
  /**
   * SHA-256 of the arguments a human confirmed (lib/policy/confirm.ts argumentsHash): on the
   * gate's question (k = 'confirm'), and on every state of a call forwarded after a confirmation,
   * so its retries may only repeat those arguments
   */
  h?: string
  /** when the gate's question was asked, ms since epoch (k = 'confirm'): the audit line's time the user took */
  t?: number
  /** a nonce, so two states are never equal; the gate's ledger spends it once */
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

  /**
   * The HMAC-SHA-256 of `body` under this sealer's key, base64url (43 characters). Shared with
   * lib/dispatch/tasks.ts (namespaced task ids), so replicas that share `mrtr.stateKey` read each other's ids.
   */
  sign (body: string): string {
    return this.mac(body)
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
  /** The id if one was minted (the call parked at least once), else undefined: reading it costs nothing. */
  get mintedId (): string | undefined { return this.parkedId }
  /** The round the next valid requestState must name; advanced on every question asked. */
  round = 0
  /** The question the client was asked and has not answered yet. */
  pending: { key: string, question: UpstreamQuestion, answer: (result: JsonObject) => void, refuse: (error: Error & { code?: number }) => void } | undefined
  /** Where the upstream's progress goes: the leg (request) waiting now. */
  progress: { onProgress: ((p: { progress: number, total?: number, message?: string }) => void) | undefined } | undefined
  /** Aborting it cancels the upstream call. */
  readonly controller: Canceller
  /** Events no leg was waiting for, oldest first; made on the first such event (most calls have none). */
  private queue: ParkedEvent[] | undefined
  private waiter: ((event: ParkedEvent) => void) | undefined
  private timer: NodeJS.Timeout | undefined
  private questions = 0

  /**
   * @param controller the first leg's own controller (DispatchContext.controller) when it has one:
   *        the call then needs no second controller and no listener on that leg's signal
   */
  constructor (readonly method: string, readonly name: string, controller: Canceller = new Cancellation()) {
    this.controller = controller
  }

  /** Feeds an event (from the upstream side). */
  push (event: ParkedEvent): void {
    const waiter = this.waiter
    if (waiter !== undefined) { this.waiter = undefined; waiter(event) } else (this.queue ??= []).push(event)
  }

  /** The next event; resolves at once when one is queued. Not async itself: one promise per wait, not two. */
  next (): Promise<ParkedEvent> {
    const queued = this.queue?.shift()
    if (queued !== undefined) return Promise.resolve(queued)
    return new Promise(resolve => { this.waiter = resolve })
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

/**
 * A fresh call's {@link ParkedCall}, its progress going to `leg` (the first leg's route), or, when
 * the first leg asked for no progress, to a route a retry leg may fill.
 */
function parkedCall (method: string, name: string, controller: Canceller | undefined, leg: ParkedCall['progress']): ParkedCall {
  const parked = new ParkedCall(method, name, controller)
  parked.progress = leg ?? { onProgress: undefined }
  return parked
}

// ---- the bridge ----------------------------------------------------------------------------------

/** The 2025-11-25 notification that a URL-mode elicitation finished out of band (`{ elicitationId }`). */
export const ELICITATION_COMPLETE = 'notifications/elicitation/complete'

/** Most MRTR rounds mcpx drives for a legacy client before giving up on an upstream that keeps asking. */
const MAX_INPUT_ROUNDS = 16

/** The client capability a server→client question needs (2025-06-18 lifecycle capability keys). */
const QUESTION_CAPABILITY = new Map<string, string>([
  ['elicitation/create', 'elicitation'],
  ['sampling/createMessage', 'sampling'],
  ['roots/list', 'roots']
])

/** Options of {@link MrtrBridge}. */
export interface MrtrBridgeOptions {
  /** Seals and opens mcpx's requestState. */
  sealer: StateSealer
  /** A parked call not resumed within this many ms is cancelled upstream (config mrtr.parkTimeout). */
  parkTimeoutMs: number
  /** How long a requestState mcpx issues stays valid, ms. */
  stateTtlMs: number
  logger: Logger
}

/**
 * The MRTR bridge between eras for the three methods that may need client input:
 * - a legacy client in front of a modern upstream: the upstream's `input_required` becomes real
 *   questions on the client's connection, then an upstream retry; the client sees one call;
 * - a modern client in front of a legacy upstream: the upstream's question parks the call and
 *   goes back as an `InputRequiredResult`; the retry's `inputResponses` answer it;
 * - a modern client in front of a modern upstream: the upstream's requestState is wrapped in mcpx's.
 * It also decides, once, whether a client can be asked a question at all ({@link refusal}).
 */
export class MrtrBridge {
  /** Calls parked on a question, by id (legacy upstream, modern client). */
  private readonly parked = new Map<string, ParkedCall>()
  /** Capabilities a modern request's upstream asked for and the client had not declared, per request. */
  private readonly missing = new WeakMap<DispatchContext, JsonObject>()

  constructor (private readonly options: MrtrBridgeOptions) {}

  /** Number of calls parked on a question, for metrics and tests. */
  get parkedCalls (): number { return this.parked.size }

  /** Cancels every parked call upstream (shutdown). */
  close (): void {
    for (const parked of this.parked.values()) { parked.unpark(); parked.controller.abort() }
    this.parked.clear()
  }

  /**
   * The one "client does not support X" rule: a question may reach a client only when it declared
   * the capability the question needs (2025-06-18 lifecycle capability keys). For a modern request
   * the missing capability is remembered, so its reply becomes -32021 naming it (DIGEST §6a)
   * whatever the upstream makes of the refusal ({@link takeMissing}).
   * @returns the error the upstream gets (-32601), or undefined when the client can be asked
   */
  refusal (question: UpstreamQuestion, ctx: DispatchContext): UpstreamRpcError | undefined {
    const capability = QUESTION_CAPABILITY.get(question.method)
    if (capability !== undefined && isObject(ctx.clientCapabilities[capability])) {
      const mode = elicitationModeMissing(question.method, question.params, ctx.clientCapabilities)
      if (mode === undefined) return undefined
      // 2025-11-25 client/elicitation.mdx: a client asked for an elicitation mode it did not declare
      // answers -32602; mcpx answers the upstream so on the client's behalf, and never relays it.
      if (ctx.era === 'modern') this.missing.set(ctx, { ...this.missing.get(ctx), elicitation: { [mode]: {} } })
      return new UpstreamRpcError(INVALID_PARAMS, `Client does not support ${mode}-mode elicitation: it declared no "elicitation.${mode}" capability`)
    }
    if (ctx.era === 'modern' && capability !== undefined) this.missing.set(ctx, { ...this.missing.get(ctx), [capability]: {} })
    return new UpstreamRpcError(METHOD_NOT_FOUND, `Client does not support ${question.method}: it declared no "${capability ?? question.method}" capability`)
  }

  /** The capabilities {@link refusal} found missing for this request (then forgotten), or undefined. */
  takeMissing (ctx: DispatchContext): JsonObject | undefined {
    const required = this.missing.get(ctx)
    this.missing.delete(ctx)
    return required
  }

  /**
   * The three methods that may need client input (DIGEST §6f: only tools/call, prompts/get and
   * resources/read return input_required), bridged across eras.
   * @param name the tool or prompt name, or the resource URI, that a requestState binds
   * @param options the request's upstream call options (lib/dispatch/call-options.ts callOptions),
   *        made by the caller for this call alone: the bridge takes them over and may change them
   *        (a modern call's signal, progress route and question handler are the bridge's own)
   * @param invoke makes the upstream call with the options it is given (once, or again on a retry)
   * @returns the result for the client's era; rejects with what the upstream call rejects with, or
   *          UpstreamRpcError -32602 for a requestState that does not open or belongs elsewhere
   */
  call (request: JsonRpcRequest, ctx: DispatchContext, name: string, options: UpstreamCallOptions, invoke: (options: UpstreamCallOptions) => Promise<JsonObject>): Promise<JsonObject> {
    // Not async itself: each era's path is one async frame, not two (a frame and a promise fewer per call).
    return ctx.era === 'modern' ? this.modern(request, ctx, name, options, invoke) : this.legacy(ctx, options, invoke)
  }

  /** A legacy client's call (see {@link call}). */
  private async legacy (ctx: DispatchContext, options: UpstreamCallOptions, invoke: (options: UpstreamCallOptions) => Promise<JsonObject>): Promise<JsonObject> {
    // Legacy client: a modern upstream's input_required becomes real questions on the client's
    // stream (under ids mcpx mints, capability-checked by onQuestion), then an upstream retry
    // with inputResponses and the upstream's own requestState. The client sees one call.
    let result = await invoke(options)
    for (let round = 1; result.resultType === 'input_required'; round++) {
      if (round > MAX_INPUT_ROUNDS) throw new UpstreamRpcError(INTERNAL_ERROR, `upstream asked for client input more than ${MAX_INPUT_ROUNDS} times`)
      const ask = options.onQuestion
      if (ask === undefined) throw new UpstreamRpcError(INTERNAL_ERROR, 'the upstream needs client input, and this connection cannot carry questions')
      const inputResponses: JsonObject = {}
      const completed: string[] = []
      for (const [key, inputRequest] of Object.entries(isObject(result.inputRequests) ? result.inputRequests : {})) {
        if (!isObject(inputRequest) || typeof inputRequest.method !== 'string') throw new UpstreamRpcError(INTERNAL_ERROR, `upstream sent a malformed inputRequests.${key}`)
        let params = isObject(inputRequest.params) ? inputRequest.params : undefined
        // A 2026-07-28 URL-mode elicitation has no elicitationId; a 2025-11-25 client needs one
        // (ElicitRequestURLParams): mcpx mints it, and sends notifications/elicitation/complete
        // for it once the upstream has taken the client's accept (the retry below answered).
        const urlMode = inputRequest.method === 'elicitation/create' && params?.mode === 'url'
        let elicitationId: string | undefined
        if (urlMode && params !== undefined) {
          elicitationId = typeof params.elicitationId === 'string' ? params.elicitationId : `mcpx-elicitation-${randomBytes(12).toString('base64url')}`
          params = { ...params, elicitationId }
        }
        try {
          const answer = await ask({ method: inputRequest.method, params }, ctx.signal)
          inputResponses[key] = answer
          if (elicitationId !== undefined && answer.action === 'accept') completed.push(elicitationId)
        } catch (err) {
          if (err instanceof UpstreamRpcError) throw err
          const code = typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : INTERNAL_ERROR
          throw new UpstreamRpcError(code, `the client did not answer ${inputRequest.method}: ${(err as Error).message}`)
        }
      }
      const extraParams: JsonObject = { inputResponses }
      if (typeof result.requestState === 'string') extraParams.requestState = result.requestState
      result = await invoke({ ...options, extraParams })
      for (const elicitationId of completed) ctx.notify?.({ jsonrpc: '2.0', method: ELICITATION_COMPLETE, params: { elicitationId } })
    }
    return result
  }

  /**
   * Modern client: a fresh call, a retry continuing a parked call, or a retry of a modern upstream's
   * own input_required. Not async itself (never throws): a fresh call costs no frame of its own here.
   */
  private modern (request: JsonRpcRequest, ctx: DispatchContext, name: string, options: UpstreamCallOptions, invoke: (options: UpstreamCallOptions) => Promise<JsonObject>): Promise<JsonObject> {
    const params = request.params ?? {}
    if (params.requestState !== undefined) return this.retry(request, ctx, name, options, invoke, params)
    // A first call may carry inputResponses (a server that sends no requestState gets none back,
    // mrtr.mdx): the upstream reads them, and ignores what it does not recognise.
    return this.fresh(request.method, ctx, name, options, invoke, params.inputResponses === undefined ? undefined : isObject(params.inputResponses) ? params.inputResponses : {})
  }

  /** A modern retry that names a requestState (see {@link modern}). */
  private async retry (request: JsonRpcRequest, ctx: DispatchContext, name: string, options: UpstreamCallOptions, invoke: (options: UpstreamCallOptions) => Promise<JsonObject>, params: JsonObject): Promise<JsonObject> {
    const inputResponses = isObject(params.inputResponses) ? params.inputResponses : {}
    {
      const opened = this.options.sealer.open(params.requestState)
      if (!opened.ok) throw new UpstreamRpcError(INVALID_PARAMS, `Invalid params: requestState is ${opened.reason === 'expired' ? 'expired' : 'not one mcpx issued (tampered or malformed)'}`)
      const state = opened.payload
      if (state.m !== request.method || state.n !== name) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: requestState belongs to another request (method or name differs)')
      if (state.a !== ctx.principal) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: requestState was issued to another caller')
      if (state.k === 'wrap') {
        const extraParams: JsonObject = { inputResponses }
        if (state.u !== undefined) extraParams.requestState = state.u
        return this.fromModernUpstream(request.method, name, await invoke({ ...options, extraParams }), ctx)
      }
      // The retry after a -32042 (URL-mode elicitation done out of band, or not): the original
      // request again, as a fresh call; the legacy upstream knows no inputResponses and decides.
      if (state.k === 'again') return await this.fresh(request.method, ctx, name, options, invoke, undefined)
      const parked = state.p === undefined ? undefined : this.parked.get(state.p)
      const pending = parked?.pending
      if (parked === undefined || pending === undefined) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: requestState refers to a call that is no longer waiting (completed, cancelled or timed out)')
      if (state.r !== parked.round) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: requestState was already used (replayed)')
      parked.round++
      const answer = inputResponses[pending.key]
      if (!isObject(answer)) {
        // Inputs missing on retry: answer with another InputRequiredResult rather than an error (mrtr.mdx SHOULD).
        parked.park(this.options.parkTimeoutMs, () => this.expire(parked))
        return this.inputRequired(parked, pending.key, pending.question, ctx)
      }
      parked.unpark()
      parked.pending = undefined
      pending.answer(answer)
      return await this.drive(parked, ctx, options)
    }
  }

  /**
   * A modern client's call that continues nothing of mcpx's: it may park on a legacy upstream's
   * question. Not async itself (nothing here throws). A call whose request has its own controller
   * (ctx.controller: 2026-07-28 HTTP) becomes a {@link ParkedCall} only when a question arrives:
   * most calls ask none, and then the bridge costs them one promise (the first question resolves
   * it with the first leg's InputRequiredResult while the upstream call goes on). Any other call
   * is parked from the start, with its own controller.
   */
  private fresh (method: string, ctx: DispatchContext, name: string, options: UpstreamCallOptions, invoke: (options: UpstreamCallOptions) => Promise<JsonObject>, inputResponses: JsonObject | undefined): Promise<JsonObject> {
    if (inputResponses !== undefined) options.extraParams = { inputResponses }
    const controller = ctx.controller
    // Progress goes to whichever leg (original request or retry) is waiting now.
    let leg: ParkedCall['progress']
    if (options.onProgress !== undefined) {
      const route = leg = { onProgress: options.onProgress }
      options.onProgress = (p) => route.onProgress?.(p)
    }
    if (controller === undefined) {
      const parked = parkedCall(method, name, undefined, leg)
      options.signal = parked.controller.signal
      options.onQuestion = async (question) => await new Promise<JsonObject>((resolve, reject) => {
        parked.push({ kind: 'question', question, answer: resolve, refuse: reject })
      })
      invoke(options).then(result => { parked.push({ kind: 'result', result }) }, (error: unknown) => { parked.push({ kind: 'error', error }) })
      return this.drive(parked, ctx, undefined)
    }
    options.signal = controller.signal
    return new Promise<JsonObject>((resolve, reject) => {
      let parked: ParkedCall | undefined
      options.onQuestion = async (question) => await new Promise<JsonObject>((answer, refuse) => {
        if (parked === undefined) {
          parked = parkedCall(method, name, controller, leg)
          resolve(this.drive(parked, ctx, undefined))
        }
        parked.push({ kind: 'question', question, answer, refuse })
      })
      invoke(options).then(result => {
        if (parked !== undefined) { parked.push({ kind: 'result', result }); return }
        try { resolve(this.fromModernUpstream(method, name, result, ctx)) } catch (err) { reject(err) }
      }, (error: unknown) => {
        if (parked !== undefined) { parked.push({ kind: 'error', error }); return }
        const elicitations = urlElicitationsRequired(error)
        if (elicitations === undefined) { reject(error); return }
        try { resolve(this.urlRequired(method, name, elicitations, ctx)) } catch (err) { reject(err) }
      })
    })
  }

  /**
   * Waits for the parked call's next event on behalf of one modern request (a leg).
   * @param retry a retry leg's own call options, whose progress route the upstream's progress now
   *        takes; undefined for the first leg, whose route {@link fresh} has just set
   */
  private async drive (parked: ParkedCall, ctx: DispatchContext, retry: UpstreamCallOptions | undefined): Promise<JsonObject> {
    if (retry !== undefined && parked.progress !== undefined) parked.progress.onProgress = retry.onProgress
    // Seed › Closing the stream is cancellation: a leg whose client goes away cancels the upstream
    // call. A first leg whose controller the call adopted cancels it by aborting that controller.
    const onAbort = ctx.signal === parked.controller.signal ? undefined : (): void => { parked.unpark(); parked.controller.abort(); this.forget(parked) }
    if (onAbort !== undefined) {
      if (ctx.signal.aborted) onAbort()
      ctx.signal.addEventListener('abort', onAbort, { once: true })
    }
    try {
      for (;;) {
        const event = await parked.next()
        if (event.kind === 'result') { this.forget(parked); return this.fromModernUpstream(parked.method, parked.name, event.result, ctx) }
        if (event.kind === 'error') {
          this.forget(parked)
          const elicitations = urlElicitationsRequired(event.error)
          if (elicitations === undefined) throw event.error
          return this.urlRequired(parked.method, parked.name, elicitations, ctx)
        }
        // Only questions the client declared a capability for are relayed; the upstream gets an
        // error, and the client -32021 naming the capability (handle() reads takeMissing).
        const refused = this.refusal(event.question, ctx)
        if (refused !== undefined) { event.refuse(refused); continue }
        const key = parked.nextKey()
        parked.pending = { key, question: event.question, answer: event.answer, refuse: event.refuse }
        this.parked.set(parked.id, parked)
        parked.park(this.options.parkTimeoutMs, () => this.expire(parked))
        return this.inputRequired(parked, key, event.question, ctx)
      }
    } finally {
      if (onAbort !== undefined) ctx.signal.removeEventListener('abort', onAbort)
    }
  }

  /** Drops a call from the parked table; a call that never parked has no id and is not there (no random bytes read). */
  private forget (parked: ParkedCall): void {
    const id = parked.mintedId
    if (id !== undefined) this.parked.delete(id)
  }

  private inputRequired (parked: ParkedCall, key: string, question: UpstreamQuestion, ctx: DispatchContext): JsonObject {
    const requestState = this.seal({ k: 'park', m: parked.method, n: parked.name, p: parked.id, r: parked.round }, ctx)
    const inputRequest: JsonObject = { method: question.method }
    if (question.params !== undefined) inputRequest.params = forModernClient(question.method, withoutProgressToken(question.params))
    return { resultType: 'input_required', inputRequests: { [key]: inputRequest }, requestState }
  }

  /**
   * The InputRequiredResult for a legacy upstream's -32042 (2026-07-28 must not emit the error):
   * one URL-mode `elicitation/create` per `data.elicitations` item (`u1`, `u2`, …), without the
   * 2025-only elicitationId, and a requestState whose retry sends the request again. A client
   * without `elicitation.url` gets -32021 naming it (handle(): missingCapabilities).
   */
  private urlRequired (method: string, name: string, elicitations: JsonObject[], ctx: DispatchContext): JsonObject {
    const inputRequests: JsonObject = {}
    elicitations.forEach((params, i) => { inputRequests[`u${i + 1}`] = { method: 'elicitation/create', params: forModernClient('elicitation/create', params) } })
    return { resultType: 'input_required', inputRequests, requestState: this.seal({ k: 'again', m: method, n: name }, ctx) }
  }

  /** A parked call never resumed: cancel it upstream and forget it. */
  private expire (parked: ParkedCall): void {
    this.options.logger.debug({ method: parked.method, name: parked.name }, 'parked call expired: cancelling upstream')
    parked.pending?.refuse(Object.assign(new Error('the client did not answer in time'), { code: INTERNAL_ERROR }))
    parked.pending = undefined
    parked.controller.abort()
    this.parked.delete(parked.id)
  }

  /**
   * A modern client's view of an upstream result. A modern upstream's input_required passes
   * through with its requestState wrapped in mcpx's, so the retry reaches the same upstream with
   * the state intact. Synchronous (it awaits nothing): no promise per call.
   */
  private fromModernUpstream (method: string, name: string, result: JsonObject, ctx: DispatchContext): JsonObject {
    if (result.resultType !== 'input_required') return result
    // Inputs the client declared no capability for become -32021 in handle() (missingCapabilities).
    const wrapped: JsonObject = { resultType: 'input_required' }
    if (isObject(result.inputRequests)) wrapped.inputRequests = result.inputRequests
    wrapped.requestState = this.seal({ k: 'wrap', m: method, n: name, ...(typeof result.requestState === 'string' ? { u: result.requestState } : {}) }, ctx)
    return wrapped
  }

  private seal (payload: Omit<StatePayload, 'x' | 'exp' | 'a'>, ctx: DispatchContext): string {
    return this.options.sealer.seal({
      ...payload,
      exp: Date.now() + this.options.stateTtlMs,
      ...(ctx.principal !== undefined ? { a: ctx.principal } : {}),
      ...(ctx.confirmedArguments !== undefined ? { h: ctx.confirmedArguments } : {})
    })
  }
}

/**
 * The client capabilities an upstream's `input_required` result needs and the request did not
 * declare (2026-07-28 mrtr.mdx: "The server MUST NOT request inputs the client lacks the capability
 * for"): `{ elicitation: {} }` etc., or undefined when none is missing (or the result is complete).
 * Never throws.
 */
export function missingCapabilities (result: JsonObject, clientCapabilities: JsonObject): JsonObject | undefined {
  if (result.resultType !== 'input_required' || !isObject(result.inputRequests)) return undefined
  let required: JsonObject | undefined
  for (const input of Object.values(result.inputRequests)) {
    const capability = isObject(input) && typeof input.method === 'string' ? QUESTION_CAPABILITY.get(input.method) : undefined
    if (capability === undefined) continue
    if (!isObject(clientCapabilities[capability])) { (required ??= {})[capability] = {}; continue }
    const mode = elicitationModeMissing((input as JsonObject).method as string, isObject((input as JsonObject).params) ? (input as JsonObject).params as JsonObject : undefined, clientCapabilities)
    if (mode !== undefined) (required ??= {}).elicitation = { ...(isObject(required.elicitation) ? required.elicitation : {}), [mode]: {} }
  }
  return required
}

/**
 * The elicitation mode a question needs and the client did not declare (2025-11-25 and 2026-07-28
 * `ClientCapabilities.elicitation.{form,url}`; an empty `elicitation: {}` means form only, for
 * backwards compatibility): `'url'` for a URL-mode `elicitation/create` without `elicitation.url`,
 * `'form'` for a form-mode one when the client declared only other modes; undefined when the client
 * can take it, or the question is not an elicitation (URL-mode elicitation). Never throws.
 */
export function elicitationModeMissing (method: string, params: JsonObject | undefined, clientCapabilities: JsonObject): 'url' | 'form' | undefined {
  if (method !== 'elicitation/create') return undefined
  const declared = isObject(clientCapabilities.elicitation) ? clientCapabilities.elicitation : {}
  if (params?.mode === 'url') return isObject(declared.url) ? undefined : 'url'
  const anyMode = declared.form !== undefined || declared.url !== undefined
  return !anyMode || isObject(declared.form) ? undefined : 'form'
}

/** The -32021 error (400) naming the capabilities in `data.requiredCapabilities` (DIGEST §6a, §6e). */
export function missingCapabilityError (id: RequestId, required: JsonObject): JsonRpcErrorResponse {
  return errorResponse(id, MISSING_REQUIRED_CLIENT_CAPABILITY, `Missing required client capability: ${Object.keys(required).join(', ')}`, { requiredCapabilities: required })
}

/**
 * The URL-mode elicitations of a 2025-11-25 `-32042` URLElicitationRequired error
 * (client/elicitation.mdx: `data.elicitations`, each ElicitRequestURLParams: mode `url`, url,
 * message, elicitationId), or undefined for any other error, or one whose `data` is not that
 * shape (then it reaches the client unchanged). Never throws.
 */
export function urlElicitationsRequired (error: unknown): JsonObject[] | undefined {
  if (!(error instanceof UpstreamRpcError) || error.code !== URL_ELICITATION_REQUIRED || !isObject(error.data)) return undefined
  const elicitations = error.data.elicitations
  if (!Array.isArray(elicitations) || elicitations.length === 0) return undefined
  for (const item of elicitations) {
    if (!isObject(item) || item.mode !== 'url' || typeof item.url !== 'string' || typeof item.message !== 'string') return undefined
  }
  return elicitations as JsonObject[]
}

/**
 * A legacy upstream's URL-mode elicitation without its `elicitationId`, which 2026-07-28 removed
 * (DIGEST §7: "notifications/elicitation/complete and elicitationId removed"; the 2026-07-28
 * ElicitRequestURLParams has message, mode and url). The upstream's id stays on mcpx's side: the
 * retry's answer goes to the upstream's own waiting request. Other questions unchanged. Never throws.
 */
function forModernClient (method: string, params: JsonObject): JsonObject {
  if (method !== 'elicitation/create' || params.mode !== 'url' || !('elicitationId' in params)) return params
  const { elicitationId: _id, ...rest } = params
  return rest
}

/**
 * A legacy upstream's question params without `_meta.progressToken` (and without `_meta` once it
 * is empty). The token belongs to mcpx's own upstream connection and means nothing to the modern
 * client the question is relayed to in an InputRequiredResult (DIGEST §6f; mrtr.mdx: an
 * inputRequest is the question, not a request on any connection). Other `_meta` keys stay.
 * Returns `params` itself when there is nothing to drop. Never throws.
 */
function withoutProgressToken (params: JsonObject): JsonObject {
  const meta = params._meta
  if (!isObject(meta) || !('progressToken' in meta)) return params
  const { progressToken: _token, ...keptMeta } = meta
  const { _meta: _omit, ...rest } = params
  return Object.keys(keptMeta).length === 0 ? rest : { ...rest, _meta: keptMeta }
}

