/**
 * DELETE /mcp: ends a legacy session (seed › Streamable HTTP legacy › DELETE): 204 with a
 * session, which also closes its GET stream; 400 without one (mcpx allows termination, so 405
 * would be wrong); 404 for an unknown one (answered by mcpx-legacy-sessions); 405 for a modern
 * request (2026-07-28 has no DELETE).
 */
import type { FastifyPluginAsync } from 'fastify'
import { deleteStatus, type DeleteOutcome } from '../../lib/status.js'
import { encodeMessage, errorResponse, INVALID_REQUEST } from '../../lib/jsonrpc.js'

const deleteRoute: FastifyPluginAsync = async function (fastify) {
  const noHeader = encodeMessage(errorResponse(undefined, INVALID_REQUEST, 'Bad Request: DELETE needs the Mcp-Session-Id to end'))
  const modern = encodeMessage(errorResponse(undefined, INVALID_REQUEST, 'Method Not Allowed: 2026-07-28 has no sessions to delete'))
  fastify.delete('/', async function endSession (request, reply) {
    const session = request.mcpSession
    const outcome: DeleteOutcome = request.mcpEra === 'modern' ? 'modern' : session === null ? 'no-header' : (fastify.sessions.end(session.id) ? 'ended' : 'unknown')
    reply.code(deleteStatus(outcome))
    if (outcome === 'ended') return reply.send()
    if (outcome === 'modern') reply.header('allow', 'POST')
    return reply.type('application/json').send(outcome === 'modern' ? modern : noHeader)
  })
}

export default deleteRoute
