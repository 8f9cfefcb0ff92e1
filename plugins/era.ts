/**
 * mcpx-era: classifies each /mcp request once and stores the verdicts on the request; every later
 * stage reads them, none works them out again.
 *
 * - In `onRequest`, what the request line and headers alone decide: the curated endpoint it names
 *   (`request.mcpEndpoint`: the `:server` segment of `<prefix>/mcp/<name>`, docs/policy.md ›
 *   Curated endpoints; the route parameter is known from onRequest on) and what its Accept header
 *   admits (`request.mcpAccept`, lib/protocol/accept). mcpx-auth reads the endpoint in its own
 *   onRequest hook, so app.ts registers this plugin before mcpx-auth (checked by mcpx-auth when it
 *   is given curated endpoints).
 * - In `preValidation`, the message (`request.mcp`, lib/protocol/inbound): the era (seed › "Which
 *   era a POST belongs to"), the MCP-Protocol-Version header, and for a POST the body's facts. POST
 *   bodies are judged once parsed; GET and DELETE carry no body, so only the header can make them
 *   modern. It runs in `preValidation` so that the cap on POSTs in flight (routes/mcp,
 *   preValidation, registered after this plugin) can give its 503 the request's id.
 *
 * This plugin answers nothing: the 404 of an unknown endpoint and the 406 of an Accept that admits
 * neither JSON nor SSE are routes/mcp's, and so is a body that could not be read (`kind: 'reject'`),
 * beside the JSON parser and the framework's body errors.
 */
import fp from 'fastify-plugin'
import { classifyBodiless, classifyPost, type Inbound } from '../lib/protocol/inbound.js'
import { readAccept, type AcceptVerdict } from '../lib/protocol/accept.js'
import type { Parsed } from '../lib/protocol/jsonrpc.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** This /mcp request, classified once by mcpx-era (lib/protocol/inbound); null until it ran (preValidation). */
    mcp: Inbound | null
    /**
     * The curated endpoint this request names (`<prefix>/mcp/<name>`; configured or not: routes/mcp
     * answers 404 for an unknown one), or undefined for `<prefix>/mcp` itself. Set by mcpx-era in onRequest.
     */
    mcpEndpoint: string | undefined
    /** What this request's Accept header admits (lib/protocol/accept readAccept); null until mcpx-era's onRequest ran. */
    mcpAccept: AcceptVerdict | null
  }
}

export default fp(async function mcpxEra (fastify) {
  fastify.decorateRequest('mcp', null)
  fastify.decorateRequest('mcpEndpoint', undefined)
  fastify.decorateRequest('mcpAccept', null)
  // Callback style: no promise and no microtask per request.
  fastify.addHook('onRequest', function classifyRoute (request, _reply, done) {
    const server = (request.params as { server?: unknown } | undefined)?.server
    if (typeof server === 'string') request.mcpEndpoint = server
    // readAccept remembers the verdict of each distinct header: a client's repeated Accept costs one Map lookup.
    request.mcpAccept = readAccept(request.headers.accept)
    done()
  })
  fastify.addHook('preValidation', function classifyRequest (request, _reply, done) {
    request.mcp = request.method === 'POST'
      ? classifyPost({ headers: request.headers, parsed: request.body as Parsed | undefined })
      : classifyBodiless(request.headers)
    done()
  })
}, { name: 'mcpx-era', fastify: '5.x' })
