/**
 * The method dispatcher: the one core that answers every request, whichever transport
 * (Streamable HTTP or stdio) and era carried it. Transports own framing, sessions,
 * cancellation bookkeeping and streams; this module owns where in a request each rule applies.
 *
 * A request goes through one pipeline, a named step each: the caller's view, decided once
 * ({@link Dispatcher.viewOf}; on a tool-search endpoint a `call_tool` becomes the `tools/call` of its
 * inner tool here, lib/dispatch/methods/discovery.ts) → trace ({@link Dispatcher.handle}) → audit → the era's envelope
 * (lib/dispatch/envelope.ts) → the method's handler (the table in lib/dispatch/methods/) → era
 * shaping (lib/dispatch/shape.ts, DIGEST §6f) → error mapping. What a rule means lives elsewhere
 * (policy: lib/policy/rules.ts and visibility.ts, rate limits: lib/policy/rate-limit.ts, paging:
 * lib/dispatch/paging.ts, the MRTR bridge: lib/dispatch/mrtr.ts, audit: lib/policy/audit.ts,
 * tasks of both eras: lib/dispatch/tasks.ts, upstream call options: lib/dispatch/call-options.ts).
 */
import type { Logger } from '../telemetry/log.js'
import { activeTracing } from '../telemetry/trace.js'
import {
  errorResponse, successResponse, INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND, UPSTREAM_ERROR, type JsonRpcRequest, type JsonRpcResponse, UpstreamRpcError, type JsonObject
} from '../protocol/jsonrpc.js'
import type { Revision } from '../protocol/revisions.js'
import { markRefused } from '../protocol/http-status.js'
import { InstanceForwardError, InstancesExhaustedError, UpstreamBusyError } from '../upstreams/errors.js'
import type { UpstreamCallOptions, UpstreamRegistry } from '../upstreams/contract.js'
import { WHOLE_CATALOGUE, type Policy } from '../policy/rules.js'
import type { RateLimiter } from '../policy/rate-limit.js'
import type { AuditTrail } from '../policy/audit.js'
import { CuratedServer, type Servers } from '../policy/endpoints.js'
import { Visibility } from '../policy/visibility.js'
import type { ToolSearch } from '../policy/discovery.js'
import type { DispatchContext, ServerInfo } from './context.js'
import { callOptions } from './call-options.js'
import { checkEnvelope, checkModernEnvelope, type EnvelopeCheck } from './envelope.js'
import { isCacheable, shapeLegacy, shapeModern } from './shape.js'
import { HiddenError, RefusedError } from './errors.js'
import { auditEventOf } from './audit-event.js'
import { MrtrBridge, StateSealer, missingCapabilities, missingCapabilityError } from './mrtr.js'
import { Tasks } from './tasks.js'
import { ConfirmGate } from './confirm-gate.js'
import { MemoryLedger, type ApprovalLedger, type ConfirmationConfig } from '../policy/confirm.js'
import { METHODS, type MethodDeps } from './methods/index.js'
import { innerCallOf, type Via } from './methods/discovery.js'
import type { ConsentGate } from './consent.js'
import { capabilitiesOf, discoverResult, initializeResult } from './methods/lifecycle.js'

export type { DispatchContext, ServerInfo } from './context.js'
export { instanceOwnerOf } from './call-options.js'
export { shapeLegacy } from './shape.js'
export type { EnvelopeCheck } from './envelope.js'

/** How a {@link Dispatcher} is built: its registry and identity, and what a config (re)load sets. */
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
  /** Tool search on `/mcp` and plain `mcpx serve` (top-level `discovery` in `"mode": "search"`, lib/policy/discovery.ts); undefined: list mode. */
  discovery?: ToolSearch
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
  /** How the confirmation gate asks (config `confirmation`); default: 2 min expiry, no redaction, 1000 characters of arguments. */
  confirmation?: ConfirmationConfig
  /** Makes the ledger of spent approvals on first use (lib/policy/confirm.ts createLedger); default: in memory. */
  ledger?: () => ApprovalLedger
  /** The grants of the `oauth-user` upstreams (lib/dispatch/consent.ts); undefined: none configured. */
  consent?: ConsentGate
}

/** The gate's settings when none are given (lib/policy/schema.ts CONFIRMATION_SCHEMA has the config's defaults). */
const DEFAULT_CONFIRMATION: ConfirmationConfig = { expiry: 120_000, redact: [], maxArgumentChars: 1000 }

/** An endpoint a request names that is not configured (a reload removed it): nothing is exposed (fail closed). */
const NO_SERVER = new CuratedServer('', {})

/**
 * Answers JSON-RPC requests against the upstream registry.
 * `handle` never rejects: every failure becomes a JSON-RPC error response.
 */
export class Dispatcher {
  readonly registry: UpstreamRegistry
  readonly serverInfo: ServerInfo
  private readonly log: Logger
  private readonly listTtlMs: number
  /** The MRTR bridge (lib/dispatch/mrtr.ts): interactive calls across eras, and the question capability rule. */
  private readonly mrtr: MrtrBridge
  /** The per-caller policy; undefined: none configured (no per-request cost). */
  private policy: Policy | undefined
  /** The curated endpoints; undefined: none configured. */
  private servers: Servers | undefined
  /** Tool search on the whole catalogue's endpoint (`/mcp`, plain `mcpx serve`); undefined: list mode (no per-request cost). */
  private discovery: ToolSearch | undefined
  /** The audit trail; undefined: none configured (no per-request cost). */
  private readonly audit: AuditTrail | undefined
  /** Responses that answered a denial (for the audit trail's outcome); never looked at without a trail. */
  private readonly denials = new WeakSet<object>()
  /** What the method handlers share (lib/dispatch/methods/method.ts); its page size follows setPageSize. */
  private readonly deps: MethodDeps
  /** The task methods of both eras, ids and book (lib/dispatch/tasks.ts); lib/core relays status notifications through it. */
  readonly tasks: Tasks
  /** The human confirmation gate on tools/call (lib/dispatch/confirm-gate.ts); lib/core swaps its settings on reload. */
  readonly confirm: ConfirmGate

  constructor (options: DispatcherOptions) {
    this.registry = options.registry
    this.serverInfo = options.serverInfo
    this.log = options.logger
    this.listTtlMs = options.listTtlMs ?? 0
    this.policy = options.policy
    this.servers = options.servers
    this.discovery = options.discovery
    this.audit = options.audit
    const sealer = options.sealer ?? new StateSealer()
    const optionsFor = (request: JsonRpcRequest, ctx: DispatchContext): UpstreamCallOptions => callOptions(request, ctx, this.mrtr)
    this.tasks = new Tasks({ registry: this.registry, sealer, logger: options.logger })
    this.mrtr = new MrtrBridge({
      sealer,
      parkTimeoutMs: options.parkTimeoutMs ?? 60_000,
      stateTtlMs: options.stateTtlMs ?? 300_000,
      logger: options.logger
    })
    this.confirm = new ConfirmGate(sealer, options.confirmation ?? DEFAULT_CONFIRMATION, options.ledger ?? (() => new MemoryLedger()))
    this.deps = {
      registry: this.registry,
      serverInfo: this.serverInfo,
      mrtr: this.mrtr,
      tasks: this.tasks,
      confirm: this.confirm,
      pageSize: options.pageSize ?? 0,
      rateLimiter: options.rateLimiter,
      onRateLimited: options.onRateLimited,
      consent: options.consent,
      callOptions: optionsFor
    }
  }

  /**
   * Swaps the per-caller policy, the curated endpoints and the whole catalogue's tool search (a config
   * reload compiles new ones: lib/policy/rules compilePolicy, lib/policy/endpoints Servers,
   * lib/policy/discovery toolSearchOf). Requests already running keep the view they started with.
   * undefined: everything allowed / no curated endpoints / list mode.
   */
  setAccess (policy: Policy | undefined, servers: Servers | undefined, discovery?: ToolSearch): void {
    this.policy = policy
    this.servers = servers
    this.discovery = discovery
  }

  /**
   * Sets the items per page of the four list methods (a reload's `transport.pageSize`): requests
   * that start from now page by it. A cursor issued before holds no page size (lib/dispatch/paging.ts: the
   * list, an offset and the last item served), so it resumes at the new size. 0: whole lists.
   */
  setPageSize (pageSize: number): void { this.deps.pageSize = pageSize }

  /** Whether a curated endpoint by this name is configured (HTTP answers 404 for any other `/mcp/<name>`). */
  hasEndpoint (name: string): boolean { return this.servers?.has(name) === true }

  /**
   * What the request's caller sees on its endpoint, or undefined when neither a policy nor a
   * curated endpoint nor tool search applies (everything visible: the old path, at no cost). The one place
   * visibility is decided. An endpoint that is not configured exposes nothing. Never throws.
   */
  visibilityOf (ctx: Pick<DispatchContext, 'caller' | 'endpoint'>): Visibility | undefined {
    const view = this.policy?.viewOf(ctx.caller, ctx.endpoint ?? WHOLE_CATALOGUE)
    const server = ctx.endpoint === undefined ? undefined : this.servers?.get(ctx.endpoint) ?? NO_SERVER
    const search = server === undefined ? this.discovery : server.search
    return view === undefined && server === undefined && search === undefined ? undefined : new Visibility(view, server, this.registry, search)
  }

  /** {@link visibilityOf}, with Visibility.ALL (the null view) where that is undefined. Never throws. */
  viewOf (ctx: Pick<DispatchContext, 'caller' | 'endpoint'>): Visibility {
    return this.visibilityOf(ctx) ?? Visibility.ALL
  }

  /**
   * The tool `name` (as exposed) as the caller sees it in `view` ({@link viewOf}), or undefined when it
   * does not exist for them (unknown or hidden: the same). The modern headers check (Mcp-Param-*)
   * looks tools up this way, so a hidden tool's schema never shapes an answer, and a renamed one is
   * found by the name the client uses. Never throws.
   */
  findTool (name: string, view: Visibility): JsonObject | undefined {
    return view.findTool(name, this.registry)
  }

  /** Number of calls parked on a question, for metrics and tests. */
  get parkedCalls (): number { return this.mrtr.parkedCalls }

  /** Cancels every parked call upstream (shutdown). The confirmation ledger is closed by its owner (lib/core: `confirm.close()`). */
  close (): void { this.mrtr.close() }

  /** The capabilities mcpx declares (lib/dispatch/methods/lifecycle.ts capabilitiesOf). */
  capabilities (): JsonObject { return capabilitiesOf(this.registry) }

  /** Checks a modern request's `_meta` envelope (lib/dispatch/envelope.ts, DIGEST §6a): the error response, or undefined. */
  checkModernEnvelope (request: JsonRpcRequest): EnvelopeCheck { return checkModernEnvelope(request) }

  /** The `initialize` result for a legacy client (2024-11-05/basic/lifecycle.mdx). */
  initializeResult (params: JsonObject | undefined): JsonObject { return initializeResult(this.deps, params) }

  /** The `server/discover` result (2026-07-28/server/discover.mdx), before modern shaping. */
  discoverResult (): JsonObject { return discoverResult(this.registry) }

  /**
   * Answers one request in the given context. Step 1: the caller's view, decided once for the
   * request (the handler and the audit line read the same one): `ctx.view` when the face already
   * worked it out, else {@link viewOf} now. On a tool-search endpoint, a
   * well-formed `tools/call` of `call_tool` goes on from here as the `tools/call` of its inner tool
   * (lib/dispatch/methods/discovery.ts innerCallOf), so every later step (trace, audit, rate limits,
   * the gates, MRTR, Tasks) applies to the inner call as to a direct one. Step 2: a span for it when
   * tracing is on.
   * @returns the response (success or error). Never rejects.
   */
  handle (request: JsonRpcRequest, ctx: DispatchContext): Promise<JsonRpcResponse> {
    const view = ctx.view ?? this.viewOf(ctx)
    let via: Via | undefined
    // List mode (the default): one property read.
    if (view.search !== undefined && request.method === 'tools/call') {
      const inner = innerCallOf(request)
      if (inner !== undefined) { request = inner; via = 'call_tool' }
    }
    // Tracing off (the default): one module variable read and no extra promise (lib/telemetry/trace.ts).
    const tracing = activeTracing()
    if (tracing === undefined) return this.audited(request, ctx, view, via)
    const traced = request
    return tracing.request(traced, ctx.era, ctx.revision, ctx.traceIn, trace => { ctx.trace = trace }, async () => await this.audited(traced, ctx, view, via))
  }

  /** Step 3: {@link answer}, plus its audit line when a trail is configured; no extra promise without one. */
  private audited (request: JsonRpcRequest, ctx: DispatchContext, view: Visibility, via: Via | undefined): Promise<JsonRpcResponse> {
    const audit = this.audit
    if (audit === undefined) return this.answer(request, ctx, view, via)
    return this.answerAudited(audit, request, ctx, view, via)
  }

  private async answerAudited (audit: AuditTrail, request: JsonRpcRequest, ctx: DispatchContext, view: Visibility, via: Via | undefined): Promise<JsonRpcResponse> {
    const started = performance.now()
    const response = await this.answer(request, ctx, view, via)
    const event = auditEventOf(this.registry, request, ctx, view, response, this.denials.has(response), performance.now() - started, via, this.confirm.recordOf(ctx))
    if (event !== undefined) audit.record(event)
    return response
  }

  /**
   * `cacheScope` of this caller's cacheable results (2026-07-28 server/utilities/caching.mdx):
   * `private` when a policy applies (what a caller sees depends on who they are), when `oauth-user`
   * upstreams list per caller, or when an upstream answers per caller (isolated, or reached with the
   * caller's identity); `public` otherwise, curated endpoints included (the same for every caller).
   */
  private scopeOf (view: Visibility): 'public' | 'private' {
    return view.policy !== undefined || this.deps.consent !== undefined || this.registry.answersDependOnCaller?.() === true ? 'private' : 'public'
  }

  /** Step 4: the era's envelope, then the method's result shaped for the era, or the error it raised. */
  private async answer (request: JsonRpcRequest, ctx: DispatchContext, view: Visibility, via: Via | undefined): Promise<JsonRpcResponse> {
    const rejected = checkEnvelope(request, ctx)
    if (rejected !== undefined) return rejected
    try {
      const result = await this.run(request, ctx, view, via)
      if (ctx.era === 'modern') {
        const required = this.mrtr.takeMissing(ctx) ?? missingCapabilities(result, ctx.clientCapabilities)
        if (required !== undefined) return missingCapabilityError(request.id, required)
      }
      return successResponse(request.id, ctx.era === 'modern' ? shapeModern(request.method, result, this.serverInfo, this.listTtlMs, isCacheable(request.method) ? this.scopeOf(view) : 'public') : shapeLegacy(result))
    } catch (err) {
      const required = ctx.era === 'modern' ? this.mrtr.takeMissing(ctx) : undefined
      if (required !== undefined) return missingCapabilityError(request.id, required)
      return this.errorFor(request, ctx, err)
    }
  }

  /**
   * Step 5: the method's handler (lib/dispatch/methods/index.ts), under the caller's view. Not async
   * itself (the handler's promise is returned as it is: a frame and a promise fewer per request);
   * throws UpstreamRpcError -32601 for an unknown method, which {@link answer} catches as it would a rejection.
   */
  private run (request: JsonRpcRequest, ctx: DispatchContext, view: Visibility, via: Via | undefined): JsonObject | Promise<JsonObject> {
    const handler = METHODS.get(request.method)
    if (handler === undefined) throw new UpstreamRpcError(METHOD_NOT_FOUND, `Method not found: ${request.method}`)
    return handler({ request, params: request.params ?? {}, ctx, view, deps: this.deps, via })
  }

  /** Step 6: a thrown error as the JSON-RPC error response, marked as a refusal where it is one. */
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

export type { Revision }
