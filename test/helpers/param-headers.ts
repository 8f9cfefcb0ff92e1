/**
 * Client-side builders of the 2026-07-28 mirrored headers, for test clients: the Mcp-Param-*
 * headers of a `tools/call` and every mirrored header of a POST (DIGEST §6d "Type coercion (client
 * side)", "Which headers each method needs", tables D1, D2, D6). mcpx builds the Mcp-Param-* ones
 * for its modern HTTP upstream calls (lib/upstreams/mirror-headers.ts, re-exported here). The
 * server-side check is lib/protocol/param-headers.ts.
 */
import { isObject } from '../../lib/protocol/jsonrpc.js'
import { MODERN_REVISIONS } from '../../lib/protocol/revisions.js'
import { encodeHeaderValue } from '../../lib/protocol/header-values.js'
import { bodyProtocolVersion, nameFieldOf, type MirroredMessage } from '../../lib/protocol/modern-headers.js'
import { buildParamHeaders } from '../../lib/upstreams/mirror-headers.js'

export { buildParamHeaders }

/** The revision sent in MCP-Protocol-Version when the body names none (a notification). */
const DEFAULT_MODERN_REVISION = MODERN_REVISIONS[MODERN_REVISIONS.length - 1]

/**
 * Every mirrored header for a 2026-07-28 POST, client side (DIGEST §6d "Which headers each method
 * needs"): `MCP-Protocol-Version` (the body's `_meta` protocolVersion, or the newest modern
 * revision when the body has none, as on a notification — every POST carries it), `Mcp-Method`
 * (the method, plain, sent on notifications too so SEP-2243 servers are satisfied as well, A3),
 * `Mcp-Name` (encoded) on `tools/call`/`prompts/get` (`params.name`) and `resources/read`
 * (`params.uri`) when the body has a string there, and for `tools/call` with an `inputSchema`,
 * the {@link buildParamHeaders} of `params.arguments`. Header names use the spec's casing.
 * @param message the request or notification about to be sent
 * @param inputSchema the called tool's most recently listed inputSchema; without it, no Mcp-Param-*
 * @returns a fresh object of header name → value. Never throws.
 */
export function buildModernHeaders (message: MirroredMessage, inputSchema?: unknown): Record<string, string> {
  const params = isObject(message.params) ? message.params : undefined
  const version = bodyProtocolVersion(params)
  const out: Record<string, string> = {
    'MCP-Protocol-Version': typeof version === 'string' ? version : DEFAULT_MODERN_REVISION,
    'Mcp-Method': message.method,
  }
  const field = nameFieldOf(message.method)
  const name = field === undefined ? undefined : params?.[field]
  if (typeof name === 'string') out['Mcp-Name'] = encodeHeaderValue(name)
  if (message.method === 'tools/call' && inputSchema !== undefined) Object.assign(out, buildParamHeaders(inputSchema, params?.arguments))
  return out
}
