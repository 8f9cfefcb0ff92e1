/**
 * Tracing (docs/operating.md › Tracing; lib/telemetry/trace.ts). In-process mcpx with the SDK's
 * InMemorySpanExporter for the span contents, real upstreams (the fixture over HTTP and over
 * stdio) recording the traceparent they received, and a spawned `mcpx serve` exporting by OTLP to
 * a collector the test runs, turned on by OTEL_* variables alone.
 *
 * The first test runs before tracing is started in this process: off means no span and nothing
 * propagated.
 */
import t, { type Test } from 'tap'
import { createServer, type IncomingMessage } from 'node:http'
import { once } from 'node:events'
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-node'
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import { activeTracing, sessionHash, startTracing, stopTracing } from '../../lib/telemetry/trace.js'
import { listen, fixtureUpstreams, modernHeaders, modernMeta } from '../helpers/app.js'
import { startHttpFixture } from '../helpers/fixture.js'
import { modernBody, post } from '../helpers/modern-wire.js'
import { callBody, fetchSession, post as legacyPost, sessionHeaders, pollUntil } from '../helpers/legacy.js'
import { spawnServe } from '../helpers/spawn.js'

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const CLIENT_SPAN = '00f067aa0ba902b7'
const TRACEPARENT = `00-${TRACE_ID}-${CLIENT_SPAN}-01`
const exporter = new InMemorySpanExporter()

/** The HTTP fixture's `headers` reply: content[1] is the headers it received. */
function receivedHeaders (reply: any): Record<string, string> {
  return JSON.parse(reply.result.content[1].text)
}

/** mcpx on a fixture stdio upstream, once that upstream is ready (its start is bounded under load). */
async function withStdioUpstream (t: Test): Promise<string> {
  const { base, app } = await listen(t, { upstreams: fixtureUpstreams() })
  await pollUntil('the fixture upstream to be ready', () => app.upstreams.status().every(s => s.state === 'ready'), 30_000)
  return base
}

function spansNamed (name: string, kind: SpanKind): ReadableSpan[] {
  return exporter.getFinishedSpans().filter(s => s.name === name && s.kind === kind)
}

t.test('trace/off/no-span-and-nothing-propagated', async t => {
  t.equal(activeTracing(), undefined, 'off unless started')
  const { url } = await startHttpFixture(t)
  const { base } = await listen(t, { upstreams: { web: { url } } })
  const reply = await post(base, modernBody(1, 'tools/call', { name: 'headers', arguments: {} }), modernHeaders('tools/call', 'headers', { traceparent: TRACEPARENT }))
  t.equal(reply.status, 200)
  t.equal(receivedHeaders(reply.json).traceparent, undefined, 'the upstream got no traceparent: the client\'s is not forwarded')
  t.same(exporter.getFinishedSpans(), [])
})

t.test('trace/http/one-trace-from-the-client-through-mcpx-into-an-http-upstream', async t => {
  await startTracing({ exporter })
  t.teardown(() => exporter.reset())
  const { url } = await startHttpFixture(t)
  const { base } = await listen(t, { upstreams: { web: { url } } })
  const reply = await post(base, modernBody(7, 'tools/call', { name: 'headers', arguments: { region: 'eu' } }), modernHeaders('tools/call', 'headers', { traceparent: TRACEPARENT, 'mcp-param-region': 'eu' }))
  t.equal(reply.status, 200)
  const upstreamSaw = receivedHeaders(reply.json).traceparent
  t.match(upstreamSaw, new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`), 'the HTTP upstream got the same trace id in its traceparent header')
  const [server] = await pollUntil('the request span', () => { const s = spansNamed('tools/call headers', SpanKind.SERVER); return s.length > 0 ? s : false })
  const [client] = spansNamed('tools/call headers', SpanKind.CLIENT)
  t.ok(client, 'a CLIENT span for the upstream call')
  t.equal(server.spanContext().traceId, TRACE_ID, 'the request span continues the client\'s trace')
  t.equal(server.parentSpanContext?.spanId, CLIENT_SPAN, 'its parent is the client\'s span (traceparent header)')
  t.equal(client.spanContext().traceId, TRACE_ID)
  t.equal(client.parentSpanContext?.spanId, server.spanContext().spanId, 'the upstream call is a child of the request span')
  t.equal(upstreamSaw, `00-${TRACE_ID}-${client.spanContext().spanId}-01`, 'the upstream\'s parent is the CLIENT span')
  t.match(server.attributes, {
    'mcp.method.name': 'tools/call',
    'gen_ai.tool.name': 'headers',
    'gen_ai.operation.name': 'execute_tool',
    'jsonrpc.request.id': '7',
    'jsonrpc.protocol.version': '2.0',
    'mcp.protocol.version': '2026-07-28',
    'mcpx.era': 'modern',
    'mcpx.upstream': 'web',
    'mcpx.outcome': 'ok',
    'network.transport': 'tcp',
    'network.protocol.name': 'http'
  })
  t.match(client.attributes, { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'headers', 'mcpx.upstream': 'web', 'mcpx.outcome': 'ok', 'network.transport': 'tcp' })
  t.equal(server.status.code, SpanStatusCode.UNSET)
})

t.test('trace/stdio-upstream/meta-traceparent-in-and-out-session-hashed', async t => {
  t.teardown(() => exporter.reset())
  const base = await withStdioUpstream(t)
  const sid = await fetchSession(base, '2025-11-25')
  exporter.reset() // the initialize span is not this test's
  const otherParent = 'aaaaaaaaaaaaaaaa'
  const body = callBody('c1', 'headers', {})
  ;(body.params as Record<string, unknown>)._meta = { traceparent: `00-${TRACE_ID}-${otherParent}-01` }
  // `_meta.traceparent` wins over the header (the MCP semantic conventions' propagation).
  const res = await legacyPost(base, body, sessionHeaders(sid, '2025-11-25', { traceparent: TRACEPARENT }))
  const reply = await res.json() as any
  t.ok(reply.result, 'a result', { reply })
  const items = reply.result.content as Array<{ text: string }>
  const seen = JSON.parse(items[items.length - 1].text).metaTraceparent as string
  t.match(seen, new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`), 'the stdio upstream got the trace in params._meta.traceparent')
  const [server] = spansNamed('tools/call headers', SpanKind.SERVER)
  const [client] = spansNamed('tools/call headers', SpanKind.CLIENT)
  t.equal(server.parentSpanContext?.spanId, otherParent, 'parent from _meta.traceparent')
  t.equal(seen.split('-')[2], client.spanContext().spanId)
  t.match(server.attributes, { 'mcpx.era': 'legacy', 'mcp.protocol.version': '2025-11-25', 'jsonrpc.request.id': 'c1', 'mcpx.upstream': 'fixture' })
  t.equal(server.attributes['mcp.session.id'], sessionHash(sid), 'the session appears as a hash')
  t.not(server.attributes['mcp.session.id'], sid, 'never as its id')
  t.equal(client.attributes['network.transport'], 'pipe')
})

t.test('trace/outcome/errors-and-tool-errors-marked', async t => {
  t.teardown(() => exporter.reset())
  const base = await withStdioUpstream(t)
  const unknown = await post(base, modernBody(1, 'tools/call', { name: 'no_such_tool', arguments: {} }), modernHeaders('tools/call', 'no_such_tool'))
  const code = (unknown.json as any).error.code as number
  const [failed] = spansNamed('tools/call no_such_tool', SpanKind.SERVER)
  t.equal(failed.status.code, SpanStatusCode.ERROR)
  t.match(failed.attributes, { 'error.type': String(code), 'rpc.response.status_code': String(code), 'mcpx.outcome': 'error' })
  const failing = await post(base, modernBody(2, 'tools/call', { name: 'fail', arguments: {} }), modernHeaders('tools/call', 'fail'))
  t.equal((failing.json as any).result?.isError, true, 'the fixture\'s fail tool returns isError')
  const [toolError] = spansNamed('tools/call fail', SpanKind.SERVER)
  t.match(toolError.attributes, { 'error.type': 'tool_error', 'mcpx.outcome': 'tool_error' })
  const list = await post(base, modernBody(3, 'tools/list', {}, modernMeta()), modernHeaders('tools/list'))
  t.equal(list.status, 200)
  const [listed] = spansNamed('tools/list', SpanKind.SERVER)
  t.ok(listed, 'every request gets a span, not only calls')
  t.equal(listed.attributes['mcpx.outcome'], 'ok')
  t.equal(exporter.getFinishedSpans().filter(s => s.kind === SpanKind.CLIENT && s.name === 'tools/list').length, 0, 'tools/list is answered from the catalogue, no upstream call')
})

t.test('trace/stdio/spawned-serve-exports-by-otlp-when-otel-env-says-so', async t => {
  await stopTracing() // this process's tracing is not the child's
  const received: any[] = []
  const collector = createServer((req: IncomingMessage, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => { body += chunk.toString() })
    req.on('end', () => {
      if (req.url === '/v1/traces') { try { received.push(JSON.parse(body)) } catch { received.push({ unparsable: req.headers['content-type'] }) } }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  collector.listen(0, '127.0.0.1')
  await once(collector, 'listening')
  t.teardown(() => { collector.close() })
  const port = (collector.address() as { port: number }).port
  const serve = spawnServe(t, {
    config: { upstreams: fixtureUpstreams() },
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_SERVICE_NAME: 'mcpx-under-test' }
  })
  const init = await serve.request({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } })
  t.ok(init.result, 'initialized')
  serve.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
  const reply = await serve.request({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'headers', arguments: {}, _meta: { traceparent: TRACEPARENT } } })
  const items = reply.result.content as Array<{ text: string }>
  t.match(JSON.parse(items[items.length - 1].text).metaTraceparent, new RegExp(`^00-${TRACE_ID}-`), 'propagated to the stdio upstream')
  const spans = await pollUntil('the spans at the collector', () => {
    const all = received.flatMap(r => (r.resourceSpans ?? []).flatMap((rs: any) => (rs.scopeSpans ?? []).flatMap((ss: any) => (ss.spans ?? []).map((s: any) => ({ ...s, resource: rs.resource })))))
    const ours = all.filter((s: any) => s.name === 'tools/call headers')
    return ours.length >= 2 ? ours : false
  }, 20_000)
  const traceIds = new Set(spans.map((s: any) => String(s.traceId).toLowerCase()))
  t.same([...traceIds], [TRACE_ID], 'both spans in the client\'s trace')
  const server = spans.find((s: any) => s.kind === 2) // SPAN_KIND_SERVER
  t.equal(server?.parentSpanId, CLIENT_SPAN, 'the request span\'s parent is the client\'s')
  const attrs = Object.fromEntries((server?.attributes ?? []).map((a: any) => [a.key, a.value.stringValue]))
  t.match(attrs, { 'mcp.method.name': 'tools/call', 'network.transport': 'pipe', 'mcpx.era': 'legacy' })
  const service = server?.resource?.attributes?.find((a: any) => a.key === 'service.name')?.value?.stringValue
  t.equal(service, 'mcpx-under-test', 'OTEL_SERVICE_NAME names the service')
  t.ok(serve.lines.every(line => { try { JSON.parse(line); return true } catch { return false } }), 'stdout carries only MCP frames')
})
