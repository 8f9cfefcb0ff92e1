/**
 * Which era a method exists in, and a modern request's `_meta` envelope (DIGEST §6a): the checks
 * the dispatcher makes before any method runs. Each answers with the error response, or undefined.
 */
import { errorResponse, isObject, INVALID_PARAMS, METHOD_NOT_FOUND, type JsonRpcErrorResponse, type JsonRpcRequest } from '../protocol/jsonrpc.js'
import { MODERN_REVISIONS, unsupportedVersion } from '../protocol/revisions.js'
import { META_CLIENT_CAPABILITIES, META_LOG_LEVEL, META_PROTOCOL_VERSION, MODERN_ONLY, metaOf } from '../protocol/inbound.js'
import type { DispatchContext } from './context.js'

/** Methods that exist only in the legacy era: a modern request for them is -32601 (404). */
const LEGACY_ONLY = new Set(['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe'])

const LOG_LEVELS = new Set(['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'])

/** A rejection of a request's envelope, before any method runs; undefined: it passes. */
export type EnvelopeCheck = JsonRpcErrorResponse | undefined

/**
 * A request's `params._meta` object: the one the face classified (`ctx.meta`, lib/protocol/inbound
 * classifyMessage), read from the request only when the face classified nothing (`ctx.meta`
 * undefined). Both give the same answer: a face sets `ctx.meta` from the very request it hands to the
 * dispatcher (and a tool-search `call_tool`'s inner call keeps its `_meta`, lib/dispatch/methods/discovery.ts).
 * @returns the object, or undefined when the request has none. Never throws.
 */
export function requestMeta (request: JsonRpcRequest, ctx: Pick<DispatchContext, 'meta'>): Readonly<Record<string, unknown>> | undefined {
  const meta = ctx.meta
  return meta === undefined ? metaOf(request) : meta ?? undefined
}

/**
 * Checks a modern request's `_meta` envelope (DIGEST §6a): protocolVersion and
 * clientCapabilities present (-32602), the version implemented (-32022), logLevel valid (-32602),
 * and the method not a legacy-only one (-32601), in that order. Never throws.
 * @param meta the request's `params._meta` object ({@link requestMeta}); read from the request when not given
 * @returns the error response, or undefined
 */
export function checkModernEnvelope (request: JsonRpcRequest, meta: Readonly<Record<string, unknown>> | undefined = metaOf(request)): EnvelopeCheck {
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
 * The envelope check of a request served in `ctx.era`: a modern one's `_meta` ({@link checkModernEnvelope},
 * on the `_meta` the face classified: {@link requestMeta}); a legacy one only that its method is not
 * modern-only (-32601). Never throws.
 * @returns the error response, or undefined
 */
export function checkEnvelope (request: JsonRpcRequest, ctx: Pick<DispatchContext, 'era' | 'meta'>): EnvelopeCheck {
  if (ctx.era === 'modern') return checkModernEnvelope(request, requestMeta(request, ctx))
  return MODERN_ONLY.has(request.method) ? errorResponse(request.id, METHOD_NOT_FOUND, `Method not found: ${request.method}`) : undefined
}
