/**
 * mcpx-modern-headers: the 2026-07-28 checks that run before a modern POST is dispatched
 * (seed › Streamable HTTP, 2026-07-28): no batches (-32600), a revision mcpx serves (-32022),
 * the mirrored MCP-Protocol-Version / Mcp-Method / Mcp-Name headers (-32020), and the
 * Mcp-Param-* headers of the named tool (-32020). Every rejection carries the request's id
 * when it has one; its status comes from lib/protocol/http-status (eraRefusal: modernStatus), and
 * plugins/send-refusal writes it.
 */
import fp from 'fastify-plugin'
import { errorResponse, INVALID_REQUEST } from '../lib/protocol/jsonrpc.js'
import { eraRefusal } from '../lib/protocol/http-status.js'
import { checkModernHeaders } from '../lib/protocol/modern-headers.js'
import { checkParamHeaders } from '../lib/protocol/param-headers.js'
import { isUnservedModern, unsupportedVersion } from '../lib/protocol/revisions.js'
import type { Dispatcher } from '../lib/dispatch/dispatcher.js'
import type { DispatchContext } from '../lib/dispatch/context.js'

export default fp(async function mcpxModernHeaders (fastify) {
  // Where the named tool's inputSchema (with its x-mcp-header annotations) is looked up: the
  // dispatcher, through the caller's policy view (a hidden tool is unknown here too: hidden things look absent).
  const dispatcher = fastify.mcp.dispatcher
  const findTool = dispatcher.findTool.bind(dispatcher) // bound once, not per request
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
    const rejection = checkModernHeaders(request.headers, message, item.kind, inbound.bodyRevision) ??
      (message.method === 'tools/call' ? checkToolParams(findTool, { caller: request.mcpPrincipal ?? undefined, endpoint: request.mcpEndpoint }, request.headers, message.params) : undefined)
    if (rejection === undefined) { done(); return }
    reply.sendRefusal(eraRefusal('modern', errorResponse(id, rejection.code, rejection.message)))
  })
}, { name: 'mcpx-modern-headers', fastify: '5.x', dependencies: ['mcpx-era', 'mcpx-upstreams', 'mcpx-auth'] })

function checkToolParams (findTool: Dispatcher['findTool'], ctx: Pick<DispatchContext, 'caller' | 'endpoint'>, headers: Record<string, string | string[] | undefined>, params: Record<string, unknown> | undefined): { code: number, message: string } | undefined {
  const name = params?.name
  if (typeof name !== 'string') return undefined
  const tool = findTool(name, ctx)
  if (tool === undefined) return undefined // unknown tool: the dispatcher answers -32602
  return checkParamHeaders(headers, tool.inputSchema, params?.arguments)
}
