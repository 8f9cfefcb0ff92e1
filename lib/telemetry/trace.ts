/**
 * Tracing (docs/operating.md › Tracing): OpenTelemetry spans through `@opentelemetry/api` and the
 * Node SDK, off by default and free when off.
 *
 * Off: nothing of OpenTelemetry is loaded. The request path asks {@link activeTracing} (a module
 * variable read) and, when it is undefined, takes its usual path; an upstream call checks one
 * optional field of its options. That is the whole cost (bench/run.ts `tracing off` row).
 *
 * On: {@link startTracing} loads the SDK with dynamic imports, registers a NodeTracerProvider
 * (W3C trace-context propagator) and exports by OTLP over HTTP (`@opentelemetry/exporter-trace-otlp-http`,
 * which reads the standard OTEL_EXPORTER_OTLP_* variables itself: endpoint, headers, timeout,
 * protocol http/json). The CLI starts it when {@link tracingWantedByEnv} says so:
 *   - `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`: off;
 *   - `OTEL_TRACES_EXPORTER=otlp`, or `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` set: on.
 * Another exporter name is refused with a clear error (stdout belongs to MCP in stdio mode, so no
 * console exporter). Resource: `service.name` from OTEL_SERVICE_NAME (default `mcpx`) and
 * OTEL_RESOURCE_ATTRIBUTES; batching from OTEL_BSP_* (the SDK reads them).
 *
 * Spans (OpenTelemetry semantic conventions for MCP, gen-ai/mcp.md, status Development; JSON-RPC
 * and RPC attributes where MCP has none):
 *   - one SERVER span per JSON-RPC request mcpx answers, on /mcp and on stdio (lib/dispatch/dispatcher.ts
 *     Dispatcher.handle, which both faces pass through), named `{mcp.method.name} {target}` with the
 *     tool or prompt name as target;
 *   - one CLIENT child span per upstream call (lib/upstreams/link.ts), same naming.
 * Attributes: `mcp.method.name`, `jsonrpc.request.id`, `jsonrpc.protocol.version`,
 * `mcp.protocol.version`, `gen_ai.tool.name` / `gen_ai.prompt.name` / `mcp.resource.uri`,
 * `gen_ai.operation.name` (`execute_tool`), `network.transport` (`tcp` or `pipe`),
 * `network.protocol.name` (`http`), `mcp.session.id` (NOT the id: the first 16 hex digits of its
 * SHA-256, since a session id is a credential), `rpc.response.status_code` and `error.type` (the
 * JSON-RPC error code, or `tool_error` for a tool result with isError), and mcpx's own:
 * `mcpx.era` (legacy|modern), `mcpx.upstream`, `mcpx.outcome` (ok|error|tool_error|input_required).
 *
 * Context: the parent is `params._meta.traceparent`/`tracestate` of the request (the semantic
 * conventions' MCP propagation), else the HTTP `traceparent`/`tracestate` headers. The child
 * span's context goes upstream as `traceparent`/`tracestate` HTTP headers (HTTP upstreams) or in
 * `params._meta` (stdio upstreams).
 */
import { createHash } from 'node:crypto'
import type { Span, Tracer, Context, PropagationAPI } from '@opentelemetry/api'
import { McpxError } from '../base/errors.js'
import type { JsonRpcRequest, JsonRpcResponse } from '../protocol/jsonrpc.js'
import type { Logger } from './log.js'
import type { Era } from '../protocol/revisions.js'
import { SERVER_VERSION } from '../base/version.js'

/** What a face knows of a request's trace context before the dispatcher sees it (set only when tracing is on). */
export interface TraceIn {
  /** `http` (/mcp) or `stdio` (`mcpx serve`). */
  transport: 'http' | 'stdio'
  /** The HTTP `traceparent` header (W3C Trace Context), if any. */
  traceparent?: string
  /** The HTTP `tracestate` header, if any. */
  tracestate?: string
  /** The legacy session the request belongs to (hashed before it becomes an attribute). */
  sessionId?: string
}

/** A request's live span (opaque to callers); upstream calls become its children. */
export interface RequestTrace {
  readonly span: Span
  readonly context: Context
}

/** An upstream call's live span, and the headers/_meta that carry it upstream. */
export interface UpstreamTrace {
  /** `traceparent` and, when there is one, `tracestate`. */
  readonly carrier: Record<string, string>
  /** Records the JSON-RPC id the call went out with upstream. */
  setId: (id: string | number) => void
  /** Ends the span with the call's result (a tool result with isError is an error). */
  ok: (result: unknown) => void
  /** Ends the span with the call's failure (an Error with a JSON-RPC `code`, or anything). */
  fail: (err: unknown) => void
}

/** The loaded API, once tracing is on. */
interface Loaded {
  api: typeof import('@opentelemetry/api')
  tracer: Tracer
  propagator: PropagationAPI
  shutdown: () => Promise<void>
}

let loaded: Loaded | undefined
let tracing: Tracing | undefined

/** The active tracing, or undefined when off (the request path's only question). */
export function activeTracing (): Tracing | undefined { return tracing }

/**
 * Whether the environment asks for tracing (see the module comment).
 * @throws McpxError MCPX_ERR_CONFIG for an OTEL_TRACES_EXPORTER other than otlp or none
 */
export function tracingWantedByEnv (env: NodeJS.ProcessEnv = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map(s => s.trim().toLowerCase()).filter(s => s !== '')
  if (exporters.includes('none')) return false
  const unsupported = exporters.filter(e => e !== 'otlp')
  if (unsupported.length > 0) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: OTEL_TRACES_EXPORTER=${env.OTEL_TRACES_EXPORTER ?? ''}: mcpx exports traces by OTLP only (otlp or none)`)
  if (exporters.includes('otlp')) return true
  return (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '') !== '' || (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? '') !== ''
}

/** Options of {@link startTracing}. */
export interface StartTracingOptions {
  /** Export here instead of OTLP, span by span (tests: the SDK's InMemorySpanExporter). */
  exporter?: import('@opentelemetry/sdk-trace-node').SpanExporter
  logger?: Logger
}

/**
 * Loads the SDK and turns tracing on for this process (idempotent: a second call keeps the first).
 * Registers the provider globally, so a host app's own instrumentation shares it.
 */
export async function startTracing (options: StartTracingOptions = {}): Promise<void> {
  if (tracing !== undefined) return
  const api = await import('@opentelemetry/api')
  const sdk = await import('@opentelemetry/sdk-trace-node')
  const { resourceFromAttributes, detectResources, envDetector } = await import('@opentelemetry/resources')
  let processor
  if (options.exporter !== undefined) {
    processor = new sdk.SimpleSpanProcessor(options.exporter)
  } else {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http')
    processor = new sdk.BatchSpanProcessor(new OTLPTraceExporter())
  }
  // OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES win over mcpx's defaults.
  const resource = resourceFromAttributes({ 'service.name': 'mcpx', 'service.version': SERVER_VERSION }).merge(detectResources({ detectors: [envDetector] }))
  const provider = new sdk.NodeTracerProvider({ resource, spanProcessors: [processor] })
  provider.register()
  // Through the global propagation API: the W3C propagator register() installed.
  loaded = { api, tracer: api.trace.getTracer('mcpx', SERVER_VERSION), propagator: api.propagation, shutdown: async () => { await provider.shutdown() } }
  tracing = new Tracing(loaded)
  options.logger?.info({ exporter: options.exporter !== undefined ? 'custom' : 'otlp' }, 'tracing on (OpenTelemetry)')
}

/**
 * The {@link TraceIn} of an HTTP request: its `traceparent`/`tracestate` headers. Undefined when
 * tracing is off, so a face sets nothing.
 */
export function httpTraceIn (headers: Readonly<Record<string, string | string[] | undefined>>): TraceIn | undefined {
  if (tracing === undefined) return undefined
  const traceparent = headers.traceparent
  const tracestate = headers.tracestate
  return {
    transport: 'http',
    ...(typeof traceparent === 'string' ? { traceparent } : {}),
    ...(typeof tracestate === 'string' ? { tracestate } : {})
  }
}

/** Flushes and stops tracing (shutdown; tests). Never throws. */
export async function stopTracing (): Promise<void> {
  const current = loaded
  tracing = undefined
  loaded = undefined
  if (current === undefined) return
  try { await current.shutdown() } catch {}
  current.api.trace.disable()
  current.api.propagation.disable()
  current.api.context.disable()
}

/** Methods whose `name` param names a tool (gen_ai.tool.name) or a prompt (gen_ai.prompt.name). */
const NAME_ATTRIBUTE: Readonly<Record<string, string>> = { 'tools/call': 'gen_ai.tool.name', 'prompts/get': 'gen_ai.prompt.name' }

/** The first 16 hex digits of SHA-256(session id): correlates a session's spans without exposing its id. */
export function sessionHash (sessionId: string): string {
  return createHash('sha256').update(sessionId).digest('hex').slice(0, 16)
}

function targetAttributes (method: string, params: Record<string, unknown> | undefined, attributes: Record<string, string>): string {
  const nameKey = NAME_ATTRIBUTE[method]
  const name = params?.name
  if (method === 'tools/call') attributes['gen_ai.operation.name'] = 'execute_tool'
  if (nameKey !== undefined && typeof name === 'string') {
    attributes[nameKey] = name
    return `${method} ${name}`
  }
  if (typeof params?.uri === 'string' && method.startsWith('resources/')) attributes['mcp.resource.uri'] = params.uri
  return method
}

/** `error.type`, status and outcome of a finished request or call. */
function finish (span: Span, api: typeof import('@opentelemetry/api'), code: number | undefined, message: string | undefined, result: unknown): void {
  let outcome = 'ok'
  if (code !== undefined) {
    outcome = 'error'
    span.setAttribute('rpc.response.status_code', String(code))
    span.setAttribute('error.type', String(code))
    span.setStatus({ code: api.SpanStatusCode.ERROR, ...(message !== undefined ? { message } : {}) })
  } else if (result !== null && typeof result === 'object') {
    const r = result as Record<string, unknown>
    if (r.isError === true) {
      outcome = 'tool_error'
      span.setAttribute('error.type', 'tool_error')
      span.setStatus({ code: api.SpanStatusCode.ERROR })
    } else if (r.resultType === 'input_required') {
      outcome = 'input_required'
    }
  }
  span.setAttribute('mcpx.outcome', outcome)
  span.end()
}

/** The tracing seam, once on. Its methods never throw into the request path. */
export class Tracing {
  constructor (private readonly otel: Loaded) {}

  /**
   * Runs `answer` under a SERVER span for `request` and ends the span with its response.
   * @param era the era it is served in; `revision` the MCP protocol version
   * @param setTrace hands the live span to the dispatch context (its upstream calls are children)
   */
  async request (request: JsonRpcRequest, era: Era, revision: string, traceIn: TraceIn | undefined, setTrace: (trace: RequestTrace) => void, answer: () => Promise<JsonRpcResponse>): Promise<JsonRpcResponse> {
    const { api, tracer, propagator } = this.otel
    const params = request.params
    const meta = params !== undefined && typeof params._meta === 'object' && params._meta !== null ? params._meta as Record<string, unknown> : undefined
    const carrier: Record<string, string> = {}
    if (typeof meta?.traceparent === 'string') {
      carrier.traceparent = meta.traceparent
      if (typeof meta.tracestate === 'string') carrier.tracestate = meta.tracestate
    } else if (traceIn?.traceparent !== undefined) {
      carrier.traceparent = traceIn.traceparent
      if (traceIn.tracestate !== undefined) carrier.tracestate = traceIn.tracestate
    }
    const parent = carrier.traceparent !== undefined ? propagator.extract(api.ROOT_CONTEXT, carrier, api.defaultTextMapGetter) : api.ROOT_CONTEXT
    const attributes: Record<string, string> = {
      'mcp.method.name': request.method,
      'jsonrpc.request.id': String(request.id),
      'jsonrpc.protocol.version': '2.0',
      'mcp.protocol.version': revision,
      'mcpx.era': era,
      'network.transport': traceIn?.transport === 'stdio' ? 'pipe' : 'tcp'
    }
    if (traceIn?.transport !== 'stdio') attributes['network.protocol.name'] = 'http'
    if (traceIn?.sessionId !== undefined) attributes['mcp.session.id'] = sessionHash(traceIn.sessionId)
    const name = targetAttributes(request.method, params, attributes)
    const span = tracer.startSpan(name, { kind: api.SpanKind.SERVER, attributes }, parent)
    setTrace({ span, context: api.trace.setSpan(parent, span) })
    const response = await answer()
    const error = 'error' in response ? response.error : undefined
    finish(span, api, error?.code, error?.message, 'result' in response ? response.result : undefined)
    return response
  }

  /**
   * Starts the CLIENT span of one upstream call under `parent`, and marks the request span with
   * the upstream's name. Returns the carrier to send upstream and the span's end.
   * @param transport 'pipe' (stdio upstream) or 'tcp' (HTTP upstream)
   */
  upstream (parent: RequestTrace, upstream: string, method: string, params: Record<string, unknown>, transport: 'pipe' | 'tcp', era: Era | undefined): UpstreamTrace {
    const { api, tracer, propagator } = this.otel
    const attributes: Record<string, string> = { 'mcp.method.name': method, 'mcpx.upstream': upstream, 'jsonrpc.protocol.version': '2.0', 'network.transport': transport }
    if (transport === 'tcp') attributes['network.protocol.name'] = 'http'
    if (era !== undefined) attributes['mcpx.era'] = era
    const name = targetAttributes(method, params, attributes)
    parent.span.setAttribute('mcpx.upstream', upstream)
    const span = tracer.startSpan(name, { kind: api.SpanKind.CLIENT, attributes }, parent.context)
    const carrier: Record<string, string> = {}
    propagator.inject(api.trace.setSpan(parent.context, span), carrier, api.defaultTextMapSetter)
    return {
      carrier,
      setId: (id: string | number) => { span.setAttribute('jsonrpc.request.id', String(id)) },
      ok: (result: unknown) => { finish(span, api, undefined, undefined, result) },
      fail: (err: unknown) => {
        const code = typeof (err as { code?: unknown })?.code === 'number' ? (err as { code: number }).code : -32603
        finish(span, api, code, err instanceof Error ? err.message : undefined, undefined)
      }
    }
  }
}
