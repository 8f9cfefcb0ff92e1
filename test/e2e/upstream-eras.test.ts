/**
 * The upstream layer's second, legacy connection (lib/upstreams/upstream.ts; DIGEST §6a dual-era):
 * a dual-era upstream negotiates 2026-07-28 with mcpx, and only a legacy session lets its tools
 * ask questions or send log lines the legacy way, so with `legacyConnection` (default for HTTP
 * upstreams, opt-in for stdio ones) a call with `era: 'legacy'` goes over a second connection
 * opened with a plain `initialize`. Without it (the stdio default: one child, one state), legacy-era
 * calls use the primary connection, and questions reach legacy clients through the dispatcher's
 * MRTR bridge. Real child processes (our fixture) and a real HTTP fixture; every wait is on an
 * event (a log line, a process exit, a registry event), never a sleep.
 */
import t from 'tap'
import { once } from 'node:events'
import { pino } from 'pino'
import { Dispatcher } from '../../lib/dispatch/dispatcher.js'
import type { DispatchContext } from '../../lib/dispatch/context.js'
import { UPSTREAM_ERROR, type JsonRpcNotification, type JsonRpcRequest, type JsonObject } from '../../lib/protocol/jsonrpc.js'
import type { UpstreamConfig } from '../../lib/upstreams/config.js'
import type { UpstreamQuestion } from '../../lib/upstreams/contract.js'
import { fixtureCommand, startHttpFixture } from '../helpers/fixture.js'
import { startRegistry } from '../helpers/registry.js'

const LEGACY_REVISIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25']

/** The fixture over stdio with the second connection turned on (`legacyConnection: true`; stdio's default is off). */
const withLegacyConnection = (...flags: string[]): UpstreamConfig => ({ ...fixtureCommand(...flags), legacyConnection: true })
const noSignal = (): { signal: AbortSignal } => ({ signal: new AbortController().signal })
const legacyCall = (extra: object = {}): { signal: AbortSignal, era: 'legacy' } => ({ ...noSignal(), era: 'legacy', ...extra })
const textOf = (result: JsonObject): string => ((result.content as Array<{ text: string }>)[0]).text
const answerAda = async (): Promise<JsonObject> => ({ action: 'accept', content: { name: 'Ada' } })
const isGone = (pid: number): boolean => { try { process.kill(pid, 0); return false } catch (error) { return (error as { code?: string }).code === 'ESRCH' } }

t.test('upstreams/eras/legacy-era-question-reaches-on-question-dual', async t => {
  const { registry } = await startRegistry(t, { fixture: withLegacyConnection() })
  t.match(registry.status(), [{ state: 'ready', era: 'modern', revision: '2026-07-28' }])

  const asked: UpstreamQuestion[] = []
  const modern = await registry.callTool('elicit', {}, { ...noSignal(), era: 'modern', onQuestion: async q => { asked.push(q); return await answerAda() } })
  t.match(modern, { resultType: 'input_required', inputRequests: { who: { method: 'elicitation/create' } } }, 'a modern-era call: input_required, raw')
  t.same(asked, [], 'nothing asked on the modern connection')
  t.equal(registry.status()[0].legacy, undefined, 'no legacy connection for a modern-era call')

  const legacy = await registry.callTool('elicit', {}, legacyCall({ onQuestion: async (q: UpstreamQuestion) => { asked.push(q); return await answerAda() } }))
  t.match(asked, [{ method: 'elicitation/create', params: { message: 'Who are you?' } }], 'the legacy session asked a real question')
  t.same(JSON.parse(textOf(legacy)), { action: 'accept', content: { name: 'Ada' } }, 'the answer reached the tool')
  t.equal(legacy.resultType, undefined, 'a legacy result, no resultType')
  const [status] = registry.status()
  t.match(status, { state: 'ready', era: 'modern', revision: '2026-07-28', legacy: { state: 'ready', restarts: 0 } }, 'the primary stays modern')
  t.ok(LEGACY_REVISIONS.includes(status.legacy?.revision ?? ''), `legacy revision ${String(status.legacy?.revision)}`)

  const sampled = await registry.callTool('sample', {}, legacyCall({
    onQuestion: async (q: UpstreamQuestion) => {
      t.equal(q.method, 'sampling/createMessage')
      return { role: 'assistant', content: { type: 'text', text: 'hi there' }, model: 'test-model' }
    }
  }))
  t.equal(textOf(sampled), 'hi there', 'sampling too')
  t.match(await registry.getPrompt('greet', { name: 'Ada' }, legacyCall()), { messages: [{ content: { text: 'Hello, Ada!' } }] }, 'prompts/get over the legacy connection')
  t.match(await registry.readResource('fixture://static', legacyCall()), { contents: [{ text: 'static content' }] }, 'resources/read over the legacy connection')
})

t.test('upstreams/eras/legacy-era-log-notifications', async t => {
  const { registry } = await startRegistry(t, { fixture: withLegacyConnection() })
  const seen: Array<{ method: string, params?: JsonObject }> = []
  const result = await registry.callTool('log', {}, legacyCall({ onNotification: (n: { method: string, params?: JsonObject }) => seen.push(n) }))
  t.equal(textOf(result), 'logged 2')
  t.same(seen, [
    { method: 'notifications/message', params: { level: 'info', data: 'log tool started', logger: 'echo-upstream' } },
    { method: 'notifications/message', params: { level: 'debug', data: { step: 2 }, logger: 'echo-upstream' } }
  ], 'both lines, every level (no logging/setLevel needed), before the result')

  const modernQuiet: unknown[] = []
  await registry.callTool('log', {}, { ...noSignal(), era: 'modern', onNotification: n => modernQuiet.push(n) })
  t.same(modernQuiet, [], 'a modern-era call without a logLevel gets none (DIGEST §6a)')
  const modernInfo: Array<{ method: string, params?: JsonObject }> = []
  await registry.callTool('log', {}, { ...noSignal(), era: 'modern', meta: { 'io.modelcontextprotocol/logLevel': 'info' }, onNotification: n => modernInfo.push(n) })
  t.match(modernInfo, [{ method: 'notifications/message', params: { level: 'info', data: 'log tool started' } }], 'with logLevel info: the info line only, over the primary connection')
  t.equal(modernInfo.length, 1)
})

t.test('upstreams/eras/legacy-connection-lazy-and-reaped', async t => {
  const capture = await startRegistry(t, { fixture: withLegacyConnection() })
  const registry = capture.registry
  const before = registry.status()[0]
  t.equal(before.pids?.length, 1, 'one child before any legacy call')
  t.equal(before.legacy, undefined)
  await registry.callTool('echo', { text: 'modern' }, { ...noSignal(), era: 'modern' })
  t.equal(registry.status()[0].pids?.length, 1, 'still one after a modern-era call')

  const [a, b] = await Promise.all([
    registry.callTool('echo', { text: 'a' }, legacyCall()),
    registry.callTool('echo', { text: 'b' }, legacyCall())
  ])
  t.same([textOf(a), textOf(b)], ['a', 'b'])
  const after = registry.status()[0]
  t.equal(after.pids?.length, 2, 'two concurrent first legacy calls open one legacy child')
  t.equal(after.pids?.[0], before.pid, 'the primary child is the same')
  t.type(after.legacy?.pid, 'number')
  t.equal(capture.lines.filter(line => line.msg === 'upstream legacy connection ready').length, 1)

  await registry.close()
  for (const pid of after.pids ?? []) t.ok(isGone(pid), `pid ${pid} is gone after close()`)
  t.match(registry.status(), [{ state: 'closed' }])
  t.equal(registry.status()[0].pids, undefined)
})

t.test('upstreams/eras/legacy-child-killed-mid-call', async t => {
  const { registry, waitFor } = await startRegistry(t, { fixture: withLegacyConnection() })
  await registry.callTool('echo', { text: 'open' }, legacyCall())
  const { pid: primaryPid, legacy } = registry.status()[0]
  const legacyPid = legacy?.pid
  if (legacyPid === undefined) throw new Error('no legacy pid')

  const primaryCall = registry.callTool('slow', { ms: 800, steps: 2 }, { ...noSignal(), era: 'modern' })
  const call = registry.callTool('slow', { ms: 60_000 }, legacyCall())
  call.catch(() => {})
  await waitFor(line => line.connection === 'legacy' && typeof line.stderr === 'string' && line.stderr.startsWith('started slow '))
  const killedAt = Date.now()
  process.kill(legacyPid)
  await t.rejects(call, { code: UPSTREAM_ERROR, message: /^upstream fixture \(legacy connection\) exited/ })
  t.ok(Date.now() - killedAt < 1_000, `rejected within 1 s (${Date.now() - killedAt} ms)`)
  t.match(await primaryCall, { content: [{ text: 'slept 800' }] }, 'a call on the primary connection is unaffected')

  const next = await registry.callTool('echo', { text: 'again' }, legacyCall())
  t.equal(textOf(next), 'again', 'the next legacy call waits for the restart and works')
  const [status] = registry.status()
  t.match(status, { state: 'ready', pid: primaryPid, restarts: 0, legacy: { state: 'ready', restarts: 1 } })
  t.not(status.legacy?.pid, legacyPid, 'a new legacy child')
  t.ok(isGone(legacyPid))
})

t.test('upstreams/eras/legacy-child-announces-its-resource-updates', async t => {
  const { registry } = await startRegistry(t, { fixture: withLegacyConnection() })
  await registry.subscribe('fixture://counter')
  const updated = once(registry, 'resource_updated')
  t.equal(textOf(await registry.callTool('bump', {}, legacyCall())), 'counter 1', 'bumped in the legacy child (opened now, subscribed before ready)')
  t.same(await updated, ['fixture://counter'], 'the legacy child\'s resources/updated is relayed')
  t.match(await registry.readResource('fixture://counter', legacyCall()), { contents: [{ text: '1' }] }, 'a legacy-era read sees it')
  t.match(await registry.readResource('fixture://counter', noSignal()), { contents: [{ text: '0' }] }, 'the primary child has its own state (two processes)')
  await registry.unsubscribe('fixture://counter')
})

t.test('upstreams/eras/legacy-era-falls-back-modern-only', async t => {
  const { registry, lines } = await startRegistry(t, { fixture: withLegacyConnection('--era', 'modern') })
  const result = await registry.callTool('elicit', {}, legacyCall({ onQuestion: answerAda }))
  t.match(result, { resultType: 'input_required', inputRequests: { who: { method: 'elicitation/create' } } },
    'over the primary: input_required, for the dispatcher\'s MRTR bridge')
  const [status] = registry.status()
  t.match(status, { state: 'ready', era: 'modern', legacy: { state: 'unavailable', lastError: /legacy initialize refused/ } })
  t.equal(status.pids?.length, 1, 'the refused legacy child is gone')
  t.match(await registry.callTool('echo', { text: 'x' }, legacyCall()), { content: [{ text: 'x' }], resultType: 'complete' })
  t.equal(lines.filter(line => /refuses a legacy session/.test(String(line.msg))).length, 1, 'tried once, then remembered')
})

t.test('upstreams/eras/legacy-upstream-one-connection', async t => {
  const { registry } = await startRegistry(t, { fixture: withLegacyConnection('--era', 'legacy') })
  const asked: UpstreamQuestion[] = []
  const result = await registry.callTool('elicit', {}, legacyCall({ onQuestion: async (q: UpstreamQuestion) => { asked.push(q); return await answerAda() } }))
  t.equal(asked.length, 1)
  t.same(JSON.parse(textOf(result)), { action: 'accept', content: { name: 'Ada' } })
  const [status] = registry.status()
  t.match(status, { era: 'legacy' })
  t.equal(status.legacy, undefined, 'no second connection to a legacy upstream')
  t.equal(status.pids?.length, 1)
})

t.test('upstreams/eras/legacy-connection-http', async t => {
  const { url } = await startHttpFixture(t)
  const { registry } = await startRegistry(t, { remote: { url } })
  t.match(await registry.callTool('echo', { text: 'legacy over http' }, legacyCall()), { content: [{ text: 'legacy over http' }] })
  const [status] = registry.status()
  t.match(status, { era: 'modern', legacy: { state: 'ready' } }, 'a second client on the same URL, by default for an HTTP upstream')
  t.equal(status.pid, undefined)
  t.equal(status.legacy?.pid, undefined)

  const off = await startRegistry(t, { remote: { url, legacyConnection: false } })
  t.match(await off.registry.callTool('echo', { text: 'x' }, legacyCall()), { content: [{ text: 'x' }], resultType: 'complete' }, 'legacyConnection: false → over the modern primary')
  t.equal(off.registry.status()[0].legacy, undefined, 'no second client')
})

t.test('upstreams/eras/stdio-default-one-child-one-state', async t => {
  const { registry } = await startRegistry(t, { fixture: fixtureCommand() })
  const before = registry.status()[0]
  t.match(before, { state: 'ready', era: 'modern' })

  const asked: UpstreamQuestion[] = []
  const elicit = await registry.callTool('elicit', {}, legacyCall({ onQuestion: async (q: UpstreamQuestion) => { asked.push(q); return await answerAda() } }))
  t.match(elicit, { resultType: 'input_required', inputRequests: { who: { method: 'elicitation/create' } } },
    'a legacy-era call over the modern primary: input_required, raw, for the dispatcher\'s MRTR bridge')
  t.same(asked, [], 'no server→client request on a modern connection')
  t.equal(textOf(await registry.callTool('echo', { text: 'legacy' }, legacyCall())), 'legacy')

  // State a legacy-era call changes is the state the catalogue and every other call see.
  const changed = new Promise<void>(resolve => {
    const onChange = (kind: string): void => {
      if (kind !== 'tools' || registry.findTool('late') === undefined) return
      registry.off('list_changed', onChange)
      resolve()
    }
    registry.on('list_changed', onChange)
  })
  t.equal(textOf(await registry.callTool('add_tool', { name: 'late' }, legacyCall())), 'added late')
  await changed
  t.equal(textOf(await registry.callTool('late', {}, legacyCall())), 'I am late', 'the tool a legacy-era call added is listed and callable')
  t.equal(textOf(await registry.callTool('bump', {}, legacyCall())), 'counter 1')
  t.match(await registry.readResource('fixture://counter', noSignal()), { contents: [{ text: '1' }] }, 'a modern-era read sees the legacy-era bump')

  const after = registry.status()[0]
  t.equal(after.pids?.length, 1, 'still one child after legacy-era calls')
  t.equal(after.pid, before.pid)
  t.equal(after.legacy, undefined, 'no legacy connection')
})

t.test('upstreams/eras/legacy-era-log-over-modern-primary', async t => {
  const { registry } = await startRegistry(t, { fixture: fixtureCommand() })
  const seen: Array<{ method: string, params?: JsonObject }> = []
  const result = await registry.callTool('log', {}, legacyCall({
    meta: { 'io.modelcontextprotocol/logLevel': 'debug' },
    onNotification: (n: { method: string, params?: JsonObject }) => seen.push(n)
  }))
  t.equal(textOf(result), 'logged 2')
  t.same(seen, [
    { method: 'notifications/message', params: { level: 'info', data: 'log tool started', logger: 'echo-upstream' } },
    { method: 'notifications/message', params: { level: 'debug', data: { step: 2 }, logger: 'echo-upstream' } }
  ], 'with _meta logLevel debug: both lines, routed to the call\'s onNotification on the primary connection')
  const quiet: unknown[] = []
  await registry.callTool('log', {}, legacyCall({ onNotification: (n: unknown) => quiet.push(n) }))
  t.same(quiet, [], 'without a logLevel a modern upstream sends none')
  t.equal(registry.status()[0].pids?.length, 1)
})

t.test('upstreams/eras/legacy-client-questions-through-mrtr-bridge-dispatcher', async t => {
  const { registry } = await startRegistry(t, { fixture: fixtureCommand() })
  const dispatcher = new Dispatcher({ registry, serverInfo: { name: 'mcpx', version: '0.0.0' }, logger: pino({ level: 'silent' }) })
  t.teardown(() => dispatcher.close())
  const asked: UpstreamQuestion[] = []
  const notified: JsonRpcNotification[] = []
  const ctx = (): DispatchContext => ({
    era: 'legacy',
    revision: '2025-06-18',
    clientCapabilities: { elicitation: {}, sampling: {} },
    signal: new AbortController().signal,
    notify: n => notified.push(n),
    ask: async question => {
      asked.push(question)
      if (question.method === 'sampling/createMessage') return { role: 'assistant', content: { type: 'text', text: 'hi there' }, model: 'test-model' }
      return await answerAda()
    }
  })
  const call = (id: number, name: string): JsonRpcRequest => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } })

  const elicited = await dispatcher.handle(call(1, 'elicit'), ctx())
  t.match(asked, [{ method: 'elicitation/create', params: { message: 'Who are you?' } }], 'the legacy client was asked a real question')
  const elicitResult = (elicited as { result: JsonObject }).result
  t.same(JSON.parse(textOf(elicitResult)), { action: 'accept', content: { name: 'Ada' } }, 'its answer reached the tool (MRTR retry)')
  t.equal(elicitResult.resultType, undefined, 'a legacy result')

  const sampled = await dispatcher.handle(call(2, 'sample'), ctx())
  t.equal(textOf((sampled as { result: JsonObject }).result), 'hi there', 'sampling too')
  t.equal(asked.length, 2)

  const logged = await dispatcher.handle(call(3, 'log'), ctx())
  t.equal(textOf((logged as { result: JsonObject }).result), 'logged 2')
  t.match(notified.filter(n => n.method === 'notifications/message'), [
    { method: 'notifications/message', params: { level: 'info', data: 'log tool started' } },
    { method: 'notifications/message', params: { level: 'debug', data: { step: 2 } } }
  ], 'the dispatcher asks a modern upstream for every level on a legacy-era call')

  const [status] = registry.status()
  t.equal(status.pids?.length, 1, 'one child throughout')
  t.equal(status.legacy, undefined)
})
