/**
 * JSON-RPC 2.0 messages as mcpx reads and writes them: parsing with exact request ids,
 * classification (request, notification, response, batch), error codes and error responses.
 *
 * Request ids go back exactly as they came (JSON-RPC 2.0 §5: a response's id is its request's). `JSON.parse` rounds
 * integers above 2^53, so a numeric id that is not a safe integer keeps its raw text in a
 * {@link RawNumberId}, and {@link encodeMessage} writes that text back verbatim.
 * Sources: JSON-RPC 2.0 §4–5; DIGEST §2b, §6e.
 */

export const PARSE_ERROR = -32_700
export const INVALID_REQUEST = -32_600
export const METHOD_NOT_FOUND = -32_601
export const INVALID_PARAMS = -32_602
export const INTERNAL_ERROR = -32_603
/** Legacy only (≤ 2025-11-25): resources/read on an unknown URI. In 2026 it is -32602. */
export const RESOURCE_NOT_FOUND = -32_002
/**
 * 2025-11-25 only: URLElicitationRequired, `data.elicitations`: the URL-mode elicitations to
 * complete before retrying (client/elicitation.mdx). 2026-07-28 must not emit it (DIGEST §6e):
 * mcpx turns it into an InputRequiredResult for such a client (lib/dispatch/mrtr.ts).
 */
export const URL_ELICITATION_REQUIRED = -32_042
/** 2026-07-28: a mirrored header is missing, differs from the body, or carries bad bytes. */
export const HEADER_MISMATCH = -32_020
/** 2026-07-28: the request needs a client capability it did not declare. */
export const MISSING_REQUIRED_CLIENT_CAPABILITY = -32_021
/** 2026-07-28: the protocol version is unknown or not supported. */
export const UNSUPPORTED_PROTOCOL_VERSION = -32_022
/**
 * mcpx's own code for "the request was refused for a reason outside the protocol" (an upstream
 * is down, a cap is reached). Application codes sit outside -32768..-32000 (2026-07-28/basic/index.mdx).
 */
export const UPSTREAM_ERROR = -31_000
/**
 * mcpx's code for "an isolated upstream has maxInstances instances already": a cap, so
 * over HTTP the reply is 503 with Retry-After (lib/protocol/http-status.ts).
 */
export const INSTANCES_EXHAUSTED = -31_001
/**
 * mcpx's code for "past a rate limit" (docs/policy.md › Rate limits): the caller made more calls of a
 * tool than a policy rule's `rateLimit` allows; `data.retryAfterMs` says when one fits again. Its
 * own code, in mcpx's application range beside -31000 and -31001, so a client can tell it from any
 * other failure without reading the message: -32603 (what a full upstream queue uses) means "the
 * server failed", and the -32000..-32099 server-error range is the transports' (the SDKs use -32000
 * for connection closed). Over HTTP it is 429 with Retry-After (lib/protocol/http-status.ts).
 */
export const RATE_LIMITED = -31_002

/** Any JSON object, as it crossed the wire. */
export type JsonObject = Record<string, unknown>

/** The list kinds whose changes a server announces (`notifications/<kind>/list_changed`). */
export type ListKind = 'tools' | 'prompts' | 'resources'

/**
 * A wire error an upstream returned, or one mcpx raises in its name (upstream down, timeout):
 * the dispatcher turns it into a JSON-RPC error response with this code/message/data.
 */
export class UpstreamRpcError extends Error {
  constructor (readonly code: number, message: string, readonly data?: unknown) {
    super(message)
    this.name = 'UpstreamRpcError'
  }
}

/** A numeric id that JSON.parse could not hold exactly; `raw` is its JSON text, e.g. `9007199254740993`. */
export class RawNumberId {
  constructor (readonly raw: string) {}
  toJSON (): number { return Number(this.raw) }
  toString (): string { return this.raw }
}

/** A JSON-RPC request id: string, number, or a number kept as raw text. Never null. */
export type RequestId = string | number | RawNumberId

export interface JsonRpcRequest {
  jsonrpc: '2.0'
  id: RequestId
  method: string
  params?: Record<string, unknown>
}

export interface JsonRpcNotification {
  jsonrpc: '2.0'
  method: string
  params?: Record<string, unknown>
}

export interface JsonRpcErrorObject {
  code: number
  message: string
  data?: unknown
}

export interface JsonRpcSuccess {
  jsonrpc: '2.0'
  id: RequestId
  result: Record<string, unknown>
}

export interface JsonRpcErrorResponse {
  jsonrpc: '2.0'
  /** Absent when the request id could not be read (2025-11-25/basic/index.mdx). */
  id?: RequestId
  error: JsonRpcErrorObject
}

export type JsonRpcResponse = JsonRpcSuccess | JsonRpcErrorResponse
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse

/** One element of a POST body or stdio line, classified. */
export type Classified =
  | { kind: 'request', message: JsonRpcRequest }
  | { kind: 'notification', message: JsonRpcNotification }
  | { kind: 'response', message: JsonRpcResponse }
  /** Not a valid JSON-RPC message; `id` is set when one could be read, so the error can carry it. */
  | { kind: 'invalid', id?: RequestId, error: JsonRpcErrorObject }

/** The outcome of parsing a body: one value, a batch, or a parse error. */
export type Parsed =
  | { ok: true, batch: false, value: unknown }
  | { ok: true, batch: true, value: unknown[] }
  /** `id` is set when the body was JSON whose id could be read (a too-deep message), so the error can carry it. */
  | { ok: false, error: JsonRpcErrorObject, id?: RequestId }

const textDecoder = new TextDecoder('utf-8', { fatal: true })

/**
 * Most levels of object/array nesting a message may have (the message object itself is level 1).
 * Deeper bodies are refused at parse time with -32600: left to run, they overflow the stack of
 * whatever walks them recursively later (the upstream client's schema checks answered -31000
 * "Maximum call stack size exceeded", blaming the upstream for a client's body). MCP messages
 * need a few levels of envelope plus the tool arguments' own; 128 leaves ample room.
 */
export const MAX_NESTING_DEPTH = 128
const TOO_DEEP: JsonRpcErrorObject = Object.freeze({ code: INVALID_REQUEST, message: `Invalid Request: nesting deeper than ${MAX_NESTING_DEPTH} levels` })
/** A text shorter than this cannot nest deeper than MAX_NESTING_DEPTH (each level costs an opening and a closing bracket). */
const MIN_TOO_DEEP_CHARS = 2 * (MAX_NESTING_DEPTH + 1)

/** Most members of one batch, when the caller names no other bound (config transport.maxBatchMembers' default). */
export const DEFAULT_MAX_BATCH_MEMBERS = 1000

/**
 * Parses a JSON-RPC body (HTTP POST body or one stdio line).
 * @param input the raw text, or bytes that must be valid UTF-8 (invalid UTF-8 is a parse error)
 * @param maxBatchMembers most members a batch may hold (config transport.maxBatchMembers): a longer
 *        one is refused whole. JSON-RPC 2.0 §6 sets no bound, but a reply holds one answer per
 *        member, so without one a 4 MiB body of `[0,0,…]` (2 million members) asks for a 200 MB
 *        reply (docs/security.md › Limits).
 * @returns the parsed value (numeric ids that are not safe integers replaced by {@link RawNumberId}),
 *          a -32700 error, or an id-less -32600 error for a batch of more than `maxBatchMembers`
 *          members, or a -32600 error for nesting deeper than {@link MAX_NESTING_DEPTH}
 *          (with the message's `id` when it is a single message whose id is readable). The depth
 *          check is one scan of the text, run only when the text is long enough to be that deep.
 *          Never throws.
 */
export function parseBody (input: string | Uint8Array, maxBatchMembers = DEFAULT_MAX_BATCH_MEMBERS): Parsed {
  let text: string
  if (typeof input === 'string') {
    text = input
  } else {
    try {
      text = textDecoder.decode(input)
    } catch {
      return { ok: false, error: { code: PARSE_ERROR, message: 'Parse error: body is not valid UTF-8' } }
    }
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    return { ok: false, error: { code: PARSE_ERROR, message: `Parse error: ${(err as Error).message}` } }
  }
  if (Array.isArray(value)) {
    if (value.length > maxBatchMembers) return { ok: false, error: { code: INVALID_REQUEST, message: `Invalid Request: a batch of ${value.length} members is more than the ${maxBatchMembers} allowed` } }
    let raw: RawNumbers | undefined
    for (let i = 0; i < value.length; i++) {
      const element = value[i]
      if (isObject(element) && (unsafeNumber(element.id) || unsafeNumber(cancelledIdOf(element)))) {
        raw ??= scanIds(text, true)
        keepRawNumbers(element, raw.ids[i], raw.requestIds[i])
      }
    }
    if (text.length >= MIN_TOO_DEEP_CHARS && nestsDeeperThan(text, MAX_NESTING_DEPTH)) return { ok: false, error: { ...TOO_DEEP } }
    return { ok: true, batch: true, value }
  }
  if (isObject(value) && (unsafeNumber(value.id) || unsafeNumber(cancelledIdOf(value)))) {
    const raw = scanIds(text, false)
    keepRawNumbers(value, raw.ids[0], raw.requestIds[0])
  }
  if (text.length >= MIN_TOO_DEEP_CHARS && nestsDeeperThan(text, MAX_NESTING_DEPTH)) {
    const id = isObject(value) && isId(value.id) ? value.id : undefined
    return id === undefined ? { ok: false, error: { ...TOO_DEEP } } : { ok: false, error: { ...TOO_DEEP }, id }
  }
  return { ok: true, batch: false, value }
}

/**
 * True when valid JSON `text` nests objects/arrays more than `maxDepth` levels deep. One pass
 * that skips strings and stops at the first level past the bound.
 */
function nestsDeeperThan (text: string, maxDepth: number): boolean {
  let depth = 0
  const n = text.length
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) { // a string: jump to its closing quote (native indexOf), past escaped quotes
      let end = text.indexOf('"', i + 1)
      while (end > 0 && isEscaped(text, end)) end = text.indexOf('"', end + 1)
      if (end < 0) return false // unreachable for valid JSON
      i = end
    } else if (c === 0x7b || c === 0x5b) { // { [
      if (++depth > maxDepth) return true
    } else if (c === 0x7d || c === 0x5d) { // } ]
      depth--
    }
  }
  return false
}

/** True for a number JSON.parse may have rounded: one that is not a safe integer. */
function unsafeNumber (value: unknown): boolean {
  return typeof value === 'number' && !Number.isSafeInteger(value)
}

/** The `params.requestId` of a message, when it has one (a `notifications/cancelled` names the request it cancels there). */
function cancelledIdOf (message: Record<string, unknown>): unknown {
  return isObject(message.params) ? message.params.requestId : undefined
}

/**
 * Puts the raw text back where JSON.parse rounded a number: the message's `id`, and the
 * `params.requestId` of a cancellation, so that it names the request it means, not the one whose id
 * the rounded value happens to spell (9007199254740993 rounds to …992, itself an exact id).
 */
function keepRawNumbers (message: Record<string, unknown>, id: string | undefined, requestId: string | undefined): void {
  if (id !== undefined && unsafeNumber(message.id)) message.id = new RawNumberId(id)
  const params = message.params
  if (requestId !== undefined && isObject(params) && unsafeNumber(params.requestId)) message.params = { ...params, requestId: new RawNumberId(requestId) }
}

/** The raw number texts {@link scanIds} found, by message (index 0 for a single message). */
interface RawNumbers { ids: Array<string | undefined>, requestIds: Array<string | undefined> }

/**
 * Finds the raw text of the `"id"` member of the top-level object (batch=false) or of each
 * element of the top-level array (batch=true), indexed as `JSON.parse` indexes the array. Only
 * numeric ids are captured; the JSON is known to be valid, so the scanner only tracks strings,
 * nesting depth and, in a batch, the commas between elements: an element that is not an object
 * or an array (`1`, `"x"`, `null`, `true`) still takes its index, so the next member's id is not
 * shifted onto it. A key written with escapes (`"\u0069d"`) is the key `id`, as `JSON.parse` reads it;
 * of duplicate `id` keys the last wins, as in `JSON.parse`. The same pass finds the raw text of each
 * message's `params.requestId` (the object under the key `params`, one level down).
 */
function scanIds (text: string, batch: boolean): RawNumbers {
  const ids: Array<string | undefined> = []
  const requestIds: Array<string | undefined> = []
  const memberDepth = batch ? 2 : 1
  /** The key whose value is the object at memberDepth + 1, when that object is open. */
  let container: string | undefined
  let lastKey: string | undefined
  let depth = 0
  let element = -1
  let i = 0
  const n = text.length
  while (i < n) {
    const c = text.charCodeAt(i)
    if (c === 0x22) { // string: a key when followed by ':' at member depth
      const start = i
      i++
      while (i < n) {
        const d = text.charCodeAt(i)
        if (d === 0x5c) { i += 2; continue }
        if (d === 0x22) break
        i++
      }
      const end = i
      i++
      if (depth === memberDepth || (depth === memberDepth + 1 && container === 'params')) {
        let j = i
        while (j < n && isSpace(text.charCodeAt(j))) j++
        if (text.charCodeAt(j) === 0x3a) { // ':' : the string was a key
          j++
          while (j < n && isSpace(text.charCodeAt(j))) j++
          const key = keyText(text, start, end)
          if (depth === memberDepth) lastKey = key
          const into = depth === memberDepth ? (key === 'id' ? ids : undefined) : (key === 'requestId' ? requestIds : undefined)
          if (into !== undefined) {
            const numberStart = j
            while (j < n && isNumberChar(text.charCodeAt(j))) j++
            if (j > numberStart) into[batch ? element : 0] = text.slice(numberStart, j)
          }
          i = j
        }
      }
      continue
    }
    if (c === 0x7b || c === 0x5b) { // { [
      depth++
      if (batch && depth === 1) element = 0 // the top-level array opens on its first element
      if (depth === memberDepth) lastKey = undefined
      else if (depth === memberDepth + 1) container = c === 0x7b ? lastKey : undefined
    } else if (c === 0x7d || c === 0x5d) {
      if (depth === memberDepth + 1) container = undefined
      depth--
    } else if (c === 0x2c && batch && depth === 1) { // ',' between two elements of the batch
      element++
    }
    i++
  }
  return { ids, requestIds }
}

/** The key the string token text[start..end] (quotes included) spells, escapes decoded as JSON.parse decodes them. */
function keyText (text: string, start: number, end: number): string | undefined {
  const inner = text.slice(start + 1, end)
  if (!inner.includes('\\')) return inner
  try { return JSON.parse(text.slice(start, end + 1)) as string } catch { return undefined }
}

/** True when the character at `at` is preceded by an odd run of backslashes. */
function isEscaped (text: string, at: number): boolean {
  let backslashes = 0
  for (let j = at - 1; j >= 0 && text.charCodeAt(j) === 0x5c; j--) backslashes++
  return backslashes % 2 === 1
}

function isSpace (c: number): boolean { return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09 }
function isNumberChar (c: number): boolean { return (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45 }

/** True for a plain (non-array, non-null) object. */
export function isObject (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * A shallow copy of `source` with `extra`'s own properties over it: `{ ...source, ...extra }`,
 * for the request path. Not written as a spread: on Node 20 (V8 11.3) a spread of the objects a
 * request carries (a parsed upstream result, the call's `_meta`) made each copy survive the next
 * scavenge as if it were old, so every call left a few hundred bytes for the major GC (V8's
 * sampling heap profiler, samples that survived a minor GC: 803 → 118 bytes per modern
 * `tools/call` with this and lib/base/in-flight-table.ts). `Object.assign` copies the same own
 * enumerable properties in the same order; an own `__proto__` (JSON.parse makes one from
 * `{"__proto__": …}`) would go through the prototype setter there, so such an object is copied
 * with the spread, as before. Never throws for JSON values.
 */
export function copyObject (source: JsonObject | undefined, extra?: JsonObject): JsonObject {
  if ((source !== undefined && Object.hasOwn(source, '__proto__')) || (extra !== undefined && Object.hasOwn(extra, '__proto__'))) return { ...source, ...extra }
  return extra === undefined ? Object.assign({}, source) : Object.assign({}, source, extra)
}

function isId (value: unknown): value is RequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value)) || value instanceof RawNumberId
}

/**
 * Classifies one parsed element. `id: null` is not a notification: such a message is invalid
 * (DIGEST §2b: an id is never null). Never throws.
 */
export function classify (value: unknown): Classified {
  if (!isObject(value)) return { kind: 'invalid', error: { code: INVALID_REQUEST, message: 'Invalid Request: a JSON-RPC message must be an object' } }
  const hasId = Object.hasOwn(value, 'id')
  const id = isId(value.id) ? value.id : undefined
  if (value.jsonrpc !== '2.0') return { kind: 'invalid', id, error: { code: INVALID_REQUEST, message: 'Invalid Request: jsonrpc must be "2.0"' } }
  if (hasId && id === undefined) return { kind: 'invalid', error: { code: INVALID_REQUEST, message: 'Invalid Request: id must be a string or a number' } }
  if (Object.hasOwn(value, 'method')) {
    if (typeof value.method !== 'string') return { kind: 'invalid', id, error: { code: INVALID_REQUEST, message: 'Invalid Request: method must be a string' } }
    if (value.params !== undefined && !isObject(value.params)) return { kind: 'invalid', id, error: { code: INVALID_REQUEST, message: 'Invalid Request: params must be an object' } }
    if (id === undefined) return { kind: 'notification', message: value as unknown as JsonRpcNotification }
    return { kind: 'request', message: value as unknown as JsonRpcRequest }
  }
  if (id !== undefined && (Object.hasOwn(value, 'result') !== Object.hasOwn(value, 'error'))) {
    if (Object.hasOwn(value, 'error') && !(isObject(value.error) && typeof value.error.code === 'number')) {
      return { kind: 'invalid', id, error: { code: INVALID_REQUEST, message: 'Invalid Request: error must be an object with a numeric code' } }
    }
    return { kind: 'response', message: value as unknown as JsonRpcResponse }
  }
  return { kind: 'invalid', id, error: { code: INVALID_REQUEST, message: 'Invalid Request: not a request, notification or response' } }
}

/** Builds an error response; `id` undefined makes an id-less error. Never throws. */
export function errorResponse (id: RequestId | undefined, code: number, message: string, data?: unknown): JsonRpcErrorResponse {
  const error: JsonRpcErrorObject = data === undefined ? { code, message } : { code, message, data }
  return id === undefined ? { jsonrpc: '2.0', error } : { jsonrpc: '2.0', id, error }
}

/** Builds a success response. Never throws. */
export function successResponse (id: RequestId, result: Record<string, unknown>): JsonRpcSuccess {
  return { jsonrpc: '2.0', id, result }
}

/**
 * Serialises a message (or a batch of them) to JSON text, writing {@link RawNumberId} ids back
 * verbatim. The text holds no raw newline (JSON.stringify escapes them), so it is one stdio frame.
 * Never throws for messages built by this module.
 */
export function encodeMessage (message: JsonRpcMessage | JsonRpcMessage[]): string {
  if (Array.isArray(message)) return '[' + message.map(encodeMessage).join(',') + ']'
  const id = (message as { id?: RequestId }).id
  if (!(id instanceof RawNumberId)) return JSON.stringify(message)
  const { id: _omit, jsonrpc: _jsonrpc, ...rest } = message as JsonRpcResponse
  const tail = JSON.stringify(rest)
  return '{"jsonrpc":"2.0","id":' + id.raw + (tail === '{}' ? '}' : ',' + tail.slice(1))
}

/** A string key for an id, to use in maps of in-flight requests: `1` and `"1"` differ. */
export function idKey (id: RequestId): string {
  return typeof id === 'string' ? 's' + id : 'n' + String(id)
}
