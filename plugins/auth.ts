/**
 * mcpx-auth: bearer tokens on every non-OPTIONS request (issue #6). The decision is lib/auth's.
 *
 * With tokens, an `onRequest` hook answers a missing or wrong `Authorization: Bearer <token>` with
 * 401, `WWW-Authenticate: Bearer` (plus `error="invalid_token"` when a token was sent but is wrong,
 * RFC 6750 §3.1) and an id-less JSON-RPC error, code -32600. OPTIONS passes: a CORS preflight
 * carries no Authorization (mcpx-cors has normally answered it already). With no tokens, no hook
 * is added at all.
 *
 * Register it after mcpx-origin and mcpx-cors (checked through `dependencies`): a refused Origin is
 * 403 before it is 401, and an allowed origin's 401 carries its CORS headers, so a browser client
 * can read WWW-Authenticate.
 */
import fp from 'fastify-plugin'
import {
  AUTH_REFUSED_HTTP_STATUS, WWW_AUTHENTICATE_INVALID, WWW_AUTHENTICATE_MISSING,
  authRefusedResponse, createBearerVerifier
} from '../lib/auth.js'

export interface AuthOptions {
  /** Accepted bearer tokens, usually `loadBearerTokens(config.auth)`. Empty: no authentication, no hook. Required. */
  tokens: readonly string[]
}

export default fp<AuthOptions>(async function mcpxAuth (fastify, opts) {
  if (!Array.isArray(opts?.tokens)) throw new TypeError('mcpx: mcpx-auth requires opts.tokens (an array of strings, possibly empty)')
  if (opts.tokens.length === 0) return // zero cost when authentication is off
  const verifyBearer = createBearerVerifier(opts.tokens)
  const missing = JSON.stringify(authRefusedResponse('missing')) // built once
  const invalid = JSON.stringify(authRefusedResponse('invalid'))
  fastify.addHook('onRequest', async function checkBearerToken (request, reply) {
    if (request.method === 'OPTIONS') return
    const outcome = verifyBearer(request.headers.authorization)
    if (outcome === 'ok') return
    request.log.debug({ outcome }, 'bearer token refused') // never the token itself
    return reply.code(AUTH_REFUSED_HTTP_STATUS)
      .header('WWW-Authenticate', outcome === 'missing' ? WWW_AUTHENTICATE_MISSING : WWW_AUTHENTICATE_INVALID)
      .type('application/json')
      .send(outcome === 'missing' ? missing : invalid)
  })
}, { name: 'mcpx-auth', fastify: '5.x', dependencies: ['mcpx-origin', 'mcpx-cors'] })
