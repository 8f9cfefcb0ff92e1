/**
 * DELETE /mcp: ends a legacy session (seed › Streamable HTTP legacy › DELETE): 204 with a
 * session, which also closes its GET stream; 400 without one (mcpx allows termination, so 405
 * would be wrong); 404 for an unknown one (answered by mcpx-legacy-sessions); 405 for a modern
 * request (2026-07-28 has no DELETE).
 */
import type { FastifyPluginAsync } from 'fastify'
import { deleteStatus, type DeleteOutcome } from '../../lib/status.js'
import { encodeMessage, errorResponse, INVALID_REQUEST, INTERNAL_ERROR } from '../../lib/jsonrpc.js'
import { REFUSAL_STATUS } from '../../lib/status.js'
import { STORE_UNAVAILABLE_MESSAGE } from '../../lib/http-exchange.js'

const deleteRoute: FastifyPluginAsync = async function (fastify) {
  const noHeader = encodeMessage(errorResponse(undefined, INVALID_REQUEST, 'Bad Request: DELETE needs the Mcp-Session-Id to end'))
  const modern = encodeMessage(errorResponse(undefined, INVALID_REQUEST, 'Method Not Allowed: 2026-07-28 has no sessions to delete'))
  fastify.delete('/', async function endSession (request, reply) {
    const session = request.mcpSession
    const ended = request.mcpEra !== 'modern' && session !== null ? await fastify.sessions.end(session.id) : undefined
    if (ended === 'unavailable') {
      return reply.code(REFUSAL_STATUS.storeUnavailable).header('retry-after', '1').type('application/json')
        .send(encodeMessage(errorResponse(undefined, INTERNAL_ERROR, STORE_UNAVAILABLE_MESSAGE)))
    }
    const outcome: DeleteOutcome = request.mcpEra === 'modern' ? 'modern' : ended === undefined ? 'no-header' : ended
    reply.code(deleteStatus(outcome))
    if (outcome === 'ended') return reply.send()
    if (outcome === 'modern') reply.header('allow', 'POST')
    return reply.type('application/json').send(outcome === 'modern' ? modern : noHeader)
  })
}

export default deleteRoute
