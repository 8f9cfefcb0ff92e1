/**
 * mcpx-request-log: one structured log line and one metrics sample per /mcp request
 * (issue #7 › Operability › Structured logs). The line is written at `info` through the host's
 * logger (`request.log`, so it carries Fastify's `reqId`) with:
 * `method` (HTTP), `rpcMethod` (JSON-RPC; `batch` for a batch, `response` for a client's answer),
 * `era`, `revision`, `upstream` (tools/call and prompts/get, where the name tells it), `status`,
 * `durationMs`, `remoteAddress` (the client: the socket's peer, or, behind a proxy listed in the
 * daemon's `daemon.trustProxy`, the address X-Forwarded-For names). Headers are never logged here; the daemon's logger also redacts `authorization`
 * and `cookie` wherever a line carries headers (lib/log REDACTED_PATHS).
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
import { isObject, type Parsed } from '../lib/jsonrpc.js'
import { upstreamOf, type McpxMetrics } from '../lib/metrics.js'
import type { UpstreamRegistry } from '../lib/upstreams/types.js'

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
  /** Used to tell the upstream a tool or prompt name routes to. */
  upstreams: UpstreamRegistry
}

/** Status logged for a request whose client closed the connection first. */
export const CLIENT_CLOSED_STATUS = 499

interface RpcFacts { rpcMethod: string, name: string | undefined, bodyRevision: string | undefined }

/** The JSON-RPC facts of a parsed /mcp body. Never throws. */
function rpcFacts (body: unknown): RpcFacts {
  const parsed = body as Parsed | undefined
  if (parsed === undefined || parsed === null || typeof parsed !== 'object' || !('ok' in parsed) || !parsed.ok) return { rpcMethod: '', name: undefined, bodyRevision: undefined }
  if (parsed.batch) return { rpcMethod: 'batch', name: undefined, bodyRevision: undefined }
  const message = parsed.value
  if (!isObject(message)) return { rpcMethod: '', name: undefined, bodyRevision: undefined }
  if (typeof message.method !== 'string') return { rpcMethod: 'id' in message ? 'response' : '', name: undefined, bodyRevision: undefined }
  const params = isObject(message.params) ? message.params : undefined
  const name = typeof params?.name === 'string' ? params.name : undefined
  const meta = isObject(params?._meta) ? params._meta : undefined
  const revision = message.method === 'initialize' && typeof params?.protocolVersion === 'string'
    ? params.protocolVersion
    : typeof meta?.['io.modelcontextprotocol/protocolVersion'] === 'string' ? meta['io.modelcontextprotocol/protocolVersion'] as string : undefined
  return { rpcMethod: message.method, name, bodyRevision: revision }
}

export default fp<RequestLogOptions>(async function mcpxRequestLog (fastify, opts) {
  const { metrics, upstreams } = opts
  fastify.decorateRequest('mcpxStartMs', 0)
  fastify.decorateRequest('mcpxLogged', false)

  function record (request: FastifyRequest, status: number, durationMs: number, aborted: boolean): void {
    if (request.mcpxLogged) return
    request.mcpxLogged = true
    const facts = rpcFacts(request.body)
    const era = request.mcpEra ?? ''
    const revision = request.mcpSession?.revision ?? request.mcpProtocolVersion ?? facts.bodyRevision
    const upstream = facts.rpcMethod === 'tools/call' || facts.rpcMethod === 'prompts/get' ? upstreamOf(upstreams, facts.name) : undefined
    metrics.requestDone({ httpMethod: request.method, rpcMethod: facts.rpcMethod, era, status, durationMs })
    request.log.info({
      method: request.method,
      rpcMethod: facts.rpcMethod === '' ? undefined : facts.rpcMethod,
      era: era === '' ? undefined : era,
      revision: revision ?? undefined,
      upstream,
      status,
      durationMs: Math.round(durationMs * 1000) / 1000,
      aborted: aborted ? true : undefined,
      remoteAddress: request.ip
    }, 'mcp request')
  }

  // README › Operability: a request whose client went away first is logged and counted with
  // status 499 and `aborted: true`. Fastify's onRequestAbort only fires while the body is still
  // arriving (it tests `req.aborted`), and onResponse only on 'finish', so a POST whose client
  // left during the upstream call (an abandoned JSON reply, or a hijacked SSE stream) produced
  // neither. 'close' on the raw response without `writableFinished` covers every such case.
  fastify.addHook('onRequest', async function markStart (request, reply) {
    request.mcpxStartMs = performance.now()
    reply.raw.once('close', function logIfAborted () {
      if (!reply.raw.writableFinished) record(request, CLIENT_CLOSED_STATUS, performance.now() - request.mcpxStartMs, true)
    })
  })
  fastify.addHook('onResponse', async function logMcpRequest (request, reply) {
    record(request, reply.statusCode, reply.elapsedTime, false)
  })
}, { name: 'mcpx-request-log', fastify: '5.x' })
