/**
 * DELETE /mcp: ends a legacy session (seed › Streamable HTTP legacy › DELETE): 204 with a
 * session, which also closes its GET stream; 400 without one (mcpx allows termination, so 405
 * would be wrong); 404 for an unknown one (answered by mcpx-legacy-sessions); 405 for a modern
 * request (2026-07-28 has no DELETE).
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { DELETE_REFUSAL, deleteStatus, refusal, type DeleteOutcome, type Refusal } from '../../lib/protocol/http-status.js'
import { eraOfInbound } from '../../lib/protocol/inbound.js'

const deleteRoute: FastifyPluginAsync = async function (fastify) {
  // Built once: every DELETE refusal is id-less (DELETE has no body).
  const refused = new Map<DeleteOutcome, Refusal>(Object.entries(DELETE_REFUSAL).map(([outcome, reason]) => [outcome as DeleteOutcome, refusal(reason)]))
  const storeUnavailable = refusal('storeUnavailable')
  // `/` and a curated endpoint `/:server`; a session is found only on its own endpoint (mcpx-legacy-sessions).
  const handler = async function endSession (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const session = request.mcpSession
    const modern = eraOfInbound(request.mcp) === 'modern'
    const ended = !modern && session !== null ? await fastify.sessions.end(session.id) : undefined
    if (ended === 'unavailable') return reply.sendRefusal(storeUnavailable)
    const outcome: DeleteOutcome = modern ? 'modern' : ended === undefined ? 'no-header' : ended
    const refusedWith = refused.get(outcome)
    if (refusedWith !== undefined) return reply.sendRefusal(refusedWith)
    return reply.code(deleteStatus(outcome)).send()
  }
  fastify.delete('/', handler)
  fastify.delete('/:server', handler)
}

export default deleteRoute
