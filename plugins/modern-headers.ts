/**
 * mcpx-modern-headers: the 2026-07-28 checks that run before a modern POST is dispatched
 * (seed › Streamable HTTP, 2026-07-28): no batches (-32600), a revision mcpx serves (-32022),
 * the mirrored MCP-Protocol-Version / Mcp-Method / Mcp-Name headers (-32020), and the
 * Mcp-Param-* headers of the named tool (-32020). Every rejection carries the request's id
 * when it has one; its status comes from lib/protocol/http-status (eraRefusal: modernStatus), and
 * plugins/send-refusal writes it. The caller's view the Mcp-Param-* check looks the tool up in is
 * kept in `request.mcpView`: the dispatcher serves the call in that same view (DispatchContext.view)
 * instead of working it out a second time.
 */
import fp from 'fastify-plugin'
import { errorResponse, INVALID_REQUEST } from '../lib/protocol/jsonrpc.js'
import { eraRefusal } from '../lib/protocol/http-status.js'
import { checkModernHeaders } from '../lib/protocol/modern-headers.js'
import { checkParamHeaders } from '../lib/protocol/param-headers.js'
import { isUnservedModern, unsupportedVersion } from '../lib/protocol/revisions.js'
import type { Dispatcher } from '../lib/dispatch/dispatcher.js'
import type { Visibility } from '../lib/policy/visibility.js'
import type { HeaderRejection } from '../lib/protocol/header-values.js'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The caller's view on its endpoint (Dispatcher.viewOf), when mcpx-modern-headers worked it out for
     * the Mcp-Param-* check of a 2026-07-28 tools/call; null otherwise. The request is served in it.
     */
    mcpView: Visibility | null
  }
}

export default fp(async function mcpxModernHeaders (fastify) {
  // Where the named tool's inputSchema (with its x-mcp-header annotations) is looked up: the
  // dispatcher, through the caller's policy view (a hidden tool is unknown here too: hidden things look absent).
  const dispatcher = fastify.mcp.dispatcher
  fastify.decorateRequest('mcpView', null)
  const batchRefused = eraRefusal('modern', errorResponse(undefined, INVALID_REQUEST, 'Invalid Request: 2026-07-28 has no JSON-RPC batches'))
  // Callback style: no promise and no microtask per request.
  fastify.addHook('preHandler', function checkModernRequest (request, reply, done) {
    const inbound = request.mcp
    if (inbound === null || inbound.kind === 'bodiless' || inbound.kind === 'reject' || inbound.era !== 'modern') { done(); return }
    // Seed › No batches: an array body is 400 -32600.
    if (inbound.kind === 'batch') { reply.sendRefusal(batchRefused); return }
    const item = inbound.item
    if (item.kind !== 'request' && item.kind !== 'notification') { done(); return } // the route answers invalid bodies and responses
    const message = item.message
    const id = inbound.id
    // A modern-era revision mcpx does not serve is -32022, whether the header or the body named it
    // (lib/protocol/revisions); anything else the header disagrees on is -32020 below (seed).
    const requested = inbound.headerRevision ?? inbound.bodyRevision
    if (isUnservedModern(requested)) {
      reply.sendRefusal(eraRefusal('modern', unsupportedVersion(id, requested)))
      return
    }
    let rejection = checkModernHeaders(request.headers, message, item.kind, inbound.bodyRevision)
    if (rejection === undefined && message.method === 'tools/call') {
      // The caller's view, worked out once: the dispatcher serves the call in it (a reload from here on changes nothing for this request).
      const view = dispatcher.viewOf({ caller: request.mcpPrincipal ?? undefined, endpoint: request.mcpEndpoint })
      request.mcpView = view
      rejection = checkToolParams(dispatcher, view, request.headers, message.params)
    }
    if (rejection === undefined) { done(); return }
    reply.sendRefusal(eraRefusal('modern', errorResponse(id, rejection.code, rejection.message)))
  })
}, { name: 'mcpx-modern-headers', fastify: '5.x', dependencies: ['mcpx-era', 'mcpx-upstreams', 'mcpx-auth'] })

/**
 * The Mcp-Param-* check of a tools/call (lib/protocol/param-headers): against the named tool's
 * inputSchema as the caller sees it in `view` (a hidden tool is unknown here too: hidden things look absent).
 */
function checkToolParams (dispatcher: Dispatcher, view: Visibility, headers: Record<string, string | string[] | undefined>, params: Record<string, unknown> | undefined): HeaderRejection | undefined {
  const name = params?.name
  if (typeof name !== 'string') return undefined
  const tool = dispatcher.findTool(name, view)
  if (tool === undefined) return undefined // unknown tool: the dispatcher answers -32602
  return checkParamHeaders(headers, tool.inputSchema, params?.arguments)
}
