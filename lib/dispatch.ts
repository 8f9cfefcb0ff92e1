/**
 * The method dispatcher: the one core that answers every request, whichever transport
 * (Streamable HTTP or stdio) and era carried it. Transports own framing, sessions,
 * cancellation bookkeeping and streams; this module owns what a method means.
 *
 * Era shaping (DIGEST §6f): a modern result carries `resultType`, `_meta` serverInfo and, on
 * the cacheable methods, `ttlMs`/`cacheScope`; a legacy result carries none of these, even when
 * the upstream that produced it is modern.
 */
import type { Logger } from './log.js'
import {
  errorResponse, successResponse, isObject,
  INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, MISSING_REQUIRED_CLIENT_CAPABILITY, RESOURCE_NOT_FOUND, UPSTREAM_ERROR,
  type JsonRpcRequest, type JsonRpcResponse, type JsonRpcErrorResponse, type RequestId
} from './jsonrpc.js'
import { MODERN_REVISIONS, SUPPORTED_REVISIONS, negotiateLegacy, unsupportedVersion, type Revision } from './revisions.js'
import { META_CLIENT_CAPABILITIES, META_LOG_LEVEL, META_PROTOCOL_VERSION, META_SERVER_INFO, metaOf } from './inbound.js'
import { UpstreamRpcError, type JsonObject, type UpstreamCallOptions, type UpstreamQuestion, type UpstreamRegistry } from './upstreams/types.js'
import type { DispatchContext } from './dispatch-types.js'
import { ParkedCall, StateSealer, type StatePayload } from './mrtr.js'

export type { DispatchContext } from './dispatch-types.js'

/** Methods whose modern `complete` results carry `ttlMs` and `cacheScope` (2026-07-28 caching.mdx; DIGEST A20). */
const CACHEABLE = new Set(['server/discover', 'tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read'])

/** Methods that exist only in the legacy era: a modern request for them is -32601 (404). */
const LEGACY_ONLY = new Set(['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe'])

/** Methods that exist only in the modern era (served as modern on stdio even without `_meta`). */
export const MODERN_ONLY: ReadonlySet<string> = new Set(['server/discover', 'subscriptions/listen'])

const LOG_LEVELS = new Set(['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'])

/** The client capability a server→client question needs (2025-06-18 lifecycle capability keys). */
const QUESTION_CAPABILITY = new Map<string, string>([
  ['elicitation/create', 'elicitation'],
  ['sampling/createMessage', 'sampling'],
  ['roots/list', 'roots']
])

/** Fields a modern result carries that a legacy client must not see. */
const MODERN_RESULT_KEYS = ['resultType', 'ttlMs', 'cacheScope'] as const

/** Identity mcpx reports as `serverInfo`. */
export interface ServerInfo { name: string, version: string }

export interface DispatcherOptions {
  registry: UpstreamRegistry
  serverInfo: ServerInfo
  logger: Logger
  /** `ttlMs` on modern cacheable results that mcpx builds itself (lists, discover). Default 0: immediately stale. */
  listTtlMs?: number
  /** Seals mcpx's MRTR requestState; default: a sealer with a key generated at start. */
  sealer?: StateSealer
  /** A parked call (legacy upstream question for a modern client) not resumed within this many ms is cancelled upstream. Default 60 000. */
  parkTimeoutMs?: number
  /** How long a requestState mcpx issues stays valid, ms. Default 300 000. */
  stateTtlMs?: number
}

/** Most MRTR rounds mcpx drives for a legacy client before giving up on an upstream that keeps asking. */
const MAX_INPUT_ROUNDS = 16

/** A rejection of a modern request's envelope, before any method runs. */
export type EnvelopeCheck = JsonRpcErrorResponse | undefined

/**
 * Answers JSON-RPC requests against the upstream registry.
 * `handle` never rejects: every failure becomes a JSON-RPC error response.
 */
export class Dispatcher {
  readonly registry: UpstreamRegistry
  readonly serverInfo: ServerInfo
  private readonly log: Logger
  private readonly listTtlMs: number
  private readonly sealer: StateSealer
  private readonly parkTimeoutMs: number
  private readonly stateTtlMs: number
  /** Calls parked on a question, by id (issue #10: legacy upstream, modern client). */
  private readonly parked = new Map<string, ParkedCall>()

  constructor (options: DispatcherOptions) {
    this.registry = options.registry
    this.serverInfo = options.serverInfo
    this.log = options.logger
    this.listTtlMs = options.listTtlMs ?? 0
    this.sealer = options.sealer ?? new StateSealer()
    this.parkTimeoutMs = options.parkTimeoutMs ?? 60_000
    this.stateTtlMs = options.stateTtlMs ?? 300_000
  }

  /** Number of calls parked on a question, for metrics and tests. */
  get parkedCalls (): number { return this.parked.size }

  /** Cancels every parked call upstream (shutdown). */
  close (): void {
    for (const parked of this.parked.values()) { parked.unpark(); parked.controller.abort() }
    this.parked.clear()
  }

  /**
   * The capabilities mcpx declares: the merged capabilities of the upstreams, with
   * `listChanged` on tools, prompts and resources and `subscribe` on resources always
   * declared, because mcpx delivers them (seed › Found along the way).
   */
  capabilities (): JsonObject {
    const merged = this.registry.capabilities()
    const out: JsonObject = {}
    for (const [key, value] of Object.entries(merged)) {
      if (key === 'tools' || key === 'prompts' || key === 'resources') continue
      out[key] = value
    }
    out.tools = { listChanged: true }
    out.prompts = { listChanged: true }
    out.resources = { subscribe: true, listChanged: true }
    return out
  }

  /**
   * Checks a modern request's `_meta` envelope (DIGEST §6a): protocolVersion and
   * clientCapabilities present (-32602), the version implemented (-32022), logLevel valid (-32602),
   * and the method not a legacy-only one (-32601). Returns the error response, or undefined.
   */
  checkModernEnvelope (request: JsonRpcRequest): EnvelopeCheck {
    const meta = metaOf(request)
    const version = meta?.[META_PROTOCOL_VERSION]
    if (meta === undefined || typeof version !== 'string') {
      return errorResponse(request.id, INVALID_PARAMS, `Invalid params: params._meta["${META_PROTOCOL_VERSION}"] is required`)
    }
    if (!MODERN_REVISIONS.includes(version)) return unsupportedVersion(request.id, version)
    if (!isObject(meta[META_CLIENT_CAPABILITIES])) {
      return errorResponse(request.id, INVALID_PARAMS, `Invalid params: params._meta["${META_CLIENT_CAPABILITIES}"] is required`)
    }
    const level = meta[META_LOG_LEVEL]
    if (level !== undefined && (typeof level !== 'string' || !LOG_LEVELS.has(level))) {
      return errorResponse(request.id, INVALID_PARAMS, `Invalid params: params._meta["${META_LOG_LEVEL}"] must be a logging level`)
    }
    if (LEGACY_ONLY.has(request.method)) {
      return errorResponse(request.id, METHOD_NOT_FOUND, `Method not found: ${request.method} does not exist in revision ${version}`)
    }
    return undefined
  }

  /**
   * Answers one request in the given context.
   * @returns the response (success or error). Never rejects.
   */
  async handle (request: JsonRpcRequest, ctx: DispatchContext): Promise<JsonRpcResponse> {
    if (ctx.era === 'modern') {
      const rejected = this.checkModernEnvelope(request)
      if (rejected !== undefined) return rejected
    } else if (MODERN_ONLY.has(request.method)) {
      return errorResponse(request.id, METHOD_NOT_FOUND, `Method not found: ${request.method}`)
    }
    try {
      const result = await this.run(request, ctx)
      if (ctx.era === 'modern') {
        const required = this.takeMissing(ctx) ?? missingCapabilities(result, ctx.clientCapabilities)
        if (required !== undefined) return missingCapabilityError(request.id, required)
      }
      return successResponse(request.id, ctx.era === 'modern' ? this.shapeModern(request.method, result) : shapeLegacy(result))
    } catch (err) {
      const required = ctx.era === 'modern' ? this.takeMissing(ctx) : undefined
      if (required !== undefined) return missingCapabilityError(request.id, required)
      return this.errorFor(request, ctx, err)
    }
  }

  /** Capabilities a modern request's upstream asked for and the client had not declared, per request. */
  private readonly missing = new WeakMap<DispatchContext, JsonObject>()

  private takeMissing (ctx: DispatchContext): JsonObject | undefined {
    const required = this.missing.get(ctx)
    this.missing.delete(ctx)
    return required
  }

  /** The `initialize` result for a legacy client (2024-11-05/basic/lifecycle.mdx). */
  initializeResult (params: JsonObject | undefined): JsonObject {
    const revision = negotiateLegacy(params?.protocolVersion)
    return { protocolVersion: revision, capabilities: this.capabilities(), serverInfo: this.serverInfo }
  }

  /** The `server/discover` result (2026-07-28/server/discover.mdx), before modern shaping. */
  discoverResult (): JsonObject {
    return { supportedVersions: [...SUPPORTED_REVISIONS], capabilities: this.capabilities() }
  }

  private async run (request: JsonRpcRequest, ctx: DispatchContext): Promise<JsonObject> {
    const params = request.params ?? {}
    switch (request.method) {
      case 'initialize': return this.initializeResult(params)
      case 'ping': return {}
      case 'server/discover': return this.discoverResult()
      case 'logging/setLevel': return {}
      case 'tools/list': return this.list(params, 'tools', this.registry.tools())
      case 'prompts/list': return this.list(params, 'prompts', this.registry.prompts())
      case 'resources/list': return this.list(params, 'resources', this.registry.resources())
      case 'resources/templates/list': return this.list(params, 'resourceTemplates', this.registry.resourceTemplates())
      case 'tools/call': {
        const name = requireString(params, 'name')
        if (params.arguments !== undefined && !isObject(params.arguments)) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: arguments must be an object')
        const args = params.arguments as JsonObject | undefined
        return await this.interactive(request, ctx, name, async options => await this.registry.callTool(name, args, options))
      }
      case 'prompts/get': {
        const name = requireString(params, 'name')
        if (params.arguments !== undefined && !isObject(params.arguments)) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: arguments must be an object')
        const args = params.arguments as Record<string, string> | undefined
        return await this.interactive(request, ctx, name, async options => await this.registry.getPrompt(name, args, options))
      }
      case 'resources/read': {
        const uri = requireString(params, 'uri')
        return await this.interactive(request, ctx, uri, async options => await this.registry.readResource(uri, options))
      }
      case 'completion/complete':
        return await this.registry.complete(stripMeta(params), this.callOptions(request, ctx))
      case 'resources/subscribe': {
        const uri = requireString(params, 'uri')
        if (ctx.subscriptions?.has(uri) !== true) {
          await this.registry.subscribe(uri)
          await ctx.subscriptions?.add(uri) // the Redis session store records it there (async)
        }
        return {}
      }
      case 'resources/unsubscribe': {
        const uri = requireString(params, 'uri')
        if ((await ctx.subscriptions?.delete(uri)) === true) await this.registry.unsubscribe(uri)
        return {}
      }
      default:
        throw new UpstreamRpcError(METHOD_NOT_FOUND, `Method not found: ${request.method}`)
    }
  }

  /**
   * The three methods that may need client input (DIGEST §6f: only tools/call, prompts/get and
   * resources/read return input_required), bridged across eras (issue #10).
   */
  private async interactive (request: JsonRpcRequest, ctx: DispatchContext, name: string, invoke: (options: UpstreamCallOptions) => Promise<JsonObject>): Promise<JsonObject> {
    if (ctx.era === 'modern') return await this.modernInteractive(request, ctx, name, invoke)
    // Legacy client: a modern upstream's input_required becomes real questions on the client's
    // stream (under ids mcpx mints, capability-checked by onQuestion), then an upstream retry
    // with inputResponses and the upstream's own requestState. The client sees one call.
    const options = this.callOptions(request, ctx)
    let result = await invoke(options)
    for (let round = 1; result.resultType === 'input_required'; round++) {
      if (round > MAX_INPUT_ROUNDS) throw new UpstreamRpcError(INTERNAL_ERROR, `upstream asked for client input more than ${MAX_INPUT_ROUNDS} times`)
      const ask = options.onQuestion
      if (ask === undefined) throw new UpstreamRpcError(INTERNAL_ERROR, 'the upstream needs client input, and this connection cannot carry questions')
      const inputResponses: JsonObject = {}
      for (const [key, inputRequest] of Object.entries(isObject(result.inputRequests) ? result.inputRequests : {})) {
        if (!isObject(inputRequest) || typeof inputRequest.method !== 'string') throw new UpstreamRpcError(INTERNAL_ERROR, `upstream sent a malformed inputRequests.${key}`)
        try {
          inputResponses[key] = await ask({ method: inputRequest.method, params: isObject(inputRequest.params) ? inputRequest.params : undefined }, ctx.signal)
        } catch (err) {
          if (err instanceof UpstreamRpcError) throw err
          const code = typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : INTERNAL_ERROR
          throw new UpstreamRpcError(code, `the client did not answer ${inputRequest.method}: ${(err as Error).message}`)
        }
      }
      const extraParams: JsonObject = { inputResponses }
      if (typeof result.requestState === 'string') extraParams.requestState = result.requestState
      result = await invoke({ ...options, extraParams })
    }
    return result
  }

  /** Modern client: a fresh call, a retry continuing a parked call, or a retry of a modern upstream's own input_required. */
  private async modernInteractive (request: JsonRpcRequest, ctx: DispatchContext, name: string, invoke: (options: UpstreamCallOptions) => Promise<JsonObject>): Promise<JsonObject> {
    const params = request.params ?? {}
    const inputResponses = isObject(params.inputResponses) ? params.inputResponses : {}
    if (params.requestState !== undefined) {
      const opened = this.sealer.open(params.requestState)
      if (!opened.ok) throw new UpstreamRpcError(INVALID_PARAMS, `Invalid params: requestState is ${opened.reason === 'expired' ? 'expired' : 'not one mcpx issued (tampered or malformed)'}`)
      const state = opened.payload
      if (state.m !== request.method || state.n !== name) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: requestState belongs to another request (method or name differs)')
      if (state.a !== ctx.principal) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: requestState was issued to another caller')
      if (state.k === 'wrap') {
        const extraParams: JsonObject = { inputResponses }
        if (state.u !== undefined) extraParams.requestState = state.u
        return await this.fromModernUpstream(request.method, name, await invoke({ ...this.callOptions(request, ctx), extraParams }), ctx)
      }
      const parked = state.p === undefined ? undefined : this.parked.get(state.p)
      const pending = parked?.pending
      if (parked === undefined || pending === undefined) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: requestState refers to a call that is no longer waiting (completed, cancelled or timed out)')
      if (state.r !== parked.round) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: requestState was already used (replayed)')
      parked.round++
      const answer = inputResponses[pending.key]
      if (!isObject(answer)) {
        // Inputs missing on retry: answer with another InputRequiredResult rather than an error (mrtr.mdx SHOULD).
        parked.park(this.parkTimeoutMs, () => this.expire(parked))
        return this.inputRequired(parked, pending.key, pending.question, ctx)
      }
      parked.unpark()
      parked.pending = undefined
      pending.answer(answer)
      return await this.drive(parked, request, ctx)
    }
    const parked = new ParkedCall(request.method, name)
    const options = this.callOptions(request, ctx)
    // A first call may carry inputResponses (a server that sends no requestState gets none back,
    // mrtr.mdx): the upstream reads them, and ignores what it does not recognise.
    if (params.inputResponses !== undefined) options.extraParams = { inputResponses }
    const leg = { onProgress: options.onProgress }
    options.signal = parked.controller.signal
    // Progress goes to whichever leg (original request or retry) is waiting now.
    if (options.onProgress !== undefined) options.onProgress = (p) => leg.onProgress?.(p)
    parked.progress = leg
    options.onQuestion = async (question) => await new Promise<JsonObject>((resolve, reject) => {
      parked.push({ kind: 'question', question, answer: resolve, refuse: reject })
    })
    invoke(options).then(result => parked.push({ kind: 'result', result }), (error: unknown) => parked.push({ kind: 'error', error }))
    return await this.drive(parked, request, ctx)
  }

  /** Waits for the parked call's next event on behalf of one modern request (a leg). */
  private async drive (parked: ParkedCall, request: JsonRpcRequest, ctx: DispatchContext): Promise<JsonObject> {
    if (parked.progress !== undefined) parked.progress.onProgress = this.callOptions(request, ctx).onProgress
    // Seed › Closing the stream is cancellation: a leg whose client goes away cancels the upstream call.
    const onAbort = (): void => { parked.unpark(); parked.controller.abort(); this.parked.delete(parked.id) }
    if (ctx.signal.aborted) onAbort()
    ctx.signal.addEventListener('abort', onAbort, { once: true })
    try {
      for (;;) {
        const event = await parked.next()
        if (event.kind === 'result') { this.parked.delete(parked.id); return await this.fromModernUpstream(parked.method, parked.name, event.result, ctx) }
        if (event.kind === 'error') { this.parked.delete(parked.id); throw event.error }
        const capability = QUESTION_CAPABILITY.get(event.question.method)
        if (capability === undefined || !isObject(ctx.clientCapabilities[capability])) {
          // Only questions the client declared a capability for are relayed; the upstream gets an
          // error, and the client -32021 naming the capability (handle() reads `missing`).
          if (capability !== undefined) this.missing.set(ctx, { ...this.missing.get(ctx), [capability]: {} })
          event.refuse(Object.assign(new Error(`Client does not support ${event.question.method}: it declared no "${capability ?? event.question.method}" capability`), { code: METHOD_NOT_FOUND }))
          continue
        }
        const key = parked.nextKey()
        parked.pending = { key, question: event.question, answer: event.answer, refuse: event.refuse }
        this.parked.set(parked.id, parked)
        parked.park(this.parkTimeoutMs, () => this.expire(parked))
        return this.inputRequired(parked, key, event.question, ctx)
      }
    } finally {
      ctx.signal.removeEventListener('abort', onAbort)
    }
  }

  private inputRequired (parked: ParkedCall, key: string, question: UpstreamQuestion, ctx: DispatchContext): JsonObject {
    const requestState = this.seal({ k: 'park', m: parked.method, n: parked.name, p: parked.id, r: parked.round }, ctx)
    const inputRequest: JsonObject = { method: question.method }
    if (question.params !== undefined) inputRequest.params = withoutProgressToken(question.params)
    return { resultType: 'input_required', inputRequests: { [key]: inputRequest }, requestState }
  }

  /** A parked call never resumed: cancel it upstream and forget it (issue #10). */
  private expire (parked: ParkedCall): void {
    this.log.debug({ method: parked.method, name: parked.name }, 'parked call expired: cancelling upstream')
    parked.pending?.refuse(Object.assign(new Error('the client did not answer in time'), { code: INTERNAL_ERROR }))
    parked.pending = undefined
    parked.controller.abort()
    this.parked.delete(parked.id)
  }

  /**
   * A modern client's view of an upstream result. A modern upstream's input_required passes
   * through with its requestState wrapped in mcpx's, so the retry reaches the same upstream with
   * the state intact.
   */
  private async fromModernUpstream (method: string, name: string, result: JsonObject, ctx: DispatchContext): Promise<JsonObject> {
    if (result.resultType !== 'input_required') return result
    // Inputs the client declared no capability for become -32021 in handle() (missingCapabilities).
    const wrapped: JsonObject = { resultType: 'input_required' }
    if (isObject(result.inputRequests)) wrapped.inputRequests = result.inputRequests
    wrapped.requestState = this.seal({ k: 'wrap', m: method, n: name, ...(typeof result.requestState === 'string' ? { u: result.requestState } : {}) }, ctx)
    return wrapped
  }

  private seal (payload: Omit<StatePayload, 'x' | 'exp' | 'a'>, ctx: DispatchContext): string {
    return this.sealer.seal({ ...payload, exp: Date.now() + this.stateTtlMs, ...(ctx.principal !== undefined ? { a: ctx.principal } : {}) })
  }

  private list (params: JsonObject, key: string, items: JsonObject[]): JsonObject {
    // mcpx never hands out a cursor (it returns the merged list whole), so any cursor is one it did not issue.
    if (params.cursor !== undefined) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: unknown cursor')
    return { [key]: items }
  }

  private callOptions (request: JsonRpcRequest, ctx: DispatchContext): UpstreamCallOptions {
    const meta = request.params?._meta
    const progressToken = isObject(meta) ? meta.progressToken : undefined
    const options: UpstreamCallOptions = { signal: ctx.signal, era: ctx.era }
    const notify = ctx.notify
    // Log lines go to a legacy client as they come (it opted in by declaring nothing: legacy servers
    // send logs unless logging/setLevel says otherwise); a modern client gets them only when its
    // request set a logLevel, which the upstream also sees and filters by (DIGEST §6f).
    if (notify !== undefined && (ctx.era === 'legacy' || (isObject(meta) && typeof meta[META_LOG_LEVEL] === 'string'))) {
      options.onNotification = (n) => { if (n.method === 'notifications/message') notify({ jsonrpc: '2.0', method: n.method, ...(n.params !== undefined ? { params: n.params } : {}) }) }
    }
    if ((typeof progressToken === 'string' || typeof progressToken === 'number') && ctx.notify !== undefined) {
      const notify = ctx.notify
      options.onProgress = (p) => {
        notify({ jsonrpc: '2.0', method: 'notifications/progress', params: { ...p, progressToken } })
      }
    }
    const ask = ctx.ask
    if (ask !== undefined || ctx.era === 'modern') {
      options.onQuestion = async (question: UpstreamQuestion, signal: AbortSignal) => {
        const capability = QUESTION_CAPABILITY.get(question.method)
        if (capability === undefined || !isObject(ctx.clientCapabilities[capability])) {
          // 2026-07-28 (basic/index.mdx; DIGEST §6a): a capability the server needs and the
          // request did not declare is -32021 to the client, whatever the upstream makes of the refusal.
          if (ctx.era === 'modern' && capability !== undefined) this.missing.set(ctx, { ...this.missing.get(ctx), [capability]: {} })
          throw new UpstreamRpcError(METHOD_NOT_FOUND, `Client does not support ${question.method}: it declared no "${capability ?? question.method}" capability`)
        }
        // A 2026-07-28 client takes no server→client requests (DIGEST §6c row 17); relaying the
        // question as an input_required result is the MRTR bridge (issue #10). Until then: a clear refusal.
        if (ask === undefined) throw new UpstreamRpcError(METHOD_NOT_FOUND, `mcpx cannot relay ${question.method} to a 2026-07-28 client`)
        return await ask(question, signal)
      }
    }
    // The upstream sees the capabilities of the client mcpx serves, not mcpx's own: a modern
    // upstream must not ask for inputs that client cannot give (legacy upstreams ignore the key).
    options.meta = { [META_CLIENT_CAPABILITIES]: ctx.clientCapabilities }
    if (ctx.era === 'modern' && isObject(meta) && typeof meta[META_LOG_LEVEL] === 'string') options.meta[META_LOG_LEVEL] = meta[META_LOG_LEVEL]
    // A legacy client gets log lines unless it lowered the level (a legacy server sends every level
    // before logging/setLevel); a modern upstream sends none without a per-request logLevel, so ask
    // it for everything and let the legacy client see what a legacy upstream would have sent.
    if (ctx.era === 'legacy') options.meta[META_LOG_LEVEL] = 'debug'
    return options
  }

  private shapeModern (method: string, result: JsonObject): JsonObject {
    const shaped: JsonObject = { ...result }
    if (typeof shaped.resultType !== 'string') shaped.resultType = 'complete'
    if (shaped.resultType === 'complete' && CACHEABLE.has(method)) {
      if (typeof shaped.ttlMs !== 'number') shaped.ttlMs = this.listTtlMs
      if (shaped.cacheScope !== 'public' && shaped.cacheScope !== 'private') shaped.cacheScope = 'public'
    }
    const meta = isObject(shaped._meta) ? { ...shaped._meta } : {}
    meta[META_SERVER_INFO] = this.serverInfo
    shaped._meta = meta
    return shaped
  }

  private errorFor (request: JsonRpcRequest, ctx: DispatchContext, err: unknown): JsonRpcResponse {
    if (err instanceof UpstreamRpcError) {
      // Resource-not-found is -32002 in the legacy revisions and -32602 in 2026-07-28 (server/resources.mdx).
      const code = err.code === RESOURCE_NOT_FOUND && ctx.era === 'modern' ? INVALID_PARAMS : err.code
      return errorResponse(request.id, code, err.message, err.data)
    }
    if (ctx.signal.aborted) return errorResponse(request.id, UPSTREAM_ERROR, 'Request cancelled')
    this.log.error({ err, method: request.method }, 'request failed')
    return errorResponse(request.id, INTERNAL_ERROR, 'Internal error')
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
    if (capability !== undefined && !isObject(clientCapabilities[capability])) (required ??= {})[capability] = {}
  }
  return required
}

/** The -32021 error (400) naming the capabilities in `data.requiredCapabilities` (DIGEST §6a, §6e). */
export function missingCapabilityError (id: RequestId, required: JsonObject): JsonRpcErrorResponse {
  return errorResponse(id, MISSING_REQUIRED_CLIENT_CAPABILITY, `Missing required client capability: ${Object.keys(required).join(', ')}`, { requiredCapabilities: required })
}

function requireString (params: JsonObject, key: string): string {
  const value = params[key]
  if (typeof value !== 'string') throw new UpstreamRpcError(INVALID_PARAMS, `Invalid params: ${key} must be a string`)
  return value
}

function stripMeta (params: JsonObject): JsonObject {
  if (params._meta === undefined) return params
  const { _meta: _omit, ...rest } = params
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

/** Removes the modern-only result fields (a dual-era gateway must not add them to legacy results, DIGEST §6f). */
export function shapeLegacy (result: JsonObject): JsonObject {
  let shaped: JsonObject | undefined
  for (const key of MODERN_RESULT_KEYS) {
    if (Object.hasOwn(result, key)) {
      shaped ??= { ...result }
      delete shaped[key]
    }
  }
  const meta = (shaped ?? result)._meta
  if (isObject(meta) && Object.hasOwn(meta, META_SERVER_INFO)) {
    shaped ??= { ...result }
    const { [META_SERVER_INFO]: _omit, ...rest } = meta
    if (Object.keys(rest).length === 0) delete shaped._meta
    else shaped._meta = rest
  }
  return shaped ?? result
}

export type { Revision }
