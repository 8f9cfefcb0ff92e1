/**
 * Client-side builders of the 2026-07-28 mirrored headers, for test clients: the Mcp-Param-*
 * headers of a `tools/call` and every mirrored header of a POST (DIGEST §6d "Type coercion (client
 * side)", "Which headers each method needs", tables D1, D2, D6). mcpx itself never builds them: its
 * upstream calls get them from the SDK client. The server-side check is lib/param-headers.ts.
 */
import { isObject } from '../../lib/jsonrpc.js'
import { MODERN_REVISIONS } from '../../lib/revisions.js'
import { encodeHeaderValue } from '../../lib/header-values.js'
import { bodyProtocolVersion, nameFieldOf, type MirroredMessage } from '../../lib/modern-headers.js'
import { scanParamHeaders, valueAt } from '../../lib/param-headers.js'

/** The revision sent in MCP-Protocol-Version when the body names none (a notification). */
const DEFAULT_MODERN_REVISION = MODERN_REVISIONS[MODERN_REVISIONS.length - 1]

/**
 * The header text for one argument value, by the type coercion table (DIGEST §6d): a string is
 * encoded ({@link encodeHeaderValue}); a number in decimal (`42`, `-7`); a boolean `true`/`false`.
 * A value of another JSON type (schema-invalid arguments) is sent as its encoded JSON text, so a
 * server refuses it as a mismatch rather than as a missing header. Undefined when unsendable.
 */
function headerText (value: unknown): string | undefined {
  switch (typeof value) {
    case 'string': return encodeHeaderValue(value)
    case 'boolean': return value ? 'true' : 'false'
    case 'number': return Number.isFinite(value) ? String(value) : undefined
    case 'bigint': return String(value)
    case 'object': {
      try {
        const json = JSON.stringify(value)
        return json === undefined ? undefined : encodeHeaderValue(json)
      } catch {
        return undefined
      }
    }
    default: return undefined
  }
}

/**
 * The Mcp-Param-* headers for a `tools/call`, client side (DIGEST §6d "Type coercion", tables D1,
 * D2, D6). One `Mcp-Param-<Annotation>` (annotation as written) per annotated argument that is
 * present and not `null`; absent and `null` arguments get no header. Values: strings through
 * {@link encodeHeaderValue} (plain or `=?base64?…?=`), integers in decimal, booleans `true`/`false`.
 * A schema that {@link scanParamHeaders} refuses yields no headers at all (the tool should have
 * been dropped; SEP-2243: without a usable schema, send no Mcp-Param-*).
 * @param inputSchema the tool's most recently listed inputSchema
 * @param args the call's `arguments`
 * @returns a fresh object of header name → value. Never throws.
 */
export function buildParamHeaders (inputSchema: unknown, args: unknown): Record<string, string> {
  const out: Record<string, string> = {}
  const scan = scanParamHeaders(inputSchema)
  if (!scan.ok) return out
  for (const param of scan.params) {
    const value = valueAt(args, param.path)
    if (value === undefined || value === null) continue
    const text = headerText(value)
    if (text !== undefined) out[`Mcp-Param-${param.header}`] = text
  }
  return out
}

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
