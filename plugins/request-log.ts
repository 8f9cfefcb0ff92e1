/**
 * mcpx-request-log: one structured log line and one metrics sample per /mcp request
 * (docs/operating.md › Logs). The line is written at `info` through the host's
 * logger (`request.log`, so it carries Fastify's `reqId`) with:
 * `method` (HTTP), `rpcMethod` (JSON-RPC; `batch` for a batch, `response` for a client's answer),
 * `era`, `revision`, `upstream` (tools/call and prompts/get, where the name tells it), `status`,
 * `durationMs`, `remoteAddress` (the client: the socket's peer, or, behind a proxy listed in the
 * daemon's `daemon.trustProxy`, the address X-Forwarded-For names). Headers are never logged here; the daemon's logger also redacts `authorization`
 * and `cookie` wherever a line carries headers (lib/telemetry/log REDACTED_PATHS).
 *
 * A request whose client went away before the response completed (an SSE stream the client
 * closed, a cancelled call) is logged with `aborted: true` and status 499 (nginx's "client closed
 * request"), since no status was completed.
 *
 * Register it FIRST in mcpx's scope, so requests the origin, auth or era checks refuse are
 * logged too.
 */
import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { eraOfInbound } from '../lib/protocol/inbound.js'
import { upstreamOf, type McpxMetrics } from '../lib/ops/metrics.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** performance.now() when the /mcp request arrived, ms (for aborted requests). */
    mcpxStartMs: number
    /** True once this request's log line and metrics sample were written (exactly one per request). */
    mcpxLogged: boolean
  }
}

export interface RequestLogOptions {
  metrics: McpxMetrics
}

/** Status logged for a request whose client closed the connection first. */
export const CLIENT_CLOSED_STATUS = 499


export default fp<RequestLogOptions>(async function mcpxRequestLog (fastify, opts) {
  const { metrics } = opts
  fastify.decorateRequest('mcpxStartMs', 0)
  fastify.decorateRequest('mcpxLogged', false)

  function record (request: FastifyRequest, status: number, durationMs: number, aborted: boolean): void {
    if (request.mcpxLogged) return
    request.mcpxLogged = true
    // The facts mcpx-era classified once (lib/protocol/inbound); null when the request was refused before it ran.
    const inbound = request.mcp
    const message = inbound?.kind === 'message' ? inbound : undefined
    const rpcMethod = inbound?.kind === 'batch' ? 'batch' : message?.logMethod ?? ''
    const era = eraOfInbound(inbound) ?? ''
    const revision = request.mcpSession?.revision ?? inbound?.headerRevision ?? message?.logRevision
    // The scope's one registry, decorated by mcpx-upstreams (registered after this plugin, ready before any request).
    const upstream = rpcMethod === 'tools/call' || rpcMethod === 'prompts/get' ? upstreamOf(fastify.mcp.registry, rpcMethod === 'tools/call' ? 'tool' : 'prompt', message?.name) : undefined
    metrics.requestDone({ httpMethod: request.method, rpcMethod, era, status, durationMs })
    request.log.info({
      method: request.method,
      rpcMethod: rpcMethod === '' ? undefined : rpcMethod,
      era: era === '' ? undefined : era,
      revision: revision ?? undefined,
      upstream,
      status,
      durationMs: Math.round(durationMs * 1000) / 1000,
      aborted: aborted ? true : undefined,
      remoteAddress: request.ip
    }, 'mcp request')
  }

  // docs/operating.md › Logs: a request whose client went away first is logged and counted with
  // status 499 and `aborted: true`. Fastify's onRequestAbort only fires while the body is still
  // arriving (it tests `req.aborted`), and onResponse only on 'finish', so a POST whose client
  // left during the upstream call (an abandoned JSON reply, or a hijacked SSE stream) produced
  // neither. 'close' on the raw response without `writableFinished` covers every such case.
  // Both hooks are callback style: no promise and no microtask per request.
  fastify.addHook('onRequest', function markStart (request, reply, done) {
    request.mcpxStartMs = performance.now()
    // `on`, not `once`: a response emits 'close' once, and once() would wrap the listener (two more objects per request).
    reply.raw.on('close', function logIfAborted () {
      if (!reply.raw.writableFinished) record(request, CLIENT_CLOSED_STATUS, performance.now() - request.mcpxStartMs, true)
    })
    done()
  })
  fastify.addHook('onResponse', function logMcpRequest (request, reply, done) {
    record(request, reply.statusCode, reply.elapsedTime, false)
    done()
  })
}, { name: 'mcpx-request-log', fastify: '5.x' })
