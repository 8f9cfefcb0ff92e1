/**
 * The /mcp routes' scope: its own JSON parser (raw bytes → lib/protocol/jsonrpc parseBody, so invalid
 * UTF-8 and bad JSON become -32700 rather than Fastify's error shape), the body limit, the
 * Accept check (406), the daemon-wide cap on POSTs in flight (503), the answer to a body that
 * could not be read (400), and an error handler that turns every framework error on /mcp into an
 * id-less JSON-RPC error. Every status comes from lib/status.
 */
import type { FastifyPluginAsync, FastifyError } from 'fastify'
import { parseBody } from '../../lib/protocol/jsonrpc.js'
import { requestIdOf } from '../../lib/protocol/inbound.js'
import { frameworkRefusal, refusal } from '../../lib/protocol/http-status.js'
import { DRAIN_FACTOR, drainRequest } from '../../lib/http/drain.js'
import { RequestSlots } from '../../lib/http/exchange.js'
import type { McpRoutesOptions } from './options.js'
import postRoute from './post.js'
import getRoute from './get.js'
import deleteRoute from './delete.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** True when this POST arrived past transport.maxConcurrentRequests (refused 503 once its body is read). */
    mcpOverCapacity: boolean
  }
}

export type { McpRoutesOptions, McpRouteDeps } from './options.js'

/** Methods /mcp answers (HEAD is Fastify's automatic twin of GET); any other is 405 (lib/protocol/http-status methodNotAllowed names them in Allow). */
const MCP_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'])


const routes: FastifyPluginAsync<McpRoutesOptions> = async function mcpRoutes (fastify, opts) {
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser(['application/json'], { parseAs: 'buffer', bodyLimit: opts.maxBodyBytes }, function parseJsonRpc (_request, body, done) {
    done(null, parseBody(body as Buffer, opts.maxBatchMembers))
  })
  // Fuzz finding (test/e2e/fuzz.test.ts, seed 1835233400): PUT/PATCH /mcp and unknown paths under
  // /mcp fell through to the host's not-found handler and error handler, so they were answered with
  // Fastify's own `{"message":"Route PUT:/mcp not found",…}` / `{"code":"FST_ERR_CTP_…"}` bodies.
  // This scope's not-found handler keeps them here (with this scope's hooks, parser and error
  // handler); other methods are refused 405 before any body is read.
  const methodNotAllowed = refusal('methodNotAllowed') // built once
  const notFound = refusal('notFound')
  fastify.setNotFoundHandler(async function mcpNotFound (_request, reply) {
    return await reply.sendRefusal(notFound)
  })
  // Curated endpoints: `/mcp/<name>` is a curated endpoint only when one by that name is configured (the
  // dispatcher holds the swappable set); any other name is 404 with a JSON-RPC body.
  const unknownEndpoint = refusal('unknownEndpoint')
  const dispatcher = fastify.mcp.dispatcher
  const notAcceptable = refusal('notAcceptable')
  // transport.maxConcurrentRequests: POSTs are counted from onRequest until their response closes
  // ('close' on the raw response fires for finished, hijacked (SSE) and aborted replies alike;
  // Fastify's onResponse does not run when the client goes away first, so it would leak slots).
  // The refusal waits for preValidation so that the 503 can carry the request's id.
  // Batch members take their own slots from the same count (lib/http/exchange.ts RequestSlots).
  const requestSlots = new RequestSlots(opts.maxConcurrentRequests)
  function releasePostSlot (): void { requestSlots.release() }
  fastify.decorateRequest('mcpOverCapacity', false)
  // The route checks that need no body, in this order, after the plugins' onRequest hooks (Origin,
  // CORS, mcpx-era's endpoint and Accept verdicts, auth), as every rule /mcp follows: the method (405),
  // the curated endpoint (404), Accept (406), then the POST count. One callback-style hook (no promise
  // and no microtask per check on every request).
  fastify.addHook('onRequest', function admitRequest (request, reply, done) {
    const method = request.method
    if (!MCP_METHODS.has(method)) { reply.sendRefusal(methodNotAllowed); return }
    const endpoint = request.mcpEndpoint
    if (endpoint !== undefined && !dispatcher.hasEndpoint(endpoint)) { reply.sendRefusal(unknownEndpoint); return }
    if (method !== 'OPTIONS' && request.mcpAccept?.refused === true) { reply.sendRefusal(notAcceptable); return }
    if (method === 'POST') {
      if (!requestSlots.claim()) request.mcpOverCapacity = true
      else {
        reply.raw.on('close', releasePostSlot) // a response emits 'close' once (no once() wrapper per POST)
      }
    }
    done()
  })
  fastify.addHook('preValidation', function refusePostOverCapacity (request, reply, done) {
    if (!request.mcpOverCapacity) { done(); return }
    request.log.debug({ maxConcurrentRequests: opts.maxConcurrentRequests }, 'too many requests in flight')
    // mcpx-era classified the body in its own preValidation hook, which runs before this one.
    reply.sendRefusal(refusal('tooManyConcurrentRequests', requestIdOf(request.mcp)))
  })
  // Every unreadable body is answered here, whoever noticed it: the parser's verdict (lib/protocol/inbound
  // `reject`: -32700 with no id, or -32600 with its id for a body nested too deep; 400) in this
  // preHandler, which runs after the plugins' preHandlers (they pass rejects through), and the
  // framework's body errors (413, 415, empty body) in the error handler below.
  fastify.addHook('preHandler', function refuseUnreadableBody (request, reply, done) {
    const inbound = request.mcp
    if (inbound?.kind === 'reject') { reply.sendRefusal(refusal('unreadableBody', inbound.id, inbound.error)); return }
    done()
  })
  fastify.setErrorHandler(async function mcpError (error: FastifyError, request, reply) {
    const refused = frameworkRefusal(error, opts.maxBodyBytes)
    if (refused.status >= 500) request.log.error({ err: error }, 'mcp route failed')
    if (reply.sent || reply.raw.headersSent) return
    if (refused.status === 413) {
      // Read the rest of the body first (bounded), so the client has finished sending when the
      // 413 and Connection: close come, and reads them instead of EPIPE (lib/http/drain.ts).
      const how = await drainRequest(request.raw, DRAIN_FACTOR * opts.maxBodyBytes, opts.drainTimeoutMs)
      if (how === 'closed' || reply.sent) return
      reply.header('connection', 'close')
    }
    return reply.sendRefusal(refused)
  })
  // One cap for every long-lived stream of this scope: GET streams and subscriptions/listen streams (mcpx-streams).
  const streamSlots = fastify.mcpStreams
  await fastify.register(postRoute, { ...opts, streamSlots, requestSlots })
  await fastify.register(getRoute, { ...opts, streamSlots, requestSlots })
  await fastify.register(deleteRoute, opts)
}

export default routes
