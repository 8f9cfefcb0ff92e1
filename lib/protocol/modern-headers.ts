/**
 * The 2026-07-28 standard mirrored headers, server side: MCP-Protocol-Version, Mcp-Method and
 * Mcp-Name checked against the parsed body. Pure: plugins/modern-headers.ts reads the request and
 * turns a rejection into a 400 (lib/protocol/http-status) carrying the request's id.
 *
 * Sources: seed › Streamable HTTP, 2026-07-28 › Mirrored headers; DIGEST §6d "Standard headers",
 * "Which headers each method needs", "General header rules", table D4; DIGEST §9 A2, A3, A4.
 * The Mcp-Param-* headers live in lib/protocol/param-headers.ts.
 */

import { isObject } from './jsonrpc.js'
import { META_PROTOCOL_VERSION } from './inbound.js'
import { decodeHeaderValue, headerMismatch, readHeader, type HeaderBag, type HeaderRejection } from './header-values.js'


const PROTOCOL_VERSION = 'MCP-Protocol-Version'
const METHOD = 'Mcp-Method'
const NAME = 'Mcp-Name'

/** The body field Mcp-Name mirrors, per method (DIGEST §6d). Null prototype: keys come from the wire. */
const NAME_FIELD: Record<string, 'name' | 'uri' | 'taskId' | undefined> = Object.assign(Object.create(null), {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  // The io.modelcontextprotocol/tasks extension (SEP-2663 "Streamable HTTP: Routing Headers"):
  // tasks/get, tasks/update and tasks/cancel carry Mcp-Name: <taskId>.
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId'
})

/**
 * The `params` field that Mcp-Name mirrors for a method: `'name'` for `tools/call` and
 * `prompts/get`, `'uri'` for `resources/read`, `'taskId'` for the Tasks extension's `tasks/get`,
 * `tasks/update` and `tasks/cancel` (SEP-2663), undefined for every other method (Mcp-Name is
 * required on exactly those six). Never throws. DIGEST §6d "Standard headers".
 */
export function nameFieldOf (method: string): 'name' | 'uri' | 'taskId' | undefined {
  return NAME_FIELD[method]
}

/**
 * The body's `params._meta["io.modelcontextprotocol/protocolVersion"]`, read defensively:
 * `params` and `_meta` may be absent or not objects. Returns the raw value (any type), or
 * undefined when absent. Never throws. DIGEST §6a.
 */
export function bodyProtocolVersion (params: unknown): unknown {
  if (!isObject(params) || !isObject(params._meta)) return undefined
  return params._meta[META_PROTOCOL_VERSION]
}

const PROTOCOL_VERSION_FIELD = `params._meta["${META_PROTOCOL_VERSION}"]`

/** The minimal body shape the checks read: a JSON-RPC request or notification, already classified. */
export interface MirroredMessage {
  method: string
  params?: Record<string, unknown>
}

/** `'request'` (has an id) or `'notification'` (none): decides which headers are required. */
export type MessageKind = 'request' | 'notification'

/**
 * Checks the standard mirrored headers of a 2026-07-28 POST against its body.
 *
 * - `request`: MCP-Protocol-Version and Mcp-Method are required; Mcp-Name is required on
 *   `tools/call` and `prompts/get` (mirrors `params.name`) and `resources/read` (`params.uri`).
 *   Mcp-Name on any other method mirrors nothing and is ignored (DIGEST A4: nothing says to refuse it).
 * - `notification`: nothing is required (seed: "A notification POST has no header requirements in
 *   this revision"; the seed settles A3), but MCP-Protocol-Version and Mcp-Method, when sent, must
 *   agree: Mcp-Method with `method`, MCP-Protocol-Version with `_meta` protocolVersion when the body
 *   has one. Mcp-Name mirrors nothing on a notification and is ignored.
 *
 * A header is refused when missing (where required), sent twice, carrying bytes outside visible
 * ASCII/SP/HTAB, failing to decode (Mcp-Name only), or different from the body. Names arrive
 * lowercased from Node; values are compared case-sensitively after trimming surrounding SP/HTAB.
 * MCP-Protocol-Version and Mcp-Method are compared literally (they are plain, never sentinel-encoded);
 * Mcp-Name is decoded from `=?base64?…?=` first. On a request, an MCP-Protocol-Version header with
 * no `_meta` in the body, or a non-string `_meta` protocolVersion, is a mismatch — the seed (› Which
 * era a POST belongs to) calls a modern header on a body without the _meta field "exactly the
 * disagreement the modern header rules exist to catch", which settles A2 as -32020 rather than
 * -32602. A `_meta` object without the protocolVersion key passes here and is the envelope's -32602. Checks run
 * in the order MCP-Protocol-Version, Mcp-Method, Mcp-Name; the first fault is reported.
 *
 * @param headers the incoming headers (Node's bag: lowercase names, arrays for repeats)
 * @param message the parsed body; `params` may be absent or malformed (it is read defensively)
 * @param kind whether the body is a request or a notification
 * @returns undefined when everything agrees, else `{ code: -32020, message }` naming the header
 *          and the fault. Never throws. Seed › Streamable HTTP, 2026-07-28 › Mirrored headers; DIGEST §6d.

 * @param bodyVersion the body's `_meta` protocolVersion as lib/protocol/inbound read it (default: read from `message`)
 */
export function checkModernHeaders (headers: HeaderBag, message: MirroredMessage, kind: MessageKind, bodyVersion: unknown = bodyProtocolVersion(message.params)): HeaderRejection | undefined {
  const isRequest = kind === 'request'
  const params = isObject(message.params) ? message.params : undefined

  const version = readHeader(headers, 'mcp-protocol-version')
  switch (version.kind) {
    case 'absent':
      // Seed wins over the spec here: streamable-http.mdx says every POST MUST carry
      // MCP-Protocol-Version and SEP-2243 requires Mcp-Method on notifications too (A3), but the
      // seed says a notification POST "has no header requirements in this revision, so none are
      // demanded, but any it sends must still agree". So only a request needs these two.
      if (isRequest) return headerMismatch(PROTOCOL_VERSION, 'missing')
      break
    case 'duplicate':
    case 'invalid':
      return headerMismatch(PROTOCOL_VERSION, version.kind)
    case 'value':
      // A request body without the _meta field disagrees with the header (seed › Which era a POST
      // belongs to: "a modern header on a body without the _meta field … should be refused as that",
      // settling A2 as -32020), and so does a protocolVersion that is not the header's string. But a
      // body whose `_meta` object merely lacks the protocolVersion key is a malformed envelope, not
      // a disagreement: that is the dispatcher's -32602 (2026-07-28/basic/index.mdx "missing
      // required _meta field"; DIGEST §6a, the per-request _meta envelope; the conformance suite's
      // sep-2575-request-meta-invalid-missing-protocol-version). A notification's body usually has
      // none: nothing to compare.
      const envelopeLacksVersion = isRequest && bodyVersion === undefined && isObject(params?._meta)
      if (typeof bodyVersion === 'string' ? version.value !== bodyVersion : (!envelopeLacksVersion && (isRequest || bodyVersion !== undefined))) {
        return headerMismatch(PROTOCOL_VERSION, 'mismatch', PROTOCOL_VERSION_FIELD)
      }
  }

  const method = readHeader(headers, 'mcp-method')
  switch (method.kind) {
    case 'absent':
      if (isRequest) return headerMismatch(METHOD, 'missing')
      break
    case 'duplicate':
    case 'invalid':
      return headerMismatch(METHOD, method.kind)
    case 'value':
      if (method.value !== message.method) return headerMismatch(METHOD, 'mismatch', 'method')
  }

  if (!isRequest) return undefined
  const field = NAME_FIELD[message.method]
  if (field === undefined) return undefined
  const name = readHeader(headers, 'mcp-name')
  switch (name.kind) {
    case 'absent':
      return headerMismatch(NAME, 'missing')
    case 'duplicate':
    case 'invalid':
      return headerMismatch(NAME, name.kind)
    case 'value': {
      const decoded = decodeHeaderValue(name.value)
      if (!decoded.ok) return headerMismatch(NAME, 'undecodable', decoded.reason)
      const bodyName = params?.[field]
      if (typeof bodyName !== 'string' || decoded.value !== bodyName) return headerMismatch(NAME, 'mismatch', 'params.' + field)
    }
  }
  return undefined
}
