/**
 * The only place an HTTP status is chosen for /mcp (STYLE › Errors and status).
 *
 * Modern (seed › Streamable HTTP, 2026-07-28 › Status is a function of the response):
 * -32022, -32021, -32020, -32602, -32600, -32700 are 400; -32601 is 404; everything else 200.
 * Seed wins over the SDK here: every -32602 is 400, whichever handler produced it, because a
 * status that depended on the handler would not be a function of the response.
 */
import type { JsonRpcErrorObject } from './jsonrpc.js'

const MODERN_ERROR_STATUS = new Map<number, number>([
  [-32_022, 400], [-32_021, 400], [-32_020, 400], [-32_602, 400], [-32_600, 400], [-32_700, 400], [-32_601, 404]
])

/** HTTP status of a modern reply, from its error alone (undefined error: a result → 200). Never throws. */
export function modernStatus (error: JsonRpcErrorObject | undefined): number {
  return error === undefined ? 200 : MODERN_ERROR_STATUS.get(error.code) ?? 200
}

/**
 * HTTP status of a legacy reply. The legacy revisions specify none for JSON-RPC errors
 * (DIGEST A9): a message that could not be read as JSON-RPC (-32700, -32600, with or without a
 * readable id) is 400, an unsupported MCP-Protocol-Version header is 400 (2025-06-18
 * transports), and any other error travels in a 200 response, as legacy SDKs expect.
 */
export function legacyStatus (error: JsonRpcErrorObject | undefined): number {
  if (error === undefined) return 200
  return LEGACY_ERROR_STATUS.get(error.code) ?? 200
}

const LEGACY_ERROR_STATUS = new Map<number, number>([[-32_700, 400], [-32_600, 400], [-32_022, 400]])

/** Outcome of DELETE /mcp (seed › Streamable HTTP legacy › DELETE). */
export type DeleteOutcome = 'ended' | 'no-header' | 'unknown' | 'modern'

/** 204 ended; 400 without a session header (mcpx allows termination, so not 405); 404 unknown; 405 for a modern request. */
export function deleteStatus (outcome: DeleteOutcome): number {
  switch (outcome) {
    case 'ended': return 204
    case 'no-header': return 400
    case 'unknown': return 404
    case 'modern': return 405
  }
}

/** Outcome of GET /mcp (seed › Streamable HTTP legacy › GET). */
export type GetOutcome = 'open' | 'no-session' | 'modern' | 'unknown' | 'busy' | 'capped'

/** 200 open; 405 without a session or with a modern header; 404 unknown session; 409 a second stream; 503 past the stream cap. */
export function getStatus (outcome: GetOutcome): number {
  switch (outcome) {
    case 'open': return 200
    case 'no-session': return 405
    case 'modern': return 405
    case 'unknown': return 404
    case 'busy': return 409
    case 'capped': return 503
  }
}

/** Retry-After for a 503 past a cap, in seconds (the value the session and GET-stream caps send too). */
export const RETRY_AFTER_SECONDS = 5

/** Statuses for refusals outside JSON-RPC semantics, by reason. */
export const REFUSAL_STATUS = Object.freeze({
  unknownSession: 404,
  bodyTooLarge: 413,
  unsupportedMediaType: 415,
  notAcceptable: 406,
  tooManySessions: 503,
  /** The session store (Redis) cannot be reached: session requests are 503 with Retry-After (issue #11). */
  storeUnavailable: 503,
  /** Past transport.maxConcurrentRequests (daemon-wide POSTs in flight): the server is busy, not the client at fault. */
  tooManyConcurrentRequests: 503,
  /** Past transport.maxGetStreams (legacy GET streams and 2026-07-28 subscriptions/listen streams open at once). */
  tooManyStreams: 503,
  tooManyRequests: 429,
  /** A method /mcp does not serve (PUT, PATCH, …), with Allow. */
  methodNotAllowed: 405,
  /** A path under /mcp that is not /mcp itself. */
  notFound: 404,
  unauthorized: 401,
  /** A valid OAuth access token without auth.oauth.requiredScopes (RFC 6750 §3.1 insufficient_scope; issue #16). */
  insufficientScope: 403,
  forbiddenOrigin: 403,
  /** On a loopback daemon, an ops endpoint (/readyz, /metrics) asked for under a non-loopback Host (DNS rebinding). */
  forbiddenHost: 403,
  /** A body that is not JSON-RPC at all (parse error, too deep) or an unreadable Mcp-Session-Id header. */
  badRequest: 400
})
