/**
 * mcpx-origin: refuses a request whose Origin is present and not allowed, on every method
 * (OPTIONS included), with 403 and an id-less JSON-RPC error
 * (seed › "Origin (every revision with Streamable HTTP)"). The decision is lib/http/origin's.
 *
 * Register it FIRST in mcpx's own (un-wrapped) scope, before mcpx-cors and mcpx-auth: its
 * `onRequest` hook must run before theirs, so a refused preflight is 403 rather than a CORS grant
 * or a 401. Being `fp`-wrapped, it adds its hook to the scope that registers it, and only there.
 */
import fp from 'fastify-plugin'
import { createOriginCheck, isOriginAllowed, type OriginPolicy } from '../lib/http/origin.js'
import { refusal } from '../lib/protocol/http-status.js'

export interface OriginOptions {
  /** The origin policy, usually `originPolicyFromConfig(config)`. Required. Share the same object with mcpx-cors. */
  policy: OriginPolicy
}

export default fp<OriginOptions>(async function mcpxOrigin (fastify, opts) {
  if (opts?.policy === undefined) throw new TypeError('mcpx: mcpx-origin requires opts.policy (an OriginPolicy)')
  createOriginCheck(opts.policy) // fail fast on a bad policy (McpxError MCPX_ERR_CONFIG), at registration
  const policy = opts.policy
  const refused = refusal('forbiddenOrigin') // built once
  // Callback style: no promise and no microtask per request.
  fastify.addHook('onRequest', function checkOrigin (request, reply, done) {
    if (isOriginAllowed(request.headers.origin, policy)) { done(); return }
    request.log.debug({ origin: request.headers.origin }, 'origin refused')
    reply.sendRefusal(refused)
  })
}, { name: 'mcpx-origin', fastify: '5.x' })
