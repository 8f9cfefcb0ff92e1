/**
 * The upstream layer end to end: lib/upstreams/registry with REAL child processes (our fixture,
 * server-everything) and a real Streamable HTTP fixture. No mocks; every wait is on an event
 * (a log line, a registry event, a process exit), never a sleep.
 */
import t, { type Test } from 'tap'
import { once } from 'node:events'
import { createRegistry } from '../../lib/upstreams/registry.js'
import type { UpstreamConfig } from '../../lib/upstreams/config.js'
import { RESOURCE_NOT_FOUND, UPSTREAM_ERROR, type JsonObject } from '../../lib/protocol/jsonrpc.js'
import type { UpstreamQuestion } from '../../lib/upstreams/contract.js'
import { everythingCommand, fixtureCommand, startHttpFixture, ttlFixtureCommand } from '../helpers/fixture.js'
import { spawnServe } from '../helpers/spawn.js'
import { captureLogger, startRegistry, waitForState } from '../helpers/registry.js'

const stderrLine = (text: RegExp) => (line: JsonObject): boolean => typeof line.stderr === 'string' && text.test(line.stderr)
const textOf = (result: JsonObject, index = 0): string => ((result.content as Array<{ text: string }>)[index]).text
const noSignal = (): { signal: AbortSignal } => ({ signal: new AbortController().signal })
function fixture (...flags: string[]): UpstreamConfig { return fixtureCommand(...flags) }

/** The fixture over HTTP (test/helpers/fixture.ts startHttpFixture); resolves with its URL. */
async function httpFixture (t: Test, ...flags: string[]): Promise<string> {
  return (await startHttpFixture(t, ...flags)).url
}

const HEADERS_SCHEMA = {
  type: 'object',
  properties: {
    region: { type: 'string', 'x-mcp-header': 'Region' },
    count: { type: 'integer', 'x-mcp-header': 'Count' },
    target: { type: 'object', properties: { zone: { type: 'string', 'x-mcp-header': 'Zone' } } }
  }
}

t.test('upstreams/lists/fixture-verbatim', async t => {
  const { registry } = await startRegistry(t, { fixture: fixture() })
  const [status] = registry.status()
  t.match(status, { name: 'fixture', state: 'ready', era: 'modern', revision: '2026-07-28', restarts: 0 }, 'the dual fixture speaks 2026-07-28 over stdio')
  t.type(status.pid, 'number')
  const names = registry.tools().map(tool => tool.name)
  t.match(names, ['echo', 'headers', 'slow', 'add_tool', 'fail', 'crash', 'bump', 'elicit', 'sample', 'roots'], 'one upstream: no prefix')
  t.same(registry.findTool('headers')?.inputSchema, HEADERS_SCHEMA, 'x-mcp-header annotations come through verbatim')
  t.match(registry.prompts(), [{ name: 'greet', arguments: [{ name: 'name', required: true }] }])
  t.same(registry.resources().map(r => r.uri), ['fixture://static', 'fixture://counter'])
  t.same(registry.resourceTemplates().map(r => r.uriTemplate), ['fixture://items/{id}'])
  t.match(registry.capabilities(), { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { subscribe: true, listChanged: true }, completions: {} })

  const echo = await registry.callTool('echo', { text: 'hello' }, noSignal())
  t.match(echo, { content: [{ type: 'text', text: 'hello' }], resultType: 'complete' }, 'raw result, resultType kept')
  t.match(echo, { _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'echo-upstream' } } }, 'result _meta kept')
  const failed = await registry.callTool('fail', {}, noSignal())
  t.same(failed.content, [{ type: 'text', text: 'it failed\non two lines' }])
  t.equal(failed.isError, true)
  t.match(await registry.readResource('fixture://static', noSignal()), { contents: [{ uri: 'fixture://static', text: 'static content' }] })
  t.match(await registry.readResource('fixture://items/7', noSignal()), { contents: [{ uri: 'fixture://items/7', text: 'item 7' }] }, 'routed by template')
  await t.rejects(registry.readResource('fixture://nowhere', noSignal()), { code: RESOURCE_NOT_FOUND }, 'an unknown URI is an error, never a guess')
  t.match(await registry.getPrompt('greet', { name: 'Ada' }, noSignal()), { messages: [{ content: { text: 'Hello, Ada!' } }] })
})

t.test('upstreams/lists/two-upstreams-prefixed', async t => {
  const { registry } = await startRegistry(t, { everything: everythingCommand(), fixture: fixture() })
  const names = registry.tools().map(tool => tool.name as string)
  t.ok(names.includes('everything__echo'), 'everything__echo')
  t.ok(names.includes('fixture__echo'), 'fixture__echo')
  t.ok(names.every(name => name.startsWith('everything__') || name.startsWith('fixture__')), 'every name prefixed')
  t.match(registry.status(), [{ name: 'everything', state: 'ready', era: 'legacy' }, { name: 'fixture', state: 'ready', era: 'modern' }])
  t.match(await registry.callTool('everything__echo', { message: 'one' }, noSignal()), { content: [{ type: 'text', text: 'Echo: one' }] })
  t.match(await registry.callTool('fixture__echo', { text: 'two' }, noSignal()), { content: [{ type: 'text', text: 'two' }] })
  await t.rejects(registry.callTool('echo', { text: 'x' }, noSignal()), { code: -32_602 }, 'the unprefixed name is unknown')
})

t.test('upstreams/lists/collision-first-wins', async t => {
  const { registry, lines } = await startRegistry(t, {
    first: { ...fixture(), prefix: 'same' },
    second: { ...fixture('--era', 'legacy'), prefix: 'same' }
  })
  const names = registry.tools().map(tool => tool.name)
  t.equal(names.length, new Set(names).size, 'no duplicate names')
  t.ok(names.includes('same__echo'))
  const warning = lines.find(line => line.level === 40 && /collision: same__echo/.test(String(line.msg)))
  t.ok(warning, 'a warning names the collision')
  t.match(warning, { kept: 'first', dropped: 'second', name: 'same__echo' })
  t.match(await registry.callTool('same__echo', { text: 'x' }, noSignal()), { resultType: 'complete' }, 'the first (modern) upstream answers')
})

t.test('upstreams/lists/resource-collision-warned-on-relist', async t => {
  const { registry, lines, waitFor } = await startRegistry(t, { first: fixture(), second: fixture('--era', 'legacy') })
  const isCollision = (line: JsonObject): boolean => line.level === 40 && /^resource URI collision: fixture:\/\/counter/.test(String(line.msg))
  t.match(lines.find(isCollision), { kept: 'first', dropped: 'second', uri: 'fixture://counter' }, 'warned at start, naming both')
  t.equal(registry.resources().filter(r => r.uri === 'fixture://counter').length, 1, 'listed once')
  // Each fixture child has its own counter: bump the second's twice, the first's once.
  await registry.callTool('second__bump', {}, noSignal())
  await registry.callTool('second__bump', {}, noSignal())
  await registry.callTool('first__bump', {}, noSignal())
  const read = await registry.readResource('fixture://counter', noSignal())
  t.match(read, { contents: [{ text: '1' }] }, 'the first upstream in config order serves the URI')
  // The second upstream goes away and comes back: re-listed, the collision is warned again.
  const second = registry.status().find(s => s.name === 'second')
  if (second?.pid === undefined) throw new Error('no pid')
  const since = lines.length
  process.kill(second.pid)
  await waitForState(registry, s => s.name === 'second' && s.state === 'ready' && s.pid !== second.pid)
  t.match(await waitFor(isCollision, since), { kept: 'first', dropped: 'second' }, 'warned again on the re-list')
})

for (const era of ['dual', 'legacy']) {
  t.test(`upstreams/calls/progress-and-abort-${era}`, async t => {
    const { registry, waitFor, lines } = await startRegistry(t, { fixture: fixture('--era', era) })
    const progress: unknown[] = []
    const done = await registry.callTool('slow', { ms: 200, steps: 4 }, { ...noSignal(), onProgress: p => progress.push(p) })
    t.match(done, { content: [{ text: 'slept 200' }] })
    t.same(progress, [1, 2, 3, 4].map(i => ({ progress: i, total: 4, message: `step ${i}` })), 'progress delivered')

    const abort = new AbortController()
    const since = lines.length
    const call = registry.callTool('slow', { ms: 60_000 }, { signal: abort.signal })
    call.catch(() => {})
    const started = await waitFor(stderrLine(/^started slow /), since)
    const id = String(started.stderr).split(' ')[2]
    abort.abort()
    await t.rejects(call, { code: UPSTREAM_ERROR, message: /cancelled/ })
    await waitFor(stderrLine(new RegExp(`^cancelled slow ${id}$`)))
    t.pass('the fixture saw the cancellation')
  })
}

t.test('upstreams/calls/timeout-cancels-upstream', async t => {
  const { registry, waitFor } = await startRegistry(t, { fixture: { ...fixture(), timeout: 300 } })
  const started = Date.now()
  await t.rejects(registry.callTool('slow', { ms: 60_000 }, noSignal()), { code: UPSTREAM_ERROR, message: 'upstream fixture timed out after 300 ms (tools/call)' })
  t.ok(Date.now() - started < 5_000)
  await waitFor(stderrLine(/^cancelled slow /))
  t.pass('the timed-out call was cancelled upstream')
})

t.test('upstreams/lifecycle/kill-mid-call-errors-fast', async t => {
  const { registry, waitFor } = await startRegistry(t, { fixture: fixture() })
  const { pid } = registry.status()[0]
  if (pid === undefined) throw new Error('no pid')
  const call = registry.callTool('slow', { ms: 60_000 }, noSignal())
  call.catch(() => {})
  await waitFor(stderrLine(/^started slow /))
  const killedAt = Date.now()
  process.kill(pid)
  await t.rejects(call, { code: UPSTREAM_ERROR, message: /^upstream fixture exited/ })
  t.ok(Date.now() - killedAt < 1_000, `rejected within 1 s (${Date.now() - killedAt} ms)`)
  const back = await waitForState(registry, status => status.state === 'ready' && status.pid !== pid)
  t.ok(back.restarts >= 1, 'counted as a restart')
  t.match(await registry.callTool('echo', { text: 'again' }, noSignal()), { content: [{ text: 'again' }] }, 'the next call succeeds')
})

t.test('upstreams/lifecycle/crash-restarts', async t => {
  const { registry } = await startRegistry(t, { fixture: fixture('--era', 'legacy') })
  const { pid } = registry.status()[0]
  await t.rejects(registry.callTool('crash', {}, noSignal()), { code: UPSTREAM_ERROR, message: 'upstream fixture exited (code 1)' })
  await waitForState(registry, status => status.state === 'ready' && status.pid !== pid)
  t.match(await registry.callTool('echo', { text: 'up' }, noSignal()), { content: [{ text: 'up' }] })
})

t.test('upstreams/lifecycle/close-leaves-no-orphans', async t => {
  const capture = captureLogger()
  const registry = createRegistry({ a: fixture(), b: fixture('--era', 'legacy'), everything: everythingCommand() }, { logger: capture.logger, defaultTimeoutMs: 10_000 })
  await registry.start()
  const pids = registry.status().map(status => status.pid)
  t.equal(pids.filter(pid => typeof pid === 'number').length, 3, 'three children')
  await registry.close()
  for (const pid of pids) t.throws(() => process.kill(pid as number, 0), { code: 'ESRCH' }, `pid ${String(pid)} is gone`)
  t.match(registry.status(), [{ state: 'closed' }, { state: 'closed' }, { state: 'closed' }])
})

t.test('upstreams/http/url-upstream', async t => {
  const url = await httpFixture(t)
  const { registry } = await startRegistry(t, { remote: { url, prefix: 'remote' } })
  t.match(registry.status(), [{ name: 'remote', state: 'ready', era: 'modern', revision: '2026-07-28' }], 'the dual fixture negotiates 2026-07-28 over HTTP')
  t.equal(registry.status()[0].pid, undefined, 'no pid for a URL upstream')
  t.ok(registry.findTool('remote__echo'))
  t.match(await registry.callTool('remote__echo', { text: 'over http' }, noSignal()), { content: [{ text: 'over http' }], resultType: 'complete' })

  // SEP-2243: the client mirrors x-mcp-header arguments, computed for the upstream's own tool name.
  const result = await registry.callTool('remote__headers', { region: 'eu-west', count: 3, target: { zone: 'z1' } }, noSignal())
  t.same(JSON.parse(textOf(result, 0)), { region: 'eu-west', count: 3, target: { zone: 'z1' } })
  t.match(JSON.parse(textOf(result, 1)), {
    'mcp-method': 'tools/call',
    'mcp-name': 'headers',
    'mcp-param-region': 'eu-west',
    'mcp-param-count': '3',
    'mcp-param-zone': 'z1',
    'mcp-protocol-version': '2026-07-28'
  }, 'Mcp-Name is the unprefixed name; Mcp-Param-* mirrored')
})

t.test('upstreams/http/legacy-url-upstream', async t => {
  const url = await httpFixture(t, '--era', 'legacy')
  const { registry } = await startRegistry(t, { remote: { url } })
  const [status] = registry.status()
  t.match(status, { state: 'ready', era: 'legacy' }, 'a legacy-only fixture negotiates a legacy revision')
  t.ok(['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'].includes(status.revision ?? ''), `legacy revision ${String(status.revision)}`)
  const result = await registry.callTool('echo', { text: 'legacy http' }, noSignal())
  t.match(result, { content: [{ text: 'legacy http' }] })
  t.equal(result.resultType, undefined, 'no resultType from a legacy upstream')
})

for (const era of ['dual', 'legacy']) {
  t.test(`upstreams/notifications/list-changed-after-add-tool-${era}`, async t => {
    const { registry } = await startRegistry(t, { fixture: fixture('--era', era) })
    const changed = once(registry, 'list_changed')
    await registry.callTool('add_tool', { name: `added_${era}` }, noSignal())
    const [kind] = await changed
    t.equal(kind, 'tools')
    t.ok(registry.findTool(`added_${era}`), 'the new tool is listed')
    t.match(await registry.callTool(`added_${era}`, {}, noSignal()), { content: [{ text: `I am added_${era}` }] })
  })

  t.test(`upstreams/notifications/resource-updated-${era}`, async t => {
    const { registry } = await startRegistry(t, { fixture: fixture('--era', era) })
    await registry.subscribe('fixture://counter')
    await registry.subscribe('fixture://counter')
    const updated = once(registry, 'resource_updated')
    await registry.callTool('bump', {}, noSignal())
    t.same(await updated, ['fixture://counter'])
    t.match(await registry.readResource('fixture://counter', noSignal()), { contents: [{ text: '1' }] })
    await registry.unsubscribe('fixture://counter')
    await registry.unsubscribe('fixture://counter')
  })
}

t.test('upstreams/questions/question-reaches-on-question-legacy', async t => {
  const { registry } = await startRegistry(t, { fixture: fixture('--era', 'legacy') })
  const questions: UpstreamQuestion[] = []
  const result = await registry.callTool('elicit', {}, {
    ...noSignal(),
    onQuestion: async question => {
      questions.push(question)
      return { action: 'accept', content: { name: 'Ada' } }
    }
  })
  t.match(questions, [{ method: 'elicitation/create', params: { message: 'Who are you?', requestedSchema: { properties: { name: { type: 'string' } } } } }])
  t.same(JSON.parse(textOf(result)), { action: 'accept', content: { name: 'Ada' } }, 'the answer reached the tool')

  await t.rejects(registry.callTool('elicit', {}, {
    ...noSignal(),
    onQuestion: async () => { throw Object.assign(new Error('user said no'), { code: -32_042 }) }
  }).then(r => { throw new Error(JSON.stringify(r)) }), /./, 'a refused question fails the tool')
})

t.test('upstreams/questions/input-required-passes-raw-modern', async t => {
  const { registry } = await startRegistry(t, { fixture: fixture() })
  let asked = false
  const result = await registry.callTool('elicit', {}, { ...noSignal(), onQuestion: async () => { asked = true; return {} } })
  t.equal(asked, false, 'a modern upstream never asks: it answers input_required')
  t.match(result, { resultType: 'input_required', inputRequests: { who: { method: 'elicitation/create', params: { message: 'Who are you?' } } } })
})

t.test('upstreams/catalogue/ttl-refresh-reaches-serve-clients', async t => {
  // A real `mcpx serve` in front of a modern upstream that changes its tools without a list_changed
  // and gives its tools/list a ttlMs of 1 s (test/fixtures/ttl-upstream.ts). The client reads
  // tools/list on a short tick, as one polling for changes would (a TTL is a span of time to let
  // pass); once the TTL passed, a read re-lists in the background and the client is told.
  const s = spawnServe(t, { config: { upstreams: { ttl: ttlFixtureCommand('--ttl-ms', '1000', '--tools', 'first') } } })
  await s.request({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'ttl-test', version: '1.0.0' } } })
  s.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
  const toolNames = async (id: string): Promise<string[]> => ((await s.request({ jsonrpc: '2.0', id, method: 'tools/list' })).result.tools as Array<{ name: string }>).map(tool => tool.name)
  t.ok((await toolNames('l0')).includes('first'))
  const set = await s.request({ jsonrpc: '2.0', id: 'set', method: 'tools/call', params: { name: 'set_tools', arguments: { names: ['second'] } } })
  t.match(set, { result: { content: [{ text: 'tools: second' }] } })
  const after = s.messages.length
  const changed = s.nextMessage(m => m.method === 'notifications/tools/list_changed', { after })
  changed.catch(() => {}) // awaited below; a failure before that is reported there, not as an unhandled rejection
  let names: string[] = []
  for (let i = 0; !names.includes('second'); i++) {
    if (i > 300) throw new Error(`tools/list never showed the upstream's new tool: ${names.join(', ')}`)
    names = await toolNames(`l${i + 1}`)
    await new Promise(resolve => setTimeout(resolve, 25))
  }
  t.notOk(names.includes('first'), 'the re-listed catalogue replaced the old one')
  t.same(await changed, { jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, 'the client was told its list changed')
  t.match(await s.request({ jsonrpc: '2.0', id: 'call', method: 'tools/call', params: { name: 'second', arguments: {} } }), { result: { content: [{ text: 'second' }] } }, 'the new tool routes')
})
