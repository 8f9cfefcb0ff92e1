/**
 * What a method handler receives and may use. The dispatcher (lib/dispatch/dispatcher.ts) looks a
 * request's method up in the table (lib/dispatch/methods/index.ts) and calls its handler with the
 * request, its params, its context, the caller's view (decided once per request) and the
 * dispatcher's shared parts. A handler returns the result before era shaping, or throws
 * UpstreamRpcError (mapped to the JSON-RPC error by the dispatcher).
 */
import { isObject, INVALID_PARAMS, type JsonRpcRequest, UpstreamRpcError, type JsonObject } from '../../protocol/jsonrpc.js'
import type { UpstreamCallOptions, UpstreamRegistry } from '../../upstreams/contract.js'
import type { RateLimiter } from '../../policy/rate-limit.js'
import type { Visibility } from '../../policy/visibility.js'
import type { DispatchContext, ServerInfo } from '../context.js'
import type { MrtrBridge } from '../mrtr.js'
import type { ConsentGate } from '../consent.js'
import type { Tasks } from '../tasks.js'
import type { ConfirmGate } from '../confirm-gate.js'

/** The dispatcher's parts the handlers share: one object per dispatcher, built at construction. */
export interface MethodDeps {
  readonly registry: UpstreamRegistry
  readonly serverInfo: ServerInfo
  /** The MRTR bridge (lib/dispatch/mrtr.ts): tools/call, prompts/get and resources/read go through it. */
  readonly mrtr: MrtrBridge
  /** The task methods of both eras (lib/dispatch/tasks.ts). */
  readonly tasks: Tasks
  /** The human confirmation gate on tools/call (lib/dispatch/confirm-gate.ts). */
  readonly confirm: ConfirmGate
  /** Items per page of the four list methods; 0: whole lists. A reload changes it (Dispatcher.setPageSize). */
  pageSize: number
  /** Counts calls against the policy's rate limits; undefined: none configured (a limit met without one refuses). */
  readonly rateLimiter: RateLimiter | undefined
  /** Told of each call refused by a rate limit or for want of its store. Must not throw. */
  readonly onRateLimited: ((reason: 'limited' | 'unavailable') => void) | undefined
  /** The grants of the `oauth-user` upstreams (lib/dispatch/consent.ts); undefined: none configured. */
  readonly consent: ConsentGate | undefined
  /** The options of an upstream call made for `request` (lib/dispatch/call-options.ts). Never throws. */
  callOptions: (request: JsonRpcRequest, ctx: DispatchContext) => UpstreamCallOptions
}

/** One request as a handler sees it. */
export interface MethodCall {
  request: JsonRpcRequest
  /** `request.params`, or `{}` when absent. */
  params: JsonObject
  ctx: DispatchContext
  /**
   * What the caller sees on its endpoint (lib/policy/visibility.ts); Visibility.ALL when neither a
   * policy nor a curated endpoint applies. A hidden thing is answered exactly as a name that does
   * not exist (the same error, thrown where the registry would throw it), and never reaches the upstream.
   */
  view: Visibility
  deps: MethodDeps
  /**
   * `'call_tool'` when this `tools/call` is the inner call of a tool-search endpoint's `call_tool`
   * (lib/dispatch/methods/discovery.ts): its name is then always a catalogue tool's, never a meta-tool's.
   * Undefined for every direct request.
   */
  via?: 'call_tool' | undefined
}

/** A method's handler: the result before era shaping. Throws UpstreamRpcError for a JSON-RPC error. */
export type MethodHandler = (call: MethodCall) => JsonObject | Promise<JsonObject>

/**
 * A call's `arguments` (tools/call, prompts/get): undefined when absent.
 * @throws UpstreamRpcError -32602 when present and not an object
 */
export function argumentsOf (params: JsonObject): JsonObject | undefined {
  if (params.arguments !== undefined && !isObject(params.arguments)) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: arguments must be an object')
  return params.arguments as JsonObject | undefined
}
