/**
 * Reading a request's params where the dispatcher (lib/dispatch/dispatcher.ts) and the task surface
 * (lib/dispatch/tasks.ts) both do: the one -32602 for a missing string param, and params as an upstream
 * receives them (without the client's `_meta`, which mcpx replaces with its own per call).
 */
import { INVALID_PARAMS, UpstreamRpcError, type JsonObject } from './jsonrpc.js'

/**
 * `params[key]` when it is a string.
 * @throws UpstreamRpcError -32602 `Invalid params: <key> must be a string` otherwise
 */
export function requireString (params: JsonObject, key: string): string {
  const value = params[key]
  if (typeof value !== 'string') throw new UpstreamRpcError(INVALID_PARAMS, `Invalid params: ${key} must be a string`)
  return value
}

/** `params` without its `_meta` (itself when it has none). Never throws. */
export function stripMeta (params: JsonObject): JsonObject {
  if (params._meta === undefined) return params
  const { _meta: _omit, ...rest } = params
  return rest
}
