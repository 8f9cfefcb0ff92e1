/**
 * GET /mcp: a legacy session's notification stream (seed › Streamable HTTP legacy › GET).
 * 405 without a session or with a modern header; 404 for an unknown session (mcpx-legacy-sessions);
 * 409 for a second stream on one session; 503 past the stream cap (transport.maxGetStreams, shared
 * with subscriptions/listen streams). The stream carries
 * list_changed, the session's resources/updated and the status of the 2025-11-25 tasks it created
 * (notifications/tasks/status), and a `:` comment every keep-alive interval.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { bindingKeyOf, expiresAtOf } from '../../lib/auth/principal.js'
import { SseStream } from '../../lib/http/sse.js'
import { eraOfInbound } from '../../lib/protocol/inbound.js'
import { ALL_LISTS } from '../../lib/connection/notify-hub.js'
import { GET_REFUSAL, refusal, type GetOutcome, type Refusal } from '../../lib/protocol/http-status.js'
import type { McpRouteDeps } from './options.js'

const getRoute: FastifyPluginAsync<McpRouteDeps> = async function (fastify, opts) {
  const slots = opts.streamSlots // shared with subscriptions/listen (transport.maxGetStreams)
  // Built once: every GET refusal is id-less (GET has no body).
  const refused = new Map<GetOutcome, Refusal>(Object.entries(GET_REFUSAL).map(([outcome, reason]) => [outcome as GetOutcome, refusal(reason)]))
  const storeUnavailable = refusal('storeUnavailable')
  // `/` and a curated endpoint `/:server`: the stream carries what its caller sees there.
  const handler = async function openNotificationStream (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const session = request.mcpSession
    const outcome: GetOutcome = eraOfInbound(request.mcp) === 'modern'
      ? 'modern'
      : session === null ? 'no-session'
        : session.stream !== undefined && !session.stream.isClosed ? 'busy'
          : slots.full ? 'capped' : 'open'
    const refusedWith = refused.get(outcome)
    if (refusedWith !== undefined) return reply.sendRefusal(refusedWith)
    if (session === null) return reply // unreachable: outcome 'open' implies a session
    slots.claim() // free: checked just above, with no await in between; released on every path below
    try {
      // The store claims the one stream slot (cluster-wide with Redis) and opens it only when granted.
      let stream: SseStream | undefined
      const claim = await fastify.sessions.openStream(session, () => {
        reply.hijack()
        stream = new SseStream(reply.raw, { keepAliveMs: opts.keepAliveMs, headers: reply.getHeaders() as Record<string, string>, flow: { ...opts.flow, logger: request.log }, kind: 'get' })
        return stream
      })
      if (claim === 'unavailable') return reply.sendRefusal(storeUnavailable)
      if (claim === 'busy' || stream === undefined) return reply.sendRefusal(refusal(GET_REFUSAL.busy))
      const open = stream
      slots.track('get', open)
      // The stream ends when the token it was opened with expires (docs/authentication.md › Tokens that expire).
      const expiresAt = expiresAtOf(request.mcpPrincipal)
      if (expiresAt !== undefined) open.closeAt(expiresAt)
      const viewed = { caller: request.mcpPrincipal ?? undefined, endpoint: request.mcpEndpoint }
      // relayed: with the Redis store, changes other replicas saw reach this stream too, filtered alike.
      // instanceOwner: what the session's isolated upstream instances announce reaches this stream
      // as well; its calls name the session and its principal (lib/dispatch/call-options.ts instanceOwnerOf).
      const principalKey = bindingKeyOf(request.mcpPrincipal ?? null, request.headers.authorization, request.mcpEndpoint)
      const instanceOwner = principalKey === undefined ? { owner: session.id } : { owner: session.id, principalKey }
      const remove = fastify.mcp.hub.add({ lists: ALL_LISTS, uris: session.subscriptions, relayed: true, instanceOwner, session: session.id, send: (n) => { open.send(n) }, view: () => fastify.mcp.dispatcher.visibilityOf(viewed) })
      await open.closed
      remove()
    } finally {
      slots.release()
    }
    return reply
  }
  fastify.get('/', handler)
  fastify.get('/:server', handler)
}

export default getRoute
