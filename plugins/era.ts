/**
 * mcpx-era: decides which era wrote each /mcp request (seed › "Which era a POST belongs to")
 * and stores it in `request.mcpEra`. POST bodies are judged by lib/classify once parsed; GET and
 * DELETE carry no body, so only the MCP-Protocol-Version header can make them modern.
 * A body that is not JSON is answered here, -32700 with no id (400), before any other check; one
 * nested deeper than lib/jsonrpc MAX_NESTING_DEPTH, -32600 (400) with its id when readable.
 */
import fp from 'fastify-plugin'
import { eraOfPost } from '../lib/classify.js'
import { eraOf, type Era } from '../lib/revisions.js'
import type { Parsed } from '../lib/jsonrpc.js'
import { readHeader } from '../lib/header-values.js'
import { refusal } from '../lib/status.js'
import { sendRefusal } from './send-refusal.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The era of this /mcp request; null until mcpx-era ran. */
    mcpEra: Era | null
    /** The parsed MCP-Protocol-Version header (trimmed), null when absent or unreadable. */
    mcpProtocolVersion: string | null
  }
}

export default fp(async function mcpxEra (fastify) {
  fastify.decorateRequest('mcpEra', null)
  fastify.decorateRequest('mcpProtocolVersion', null)
  fastify.addHook('preHandler', async function decideEra (request, reply) {
    const header = readHeader(request.headers, 'mcp-protocol-version')
    const version = header.kind === 'value' ? header.value : undefined
    request.mcpProtocolVersion = version ?? null
    if (request.method !== 'POST') {
      request.mcpEra = version !== undefined && eraOf(version) === 'modern' ? 'modern' : 'legacy'
      return
    }
    const parsed = request.body as Parsed | undefined
    if (parsed === undefined || !parsed.ok) {
      // A too-deep body (-32600) was JSON, so its id may have been readable: the error carries it.
      return sendRefusal(reply, parsed === undefined ? refusal('unreadableBody') : refusal('unreadableBody', parsed.id, parsed.error))
    }
    request.mcpEra = eraOfPost(version, parsed.value)
  })
}, { name: 'mcpx-era', fastify: '5.x' })
