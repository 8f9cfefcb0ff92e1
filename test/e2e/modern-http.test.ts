/**
 * The 2026-07-28 Streamable HTTP face end to end: a real listening mcpx, real fixture upstream
 * processes, real sockets (seed › Streamable HTTP, 2026-07-28). What needs a socket
 * lives here: the disconnect that cancels the upstream call, subscriptions/listen streams,
 * cross-era upstreams, the Mcp-Param-* headers mcpx sends to a modern HTTP upstream, and the
 * official v2 client (`@modelcontextprotocol/client` 2.4.0) talking to mcpx.
 */
import t, { type Test } from 'tap'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, existsSync, rmSync, watch } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyInstance } from 'fastify'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { listen, fixtureUpstreams, modernHeaders, modernMeta } from '../helpers/app.js'
import { startHttpFixture } from '../helpers/fixture.js'
import { modernBody, openSse, post, schemaErrors, SseReader, type OpenSse, type TestId } from '../helpers/modern-wire.js'

const toolCall = (id: TestId, name: string, args: Record<string, unknown> = {}, meta?: Record<string, unknown>): string =>
  modernBody(id, 'tools/call', { name, arguments: args }, meta)

/** Resolves with the first JSON line of `file` that satisfies the predicate, waiting on file changes (no sleeps); fails after 15 s. */
async function waitForLogLine (t: Test, file: string, predicate: (line: any) => boolean): Promise<any> {
  const deadline = AbortSignal.timeout(15_000)
  const find = (): any => {
    if (!existsSync(file)) return undefined
    return readFileSync(file, 'utf8').split('\n').filter(l => l !== '').map(l => JSON.parse(l)).find(predicate)
  }
  const dir = join(file, '..')
  const watcher = watch(dir)
  t.teardown(() => watcher.close())
  for (;;) {
    const hit = find()
    if (hit !== undefined) { watcher.close(); return hit }
    try {
      await once(watcher, 'change', { signal: deadline })
    } catch {
      watcher.close()
      throw new Error(`no matching line in ${file} within 15 s; it holds: ${existsSync(file) ? readFileSync(file, 'utf8') : '(nothing)'}`)
    }
  }
}

/** Records every write a POST reply makes after its connection closed (there must be none). */
function recordLateWrites (app: FastifyInstance): string[] {
  const late: string[] = []
  app.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST') return
    let closed = false
    res.on('close', () => { closed = true })
    const write = res.write.bind(res) as (...args: unknown[]) => boolean
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse
    res.write = ((...args: unknown[]) => { if (closed) late.push('write ' + String(args[0])); return write(...args) }) as typeof res.write
    res.end = ((...args: unknown[]) => { if (closed && args[0] !== undefined) late.push('end ' + String(args[0])); return end(...args) }) as typeof res.end
  })
  return late
}

t.test('2026-07-28/cancellation/closing-the-stream-cancels-upstream', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-cancel-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const log = join(dir, 'fixture.log')
  const { base, app } = await listen(t, { upstreams: fixtureUpstreams([], { FIXTURE_LOG: log }), transport: { sseKeepAlive: 20 } })
  const late = recordLateWrites(app)
  const controller = new AbortController()
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: modernHeaders('tools/call', 'slow'),
    body: toolCall('cancel-me', 'slow', { ms: 60_000, steps: 600 }, modernMeta({}, { progressToken: 'p-cancel' })),
    signal: controller.signal
  })
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'text/event-stream')
  const reader = new SseReader(res.body!)
  const progress = await reader.next(m => m.method === 'notifications/progress')
  t.equal(progress.params.progressToken, 'p-cancel')
  const started = await waitForLogLine(t, log, l => l.event === 'started' && l.tool === 'slow')
  controller.abort()
  // The upstream itself saw the cancellation (its request context ended), not only mcpx's handler.
  const cancelled = await waitForLogLine(t, log, l => l.event === 'cancelled' && l.tool === 'slow')
  t.equal(cancelled.id, started.id, 'the same upstream request was cancelled')
  // mcpx is still serving, and wrote nothing on the closed reply (no result, no keep-alive).
  const after = await post(base, toolCall(2, 'echo', { text: 'still here' }), modernHeaders('tools/call', 'echo'))
  t.equal(after.status, 200)
  t.same(late, [], 'nothing written after the client closed the stream')
})

t.test('2026-07-28/listen/acknowledged-then-only-requested-tagged', async t => {
  const { base, app } = await listen(t, { transport: { sseKeepAlive: 50 } })
  const released: string[] = []
  let onRelease: (() => void) | undefined
  const unsubscribe = app.upstreams.unsubscribe.bind(app.upstreams)
  app.upstreams.unsubscribe = async (uri: string) => { released.push(uri); onRelease?.(); return await unsubscribe(uri) }

  // node:http with no agent: aborting a stream leaves no pooled client connection behind to hold app.close().
  const open = async (id: TestId, notifications: Record<string, unknown>): Promise<OpenSse> => {
    const stream = await openSse(base, modernBody(id, 'subscriptions/listen', { notifications }), modernHeaders('subscriptions/listen'))
    t.teardown(() => stream.close())
    t.equal(stream.status, 200)
    t.equal(stream.headers['content-type'], 'text/event-stream')
    t.equal(stream.headers['x-accel-buffering'], 'no')
    t.equal(stream.headers['mcp-session-id'], undefined)
    return stream
  }
  const tools = await open('listen-a', { toolsListChanged: true })
  const counter = await open(7, { resourceSubscriptions: ['fixture://counter'] })

  const ackA = await tools.reader.next()
  t.equal(ackA.method, 'notifications/subscriptions/acknowledged', 'first message: the acknowledgement')
  t.same(ackA.params.notifications, { toolsListChanged: true })
  t.equal(ackA.params._meta['io.modelcontextprotocol/subscriptionId'], 'listen-a')
  const ackB = await counter.reader.next()
  t.equal(ackB.method, 'notifications/subscriptions/acknowledged')
  t.same(ackB.params.notifications, { resourceSubscriptions: ['fixture://counter'] })
  t.equal(ackB.params._meta['io.modelcontextprotocol/subscriptionId'], 7)

  const call = async (id: number, name: string, args: Record<string, unknown> = {}): Promise<void> => {
    const reply = await post(base, toolCall(id, name, args), modernHeaders('tools/call', name))
    t.equal(reply.status, 200, reply.text)
  }
  await call(1, 'add_tool', { name: 'listen_added_1' })
  const changed = await tools.reader.next(m => m.method === 'notifications/tools/list_changed')
  t.equal(changed.params._meta['io.modelcontextprotocol/subscriptionId'], 'listen-a')
  await call(2, 'bump')
  const updated = await counter.reader.next(m => m.method === 'notifications/resources/updated')
  t.equal(updated.params.uri, 'fixture://counter')
  t.equal(updated.params._meta['io.modelcontextprotocol/subscriptionId'], 7)
  // A second change on the tools stream: whatever the bump might have leaked to it arrived before this.
  await call(3, 'add_tool', { name: 'listen_added_2' })
  await tools.reader.next(m => m.method === 'notifications/tools/list_changed')
  await tools.reader.until(raw => /^:/m.test(raw))

  t.notOk(tools.reader.messages.some(m => m.method === 'notifications/resources/updated'), 'tools stream: no resources/updated (not requested)')
  t.notOk(counter.reader.messages.some(m => typeof m.method === 'string' && m.method.endsWith('/list_changed')), 'resource stream: no list_changed (not requested)')
  for (const [reader, id] of [[tools.reader, 'listen-a'], [counter.reader, 7]] as const) {
    t.ok(reader.messages.every(m => m.params?._meta?.['io.modelcontextprotocol/subscriptionId'] === id), `every message on ${String(id)} is tagged`)
    t.notOk(/^id:/m.test(reader.raw), 'no SSE event ids')
  }

  // Closing the resource stream releases the upstream subscription.
  const releasedNow = new Promise<void>(resolve => { onRelease = resolve })
  counter.close()
  await releasedNow
  t.same(released, ['fixture://counter'])
})

t.test('upstreams/listen/one-upstream-listen-for-concurrent-subscriptions', async t => {
  // A client listen on two URIs subscribes both upstream at once. mcpx's one upstream
  // subscriptions/listen per link is replaced for each change (lib/upstreams/connection.ts
  // syncListen); two changes at once each opened a listen while neither knew of the other, and
  // the one left behind delivered every update twice. The fixture records the listens it is sent
  // and the cancellations that close them; a tools/call after the acknowledgement is read after
  // them, so by its reply the record is complete.
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-listens-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const log = join(dir, 'fixture.log')
  const { base } = await listen(t, { upstreams: fixtureUpstreams([], { FIXTURE_LISTEN_LOG: log }) })
  const stream = await openSse(base, modernBody('two', 'subscriptions/listen', { notifications: { resourceSubscriptions: ['fixture://counter', 'fixture://items/counter'] } }), modernHeaders('subscriptions/listen'))
  t.teardown(() => stream.close())
  const ack = await stream.reader.next()
  t.equal(ack.method, 'notifications/subscriptions/acknowledged')
  const echo = await post(base, toolCall(1, 'echo', { text: 'after' }), modernHeaders('tools/call', 'echo'))
  t.equal(echo.status, 200)
  const events = readFileSync(log, 'utf8').split('\n').filter(l => l !== '').map(l => JSON.parse(l) as { event: string, id: unknown })
  const cancelled = new Set(events.filter(e => e.event === 'cancel').map(e => JSON.stringify(e.id)))
  const open = events.filter(e => e.event === 'listen' && !cancelled.has(JSON.stringify(e.id)))
  t.equal(open.length, 1, `one upstream listen left open (${events.filter(e => e.event === 'listen').length} opened in all)`)
  await post(base, toolCall(2, 'bump'), modernHeaders('tools/call', 'bump'))
  await stream.reader.next(m => m.method === 'notifications/resources/updated' && m.params.uri === 'fixture://counter')
  t.same(stream.reader.messages.filter(m => m.method === 'notifications/resources/updated').map(m => m.params.uri).sort(), ['fixture://counter', 'fixture://items/counter'],
    'each URI updated once (the fixture announces items/counter, then counter)')
})

t.test('2026-07-28/listen/shutdown-ends-the-stream', async t => {
  // A listen stream never ends by itself; closing mcpx must end it rather than wait on it forever.
  const { base, app } = await listen(t)
  const res = await fetch(`${base}/mcp`, { method: 'POST', headers: modernHeaders('subscriptions/listen'), body: modernBody('bye', 'subscriptions/listen', { notifications: { toolsListChanged: true } }) })
  const reader = new SseReader(res.body!)
  t.equal((await reader.next()).method, 'notifications/subscriptions/acknowledged')
  await app.close()
  await reader.done
  t.pass('app.close() resolved and the stream ended')
})

t.test('2026-07-28/cross-era/legacy-upstream-modern-results', async t => {
  const { base } = await listen(t, { upstreams: fixtureUpstreams(['--era', 'legacy']) })
  const discover = await post(base, modernBody(0, 'server/discover'), modernHeaders('server/discover'))
  t.equal(discover.status, 200)
  t.equal(schemaErrors('DiscoverResult', discover.json.result), '')
  const list = await post(base, modernBody('abc', 'tools/list'), modernHeaders('tools/list'))
  t.equal(list.status, 200)
  t.equal(list.json.result.resultType, 'complete')
  t.ok(Number.isInteger(list.json.result.ttlMs))
  t.ok(['public', 'private'].includes(list.json.result.cacheScope))
  t.equal(list.json.result._meta['io.modelcontextprotocol/serverInfo'].name, 'mcpx')
  t.equal(schemaErrors('ListToolsResult', list.json.result), '')
  const call = await post(base, toolCall(-1, 'echo', { text: 'from legacy' }), modernHeaders('tools/call', 'echo'))
  t.equal(call.status, 200, call.text)
  t.equal(call.json.result.content[0].text, 'from legacy')
  t.equal(call.json.result.resultType, 'complete')
  t.equal(call.json.result._meta['io.modelcontextprotocol/serverInfo'].name, 'mcpx')
  t.equal(schemaErrors('CallToolResult', call.json.result), '')
  const read = await post(base, modernBody(1, 'resources/read', { uri: 'fixture://static' }), modernHeaders('resources/read', 'fixture://static'))
  t.equal(read.json.result.resultType, 'complete')
  t.ok(Number.isInteger(read.json.result.ttlMs))
  t.equal(schemaErrors('ReadResourceResult', read.json.result), '')
  // The legacy upstream asks mcpx an elicitation/create; the modern client declared no elicitation.
  const elicit = await post(base, toolCall(2, 'elicit'), modernHeaders('tools/call', 'elicit'))
  t.equal(elicit.status, 400, elicit.text)
  t.equal(elicit.json.error.code, -32_021)
  t.equal(elicit.json.id, 2)
  t.same(elicit.json.error.data, { requiredCapabilities: { elicitation: {} } })
})

t.test('2026-07-28/param-headers/sent-upstream-for-the-unprefixed-name', async t => {
  const { url } = await startHttpFixture(t, '--era', 'modern')
  const { base } = await listen(t, { upstreams: { up: { url, prefix: 'up' } } })
  const list = await post(base, modernBody(0, 'tools/list'), modernHeaders('tools/list'))
  const headersTool = list.json.result.tools.find((tool: { name: string }) => tool.name === 'up__headers')
  t.ok(headersTool !== undefined, 'the tool is listed under its prefixed name')
  t.same(headersTool.inputSchema.properties.region, { type: 'string', 'x-mcp-header': 'Region' }, 'schema re-listed verbatim')

  const args0 = { region: ' eu', count: 42, target: { zone: 'b' } }
  const reply = await post(base, toolCall(1, 'up__headers', args0), modernHeaders('tools/call', 'up__headers', {
    'mcp-param-region': '=?base64?IGV1?=', 'mcp-param-count': '42', 'mcp-param-zone': 'b'
  }))
  t.equal(reply.status, 200, reply.text)
  t.same(JSON.parse(reply.json.result.content[0].text), args0)
  const seen = JSON.parse(reply.json.result.content[1].text) as Record<string, string>
  t.equal(seen['mcp-method'], 'tools/call')
  t.equal(seen['mcp-name'], 'headers', 'Mcp-Name upstream is the upstream\'s own tool name')
  t.equal(seen['mcp-protocol-version'], '2026-07-28')
  t.equal(seen['mcp-param-region'], '=?base64?IGV1?=')
  t.equal(seen['mcp-param-count'], '42')
  t.equal(seen['mcp-param-zone'], 'b')
})

t.test('2026-07-28/client/official-v2-client', async t => {
  const { base, app } = await listen(t)
  const seen: Array<Record<string, string | string[] | undefined>> = []
  app.server.on('request', (req: IncomingMessage) => { if (req.method === 'POST') seen.push(req.headers) })
  for (const mode of [{ pin: '2026-07-28' }, 'auto'] as const) {
    seen.length = 0
    const client = new Client({ name: 'mcpx-e2e', version: '0.0.0' }, { versionNegotiation: { mode } })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)))
    t.teardown(async () => { await client.close() })
    const { tools } = await client.listTools()
    t.ok(tools.some(tool => tool.name === 'headers'), `${JSON.stringify(mode)}: tools listed`)
    const echo = await client.callTool({ name: 'echo', arguments: { text: 'hi from v2' } })
    t.same(echo.content, [{ type: 'text', text: 'hi from v2' }])
    const args = { region: 'eu west 1', count: 7, target: { zone: 'Zürich' } }
    const headers = await client.callTool({ name: 'headers', arguments: args })
    t.notOk(headers.isError, 'served')
    t.same(JSON.parse((headers.content as Array<{ text: string }>)[0].text), args)
    const call = seen.find(h => h['mcp-name'] === 'headers')
    t.ok(call !== undefined, 'the client sent Mcp-Name: headers')
    t.equal(call?.['mcp-param-region'], 'eu west 1')
    t.equal(call?.['mcp-param-count'], '7')
    t.equal(call?.['mcp-param-zone'], '=?base64?' + Buffer.from('Zürich').toString('base64') + '?=')
    t.ok(seen.every(h => h['mcp-protocol-version'] === '2026-07-28'), 'every POST was 2026-07-28 (no legacy fallback)')
    t.ok(seen.every(h => h['mcp-session-id'] === undefined), 'no session')
    await client.close()
  }
})
