/**
 * POST /mcp: adapts Fastify's request and reply to lib/http/exchange's PostChannel and serves
 * the message in the era mcpx-era decided. Hooks ahead of it (origin, auth, era, modern headers,
 * legacy sessions) have already answered everything they refuse.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { HttpExchange, type PostChannel } from '../../lib/http/exchange.js'
import { SseStream } from '../../lib/http/sse.js'
import type { FlowPolicy } from '../../lib/connection/flow.js'
import { bindingKeyOf } from '../../lib/auth/principal.js'
import { readAccept } from '../../lib/protocol/accept.js'
import { httpTraceIn } from '../../lib/telemetry/trace.js'
import { isLegacyRevision } from '../../lib/protocol/revisions.js'
import type { Visibility } from '../../lib/policy/visibility.js'
import type { McpRouteDeps } from './options.js'

/**
 * The PostChannel of one Fastify request/reply pair: a class, so a POST allocates one object and no
 * closures for its methods (none per request).
 */
class FastifyChannel implements PostChannel {
  readonly endpoint?: string
  readonly principal?: string
  readonly caller?: unknown
  readonly acceptsSse: boolean
  readonly acceptsJson: boolean
  readonly traceIn: PostChannel['traceIn']
  readonly view?: Visibility

  constructor (private readonly request: FastifyRequest, private readonly reply: FastifyReply, private readonly keepAliveMs: number, private readonly flow: FlowPolicy) {
    // lib/protocol/accept: no Accept, or a wildcard, admits JSON; `Accept: text/event-stream` alone does not, and
    // only a client that names text/event-stream (q > 0) is answered with a stream (seed › Streamable
    // HTTP, 2026-07-28: responses are JSON or SSE as Accept allows).
    const accept = request.mcpAccept ?? readAccept(request.headers.accept) // mcpx-era's verdict; read here only without mcpx-era
    const caller = request.mcpPrincipal // made once by mcpx-auth
    const endpoint = request.mcpEndpoint // a curated endpoint's name (mcpx-era), or undefined for /mcp
    const bindingKey = bindingKeyOf(caller, request.headers.authorization, endpoint) // the principal's key, or the header's hash without auth; bound to the endpoint
    if (endpoint !== undefined) this.endpoint = endpoint
    if (bindingKey !== undefined) this.principal = bindingKey
    if (caller !== null) this.caller = caller
    const view = request.mcpView // the caller's view, when mcpx-modern-headers worked it out (2026-07-28 tools/call)
    if (view !== null) this.view = view
    this.acceptsSse = accept.sse
    this.acceptsJson = accept.json
    this.traceIn = httpTraceIn(request.headers) // undefined unless tracing is on (lib/telemetry/trace.ts)
  }

  json (status: number, body: string | undefined, headers?: Record<string, string>): void {
    const reply = this.reply
    if (reply.sent) return
    if (headers !== undefined) reply.headers(headers)
    reply.code(status)
    if (body === undefined) { reply.send(); return }
    reply.type('application/json').send(body)
  }

  sse (headers?: Record<string, string>, kind: 'reply' | 'listen' = 'reply'): SseStream {
    const reply = this.reply
    reply.hijack()
    return new SseStream(reply.raw, {
      keepAliveMs: this.keepAliveMs,
      headers: { ...(reply.getHeaders() as Record<string, string>), ...headers },
      flow: { ...this.flow, logger: this.request.log }, // the stream's one warn line carries its reqId
      kind
    })
  }

  onDisconnect (fn: () => void): void {
    const raw = this.reply.raw
    raw.on('close', () => { if (!raw.writableFinished) fn() })
  }
}

const postRoute: FastifyPluginAsync<McpRouteDeps> = async function (fastify, opts) {
  const exchange = new HttpExchange({
    dispatcher: fastify.mcp.dispatcher,
    hub: fastify.mcp.hub,
    sessions: fastify.sessions,
    logger: fastify.log,
    keepAliveMs: opts.keepAliveMs,
    maxRequestsPerSession: opts.maxRequestsPerSession,
    maxBatchInFlight: opts.maxBatchInFlight,
    requestSlots: opts.requestSlots,
    streamSlots: opts.streamSlots
  })
  // `/` is <prefix>/mcp; `/:server` a curated endpoint, under the same hooks (unknown names: 404 in routes/mcp).
  const handler = async function postMcp (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    // mcpx-era classified the body (and answered an unreadable one); mcpx-modern-headers refused a modern batch.
    const inbound = request.mcp
    if (inbound === null || (inbound.kind !== 'message' && inbound.kind !== 'batch')) return reply
    const channel = new FastifyChannel(request, reply, opts.keepAliveMs, opts.flow)
    if (inbound.era === 'modern' && inbound.kind === 'message') {
      await exchange.serveModern(inbound, channel)
    } else {
      const version = inbound.headerRevision
      await exchange.serveLegacy(inbound, {
        session: request.mcpSession ?? undefined,
        headerRevision: version !== undefined && isLegacyRevision(version) ? version : undefined
      }, channel)
    }
    return reply
  }
  fastify.post('/', handler)
  fastify.post('/:server', handler)
}

export default postRoute
