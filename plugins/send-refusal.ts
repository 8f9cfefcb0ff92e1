/**
 * mcpx-send-refusal: `reply.sendRefusal(refused)` writes a lib/protocol/http-status refusal on a Fastify
 * reply: its status, its headers (Retry-After, Allow, WWW-Authenticate as the refusal table says) and
 * its JSON-RPC body. The one Fastify-side writer of refusals, so plugins and routes never pick a status
 * or a header themselves (the reply-decorator shape of @fastify/sensible's `reply.notFound()`).
 *
 * Registered by app.ts in the /mcp scope, and by server.ts on the daemon's root for its operator
 * routes, so it never decorates an embedding host's replies. Where an ancestor already has it (the
 * daemon's /mcp scope) a second registration adds nothing: one decorator per reply prototype.
 */
import fp from 'fastify-plugin'
import type { FastifyReply } from 'fastify'
import type { Refusal } from '../lib/protocol/http-status.js'

declare module 'fastify' {
  interface FastifyReply {
    /** Sends `refused` (status, headers, JSON-RPC body) and returns the reply: return it from a hook to end the request. */
    sendRefusal: (refused: Refusal) => FastifyReply
  }
}

/** The decorator: a plain function on the reply prototype, `this` the reply. */
function sendRefusal (this: FastifyReply, refused: Refusal): FastifyReply {
  return this.code(refused.status).headers(refused.headers).type('application/json').send(refused.body)
}

export default fp(async function mcpxSendRefusal (fastify) {
  if (!fastify.hasReplyDecorator('sendRefusal')) fastify.decorateReply('sendRefusal', sendRefusal)
}, { name: 'mcpx-send-refusal', fastify: '5.x' })
