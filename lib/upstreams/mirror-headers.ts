/**
 * The Mcp-Param-* headers mcpx sends on a `tools/call` to a modern HTTP upstream (client side of
 * DIGEST §6d "Type coercion", tables D1, D2, D6; SEP-2243), from the upstream's own tool
 * definition. The server-side check is lib/protocol/param-headers.ts; test clients use the same builder
 * (test/helpers/param-headers.ts).
 */
import { encodeHeaderValue } from '../protocol/header-values.js'
import { scanParamHeaders, valueAt } from '../protocol/param-headers.js'

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
