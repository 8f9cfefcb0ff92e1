/**
 * mcpx-cors: `@fastify/cors` configured from the same {@link OriginPolicy} as mcpx-origin, through
 * the same `isOriginAllowed`, so the two can never disagree (STYLE › Layout). An allowed origin is
 * reflected; a refused one gets no CORS grant (and mcpx-origin has already answered it 403).
 *
 * - methods: GET, POST, DELETE, OPTIONS.
 * - allowedHeaders unset: a preflight's Access-Control-Request-Headers is reflected, because
 *   `Mcp-Param-*` names are open-ended.
 * - exposedHeaders: `Mcp-Session-Id` (legacy sessions) and `WWW-Authenticate` (mcpx-auth's 401).
 * - strictPreflight off: a bare OPTIONS without Origin (not a browser preflight) is answered 204
 *   like a preflight instead of @fastify/cors's `400 text/plain`, the only non-JSON-RPC error body
 *   it would otherwise put on /mcp.
 *
 * @fastify/cors answers a preflight inside its `onRequest` hook, so register this after
 * mcpx-origin and BEFORE mcpx-auth: a preflight carries no Authorization.
 *
 * Scope caveats of @fastify/cors itself: it always adds an `OPTIONS <prefix>*` route, so the scope
 * that registers this plugin should carry a prefix that covers only mcpx (e.g. `<prefix>/mcp`, with
 * the routes at `/`); with an empty prefix that wildcard catches a host app's OPTIONS requests
 * and runs mcpx's hooks on them. And it decorates the request with `corsPreflightEnabled`, so a host
 * app that registered @fastify/cors at its root cannot register it again inside mcpx
 * (FST_ERR_DEC_ALREADY_PRESENT).
 */
import fp from 'fastify-plugin'
import cors from '@fastify/cors'
import { createOriginCheck, isOriginAllowed, type OriginPolicy } from '../lib/http/origin.js'

export interface CorsOptions {
  /** The same policy object given to mcpx-origin. Required. */
  policy: OriginPolicy
}

/** Methods granted to an allowed origin's preflight. */
export const CORS_METHODS = ['GET', 'POST', 'DELETE', 'OPTIONS']
/** Response headers an allowed origin's script may read. */
export const CORS_EXPOSED_HEADERS = ['Mcp-Session-Id', 'WWW-Authenticate']

export default fp<CorsOptions>(async function mcpxCors (fastify, opts) {
  if (opts?.policy === undefined) throw new TypeError('mcpx: mcpx-cors requires opts.policy (an OriginPolicy)')
  createOriginCheck(opts.policy) // fail fast on a bad policy, at registration
  const policy = opts.policy
  // A host app that registered @fastify/cors at its root already answers CORS for every route,
  // /mcp included; registering it again in a child scope fails (FST_ERR_DEC_ALREADY_PRESENT).
  // mcpx then defers CORS to the host; its Origin policy (mcpx-origin) still applies first.
  if (fastify.hasRequestDecorator('corsPreflightEnabled')) {
    fastify.log.debug('mcpx-cors: the host app registered @fastify/cors; deferring CORS to it')
    return
  }
  await fastify.register(cors, {
    origin: function corsOrigin (origin, cb) { cb(null, isOriginAllowed(origin, policy)) },
    // Joined once here: @fastify/cors joins an array on every response (Array.prototype.join,
    // ~0.5 µs per /mcp request under load, perf); a string it sends as it is. The same header values.
    methods: CORS_METHODS.join(', '),
    exposedHeaders: CORS_EXPOSED_HEADERS.join(', '),
    strictPreflight: false
  })
}, { name: 'mcpx-cors', fastify: '5.x', dependencies: ['mcpx-origin'] })
