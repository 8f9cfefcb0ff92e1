/**
 * mcpx-era: classifies each /mcp request once (lib/inbound) and stores it in `request.mcp`: the
 * era (seed › "Which era a POST belongs to"), the MCP-Protocol-Version header, and for a POST the
 * body's facts. Every later stage reads `request.mcp`; none classifies the body again. POST bodies
 * are judged once parsed; GET and DELETE carry no body, so only the header can make them modern.
 *
 * The classification runs in `preValidation`, so that the cap on POSTs in flight (routes/mcp,
 * preValidation, registered after this plugin) can give its 503 the request's id. The answer to a
 * body that is not JSON waits for `preHandler`, as before: -32700 with no id (400); one nested
 * deeper than lib/jsonrpc MAX_NESTING_DEPTH, -32600 (400) with its id when readable.
 */
import fp from 'fastify-plugin'
import { classifyBodiless, classifyPost, type Inbound } from '../lib/inbound.js'
import type { Parsed } from '../lib/jsonrpc.js'
import { refusal } from '../lib/status.js'
import { sendRefusal } from './send-refusal.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** This /mcp request, classified once by mcpx-era (lib/inbound); null until it ran. */
    mcp: Inbound | null
  }
}

export default fp(async function mcpxEra (fastify) {
  fastify.decorateRequest('mcp', null)
  fastify.addHook('preValidation', async function classifyRequest (request) {
    request.mcp = request.method === 'POST'
      ? classifyPost({ headers: request.headers, parsed: request.body as Parsed | undefined })
      : classifyBodiless(request.headers)
  })
  fastify.addHook('preHandler', async function refuseUnreadableBody (request, reply) {
    const inbound = request.mcp
    // A too-deep body (-32600) was JSON, so its id may have been readable: the error carries it.
    if (inbound?.kind === 'reject') return sendRefusal(reply, refusal('unreadableBody', inbound.id, inbound.error))
  })
}, { name: 'mcpx-era', fastify: '5.x' })
