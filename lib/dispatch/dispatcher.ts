/**
 * The method dispatcher: the one core that answers every request, whichever transport
 * (Streamable HTTP or stdio) and era carried it. Transports own framing, sessions,
 * cancellation bookkeeping and streams; this module owns what a method means.
 *
 * Era shaping (DIGEST §6f): a modern result carries `resultType`, `_meta` serverInfo and, on
 * the cacheable methods, `ttlMs`/`cacheScope`; a legacy result carries none of these, even when
 * the upstream that produced it is modern.
 *
 * Over ~500 lines on purpose: it is the method table, and each method's handling is a few lines that
 * read best next to the others. What a rule means lives elsewhere (policy: lib/policy/rules.ts, rate
 * limits: lib/policy/rate-limit.ts, paging: lib/dispatch/paging.ts, the MRTR bridge: lib/dispatch/mrtr.ts, audit:
 * lib/policy/audit.ts, tasks of both eras: lib/dispatch/tasks.ts); this file only decides where in a request
 * each one applies.
 */
import type { Logger } from '../telemetry/log.js'
import {
  errorResponse, successResponse, isObject,
  INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND, UPSTREAM_ERROR,
  type JsonRpcRequest, type JsonRpcResponse, type JsonRpcErrorResponse, type JsonRpcNotification
} from '../protocol/jsonrpc.js'
import { MODERN_REVISIONS, SUPPORTED_REVISIONS, negotiateLegacy, unsupportedVersion, type Revision } from '../protocol/revisions.js'
import { META_CLIENT_CAPABILITIES, META_LOG_LEVEL, META_PROTOCOL_VERSION, META_SERVER_INFO, MODERN_ONLY, metaOf } from '../protocol/inbound.js'
import { InstanceForwardError, InstancesExhaustedError, UpstreamBusyError, UpstreamRpcError, type InstanceOwner, type JsonObject, type UpstreamCallOptions, type UpstreamQuestion, type UpstreamRegistry } from '../upstreams/types.js'
import type { DispatchContext } from './context.js'
import type { CancelSignal } from '../base/cancel.js'
import { markRefused, refusedAs, REFUSALS, type RefusalReason } from '../protocol/http-status.js'
import { ELICITATION_COMPLETE, MrtrBridge, StateSealer, missingCapabilities, missingCapabilityError } from './mrtr.js'
import { activeTracing } from '../telemetry/trace.js'
import { WHOLE_CATALOGUE, asPrincipal, callerKey, type AppliedLimit, type Policy } from '../policy/rules.js'
import type { RateLimiter } from '../policy/rate-limit.js'
import type { AuditTrail, AuditOutcome } from '../policy/audit.js'
import { CuratedServer, type Servers } from '../policy/endpoints.js'
import { Visibility } from '../policy/visibility.js'
import { pageOf, type PagedList } from './paging.js'
import { Tasks } from './tasks.js'
import { requireString, stripMeta } from '../protocol/params.js'

export type { DispatchContext } from './context.js'

/**
 * Whom a request's upstream calls serve (isolated upstreams): its session (legacy session, the stdio
 * client) and its principal, as UpstreamCallOptions `owner` and `principalKey`. An isolated
 * upstream picks its instance by them (lib/upstreams/types.ts instanceKeyOf); subscriptions and
 * notification listeners name their owner the same way, so an instance's events reach exactly it.
 * Writes the fields into `who` (a new object by default: call options pass themselves, so a call
 * allocates nothing more) and returns it.
 */
export function instanceOwnerOf<T extends InstanceOwner = InstanceOwner> (ctx: Pick<DispatchContext, 'sessionId' | 'principal' | 'instanceHome'>, who: T = {} as T): T {
  if (ctx.sessionId !== undefined) who.owner = ctx.sessionId
  if (ctx.principal !== undefined) who.principalKey = ctx.principal
  // Redis store: the session's own instance follows its stored subscriptions (lib/sessions/redis-store.ts).
  if (ctx.instanceHome !== undefined) who.home = ctx.instanceHome
  return who
}

/** Methods whose modern `complete` results carry `ttlMs` and `cacheScope` (2026-07-28 caching.mdx; DIGEST A20). */
const CACHEABLE = new Set(['server/discover', 'tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read'])

/** Methods that exist only in the legacy era: a modern request for them is -32601 (404). */
const LEGACY_ONLY = new Set(['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe'])


const LOG_LEVELS = new Set(['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'])

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
  /** The per-caller policy (lib/policy/rules.ts); undefined: everything allowed to everyone. */
  policy?: Policy
  /** The curated endpoints (lib/policy/endpoints.ts); undefined: none. */
  servers?: Servers
  /** The audit trail (lib/policy/audit.ts); undefined: none. */
  audit?: AuditTrail
  /** Items per page of the four list methods (`transport.pageSize`, lib/dispatch/paging.ts); default 0: no paging. */
  pageSize?: number
  /**
   * Counts calls against the policy's rate limits (lib/policy/rate-limit.ts); undefined: no rule
   * has a rateLimit. A limit met without a limiter refuses the call (fail closed).
   */
  rateLimiter?: RateLimiter
  /** Called once per call refused by a rate limit (`limited`) or for want of its store (`unavailable`); lib/ops/metrics counts them. Must not throw. */
  onRateLimited?: (reason: 'limited' | 'unavailable') => void
}

/** Methods audited whatever their outcome (docs: Audit); any other only when denied or rate-limited. */
const AUDITED = new Set(['tools/call', 'prompts/get', 'resources/read'])

/**
 * A hidden thing's error: the same code, message and data as an absent one, so the
 * reply is the same bytes; the class only lets the audit trail record the request as `denied`.
 */
class HiddenError extends UpstreamRpcError {}

/** A refusal raised inside the dispatcher (a rate limit): answered over HTTP by its lib/protocol/http-status.ts row. */
class RefusedError extends UpstreamRpcError {
  constructor (readonly refusal: RefusalReason, message: string, data?: unknown) {
    super(REFUSALS[refusal].code, message, data)
  }
}

/** An endpoint a request names that is not configured (a reload removed it): nothing is exposed (fail closed). */
const NO_SERVER = new CuratedServer('', {})

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
  /** Items per page of the lists; 0: whole lists. A reload changes it (setPageSize). */
  private pageSize: number
  /** The MRTR bridge (lib/dispatch/mrtr.ts): interactive calls across eras, and the question capability rule. */
  private readonly mrtr: MrtrBridge
  /** The per-caller policy; undefined: none configured (no per-request cost). */
  private policy: Policy | undefined
  /** The curated endpoints; undefined: none configured. */
  private servers: Servers | undefined
  /** The audit trail; undefined: none configured (no per-request cost). */
  private readonly audit: AuditTrail | undefined
  /** Responses that answered a denial (for the audit trail's outcome); never looked at without a trail. */
  private readonly denials = new WeakSet<object>()
  /** The rate limiter; undefined: no limits configured. */
  private readonly rateLimiter: RateLimiter | undefined
  private readonly onRateLimited: ((reason: 'limited' | 'unavailable') => void) | undefined
  /** The task methods of both eras, ids and book (lib/dispatch/tasks.ts); lib/core relays status notifications through it. */
  readonly tasks: Tasks

  constructor (options: DispatcherOptions) {
    this.registry = options.registry
    this.serverInfo = options.serverInfo
    this.log = options.logger
    this.listTtlMs = options.listTtlMs ?? 0
    this.pageSize = options.pageSize ?? 0
    this.policy = options.policy
    this.servers = options.servers
    this.audit = options.audit
    this.rateLimiter = options.rateLimiter
    this.onRateLimited = options.onRateLimited
    const sealer = options.sealer ?? new StateSealer()
    const callOptions = (request: JsonRpcRequest, ctx: DispatchContext): UpstreamCallOptions => this.callOptions(request, ctx)
    this.tasks = new Tasks({ registry: this.registry, sealer, logger: options.logger, callOptions })
    this.mrtr = new MrtrBridge({
      sealer,
      parkTimeoutMs: options.parkTimeoutMs ?? 60_000,
      stateTtlMs: options.stateTtlMs ?? 300_000,
      logger: options.logger,
      callOptions
    })
  }

  /**
   * Swaps the per-caller policy and the curated endpoints (a config reload compiles new ones:
   * lib/policy/rules compilePolicy, lib/policy/endpoints Servers). Requests already running keep the view they
   * started with. undefined: everything allowed / no curated endpoints.
   */
  setAccess (policy: Policy | undefined, servers: Servers | undefined): void {
    this.policy = policy
    this.servers = servers
  }

  /**
   * Sets the items per page of the four list methods (a reload's `transport.pageSize`): requests
   * that start from now page by it. A cursor issued before holds no page size (lib/dispatch/paging.ts: the
   * list, an offset and the last item served), so it resumes at the new size. 0: whole lists.
   */
  setPageSize (pageSize: number): void { this.pageSize = pageSize }

  /** Whether a curated endpoint by this name is configured (HTTP answers 404 for any other `/mcp/<name>`). */
  hasEndpoint (name: string): boolean { return this.servers?.has(name) === true }

  /**
   * What the request's caller sees on its endpoint, or undefined when neither a policy nor a
   * curated endpoint applies (everything visible: the old path, at no cost). The one place
   * visibility is decided. An endpoint that is not configured exposes nothing.
   */
  visibilityOf (ctx: Pick<DispatchContext, 'caller' | 'endpoint'>): Visibility | undefined {
    const view = this.policy?.viewOf(ctx.caller, ctx.endpoint ?? WHOLE_CATALOGUE)
    const server = ctx.endpoint === undefined ? undefined : this.servers?.get(ctx.endpoint) ?? NO_SERVER
    return view === undefined && server === undefined ? undefined : new Visibility(view, server)
  }

  /**
   * The tool `name` (as exposed) as the caller sees it on its endpoint, or undefined when it does
   * not exist for them (unknown or hidden: the same). The modern headers check (Mcp-Param-*) looks
   * tools up here, so a hidden tool's schema never shapes an answer, and a renamed one is found by
   * the name the client uses.
   */
  findTool (name: string, ctx: Pick<DispatchContext, 'caller' | 'endpoint'>): JsonObject | undefined {
    const visibility = this.visibilityOf(ctx)
    return visibility === undefined ? this.registry.findTool(name) : visibility.findTool(name, this.registry)
  }

  /** Number of calls parked on a question, for metrics and tests. */
  get parkedCalls (): number { return this.mrtr.parkedCalls }

  /** Cancels every parked call upstream (shutdown). */
  close (): void { this.mrtr.close() }

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
  handle (request: JsonRpcRequest, ctx: DispatchContext): Promise<JsonRpcResponse> {
    // Tracing off (the default): one module variable read and no extra promise (lib/telemetry/trace.ts).
    const tracing = activeTracing()
    if (tracing === undefined) return this.audited(request, ctx)
    return tracing.request(request, ctx.era, ctx.revision, ctx.traceIn, trace => { ctx.trace = trace }, async () => await this.audited(request, ctx))
  }

  /** {@link answer}, plus its audit line when a trail is configured; no extra promise without one. */
  private audited (request: JsonRpcRequest, ctx: DispatchContext): Promise<JsonRpcResponse> {
    const audit = this.audit
    if (audit === undefined) return this.answer(request, ctx)
    return this.answerAudited(audit, request, ctx)
  }

  private async answerAudited (audit: AuditTrail, request: JsonRpcRequest, ctx: DispatchContext): Promise<JsonRpcResponse> {
    const started = performance.now()
    const response = await this.answer(request, ctx)
    this.record(audit, request, ctx, response, performance.now() - started)
    return response
  }

  /** {@link handle} without tracing and the audit trail. */
  private async answer (request: JsonRpcRequest, ctx: DispatchContext): Promise<JsonRpcResponse> {
    if (ctx.era === 'modern') {
      const rejected = this.checkModernEnvelope(request)
      if (rejected !== undefined) return rejected
    } else if (MODERN_ONLY.has(request.method)) {
      return errorResponse(request.id, METHOD_NOT_FOUND, `Method not found: ${request.method}`)
    }
    try {
      const result = await this.run(request, ctx)
      if (ctx.era === 'modern') {
        const required = this.mrtr.takeMissing(ctx) ?? missingCapabilities(result, ctx.clientCapabilities)
        if (required !== undefined) return missingCapabilityError(request.id, required)
      }
      return successResponse(request.id, ctx.era === 'modern' ? this.shapeModern(request.method, result) : shapeLegacy(result))
    } catch (err) {
      const required = ctx.era === 'modern' ? this.mrtr.takeMissing(ctx) : undefined
      if (required !== undefined) return missingCapabilityError(request.id, required)
      return this.errorFor(request, ctx, err)
    }
  }

  /** Writes the audit line of one answered request, when its method or outcome is audited (lib/policy/audit.ts). */
  private record (audit: AuditTrail, request: JsonRpcRequest, ctx: DispatchContext, response: JsonRpcResponse, ms: number): void {
    const method = request.method
    let outcome: AuditOutcome
    let code: number | undefined
    if ('error' in response) {
      outcome = this.denials.has(response) ? 'denied' : refusedAs(response) === 'rateLimited' ? 'rate_limited' : 'error'
      if (outcome === 'error') code = response.error.code
    } else {
      outcome = response.result.isError === true ? 'tool_error' : 'ok'
    }
    if (!AUDITED.has(method) && outcome !== 'denied' && outcome !== 'rate_limited') return
    const params = isObject(request.params) ? request.params : {}
    const ref = isObject(params.ref) ? params.ref : undefined
    const name = typeof params.name === 'string' ? params.name : typeof params.uri === 'string' ? params.uri : typeof ref?.name === 'string' ? ref.name : typeof ref?.uri === 'string' ? ref.uri : undefined
    const kind = method === 'tools/call' ? 'tool' : method === 'prompts/get' || ref?.type === 'ref/prompt' ? 'prompt' : 'resource'
    // The upstream's own name: through the endpoint's rename for a tool (visibility), the catalogue name otherwise.
    const catalogue = name !== undefined && kind === 'tool' ? (this.visibilityOf(ctx)?.server?.catalogueTool(name) ?? name) : name
    const owner = catalogue === undefined ? undefined : this.registry.ownerOf?.(kind, catalogue)
    const args = isObject(params.arguments) ? params.arguments : undefined
    audit.record({
      principal: asPrincipal(ctx.caller)?.id ?? 'anonymous',
      endpoint: ctx.endpoint === undefined ? '/mcp' : `/mcp/${ctx.endpoint}`,
      era: ctx.era,
      revision: ctx.revision,
      ...(ctx.sessionId !== undefined ? { sessionId: ctx.sessionId } : {}),
      method,
      ...(name !== undefined ? { name } : {}),
      ...(owner !== undefined ? { upstream: owner.upstream, upstreamName: owner.name } : {}),
      outcome,
      ...(code !== undefined ? { code } : {}),
      durationMs: Math.round(ms * 1000) / 1000,
      requestId: request.id,
      ...(args !== undefined ? { arguments: args } : {})
    })
  }

  /** The `initialize` result for a legacy client (2024-11-05/basic/lifecycle.mdx). */
  initializeResult (params: JsonObject | undefined): JsonObject {
    const revision = negotiateLegacy(params?.protocolVersion)
    // The Tasks extension is a 2026-07-28 one (SEP-2663): a legacy client is not offered it. A client
    // that negotiated 2025-11-25 is offered that revision's experimental `tasks` instead, when an
    // upstream that negotiated 2025-11-25 declares them (lib/dispatch/tasks.ts; README › Tasks).
    const { extensions: _omit, ...capabilities } = this.capabilities()
    const tasks = this.tasks.legacyCapability(revision)
    if (tasks !== undefined) capabilities.tasks = tasks
    return { protocolVersion: revision, capabilities, serverInfo: this.serverInfo }
  }

  /** The `server/discover` result (2026-07-28/server/discover.mdx), before modern shaping. */
  discoverResult (): JsonObject {
    return { supportedVersions: [...SUPPORTED_REVISIONS], capabilities: this.capabilities() }
  }

  private async run (request: JsonRpcRequest, ctx: DispatchContext): Promise<JsonObject> {
    const params = request.params ?? {}
    // Policy and curated endpoints: what this caller sees on this endpoint (undefined: no policy, everything). A hidden
    // thing is answered exactly as a name that does not exist (the same error, thrown where the
    // registry would throw it), and never reaches the upstream.
    const visibility = this.visibilityOf(ctx)
    if (visibility !== undefined) return await this.runFiltered(request, params, ctx, visibility)
    return await this.runUnfiltered(request, params, ctx)
  }

  private async runUnfiltered (request: JsonRpcRequest, params: JsonObject, ctx: DispatchContext): Promise<JsonObject> {
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
        const task = this.tasks.taskParam(params, ctx)
        const result = await this.mrtr.call(request, ctx, name, async options => await this.registry.callTool(name, args, task === undefined ? options : { ...options, task }))
        return this.tasks.expose(result, name, ctx, task !== undefined)
      }
      // Both eras' task methods (lib/dispatch/tasks.ts): the era picks 2025-11-25 or the Tasks extension.
      case 'tasks/get':
      case 'tasks/update':
      case 'tasks/cancel':
      case 'tasks/result':
      case 'tasks/list':
        return await this.tasks.request(request, params, ctx)
      case 'prompts/get': {
        const name = requireString(params, 'name')
        if (params.arguments !== undefined && !isObject(params.arguments)) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: arguments must be an object')
        const args = params.arguments as Record<string, string> | undefined
        return await this.mrtr.call(request, ctx, name, async options => await this.registry.getPrompt(name, args, options))
      }
      case 'resources/read': {
        const uri = requireString(params, 'uri')
        return await this.mrtr.call(request, ctx, uri, async options => await this.registry.readResource(uri, options))
      }
      case 'completion/complete':
        return await this.registry.complete(stripMeta(params), this.callOptions(request, ctx))
      case 'resources/subscribe': {
        const uri = requireString(params, 'uri')
        if (ctx.subscriptions?.has(uri) !== true) {
          await this.registry.subscribe(uri, instanceOwnerOf(ctx))
          await ctx.subscriptions?.add(uri) // the Redis session store records it there (async)
        }
        return {}
      }
      case 'resources/unsubscribe': {
        const uri = requireString(params, 'uri')
        if ((await ctx.subscriptions?.delete(uri)) === true) await this.registry.unsubscribe(uri, instanceOwnerOf(ctx))
        return {}
      }
      default:
        throw new UpstreamRpcError(METHOD_NOT_FOUND, `Method not found: ${request.method}`)
    }
  }

  /**
   * {@link run} under a caller's view: lists filtered (and, on a curated endpoint, renamed and
   * overridden), hidden names answered as unknown ones, exposed names routed to catalogue names,
   * endpoint defaults filled in.
   */
  private async runFiltered (request: JsonRpcRequest, params: JsonObject, ctx: DispatchContext, visible: Visibility): Promise<JsonObject> {
    switch (request.method) {
      case 'tools/list': return this.list(params, 'tools', visible.tools(this.registry.tools()))
      case 'prompts/list': return this.list(params, 'prompts', visible.prompts(this.registry.prompts()))
      case 'resources/list': return this.list(params, 'resources', visible.resources(this.registry.resources(), 'uri'))
      case 'resources/templates/list': return this.list(params, 'resourceTemplates', visible.resources(this.registry.resourceTemplates(), 'uriTemplate'))
      case 'tools/call': {
        const name = requireString(params, 'name')
        if (params.arguments !== undefined && !isObject(params.arguments)) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: arguments must be an object')
        const args = params.arguments as JsonObject | undefined
        // Rate limits count visible tools only (a hidden one is answered as absent below), once per
        // request, before the call starts: a limited call never reaches the upstream.
        const limited = visible.tool(name)
        const limits = limited === undefined || visible.policy === undefined ? undefined : visible.policy.limitsFor(limited)
        if (limits !== undefined && limits.length > 0) await this.countCall(ctx, name, limited as string, limits)
        const task = this.tasks.taskParam(params, ctx)
        const result = await this.mrtr.call(request, ctx, name, async options => {
          const catalogue = visible.tool(name)
          if (catalogue === undefined) throw this.hidden('tool', name)
          return await this.registry.callTool(catalogue, visible.argumentsFor(catalogue, args), task === undefined ? options : { ...options, task })
        })
        return this.tasks.expose(result, visible.tool(name) ?? name, ctx, task !== undefined)
      }
      case 'prompts/get': {
        const name = requireString(params, 'name')
        if (params.arguments !== undefined && !isObject(params.arguments)) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: arguments must be an object')
        const args = params.arguments as Record<string, string> | undefined
        return await this.mrtr.call(request, ctx, name, async options => {
          if (!visible.prompt(name)) throw this.hidden('prompt', name)
          return await this.registry.getPrompt(name, args, options)
        })
      }
      case 'resources/read': {
        const uri = requireString(params, 'uri')
        return await this.mrtr.call(request, ctx, uri, async options => {
          if (!visible.resource(uri)) throw hiddenResource(uri)
          return await this.registry.readResource(uri, options)
        })
      }
      case 'completion/complete': {
        const ref = params.ref
        if (isObject(ref) && ref.type === 'ref/prompt' && typeof ref.name === 'string' && !visible.prompt(ref.name)) throw hidden('prompt', ref.name)
        if (isObject(ref) && ref.type === 'ref/resource' && typeof ref.uri === 'string' && !visible.resource(ref.uri)) {
          throw new HiddenError(INVALID_PARAMS, `Unknown resource or template: ${ref.uri}`)
        }
        break
      }
      case 'resources/subscribe': {
        const uri = requireString(params, 'uri')
        if (!visible.resource(uri)) throw hiddenResource(uri)
        break
      }
    }
    return await this.runUnfiltered(request, params, ctx)
  }

  /**
   * Counts one call of `catalogue` (exposed as `exposed`) against its limits (lib/policy/rate-limit.ts).
   * @throws RefusedError rateLimited (-31002, `data.retryAfterMs`) past a limit; rateLimitUnavailable
   *         (-32603) when the shared store cannot be asked (fail closed)
   */
  private async countCall (ctx: DispatchContext, exposed: string, catalogue: string, limits: readonly AppliedLimit[]): Promise<void> {
    const limiter = this.rateLimiter
    if (limiter === undefined) {
      this.onRateLimited?.('unavailable')
      throw new RefusedError('rateLimitUnavailable', REFUSALS.rateLimitUnavailable.message)
    }
    const taken = limiter.take(callerKey(ctx.caller), catalogue, limits)
    const decision = taken instanceof Promise ? await taken : taken
    if (decision.kind === 'allowed') return
    this.onRateLimited?.(decision.kind)
    if (decision.kind === 'unavailable') throw new RefusedError('rateLimitUnavailable', REFUSALS.rateLimitUnavailable.message)
    throw new RefusedError('rateLimited', `Rate limit exceeded: too many calls of ${exposed}; retry after ${decision.retryAfterMs} ms`, { retryAfterMs: decision.retryAfterMs })
  }

  /**
   * One page of a list as the caller sees it (paged catalogues; lib/dispatch/paging.ts): the
   * items are already filtered and renamed, so cursors work the same on /mcp, curated endpoints
   * and stdio. Throws -32602 (UpstreamRpcError) for a malformed or outdated cursor.
   */
  private list (params: JsonObject, key: PagedList, items: JsonObject[]): JsonObject {
    return pageOf(key, items, this.pageSize, params.cursor)
  }

  private callOptions (request: JsonRpcRequest, ctx: DispatchContext): UpstreamCallOptions {
    const meta = request.params?._meta
    const progressToken = isObject(meta) ? meta.progressToken : undefined
    const options: UpstreamCallOptions = { signal: ctx.signal, era: ctx.era }
    if (ctx.trace !== undefined) options.trace = ctx.trace // a child span per upstream call (lib/telemetry/trace.ts)
    if (ctx.caller !== undefined) options.principal = ctx.caller // per-caller upstream credentials
    // Whose questions and log lines, which isolated instance, and where it lives (isolated upstreams).
    instanceOwnerOf(ctx, options)
    const notify = ctx.notify
    // Log lines go to a legacy client as they come (it opted in by declaring nothing: legacy servers
    // send logs unless logging/setLevel says otherwise); a modern client gets them only when its
    // request set a logLevel, which the upstream also sees and filters by (DIGEST §6f).
    // notifications/elicitation/complete (of a URL-mode elicitation the call relayed) exists
    // only in 2025-11-25 (DIGEST §6, method table): it goes to a legacy client, never to a modern one.
    if (notify !== undefined && (ctx.era === 'legacy' || (isObject(meta) && typeof meta[META_LOG_LEVEL] === 'string'))) {
      const legacy = ctx.era === 'legacy'
      options.onNotification = (n) => {
        if (n.method !== 'notifications/message' && !(legacy && n.method === ELICITATION_COMPLETE)) return
        const notification: JsonRpcNotification = { jsonrpc: '2.0', method: n.method }
        if (n.params !== undefined) notification.params = n.params
        notify(notification)
      }
    }
    if ((typeof progressToken === 'string' || typeof progressToken === 'number') && ctx.notify !== undefined) {
      const notify = ctx.notify
      // Once per notification of a flood, so built property by property: with an object
      // spread here (`{ ...p, progressToken }`) Node 20's V8 promoted these short-lived objects to
      // the old generation (alone in a loop: 20% of what it allocated, against 0.2% without), which
      // grew by ~4 MB/s under a flood to a stalled client until a major GC (RSS past 300 MB with 4
      // stalled calls; flat without the spread). Same bytes on the wire.
      options.onProgress = (p) => {
        const params: JsonObject = { progress: p.progress }
        if (p.total !== undefined) params.total = p.total
        if (p.message !== undefined) params.message = p.message
        params.progressToken = progressToken
        notify({ jsonrpc: '2.0', method: 'notifications/progress', params })
      }
    }
    const ask = ctx.ask
    if (ask !== undefined || ctx.era === 'modern') {
      options.onQuestion = async (question: UpstreamQuestion, signal: CancelSignal) => {
        // 2026-07-28 (basic/index.mdx; DIGEST §6a): a capability the server needs and the
        // request did not declare is -32021 to the client, whatever the upstream makes of the refusal.
        const refused = this.mrtr.refusal(question, ctx)
        if (refused !== undefined) throw refused
        // A 2026-07-28 client takes no server→client requests (DIGEST §6c row 17). On tools/call,
        // prompts/get and resources/read the MRTR bridge (lib/dispatch/mrtr.ts MrtrBridge) replaces this handler:
        // it parks the call and returns the question as an input_required result. Elsewhere: a clear refusal.
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

  /**
   * The error for a hidden tool or prompt: the registry's answer for that name were it absent
   * (hidden things look absent), so it is the same bytes as an absent name's while the
   * upstream the name would belong to is down or connecting too; marked hidden for the audit.
   */
  private hidden (kind: 'tool' | 'prompt', name: string): UpstreamRpcError {
    const absent = this.registry.absent(kind, name)
    return new HiddenError(absent.code, absent.message, absent.data)
  }

  private errorFor (request: JsonRpcRequest, ctx: DispatchContext, err: unknown): JsonRpcResponse {
    if (err instanceof UpstreamRpcError) {
      // Resource-not-found is -32002 in the legacy revisions and -32602 in 2026-07-28 (server/resources.mdx).
      const code = err.code === RESOURCE_NOT_FOUND && ctx.era === 'modern' ? INVALID_PARAMS : err.code
      const response = errorResponse(request.id, code, err.message, err.data)
      if (err instanceof HiddenError && this.audit !== undefined) this.denials.add(response)
      // An upstream's full queue, a rate limit and an isolated upstream's
      // instance cap are refusals: over HTTP, their lib/protocol/http-status.ts rows (503 / 429, with Retry-After).
      if (err instanceof InstanceForwardError) return err.refusal === undefined ? response : markRefused(response, err.refusal) // isolated instances under Redis
      return err instanceof UpstreamBusyError || err instanceof RefusedError || err instanceof InstancesExhaustedError ? markRefused(response, err.refusal) : response
    }
    if (ctx.signal.aborted) return errorResponse(request.id, UPSTREAM_ERROR, 'Request cancelled')
    this.log.error({ err, method: request.method }, 'request failed')
    return errorResponse(request.id, INTERNAL_ERROR, 'Internal error')
  }
}

/**
 * completion/complete's error for a hidden prompt: the registry's own for a prompt it does not
 * route (lib/upstreams/registry.ts `complete`, which has no "upstream down" variant), byte for byte.
 */
function hidden (kind: 'tool' | 'prompt', name: string): UpstreamRpcError {
  return new HiddenError(INVALID_PARAMS, `Unknown ${kind}: ${name}`)
}

/** The error for a hidden resource: the registry's answer for a URI no upstream serves. */
function hiddenResource (uri: string): UpstreamRpcError {
  return new HiddenError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}`, { uri })
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
