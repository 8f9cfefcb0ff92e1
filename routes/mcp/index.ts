/**
 * The /mcp routes' scope: its own JSON parser (raw bytes → lib/jsonrpc parseBody, so invalid
 * UTF-8 and bad JSON become -32700 rather than Fastify's error shape), the body limit, the
 * Accept check (406), the daemon-wide cap on POSTs in flight (503), and an error handler that
 * turns every framework error on /mcp into an id-less JSON-RPC error with a status from lib/status.
 */
import type { FastifyPluginAsync, FastifyError } from 'fastify'
import {
  parseBody, encodeMessage, errorResponse, classify, INVALID_REQUEST, INTERNAL_ERROR, PARSE_ERROR,
  type Parsed, type RequestId
} from '../../lib/jsonrpc.js'
import { REFUSAL_STATUS, RETRY_AFTER_SECONDS } from '../../lib/status.js'
import { StreamSlots } from '../../lib/http-exchange.js'
import postRoute from './post.js'
import getRoute from './get.js'
import deleteRoute from './delete.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** True when this POST arrived past transport.maxConcurrentRequests (refused 503 once its body is read). */
    mcpOverCapacity: boolean
  }
}

/** What the GET and POST routes get: the scope's options plus the streams' shared cap. */
export interface McpRouteDeps extends McpRoutesOptions {
  streamSlots: StreamSlots
}

export interface McpRoutesOptions {
  maxBodyBytes: number
  keepAliveMs: number
  maxRequestsPerSession: number
  /** Most long-lived streams open at once, GET and subscriptions/listen together (transport.maxGetStreams). */
  maxGetStreams: number
  /** Most POSTs in flight across this mcpx (transport.maxConcurrentRequests); past it, 503 with Retry-After. */
  maxConcurrentRequests: number
}

/** Methods /mcp answers (HEAD is Fastify's automatic twin of GET); any other is 405. */
const MCP_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'])
const MCP_ALLOW = 'GET, POST, DELETE, OPTIONS'

/** The id of a parsed single-message body, when it has a usable one (for the 503's `id`). Never throws. */
function requestIdOf (body: unknown): RequestId | undefined {
  const parsed = body as Parsed | undefined
  if (parsed?.ok !== true || parsed.batch) return undefined
  const item = classify(parsed.value)
  return item.kind === 'request' ? item.message.id : item.kind === 'invalid' ? item.id : undefined
}

/** True when an Accept header admits neither JSON nor SSE (then 406). Missing Accept and `*\/*` are tolerated. */
export function acceptRefused (accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return false
  const a = accept.toLowerCase()
  return !(a.includes('application/json') || a.includes('text/event-stream') || a.includes('*/*') || a.includes('application/*') || a.includes('text/*'))
}

const routes: FastifyPluginAsync<McpRoutesOptions> = async function mcpRoutes (fastify, opts) {
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser(['application/json'], { parseAs: 'buffer', bodyLimit: opts.maxBodyBytes }, function parseJsonRpc (_request, body, done) {
    done(null, parseBody(body as Buffer))
  })
  // Fuzz finding (test/e2e/fuzz.test.ts, seed 1835233400): PUT/PATCH /mcp and unknown paths under
  // /mcp fell through to the host's not-found handler and error handler, so they were answered with
  // Fastify's own `{"message":"Route PUT:/mcp not found",…}` / `{"code":"FST_ERR_CTP_…"}` bodies.
  // This scope's not-found handler keeps them here (with this scope's hooks, parser and error
  // handler); other methods are refused 405 before any body is read.
  const methodNotAllowed = encodeMessage(errorResponse(undefined, INVALID_REQUEST, 'Method Not Allowed: /mcp takes GET, POST, DELETE and OPTIONS'))
  const notFound = encodeMessage(errorResponse(undefined, INVALID_REQUEST, 'Not Found: MCP is served at /mcp'))
  fastify.addHook('onRequest', async function checkMethod (request, reply) {
    if (MCP_METHODS.has(request.method)) return
    return reply.code(REFUSAL_STATUS.methodNotAllowed).header('allow', MCP_ALLOW).type('application/json').send(methodNotAllowed)
  })
  fastify.setNotFoundHandler(async function mcpNotFound (_request, reply) {
    return await reply.code(REFUSAL_STATUS.notFound).type('application/json').send(notFound)
  })
  const notAcceptable = encodeMessage(errorResponse(undefined, INVALID_REQUEST, 'Not Acceptable: Accept must admit application/json or text/event-stream'))
  fastify.addHook('onRequest', async function checkAccept (request, reply) {
    if (request.method === 'OPTIONS') return
    if (acceptRefused(request.headers.accept)) return reply.code(REFUSAL_STATUS.notAcceptable).type('application/json').send(notAcceptable)
  })
  // transport.maxConcurrentRequests: POSTs are counted from onRequest until their response closes
  // ('close' on the raw response fires for finished, hijacked (SSE) and aborted replies alike;
  // Fastify's onResponse does not run when the client goes away first, so it would leak slots).
  // The refusal waits for preValidation so that the 503 can carry the request's id.
  let inFlightPosts = 0
  function releasePostSlot (): void { inFlightPosts-- }
  fastify.decorateRequest('mcpOverCapacity', false)
  fastify.addHook('onRequest', async function countPost (request, reply) {
    if (request.method !== 'POST') return
    if (inFlightPosts >= opts.maxConcurrentRequests) { request.mcpOverCapacity = true; return }
    inFlightPosts++
    reply.raw.once('close', releasePostSlot)
  })
  fastify.addHook('preValidation', async function refusePostOverCapacity (request, reply) {
    if (!request.mcpOverCapacity) return
    request.log.debug({ maxConcurrentRequests: opts.maxConcurrentRequests }, 'too many requests in flight')
    return reply.code(REFUSAL_STATUS.tooManyConcurrentRequests).header('retry-after', String(RETRY_AFTER_SECONDS)).type('application/json')
      .send(encodeMessage(errorResponse(requestIdOf(request.body), INTERNAL_ERROR, 'Server busy: too many requests in flight; retry later')))
  })
  fastify.setErrorHandler(function mcpError (error: FastifyError, request, reply) {
    const status = error.statusCode ?? 500
    let code = INTERNAL_ERROR
    let message = 'Internal error'
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') { code = INVALID_REQUEST; message = `Request body larger than ${opts.maxBodyBytes} bytes` }
    else if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') { code = INVALID_REQUEST; message = 'Unsupported Media Type: Content-Type must be application/json' }
    else if (error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || error.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH') { code = PARSE_ERROR; message = 'Parse error: ' + error.message }
    else if (status < 500) { code = INVALID_REQUEST; message = error.message }
    else request.log.error({ err: error }, 'mcp route failed')
    if (reply.sent || reply.raw.headersSent) return
    reply.code(status).type('application/json').send(encodeMessage(errorResponse(undefined, code, message)))
  })
  // One cap for every long-lived stream of this scope: GET streams and subscriptions/listen streams.
  const streamSlots = new StreamSlots(opts.maxGetStreams)
  await fastify.register(postRoute, { ...opts, streamSlots })
  await fastify.register(getRoute, { ...opts, streamSlots })
  await fastify.register(deleteRoute, opts)
}

export default routes
