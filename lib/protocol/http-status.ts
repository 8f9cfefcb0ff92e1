/**
 * The only place an HTTP status, a `Retry-After` or an `Allow` is chosen (STYLE › Errors and
 * status): the era status functions below, and the refusal table {@link REFUSALS} for every
 * answer outside JSON-RPC semantics (Origin, auth, sessions, caps, method, Accept, body, the
 * daemon's raw-socket and ops answers). Plugins, routes and lib/http/exchange take a
 * {@link refusal} and write it as it is.
 *
 * Modern (seed › Streamable HTTP, 2026-07-28 › Status is a function of the response):
 * -32022, -32021, -32020, -32602, -32600, -32700 are 400; -32601 is 404; everything else 200.
 * Seed wins over the SDK here: every -32602 is 400, whichever handler produced it, because a
 * status that depended on the handler would not be a function of the response.
 */
import {
  encodeMessage, errorResponse, INSTANCES_EXHAUSTED, INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, RATE_LIMITED,
  type JsonRpcErrorObject, type JsonRpcErrorResponse, type JsonRpcResponse, type RequestId
} from './jsonrpc.js'

const MODERN_ERROR_STATUS = new Map<number, number>([
  [-32_022, 400], [-32_021, 400], [-32_020, 400], [-32_602, 400], [-32_600, 400], [-32_700, 400], [-32_601, 404],
  // Past a policy rate limit (REFUSALS.rateLimited, which also sets Retry-After).
  [RATE_LIMITED, 429]
  // An isolated upstream at maxInstances (-31001) is not here: it is the refusal row
  // `instancesExhausted` (503 with Retry-After), marked on the response mcpx built, so an upstream's
  // own -31001 (another mcpx upstream of this one) is never taken for mcpx's.
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

const LEGACY_ERROR_STATUS = new Map<number, number>([[-32_700, 400], [-32_600, 400], [-32_022, 400], [RATE_LIMITED, 429]])

/** Outcome of DELETE /mcp (seed › Streamable HTTP legacy › DELETE). */
export type DeleteOutcome = 'ended' | 'no-header' | 'unknown' | 'modern'

/** The refusal behind each DELETE outcome but 'ended'. */
export const DELETE_REFUSAL: Readonly<Record<Exclude<DeleteOutcome, 'ended'>, RefusalReason>> = Object.freeze({
  'no-header': 'deleteWithoutSession',
  unknown: 'unknownSession',
  modern: 'deleteModern'
})

/** 204 ended; 400 without a session header (mcpx allows termination, so not 405); 404 unknown; 405 for a modern request. */
export function deleteStatus (outcome: DeleteOutcome): number {
  return outcome === 'ended' ? 204 : REFUSALS[DELETE_REFUSAL[outcome]].status
}

/** Outcome of GET /mcp (seed › Streamable HTTP legacy › GET). */
export type GetOutcome = 'open' | 'no-session' | 'modern' | 'unknown' | 'busy' | 'capped'

/** The refusal behind each GET outcome but 'open' (seed › legacy › GET; transport.maxGetStreams). */
export const GET_REFUSAL: Readonly<Record<Exclude<GetOutcome, 'open'>, RefusalReason>> = Object.freeze({
  'no-session': 'getWithoutSession',
  modern: 'getModern',
  unknown: 'unknownSession',
  busy: 'streamBusy',
  capped: 'tooManyStreams'
})

/** 200 open; 405 without a session or with a modern header; 404 unknown session; 409 a second stream; 503 past the stream cap. */
export function getStatus (outcome: GetOutcome): number {
  return outcome === 'open' ? 200 : REFUSALS[GET_REFUSAL[outcome]].status
}

/** Retry-After for a 503 past a cap, in seconds (sessions, streams, POSTs in flight). */
export const RETRY_AFTER_SECONDS = 5

/** Retry-After for a 503 while the session store (Redis) cannot be reached, in seconds. */
export const STORE_RETRY_AFTER_SECONDS = 1

/** One row of the refusal table. */
export interface RefusalRow {
  /** HTTP status. */
  readonly status: number
  /** JSON-RPC error code of the body. */
  readonly code: number
  /** Error message of the body; constant, never echoing the request. */
  readonly message: string
  /** `Retry-After`, seconds, when the refusal is temporary. */
  readonly retryAfterSeconds?: number
  /**
   * `Retry-After` from the error's `data.retryAfterMs` instead: that many ms rounded up to whole
   * seconds (RFC 9110 §10.2.3 takes seconds), at least 1.
   */
  readonly retryAfterFromData?: true
  /** `Allow` (RFC 9110 §15.5.6: the methods the target supports). */
  readonly allow?: string
  /** `WWW-Authenticate` (RFC 6750 §3.1). */
  readonly wwwAuthenticate?: string
}

/**
 * Every refusal mcpx answers outside JSON-RPC semantics, by reason. Each body is an id-less
 * JSON-RPC error unless {@link refusal} is given the request's id.
 */
export const REFUSALS = Object.freeze({
  /** Seed › Origin: "403 with an id-less JSON-RPC error"; the body never echoes the Origin. */
  forbiddenOrigin: { status: 403, code: INVALID_REQUEST, message: 'Forbidden: Origin not allowed' },
  /**
   * No bearer credentials (RFC 6750 §3.1: no error code). JSON-RPC has no "unauthorized" code; the
   * request is refused before it is read, as for a refused Origin, so it takes -32600, and
   * `WWW-Authenticate` carries the detail.
   */
  unauthorizedMissing: { status: 401, code: INVALID_REQUEST, message: 'Unauthorized: a bearer token is required', wwwAuthenticate: 'Bearer' },
  /** A bearer token that is not accepted (RFC 6750 §3.1 `invalid_token`). */
  unauthorizedInvalid: { status: 401, code: INVALID_REQUEST, message: 'Unauthorized: invalid bearer token', wwwAuthenticate: 'Bearer error="invalid_token"' },
  /**
   * A DPoP proof that is missing or not accepted, sent with a DPoP-bound access token (RFC 9449 §7.1,
   * §12.2 `invalid_dpop_proof`). lib/auth/authenticate adds error_description, algs and resource_metadata.
   */
  unauthorizedDpop: { status: 401, code: INVALID_REQUEST, message: 'Unauthorized: invalid DPoP proof', wwwAuthenticate: 'DPoP error="invalid_dpop_proof"' },
  /**
   * A DPoP proof that passed every check but the replay check, because the replay cache cannot tell
   * (Redis unreachable, or the memory cache full: docs/authentication.md › DPoP). Refused (fail closed)
   * as a temporary condition, like the session store's 503.
   */
  dpopReplayUnavailable: { status: 503, code: INTERNAL_ERROR, message: 'Service Unavailable: DPoP proofs cannot be checked for replay now; retry later', retryAfterSeconds: STORE_RETRY_AFTER_SECONDS },
  /**
   * A valid OAuth access token without auth.oauth.requiredScopes (RFC 6750 §3.1
   * insufficient_scope). lib/auth/authenticate adds the required scopes to the message and the challenge.
   */
  insufficientScope: { status: 403, code: INVALID_REQUEST, message: 'Forbidden: the access token lacks a required scope', wwwAuthenticate: 'Bearer error="insufficient_scope"' },
  /**
   * An operator endpoint (/status, /status.json, /metrics) asked for by a loopback client under a
   * Host that is not a loopback name (DNS rebinding), on a daemon with no admin credential configured.
   */
  forbiddenHost: { status: 403, code: INVALID_REQUEST, message: 'Forbidden: Host is not a loopback name' },
  /**
   * An operator endpoint asked for by a client that is not on loopback (or behind a proxy
   * daemon.trustProxy does not list), on a daemon with no admin credential configured.
   */
  forbiddenPeer: { status: 403, code: INVALID_REQUEST, message: 'Forbidden: operator endpoints answer loopback clients only' },
  /** An admin endpoint (POST /admin/reload; an operator endpoint from a client that is not local) without an admin token. */
  adminTokenMissing: { status: 401, code: INVALID_REQUEST, message: 'Unauthorized: an admin token is required', wwwAuthenticate: 'Bearer realm="mcpx-admin"' },
  /** An admin endpoint with a bearer token that is not one of admin.tokens. */
  adminTokenInvalid: { status: 401, code: INVALID_REQUEST, message: 'Unauthorized: invalid admin token', wwwAuthenticate: 'Bearer realm="mcpx-admin", error="invalid_token"' },
  /** POST /admin/reload on a daemon with no admin.tokens: nobody may call it. */
  adminNotConfigured: { status: 403, code: INVALID_REQUEST, message: 'Forbidden: no admin.tokens are configured' },
  /** Node's parser refused the request: headers too large (raw socket, server.ts). */
  headersTooLarge: { status: 431, code: INVALID_REQUEST, message: 'Request Header Fields Too Large' },
  /** Node's parser refused the request: anything else (raw socket, server.ts). */
  malformedHttp: { status: 400, code: INVALID_REQUEST, message: 'Bad Request: malformed HTTP request' },
  /**
   * The request head or body did not arrive within transport.headersTimeout / bodyTimeout (raw
   * socket, server.ts). A connection that sent nothing is closed without it.
   */
  requestTimeout: { status: 408, code: INVALID_REQUEST, message: 'Request Timeout: the request was not received in time' },
  /** A method /mcp does not serve (PUT, PATCH, …). */
  methodNotAllowed: { status: 405, code: INVALID_REQUEST, message: 'Method Not Allowed: /mcp takes GET, POST, DELETE and OPTIONS', allow: 'GET, POST, DELETE, OPTIONS' },
  /** A path under /mcp that is not /mcp itself. */
  notFound: { status: 404, code: INVALID_REQUEST, message: 'Not Found: MCP is served at /mcp' },
  /** `/mcp/<name>` where no curated endpoint `<name>` is configured; the body never echoes the name. */
  unknownEndpoint: { status: 404, code: INVALID_REQUEST, message: 'Not Found: no MCP endpoint by this name' },
  /** An Accept that admits neither JSON nor SSE (lib/protocol/accept.ts). */
  notAcceptable: { status: 406, code: INVALID_REQUEST, message: 'Not Acceptable: Accept must admit application/json or text/event-stream' },
  /** Past transport.maxBodyBytes; the message names the limit (given to {@link refusal}). */
  bodyTooLarge: { status: 413, code: INVALID_REQUEST, message: 'Request body larger than the limit' },
  unsupportedMediaType: { status: 415, code: INVALID_REQUEST, message: 'Unsupported Media Type: Content-Type must be application/json' },
  /** A body that is not JSON-RPC at all (parse error, too deep): the code and message come from the parser. */
  unreadableBody: { status: 400, code: PARSE_ERROR, message: 'Parse error: empty body' },
  /** Any other client error the framework raised before mcpx read the request; its message is the framework's. */
  badRequest: { status: 400, code: INVALID_REQUEST, message: 'Bad Request' },
  /** A failure of mcpx itself on /mcp. */
  internalError: { status: 500, code: INTERNAL_ERROR, message: 'Internal error' },
  /** Past transport.maxConcurrentRequests (daemon-wide requests in flight: POSTs and batch members): the server is busy, not the client at fault. */
  tooManyConcurrentRequests: { status: 503, code: INTERNAL_ERROR, message: 'Server busy: too many requests in flight; retry later', retryAfterSeconds: RETRY_AFTER_SECONDS },
  /**
   * Past an upstream's maxInFlight calls in flight and maxQueued waiting: the call never
   * reached the upstream. Raised inside the dispatcher (lib/upstreams/gate.ts), so it reaches
   * HTTP as a marked response ({@link markRefused}); over stdio it is the JSON-RPC error alone.
   * Its message names the upstream and both limits (given to {@link refusal}).
   */
  upstreamBusy: { status: 503, code: INTERNAL_ERROR, message: 'Server busy: too many calls queued for this upstream; retry later', retryAfterSeconds: RETRY_AFTER_SECONDS },
  /**
   * Past a policy rule's rateLimit (docs/policy.md › Rate limits): RFC 6585 §4 Too Many Requests. Raised
   * inside the dispatcher, so it reaches HTTP as a marked response ({@link markRefused}) carrying
   * the request's id, its own message and `data.retryAfterMs`; `Retry-After` is that, in seconds,
   * rounded up. Over stdio, and as a member of a 2025-03-26 batch (whose reply is 200), it is the
   * JSON-RPC error alone. Legacy and modern alike: the body is the same.
   */
  rateLimited: { status: 429, code: RATE_LIMITED, message: 'Rate limit exceeded; retry later', retryAfterFromData: true },
  /**
   * A rate-limited call while the shared rate-limit store (Redis) cannot be reached: refused (fail
   * closed: a limit that an outage lifts is no limit), 503 with Retry-After like the session store's.
   */
  rateLimitUnavailable: { status: 503, code: INTERNAL_ERROR, message: 'Service Unavailable: the rate-limit store cannot be reached; retry later', retryAfterSeconds: STORE_RETRY_AFTER_SECONDS },
  /**
   * An isolated upstream (docs/upstreams.md › Isolated upstreams) at `maxInstances`: a new session or
   * principal gets no instance until one is reaped (DELETE, expiry, idleTimeout). Raised inside the
   * dispatcher (lib/upstreams/upstream.ts), marked like `upstreamBusy`; over stdio the JSON-RPC
   * error alone. Its message names the upstream and the cap (given to {@link refusal}).
   */
  instancesExhausted: { status: 503, code: INSTANCES_EXHAUSTED, message: 'Server busy: every isolated instance of this upstream is in use; retry later', retryAfterSeconds: RETRY_AFTER_SECONDS },
  /**
   * Under `sessions.store: "redis"`: past the replica's bound on calls forwarded to the
   * replicas holding their sessions' isolated instances (lib/sessions/instances.ts), sent or served.
   * The call never reached the upstream.
   */
  forwardBusy: { status: 503, code: INTERNAL_ERROR, message: 'Server busy: too many calls forwarded between replicas; retry later', retryAfterSeconds: RETRY_AFTER_SECONDS },
  /**
   * Under `sessions.store: "redis"`: the replica that held the session's isolated
   * upstream instances is gone, and their state with it. mcpx ends the session rather than serve it
   * from a fresh instance the client does not know about: 404, the spec's "start a new session"
   * (seed › legacy › Sessions), with -32603 saying why. The call never reached an upstream.
   */
  sessionInstanceLost: { status: 404, code: INTERNAL_ERROR, message: 'Session ended: the replica holding its isolated upstream instances is gone; send initialize again without Mcp-Session-Id' },
  /** Past transport.maxSessions (memory store). */
  tooManySessions: { status: 503, code: INTERNAL_ERROR, message: 'Server busy: too many sessions; retry later', retryAfterSeconds: RETRY_AFTER_SECONDS },
  /** The session store (Redis) cannot be reached: session requests are 503 with Retry-After. */
  storeUnavailable: { status: 503, code: INTERNAL_ERROR, message: 'Service Unavailable: the session store cannot be reached; retry later', retryAfterSeconds: STORE_RETRY_AFTER_SECONDS },
  /** Past transport.maxGetStreams (legacy GET streams and 2026-07-28 subscriptions/listen streams open at once). */
  tooManyStreams: { status: 503, code: INTERNAL_ERROR, message: 'Service Unavailable: too many open streams; retry later', retryAfterSeconds: RETRY_AFTER_SECONDS },
  /** Past transport.maxRequestsPerSession in flight on one legacy session. */
  sessionBusy: { status: 429, code: INTERNAL_ERROR, message: 'Too many requests in flight on this session; retry later' },
  /** Seed › legacy › Sessions: unknown, expired or deleted → 404 (the client initializes again). */
  unknownSession: { status: 404, code: INVALID_REQUEST, message: 'Session not found: it is unknown, expired or deleted; send initialize again without Mcp-Session-Id' },
  /** An Mcp-Session-Id header that cannot be read (repeated, bad bytes). */
  badSessionHeader: { status: 400, code: INVALID_REQUEST, message: 'Invalid Mcp-Session-Id header' },
  /** GET without a session: /mcp does support GET (with a session), so Allow names it. */
  getWithoutSession: { status: 405, code: INVALID_REQUEST, message: 'Method Not Allowed: GET needs an Mcp-Session-Id from initialize', allow: 'GET, POST, DELETE' },
  /** GET with the modern header: 2026-07-28 has no GET stream and no DELETE, so Allow names POST only. */
  getModern: { status: 405, code: INVALID_REQUEST, message: 'Method Not Allowed: 2026-07-28 has no GET stream', allow: 'POST' },
  /** A second GET stream on one session. */
  streamBusy: { status: 409, code: INVALID_REQUEST, message: 'Conflict: this session already has a GET stream open' },
  /** DELETE without a session: mcpx allows termination, so 400, not 405 (seed › legacy › DELETE). */
  deleteWithoutSession: { status: 400, code: INVALID_REQUEST, message: 'Bad Request: DELETE needs the Mcp-Session-Id to end' },
  /** DELETE with the modern header: 2026-07-28 has no sessions. */
  deleteModern: { status: 405, code: INVALID_REQUEST, message: 'Method Not Allowed: 2026-07-28 has no sessions to delete', allow: 'POST' }
} satisfies Record<string, RefusalRow>)

/** A key of {@link REFUSALS}. */
export type RefusalReason = keyof typeof REFUSALS

/** A refusal ready for the wire. */
export interface Refusal {
  /** HTTP status. */
  readonly status: number
  /** `retry-after`, `allow` and `www-authenticate` as the row says (lowercase names); the body is `application/json`. */
  readonly headers: Readonly<Record<string, string>>
  /** The serialised JSON-RPC error. */
  readonly body: string
  /** The same error as an object (for a batch element, or an SSE event). */
  readonly message: JsonRpcErrorResponse
}

/**
 * The wire form of a refusal.
 * @param reason a row of {@link REFUSALS}
 * @param id the request's id when one can be read (JSON-RPC 2.0 §5), else the body is id-less
 * @param detail code and/or message replacing the row's (parse errors, the body limit, framework
 *        messages); `wwwAuthenticate`, the row's challenge with its parameters (lib/auth/authenticate:
 *        resource_metadata, scope, error_description; RFC 6750 §3, RFC 9728 §5.1)
 * Never throws. Id-less refusals are worth building once, at registration.
 */
export function refusal (reason: RefusalReason, id?: RequestId, detail?: { code?: number, message?: string, wwwAuthenticate?: string }): Refusal {
  const row: RefusalRow = REFUSALS[reason]
  const headers = headersOf(row)
  if (detail?.wwwAuthenticate !== undefined) headers['www-authenticate'] = detail.wwwAuthenticate
  const message = errorResponse(id, detail?.code ?? row.code, detail?.message ?? row.message)
  return { status: row.status, headers, body: encodeMessage(message), message }
}

/**
 * A JSON-RPC error mcpx answers before dispatch (the modern header checks, the legacy -32022), as
 * a refusal: its status from its era's function ({@link modernStatus}, {@link legacyStatus}), no
 * extra headers, the error itself as the body. Never throws.
 */
export function eraRefusal (era: 'legacy' | 'modern', message: JsonRpcErrorResponse): Refusal {
  return { status: era === 'modern' ? modernStatus(message.error) : legacyStatus(message.error), headers: {}, body: encodeMessage(message), message }
}

/**
 * Responses the dispatcher built for a refusal (see `upstreamBusy`): the object, not its content,
 * carries the mark, so an upstream's own error with the same code and message is never taken for one.
 */
const REFUSED_RESPONSES = new WeakMap<object, RefusalReason>()

/**
 * Marks a JSON-RPC error response as the refusal `reason`, for the HTTP face to answer with the
 * row's status and headers ({@link refusedAs}). @returns `response`. Never throws.
 */
export function markRefused<T extends object> (response: T, reason: RefusalReason): T {
  REFUSED_RESPONSES.set(response, reason)
  return response
}

/** The refusal a response was marked as by {@link markRefused}, if any. Never throws. */
export function refusedAs (response: object): RefusalReason | undefined {
  return REFUSED_RESPONSES.get(response)
}

/**
 * A dispatcher response marked as a refusal ({@link markRefused}: an upstream's full queue, a rate
 * limit), as its row answers it over HTTP: the row's status and headers, the response itself as the
 * body (its id, code, message and data, byte for byte what stdio sends). `Retry-After` comes from
 * `data.retryAfterMs` for rows that say so. Undefined for any other response. Never throws.
 */
export function markedRefusal (response: JsonRpcResponse): Refusal | undefined {
  const reason = REFUSED_RESPONSES.get(response)
  if (reason === undefined || !('error' in response)) return undefined
  const row: RefusalRow = REFUSALS[reason]
  const headers = headersOf(row)
  const data = response.error.data as { retryAfterMs?: unknown } | undefined
  if (row.retryAfterFromData === true && typeof data?.retryAfterMs === 'number') headers['retry-after'] = String(retryAfterSecondsOf(data.retryAfterMs))
  return { status: row.status, headers, body: encodeMessage(response), message: response }
}

/** `Retry-After` seconds for a wait in ms: rounded up, at least 1. Never throws. */
export function retryAfterSecondsOf (ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000))
}

function headersOf (row: RefusalRow): Record<string, string> {
  const headers: Record<string, string> = {}
  if (row.retryAfterSeconds !== undefined) headers['retry-after'] = String(row.retryAfterSeconds)
  if (row.allow !== undefined) headers.allow = row.allow
  if (row.wwwAuthenticate !== undefined) headers['www-authenticate'] = row.wwwAuthenticate
  return headers
}

/**
 * How /mcp answers an error the framework raised before mcpx read the body (routes/mcp/index.ts's
 * error handler). Fastify's own codes are matched as strings, so lib/ stays Fastify-free.
 * @param error `code` and `statusCode` as the framework sets them
 * @param maxBodyBytes the body limit, named in the 413's message
 * Never throws.
 */
export function frameworkRefusal (error: { code?: string, statusCode?: number, message: string }, maxBodyBytes: number): Refusal {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE': return refusal('bodyTooLarge', undefined, { message: `Request body larger than ${maxBodyBytes} bytes` })
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': return refusal('unsupportedMediaType')
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH': return refusal('unreadableBody', undefined, { message: 'Parse error: ' + error.message })
  }
  // Any other error keeps the status the framework gave it; a client error (4xx) keeps its message too.
  const status = error.statusCode ?? 500
  const { headers, body, message } = status >= 500 ? refusal('internalError') : refusal('badRequest', undefined, { message: error.message })
  return { status, headers, body, message }
}

/**
 * POST /admin/reload: 200 when the new config was applied, 422 when it was refused (it did not
 * load or validate: RFC 9110 §15.5.21 Unprocessable Content; docs/operating.md › Reloading the config).
 * The body is the reload report, not a JSON-RPC error. Never throws.
 */
export function reloadStatus (applied: boolean): number {
  return applied ? 200 : 422
}

/**
 * `POST /admin/integrity/approve` and `/reject` (docs/policy.md › Integrity › Approving): 200 done,
 * 400 a body without upstream, name and hash (or a bad kind), 404 no such item or pending change,
 * 409 stale (the definition seen now has another hash than the one approved: RFC 9110 §15.5.10
 * Conflict), 503 the pin store failed or integrity is off. The body is a report, not a JSON-RPC error. Never throws.
 */
export function integrityStatus (outcome: 'done' | 'invalid' | 'unknown' | 'stale' | 'unavailable'): number {
  switch (outcome) {
    case 'done': return 200
    case 'invalid': return 400
    case 'unknown': return 404
    case 'stale': return 409
    case 'unavailable': return 503
  }
}

/** /readyz: 200 when every upstream is ready, else 503 (docs/operating.md). */
export function readinessStatus (ready: boolean): number {
  return ready ? 200 : 503
}
