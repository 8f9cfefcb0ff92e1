/**
 * Writes a lib/protocol/http-status refusal on a Fastify reply: its status, its headers (Retry-After, Allow,
 * WWW-Authenticate as the refusal table says) and its JSON-RPC body. The one Fastify-side writer of
 * refusals, so plugins and routes never pick a status or a header themselves.
 */
import type { FastifyReply } from 'fastify'
import type { Refusal } from '../lib/protocol/http-status.js'

/** Sends `refused` and returns the reply (return it from a hook to end the request). */
export function sendRefusal (reply: FastifyReply, refused: Refusal): FastifyReply {
  return reply.code(refused.status).headers(refused.headers).type('application/json').send(refused.body)
}
