/**
 * Which era wrote a POST (seed › "Which era a POST belongs to"; DIGEST §6a Eras).
 *
 * A POST is modern if its body carries `_meta["io.modelcontextprotocol/protocolVersion"]`,
 * or its MCP-Protocol-Version header names a revision at or after 2026-07-28 (a date mcpx does
 * not implement still counts: that request is answered -32022, not treated as legacy).
 * Everything else is legacy. The header alone is enough because a modern header on a body
 * without the `_meta` field is exactly the disagreement the modern header rules exist to catch.
 */
import { eraOf, type Era } from './revisions.js'
import { isObject } from './jsonrpc.js'

/** The `_meta` key that carries a modern request's revision. */
export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion'
/** The `_meta` key that carries a modern request's client capabilities. */
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities'
export const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo'
export const META_LOG_LEVEL = 'io.modelcontextprotocol/logLevel'
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo'
export const META_SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId'

/**
 * The era of a POST.
 * @param protocolVersionHeader the trimmed MCP-Protocol-Version header, undefined when absent
 * @param body the parsed body: an object, an array (batch) or anything else
 * @returns 'modern' or 'legacy'. Never throws. A batch is judged by its elements: any element
 *          with the modern `_meta` makes it modern (and modern refuses batches, seed › No batches).
 */
export function eraOfPost (protocolVersionHeader: string | undefined, body: unknown): Era {
  if (protocolVersionHeader !== undefined && eraOf(protocolVersionHeader) === 'modern') return 'modern'
  if (Array.isArray(body)) return body.some(hasModernMeta) ? 'modern' : 'legacy'
  return hasModernMeta(body) ? 'modern' : 'legacy'
}

/** True when a message's `params._meta` carries the modern protocolVersion key (any value). */
export function hasModernMeta (message: unknown): boolean {
  if (!isObject(message) || !isObject(message.params)) return false
  const meta = message.params._meta
  return isObject(meta) && Object.hasOwn(meta, META_PROTOCOL_VERSION)
}

/** The modern `_meta` object of a message, or undefined. */
export function metaOf (message: unknown): Record<string, unknown> | undefined {
  if (!isObject(message) || !isObject(message.params)) return undefined
  const meta = message.params._meta
  return isObject(meta) ? meta : undefined
}
