/**
 * Every inbound message classified once, at the entry, the same way on both faces (seed › "Which
 * era a POST belongs to"; DIGEST §6a Eras): {@link classifyMessage} turns one JSON value (and, over
 * HTTP, the MCP-Protocol-Version header) into an {@link InboundMessage}. Over HTTP,
 * {@link classifyPost} and {@link classifyBodiless} wrap it into one {@link Inbound} value; the era
 * plugin stores it in `request.mcp`, and every later stage (modern headers, legacy sessions, the
 * routes, lib/http/exchange, the request log) reads it. The stdio server (lib/stdio/server.ts)
 * classifies each line, and each batch element, with the same function.
 * The `_meta` keys mcpx reads, and the modern-only methods, live here too.
 *
 * A POST is modern if its body carries `_meta["io.modelcontextprotocol/protocolVersion"]`,
 * or its MCP-Protocol-Version header names a revision at or after 2026-07-28 (a date mcpx does
 * not implement still counts: that request is answered -32022, not treated as legacy).
 * Everything else is legacy. The header alone is enough because a modern header on a body
 * without the `_meta` field is exactly the disagreement the modern header rules exist to catch.
 */
import { eraOf, type Era, type Revision } from './revisions.js'
import { classify, isObject, type Classified, type JsonRpcErrorObject, type Parsed, type RequestId } from './jsonrpc.js'
import { readHeader, type HeaderBag } from './header-values.js'

/** The `_meta` key that carries a modern request's revision. */
export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion'
/** The `_meta` key that carries a modern request's client capabilities. */
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities'
/** The `_meta` key that carries a modern request's client identity. */
export const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo'
/** The `_meta` key that carries a modern request's log level. */
export const META_LOG_LEVEL = 'io.modelcontextprotocol/logLevel'
/** The `_meta` key of a modern result's server identity. */
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo'
/** The `_meta` key tagging a notification with its subscriptions/listen request. */
export const META_SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId'

/**
 * Methods that exist only in the modern era (DIGEST §6f: `server/discover`, `subscriptions/listen`).
 * A legacy request for one is -32601 (lib/dispatch/dispatcher.ts). On stdio, which has no
 * MCP-Protocol-Version header, naming one makes a request modern by itself (see {@link classifyMessage}).
 */
export const MODERN_ONLY: ReadonlySet<string> = new Set(['server/discover', 'subscriptions/listen'])

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

/* ------------------------------------------------------------ classified once */

/** What every classified /mcp request (and stdio message) has. */
interface InboundCommon {
  /** Which era wrote it. */
  readonly era: Era
  /** The MCP-Protocol-Version header, trimmed; undefined when absent or unreadable (lib/protocol/header-values), and on stdio. */
  readonly headerRevision: Revision | undefined
}

/** A GET, DELETE or other request without a body: only the header can make it modern. */
export interface InboundBodiless extends InboundCommon { readonly kind: 'bodiless' }

/** One JSON-RPC value (a POST body, a stdio line or batch element), classified once ({@link classifyMessage}). */
export interface InboundMessage extends InboundCommon {
  readonly kind: 'message'
  /** The message, classified (lib/protocol/jsonrpc classify): request, notification, response or invalid. */
  readonly item: Classified
  /** A request's id, or the readable id of an invalid message; undefined otherwise. */
  readonly id: RequestId | undefined
  /** `method` when it is a string (also on a message that is otherwise invalid). */
  readonly method: string | undefined
  /** `params.name` when it is a string (tools/call, prompts/get). */
  readonly name: string | undefined
  /** `params._meta` when it is an object. */
  readonly meta: Readonly<Record<string, unknown>> | undefined
  /** `params._meta["io.modelcontextprotocol/protocolVersion"]`, raw (any type); undefined when absent. */
  readonly bodyRevision: unknown
  /** What the request log calls it: the method, `response` for a client's answer, '' for anything else. */
  readonly logMethod: string
  /** The revision the body names, for the request log: initialize's protocolVersion, else the `_meta` one. */
  readonly logRevision: string | undefined
}

/** A POST whose body is a JSON array (a batch); its elements are classified where batches are served. */
export interface InboundBatch extends InboundCommon {
  readonly kind: 'batch'
  readonly elements: readonly unknown[]
}

/** A POST whose body is not JSON-RPC at all (-32700, or -32600 nested too deep): answered 400 by the era plugin. */
export interface InboundReject {
  readonly kind: 'reject'
  readonly headerRevision: Revision | undefined
  /** Set when the body was JSON whose id could be read. */
  readonly id: RequestId | undefined
  readonly error: JsonRpcErrorObject
}

/** A POST, classified. */
export type InboundPost = InboundMessage | InboundBatch | InboundReject

/** Any /mcp request, classified. */
export type Inbound = InboundPost | InboundBodiless

/** The trimmed MCP-Protocol-Version header, or undefined when absent or unreadable. */
function headerRevisionOf (headers: HeaderBag): Revision | undefined {
  const header = readHeader(headers, 'mcp-protocol-version')
  return header.kind === 'value' ? header.value : undefined
}

/** Where a message came from, for {@link classifyMessage}. */
export interface MessageSource {
  /**
   * The face that carried it. Over HTTP the era is the seed's rule for a POST (header or `_meta`).
   * stdio has no header: there `_meta` makes a request modern, and so does a modern-only method
   * ({@link MODERN_ONLY}) without it, so the envelope check explains what is missing (rather than
   * -32601 as for a legacy request; mcpx is dual-era and accepts liberally, seed › stdio › Before initialize).
   */
  readonly face: 'http' | 'stdio'
  /**
   * A member of a batch (stdio's batch line; an HTTP batch's members are served as legacy requests
   * by lib/http/exchange.ts without this classifier). Batches exist only in 2025-03-26 (DIGEST §3b),
   * so a member is legacy whatever its method: a modern-only one is then -32601, as in any legacy
   * request (DIGEST §6h). A member with modern `_meta` never gets here: it refuses its whole batch
   * (lib/connection/peer.ts batchRefusal). Default false.
   */
  readonly batchMember?: boolean
  /** The MCP-Protocol-Version header, trimmed (HTTP only); undefined when absent or unreadable. */
  readonly headerRevision?: Revision
}

/**
 * Classifies one JSON value once: era, revision, and the message's facts. The one classifier of
 * both faces (a POST body through {@link classifyPost}; a stdio line or batch element directly).
 * @param value a parsed JSON value that is not an array (a batch is split by its caller)
 * @param source the face, and over HTTP the MCP-Protocol-Version header
 * @returns the classification. Never throws.
 */
export function classifyMessage (value: unknown, source: MessageSource): InboundMessage {
  const headerRevision = source.headerRevision
  const item = classify(value)
  const method = isObject(value) && typeof value.method === 'string' ? value.method : undefined
  const params = isObject(value) && isObject(value.params) ? value.params : undefined
  const meta = isObject(params?._meta) ? params._meta : undefined
  const bodyRevision = meta?.[META_PROTOCOL_VERSION]
  const era: Era = source.batchMember === true
    ? 'legacy'
    : source.face === 'stdio'
      ? (hasModernMeta(value) || (item.kind === 'request' && MODERN_ONLY.has(item.message.method)) ? 'modern' : 'legacy')
      : eraOfPost(headerRevision, value)
  return {
    kind: 'message',
    era,
    headerRevision,
    item,
    id: item.kind === 'request' ? item.message.id : item.kind === 'invalid' ? item.id : undefined,
    method,
    name: typeof params?.name === 'string' ? params.name : undefined,
    meta,
    bodyRevision,
    logMethod: method ?? (isObject(value) && 'id' in value ? 'response' : ''),
    logRevision: method === 'initialize' && typeof params?.protocolVersion === 'string'
      ? params.protocolVersion
      : typeof bodyRevision === 'string' ? bodyRevision : undefined
  }
}

/**
 * Classifies a POST once: era, revision, and the body's facts ({@link classifyMessage} for one value).
 * @param input.headers the request's headers (Node's lowercase names)
 * @param input.parsed the body as lib/protocol/jsonrpc parseBody left it; undefined when there was none
 * @returns the classification. Never throws.
 */
export function classifyPost (input: { headers: HeaderBag, parsed: Parsed | undefined }): InboundPost {
  const headerRevision = headerRevisionOf(input.headers)
  const parsed = input.parsed
  if (parsed === undefined || !parsed.ok) {
    return { kind: 'reject', headerRevision, id: parsed?.ok === false ? parsed.id : undefined, error: parsed?.error ?? { code: -32_700, message: 'Parse error: empty body' } }
  }
  if (parsed.batch) return { kind: 'batch', era: eraOfPost(headerRevision, parsed.value), headerRevision, elements: parsed.value }
  return classifyMessage(parsed.value, { face: 'http', headerRevision })
}

/** Classifies a request without a body (GET, DELETE): modern only when the header names a modern revision. Never throws. */
export function classifyBodiless (headers: HeaderBag): InboundBodiless {
  const headerRevision = headerRevisionOf(headers)
  return { kind: 'bodiless', era: headerRevision !== undefined && eraOf(headerRevision) === 'modern' ? 'modern' : 'legacy', headerRevision }
}

/** The era of a classified request; undefined for a body that could not be read (or before classification). */
export function eraOfInbound (inbound: Inbound | null): Era | undefined {
  return inbound === null || inbound.kind === 'reject' ? undefined : inbound.era
}

/**
 * The id a refusal of this POST carries: a single request's id, or an invalid message's readable
 * one; undefined for batches, notifications, responses, unreadable bodies and bodiless requests.
 */
export function requestIdOf (inbound: Inbound | null): RequestId | undefined {
  return inbound?.kind === 'message' ? inbound.id : undefined
}
