/**
 * The human confirmation gate on `tools/call` (docs/policy.md › Confirmation): before a call the
 * caller's view selects (lib/policy/visibility.ts needsConfirmation) is forwarded, the user is asked
 * a form elicitation through the same channels the MRTR bridge (lib/dispatch/mrtr.ts) relays an
 * upstream's questions on:
 * - a legacy client (2025-06-18, 2025-11-25; HTTP session stream or `mcpx serve`): a real
 *   `elicitation/create` on the call's stream (DispatchContext.ask), answered within the call;
 * - a 2026-07-28 client: an `InputRequiredResult` whose `requestState` mcpx sealed with the bridge's
 *   StateSealer (`k: 'confirm'`, bound to the method, the exposed tool name, the caller, the
 *   SHA-256 of the endpoint, the catalogue name and the arguments, and an expiry); the retry's `inputResponses.mcpx_confirm` answers it.
 *   The approval is single-use: its nonce is spent in the ledger (lib/policy/confirm.ts; Redis when
 *   replicas share sessions), so a replay on any replica is refused.
 * Accept with `confirm: true` forwards the call; decline, cancel or `confirm: false` answer a tool
 * error (`isError: true`). A client that cannot be asked (no form elicitation capability, or a
 * revision without elicitation) never gets a silent call: a legacy client gets a tool error saying
 * so, a 2026-07-28 client `-32021` naming `elicitation` (the bridge's rule, DIGEST §6a).
 */
import { isObject, INTERNAL_ERROR, INVALID_PARAMS, type JsonObject, type JsonRpcRequest, UpstreamRpcError } from '../protocol/jsonrpc.js'
import { argumentsHash, argumentsShown, compileRedact, type ApprovalLedger, type ConfirmationConfig } from '../policy/confirm.js'
import { Cancellation } from '../base/cancel.js'
import type { DispatchContext } from './context.js'
import { elicitationModeMissing, type StateSealer } from './mrtr.js'

/** The key of mcpx's question in an InputRequiredResult's `inputRequests` (and the retry's `inputResponses`). */
export const CONFIRM_INPUT_KEY = 'mcpx_confirm'

/** What the gate decided for one request, read by the audit line (lib/dispatch/audit-event.ts). */
export interface ConfirmationRecord {
  /** `asked` (an InputRequiredResult went back), `confirmed`, `declined`, or `refused` (the client cannot be asked). */
  outcome: 'asked' | 'confirmed' | 'declined' | 'refused'
  /** The time the user took, ms: from the question to its answer (2026-07-28: from the state's issue to the retry). */
  ms?: number
}

/** What the gate does with a call: forward it (this request), or answer this result instead. */
export type GateDecision = { kind: 'forward', request: JsonRpcRequest } | { kind: 'answer', result: JsonObject }

/** Revisions that have elicitation (2025-06-18 introduced it). */
const ELICITING_REVISIONS = new Set(['2025-06-18', '2025-11-25', '2026-07-28'])

/** The answer's schema: one required boolean. */
function requestedSchema (exposed: string): JsonObject {
  return {
    type: 'object',
    properties: { confirm: { type: 'boolean', title: 'Allow this call', description: `Call ${exposed} with the arguments shown`, default: false } },
    required: ['confirm']
  }
}

function toolError (text: string): JsonObject {
  return { content: [{ type: 'text', text }], isError: true }
}

/** Whether an elicitation result is a yes: action `accept` with `content.confirm === true`. */
function accepted (answer: unknown): boolean {
  return isObject(answer) && answer.action === 'accept' && isObject(answer.content) && answer.content.confirm === true
}

/**
 * The gate. One per dispatcher; its settings follow a reload ({@link setSettings}).
 */
export class ConfirmGate {
  private settings: ConfirmationConfig
  private redact: RegExp | null
  private ledgerMade: ApprovalLedger | undefined
  /** What the gate decided per request, for its audit line. */
  private readonly records = new WeakMap<DispatchContext, ConfirmationRecord>()

  /**
   * @param sealer the MRTR bridge's sealer (one key, so every replica sharing `mrtr.stateKey` opens the state)
   * @param settings `confirmation` (expiry ms, redact globs, maxArgumentChars)
   * @param makeLedger builds the approvals ledger on first use (a Redis connection only when a gate is used)
   */
  constructor (private readonly sealer: StateSealer, settings: ConfirmationConfig, private readonly makeLedger: () => ApprovalLedger) {
    this.settings = settings
    this.redact = compileRedact(settings.redact)
  }

  /** A reload's `confirmation`: questions asked from now on use it. */
  setSettings (settings: ConfirmationConfig): void {
    this.settings = settings
    this.redact = compileRedact(settings.redact)
  }

  /** What the gate decided for the request of `ctx` (undefined: it was not gated). */
  recordOf (ctx: DispatchContext): ConfirmationRecord | undefined { return this.records.get(ctx) }

  /** Closes the ledger (shutdown). Never rejects. */
  async close (): Promise<void> { await this.ledgerMade?.close().catch(() => {}) }

  private get ledger (): ApprovalLedger { return (this.ledgerMade ??= this.makeLedger()) }

  /** The question: names the tool and shows its arguments (redacted, cut). */
  question (exposed: string, args: JsonObject | undefined): JsonObject {
    const shown = argumentsShown(args, this.redact, this.settings.maxArgumentChars)
    return {
      message: `Allow the call of the tool "${exposed}"?\nArguments: ${shown}`,
      requestedSchema: requestedSchema(exposed)
    }
  }

  /**
   * Decides a gated call of `exposed` with the client's `args`.
   * @returns forward (legacy: the request itself; 2026-07-28: the request without mcpx's requestState
   *          and inputResponses) or a result to answer instead (a decline, a refusal, or the InputRequiredResult)
   * @throws UpstreamRpcError -32602 for a tampered, expired, replayed or foreign requestState; -32603 when
   *         the shared ledger cannot be asked or is full (fail closed); the ask's error when the request was cancelled
   */
  async check (request: JsonRpcRequest, ctx: DispatchContext, exposed: string, catalogue: string, args: JsonObject | undefined): Promise<GateDecision> {
    return ctx.era === 'modern' ? await this.modern(request, ctx, exposed, catalogue, args) : await this.legacy(request, ctx, exposed, args)
  }

  private canElicit (ctx: DispatchContext): boolean {
    return ELICITING_REVISIONS.has(ctx.revision) && isObject(ctx.clientCapabilities.elicitation) &&
      elicitationModeMissing('elicitation/create', undefined, ctx.clientCapabilities) === undefined
  }

  private refusal (ctx: DispatchContext, exposed: string): string {
    this.records.set(ctx, { outcome: 'refused' })
    return `mcpx: the call of ${exposed} needs a human's confirmation, and this client cannot be asked (it declared no form elicitation capability${ELICITING_REVISIONS.has(ctx.revision) ? '' : `, and ${ctx.revision} has no elicitation`}); the tool was not called`
  }

  private declined (ctx: DispatchContext, exposed: string, ms: number, why = 'the user declined it'): GateDecision {
    this.records.set(ctx, { outcome: 'declined', ms })
    return { kind: 'answer', result: toolError(`mcpx: the call of ${exposed} was not made: ${why}`) }
  }

  private async legacy (request: JsonRpcRequest, ctx: DispatchContext, exposed: string, args: JsonObject | undefined): Promise<GateDecision> {
    const ask = ctx.ask
    if (ask === undefined || !this.canElicit(ctx)) return { kind: 'answer', result: toolError(this.refusal(ctx, exposed)) }
    const started = performance.now()
    const expiry = new Cancellation()
    const timer = setTimeout(() => expiry.abort(new Error('expired')), this.settings.expiry)
    timer.unref()
    const onCancel = (): void => expiry.abort(ctx.signal.reason)
    if (ctx.signal.aborted) onCancel(); else ctx.signal.addEventListener('abort', onCancel, { once: true })
    let answer: JsonObject
    try {
      answer = await ask({ method: 'elicitation/create', params: this.question(exposed, args) }, expiry.signal)
    } catch (err) {
      if (ctx.signal.aborted) throw err
      const ms = Math.round(performance.now() - started)
      if (expiry.aborted) return this.declined(ctx, exposed, ms, `no answer within ${this.settings.expiry} ms`)
      return this.declined(ctx, exposed, ms, `the client did not answer the confirmation (${(err as Error).message})`)
    } finally {
      clearTimeout(timer)
      ctx.signal.removeEventListener('abort', onCancel)
    }
    const ms = Math.round(performance.now() - started)
    if (!accepted(answer)) return this.declined(ctx, exposed, ms)
    this.records.set(ctx, { outcome: 'confirmed', ms })
    return { kind: 'forward', request }
  }

  private async modern (request: JsonRpcRequest, ctx: DispatchContext, exposed: string, catalogue: string, args: JsonObject | undefined): Promise<GateDecision> {
    const params = request.params ?? {}
    const hash = argumentsHash(args, `${ctx.endpoint ?? ''}\n${catalogue}`)
    if (params.requestState !== undefined) {
      const opened = this.sealer.open(params.requestState)
      if (!opened.ok) throw new UpstreamRpcError(INVALID_PARAMS, `Invalid params: requestState is ${opened.reason === 'expired' ? 'expired' : 'not one mcpx issued (tampered or malformed)'}`)
      const state = opened.payload
      if (state.k !== 'confirm') {
        // A retry of a call already forwarded: a parked call continues as it is (its arguments
        // were confirmed when it started); a retry that sends the request upstream again must
        // carry the confirmation of these very arguments.
        if (state.k === 'park') return { kind: 'forward', request }
        if (state.h !== undefined && state.h === hash && state.n === exposed) { ctx.confirmedArguments = hash; return { kind: 'forward', request } }
        throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: requestState does not carry a confirmation of this call; call again without it')
      }
      if (state.m !== request.method || state.n !== exposed || state.h !== hash) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: requestState belongs to another call (tool, endpoint or arguments differ)')
      if (state.a !== ctx.principal) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: requestState was issued to another caller')
      const answer = isObject(params.inputResponses) ? params.inputResponses[CONFIRM_INPUT_KEY] : undefined
      // Inputs missing on retry: ask again rather than fail (2026-07-28 mrtr.mdx SHOULD).
      if (!isObject(answer)) return this.ask(ctx, exposed, args, hash)
      const spent = await this.ledger.spend(state.x, state.exp)
      if (spent === 'used') throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: requestState was already used (replayed)')
      if (spent !== 'fresh') throw new UpstreamRpcError(INTERNAL_ERROR, spent === 'full' ? 'too many confirmations in flight; try again later' : 'the confirmation store cannot be reached')
      const ms = Math.max(0, Date.now() - (state.t ?? Date.now()))
      if (!accepted(answer)) return this.declined(ctx, exposed, ms)
      this.records.set(ctx, { outcome: 'confirmed', ms })
      ctx.confirmedArguments = hash
      const { requestState: _state, inputResponses: _responses, ...rest } = params
      return { kind: 'forward', request: { ...request, params: rest } }
    }
    return this.ask(ctx, exposed, args, hash)
  }

  /** The InputRequiredResult that asks a 2026-07-28 client; a client that cannot be asked gets -32021 (dispatcher: missingCapabilities). */
  private ask (ctx: DispatchContext, exposed: string, args: JsonObject | undefined, hash: string): GateDecision {
    if (!this.canElicit(ctx)) this.refusal(ctx, exposed)
    else this.records.set(ctx, { outcome: 'asked' })
    const now = Date.now()
    const requestState = this.sealer.seal({ k: 'confirm', m: 'tools/call', n: exposed, h: hash, t: now, exp: now + this.settings.expiry, ...(ctx.principal !== undefined ? { a: ctx.principal } : {}) })
    return {
      kind: 'answer',
      result: {
        resultType: 'input_required',
        inputRequests: { [CONFIRM_INPUT_KEY]: { method: 'elicitation/create', params: { mode: 'form', ...this.question(exposed, args) } } },
        requestState
      }
    }
  }
}
