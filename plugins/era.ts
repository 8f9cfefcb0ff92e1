/**
 * mcpx-era: classifies each /mcp request once (lib/protocol/inbound) and stores it in `request.mcp`: the
 * era (seed › "Which era a POST belongs to"), the MCP-Protocol-Version header, and for a POST the
 * body's facts. Every later stage reads `request.mcp`; none classifies the body again. POST bodies
 * are judged once parsed; GET and DELETE carry no body, so only the header can make them modern.
 *
 * The classification runs in `preValidation`, so that the cap on POSTs in flight (routes/mcp,
 * preValidation, registered after this plugin) can give its 503 the request's id. This plugin
 * answers nothing: a body that could not be read (`kind: 'reject'`) is answered by routes/mcp,
 * beside the JSON parser and the framework's body errors.
 */
import fp from 'fastify-plugin'
import { classifyBodiless, classifyPost, type Inbound } from '../lib/protocol/inbound.js'
import type { Parsed } from '../lib/protocol/jsonrpc.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** This /mcp request, classified once by mcpx-era (lib/protocol/inbound); null until it ran. */
    mcp: Inbound | null
  }
}

export default fp(async function mcpxEra (fastify) {
  fastify.decorateRequest('mcp', null)
  // Callback style: no promise and no microtask per request.
  fastify.addHook('preValidation', function classifyRequest (request, _reply, done) {
    request.mcp = request.method === 'POST'
      ? classifyPost({ headers: request.headers, parsed: request.body as Parsed | undefined })
      : classifyBodiless(request.headers)
    done()
  })
}, { name: 'mcpx-era', fastify: '5.x' })
