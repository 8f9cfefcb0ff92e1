/**
 * GET /status (HTML for people) and GET /status.json (the same report for machines), docs:
 * The status page. Thin: the guard comes from the daemon (a local client or an admin credential, lib/ops/access.ts; refusals
 * from lib/protocol/http-status.ts), the report from lib/ops/status-model.ts, the HTML and its headers (strict CSP)
 * from lib/ops/status-page.ts.
 */
import type { FastifyPluginAsync, onRequestHookHandler } from 'fastify'
import { renderStatusPage, STATUS_PAGE_HEADERS } from '../../lib/ops/status-page.js'
import type { StatusReport } from '../../lib/ops/status-model.js'

/** Options of the status routes. */
export interface StatusRouteOptions {
  /** Builds the report now (lib/ops/status-model.ts collectStatus over the daemon's state). */
  collect: () => StatusReport
  /** Who may read it (the daemon's operator guard: a local client or an admin credential). */
  guard: onRequestHookHandler
}

/** Headers of /status.json: never cached, never sniffed as anything but JSON. */
const JSON_HEADERS = Object.freeze({ 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' })

const statusRoutes: FastifyPluginAsync<StatusRouteOptions> = async function statusRoutes (fastify, opts) {
  const route = { logLevel: 'warn' as const, onRequest: opts.guard }
  fastify.get('/status', route, async function statusPage (_request, reply) {
    return await reply.headers(STATUS_PAGE_HEADERS).send(renderStatusPage(opts.collect()))
  })
  fastify.get('/status.json', route, async function statusJson (_request, reply) {
    return await reply.headers(JSON_HEADERS).send(opts.collect())
  })
}

export default statusRoutes
