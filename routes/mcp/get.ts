/**
 * GET /mcp: a legacy session's notification stream (seed › Streamable HTTP legacy › GET).
 * 405 without a session or with a modern header; 404 for an unknown session (mcpx-legacy-sessions);
 * 409 for a second stream on one session; 503 past the stream cap (transport.maxGetStreams, shared
 * with subscriptions/listen streams). The stream carries
 * list_changed and the session's resources/updated, and a `:` comment every keep-alive interval.
 */
import type { FastifyPluginAsync, FastifyReply } from 'fastify'
import { SseStream } from '../../lib/sse.js'
import { ALL_LISTS } from '../../lib/notify-hub.js'
import { getStatus, REFUSAL_STATUS, RETRY_AFTER_SECONDS, type GetOutcome } from '../../lib/status.js'
import { STORE_UNAVAILABLE_MESSAGE, STREAMS_CAPPED_MESSAGE } from '../../lib/http-exchange.js'
import { encodeMessage, errorResponse, INVALID_REQUEST, INTERNAL_ERROR } from '../../lib/jsonrpc.js'
import type { McpRouteDeps } from './index.js'

const MESSAGES: Record<Exclude<GetOutcome, 'open' | 'unknown'>, string> = {
  'no-session': 'Method Not Allowed: GET needs an Mcp-Session-Id from initialize',
  modern: 'Method Not Allowed: 2026-07-28 has no GET stream',
  busy: 'Conflict: this session already has a GET stream open',
  capped: STREAMS_CAPPED_MESSAGE
}

function refuse (reply: FastifyReply, outcome: Exclude<GetOutcome, 'open'>): FastifyReply {
  const status = getStatus(outcome)
  // RFC 9110 §15.5.6: Allow lists the methods the target supports. /mcp does support GET (with a
  // session), so a sessionless GET names it; 2026-07-28 has no GET stream and no DELETE, so a
  // GET carrying the modern header names POST only.
  if (status === 405) reply.header('allow', outcome === 'modern' ? 'POST' : 'GET, POST, DELETE')
  if (status === 503) reply.header('retry-after', String(RETRY_AFTER_SECONDS))
  const code = status === 503 ? INTERNAL_ERROR : INVALID_REQUEST
  return reply.code(status).type('application/json').send(encodeMessage(errorResponse(undefined, code, MESSAGES[outcome as keyof typeof MESSAGES])))
}

const getRoute: FastifyPluginAsync<McpRouteDeps> = async function (fastify, opts) {
  const slots = opts.streamSlots // shared with subscriptions/listen (transport.maxGetStreams)
  fastify.get('/', async function openNotificationStream (request, reply) {
    const session = request.mcpSession
    const outcome: GetOutcome = request.mcpEra === 'modern'
      ? 'modern'
      : session === null ? 'no-session'
        : session.stream !== undefined && !session.stream.isClosed ? 'busy'
          : slots.full ? 'capped' : 'open'
    if (outcome !== 'open') return refuse(reply, outcome)
    if (session === null) return reply // unreachable: outcome 'open' implies a session
    slots.claim() // free: checked just above, with no await in between; released on every path below
    try {
      // The store claims the one stream slot (cluster-wide with Redis) and opens it only when granted.
      let stream: SseStream | undefined
      const claim = await fastify.sessions.openStream(session, () => {
        reply.hijack()
        stream = new SseStream(reply.raw, opts.keepAliveMs, reply.getHeaders() as Record<string, string>)
        return stream
      })
      if (claim === 'unavailable') {
        return reply.code(REFUSAL_STATUS.storeUnavailable).header('retry-after', '1').type('application/json')
          .send(encodeMessage(errorResponse(undefined, INTERNAL_ERROR, STORE_UNAVAILABLE_MESSAGE)))
      }
      if (claim === 'busy' || stream === undefined) return refuse(reply, 'busy')
      const open = stream
      const remove = fastify.mcp.hub.add({ lists: ALL_LISTS, uris: session.subscriptions, send: (n) => { open.send(n) } })
      await open.closed
      remove()
    } finally {
      slots.release()
    }
    return reply
  })
}

export default getRoute
