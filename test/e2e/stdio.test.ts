/**
 * `mcpx serve` end to end: a real `node dist/cli.js serve --config <tmp>` child in front of the real
 * fixture upstream (test/fixtures/echo-upstream.ts), checked on the wire line by line
 * (seed › "stdio, every revision" and "Found along the way"; DIGEST §2c, §3c, §6b, §6f, §6g).
 */
import t from 'tap'
import { readFileSync, watch, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { PassThrough } from 'node:stream'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { pino } from 'pino'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport as StdioClientTransportV1 } from '@modelcontextprotocol/sdk/client/stdio.js'
import { Client as ClientV2 } from '@modelcontextprotocol/client'
import { StdioClientTransport as StdioClientTransportV2 } from '@modelcontextprotocol/client/stdio'
import { FIXTURE_PATH } from '../helpers/fixture.js'
import { spawnServe, writeConfig, serveArgs, type Message, type ServeChild, type Teardown } from '../helpers/spawn.js'
import { prng, generateBatch, replyIdTexts, expectedReplies } from '../helpers/batch-ids.js'
import { pollUntil } from '../helpers/legacy.js'
import { runStdio } from '../../stdio.js'
import { loadConfig } from '../../lib/config/load.js'

/** The hand-written stdio upstream that records how many calls it holds (test/fixtures/hostile-upstream.ts). */
const HOSTILE_PATH = fileURLToPath(new URL('../fixtures/hostile-upstream.js', import.meta.url))

type Test = Teardown

// Three tests at a time: each starts its own `mcpx serve` (or runStdio on its own streams) with its
// own fixture child and FIXTURE_LOG, and much of each is waiting on those processes. The cases
// nested in one test share its child and run one at a time (a subtest's jobs are its own, 1).
t.jobs = 3

const MODERN = '2026-07-28'
const META_VERSION = 'io.modelcontextprotocol/protocolVersion'
const META_CAPS = 'io.modelcontextprotocol/clientCapabilities'
const META_SUB = 'io.modelcontextprotocol/subscriptionId'

/** The `_meta` envelope of a modern request. */
function modernMeta (capabilities: object = {}): Record<string, unknown> {
  return { [META_VERSION]: MODERN, [META_CAPS]: capabilities, 'io.modelcontextprotocol/clientInfo': { name: 'stdio-test', version: '1.0.0' } }
}

/**
 * Config with the fixture as the single upstream (so no prefix); FIXTURE_LOG goes to a temp file.
 * @param fixtureFlags e.g. `['--era', 'legacy']`: a legacy upstream asks its questions as real requests
 */
function fixtureConfig (t: Test, transport: Record<string, unknown> = {}, fixtureFlags: string[] = []): { config: object, logFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-fixture-log-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const logFile = join(dir, 'fixture.log')
  return {
    config: {
      transport,
      upstreams: { fixture: { command: process.execPath, args: [FIXTURE_PATH, ...fixtureFlags], env: { FIXTURE_LOG: logFile } } }
    },
    logFile
  }
}

function serve (t: Test, transport: Record<string, unknown> = {}, fixtureFlags: string[] = []): { s: ServeChild, logFile: string } {
  const { config, logFile } = fixtureConfig(t, transport, fixtureFlags)
  return { s: spawnServe(t, { config }), logFile }
}

/** Legacy initialize + notifications/initialized. */
async function initialize (s: ServeChild, protocolVersion = '2025-06-18', capabilities: object = {}): Promise<Message> {
  const reply = await s.request({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion, capabilities, clientInfo: { name: 'stdio-test', version: '1.0.0' } } })
  s.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
  return reply
}

/** Resolves with the first FIXTURE_LOG record matching `pred`; waits on fs.watch (with a slow poll as a backstop). */
async function fixtureEvent (file: string, pred: (e: Record<string, unknown>) => boolean, timeoutMs = 20_000): Promise<Record<string, unknown>> {
  const find = (): Record<string, unknown> | undefined => {
    if (!existsSync(file)) return undefined
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line === '') continue
      const event = JSON.parse(line) as Record<string, unknown>
      if (pred(event)) return event
    }
    return undefined
  }
  const dir = file.replace(/[^/]+$/, '')
  return await new Promise((resolve, reject) => {
    const watcher = watch(dir, () => { check() })
    const poll = setInterval(() => { check() }, 250)
    const timer = setTimeout(() => { stop(); reject(new Error(`no fixture event in ${file} within ${timeoutMs} ms`)) }, timeoutMs)
    function stop (): void { watcher.close(); clearInterval(poll); clearTimeout(timer) }
    function check (): void { const event = find(); if (event !== undefined) { stop(); resolve(event) } }
    check()
  })
}

/** True when `line` is exactly one JSON-RPC 2.0 message (request, notification or response), or a batch of them. */
function isOneJsonRpcFrame (line: string): boolean {
  let value: unknown
  try { value = JSON.parse(line) } catch { return false }
  const one = (m: unknown): boolean => {
    if (typeof m !== 'object' || m === null || Array.isArray(m)) return false
    const o = m as Record<string, unknown>
    if (o.jsonrpc !== '2.0') return false
    if (typeof o.method === 'string') return true
    return Object.hasOwn(o, 'result') !== Object.hasOwn(o, 'error')
  }
  return Array.isArray(value) ? value.length > 0 && value.every(one) : one(value)
}

const text = (reply: Message): string => (reply.result.content as Array<{ text: string }>).map(c => c.text).join('')

t.test('all/stdio/stdout-carries-only-jsonrpc-frames', async t => {
  const { s } = serve(t)
  const init = await initialize(s)
  t.equal(init.result.protocolVersion, '2025-06-18')
  t.same(init.result.serverInfo, { name: 'mcpx', version: JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')).version })

  const list = await s.request({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
  t.ok((list.result.tools as Array<{ name: string }>).some(tool => tool.name === 'echo'), 'single upstream: tools are not prefixed')
  t.notOk(Object.hasOwn(list.result, 'resultType'), 'legacy results carry no resultType')

  const echo = await s.request({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'a\nb' } } })
  t.equal(text(echo), 'a\nb', 'a newline inside the text survives framing')
  t.notOk(echo.result.isError)

  const fail = await s.request({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'fail', arguments: {} } })
  t.equal(fail.result.isError, true)
  t.equal(text(fail), 'it failed\non two lines')

  const unknownTool = await s.request({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } })
  t.equal(unknownTool.error.code, -32602)

  const unknownMethod = await s.request({ jsonrpc: '2.0', id: 5, method: 'no/such/method' })
  t.equal(unknownMethod.error.code, -32601)

  s.end()
  const exit = await s.exited
  t.equal(exit.code, 0)
  t.ok(s.lines.length >= 6)
  for (const line of s.lines) t.ok(isOneJsonRpcFrame(line), `one JSON-RPC message: ${line.slice(0, 120)}`)
  t.ok(s.lines.some(line => line.includes('"a\\nb"')), 'the newline travels escaped inside its line')
})

// Requirements that hold before any initialize share one child (spawns are the slow part);
// its subtests run in order, and the last one ends it with SIGTERM.
t.test('all/stdio/before-initialize-one-child', async t => {
  const { s } = serve(t, { maxBodyBytes: 2048 })

  t.test('all/stdio/bad-lines-answered-clearly', async t => {
    let after = s.messages.length
    s.send('this is not json')
    const parseError = await s.nextMessage(m => Object.hasOwn(m, 'error'), { after })
    t.same(parseError, { jsonrpc: '2.0', error: parseError.error }, 'no id on a parse error')
    t.equal(parseError.error.code, -32700)

    after = s.messages.length
    s.send('')
    s.send('   ')
    s.send({ jsonrpc: '2.0', id: 'after-empty', method: 'ping' })
    const next = await s.nextMessage(() => true, { after })
    t.equal(next.id, 'after-empty', 'empty lines are ignored, not answered')

    after = s.messages.length
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 'huge', method: 'ping', params: { pad: 'x'.repeat(5000) } }))
    const tooLong = await s.nextMessage(() => true, { after })
    t.equal(tooLong.error?.code, -32600, 'a line over transport.maxBodyBytes is refused')
    t.notOk(Object.hasOwn(tooLong, 'id'))
    const alive = await s.request({ jsonrpc: '2.0', id: 'still-alive', method: 'ping' })
    t.same(alive.result, {}, 'the server keeps serving after an oversized line')

    after = s.messages.length
    s.send('[1,2')
    s.send({ jsonrpc: '2.0', id: 'p', method: 'ping' })
    const broken = await s.nextMessage(() => true, { after })
    t.equal(broken.error?.code, -32700)
    const ping = await s.nextMessage(m => m.id === 'p', { after })
    t.same(ping.result, {}, 'the line after a broken one is served') // and consumed before the next subtest
  })

  t.test('all/stdio/nesting-too-deep-answered-with-its-id', async t => {
    const after = s.messages.length
    // lib/protocol/jsonrpc MAX_NESTING_DEPTH (128): refused at parse time, never sent upstream.
    s.send(`{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"echo","arguments":{"text":${'['.repeat(500)}${']'.repeat(500)}}}}`)
    const deep = await s.nextMessage(() => true, { after })
    t.same(deep, { jsonrpc: '2.0', id: 'deep', error: { code: -32600, message: 'Invalid Request: nesting deeper than 128 levels' } })
  })

  t.test('2025-03-26/stdio/initialize-in-batch-is-an-error-element', async t => {
    let after = s.messages.length
    s.send([
      { jsonrpc: '2.0', id: 'i', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } },
      { jsonrpc: '2.0', id: 'p', method: 'ping' }
    ])
    await s.nextMessage(() => true, { after })
    const elements = s.messages[after] as Message[]
    t.ok(Array.isArray(elements))
    const byId = new Map(elements.map(e => [e.id, e]))
    t.equal(byId.get('i')?.error?.code, -32600)
    t.match(byId.get('i')?.error?.message, /initialize must not be batched/)
    t.same(byId.get('p'), { jsonrpc: '2.0', id: 'p', result: {} })
    // It initialized nothing: a 2025-06-18 connection would refuse this batch; before initialize it is judged as 2025-03-26.
    after = s.messages.length
    s.send([{ jsonrpc: '2.0', id: 'q', method: 'ping' }])
    await s.nextMessage(() => true, { after })
    t.same(s.messages[after], [{ jsonrpc: '2.0', id: 'q', result: {} }])
    // And the empty batch is an id-less -32600.
    after = s.messages.length
    s.send('[]')
    const empty = await s.nextMessage(() => true, { after })
    t.equal(empty.error?.code, -32600)
    t.notOk(Object.hasOwn(empty, 'id'))
  })

  // DIGEST §6h: a batch is 2025-03-26 only and these methods 2026-07-28 only: the answer over HTTP
  // (test/http/legacy.test.ts 2025-03-26/batch/modern-only-method-is-32601), byte for byte.
  t.test('2025-03-26/stdio/modern-only-method-in-batch-is-32601', async t => {
    const after = s.messages.length
    s.send([
      { jsonrpc: '2.0', id: 'listen', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true } } },
      { jsonrpc: '2.0', id: 'discover', method: 'server/discover', params: {} },
      { jsonrpc: '2.0', id: 'p', method: 'ping' }
    ])
    await s.nextMessage(() => true, { after })
    t.same(s.messages[after], [
      { jsonrpc: '2.0', id: 'listen', error: { code: -32601, message: 'Method not found: subscriptions/listen' } },
      { jsonrpc: '2.0', id: 'discover', error: { code: -32601, message: 'Method not found: server/discover' } },
      { jsonrpc: '2.0', id: 'p', result: {} }
    ])
  })

  t.test('2025-03-26/stdio/notifications-only-batch-gets-no-reply', async t => {
    const after = s.messages.length
    s.send([{ jsonrpc: '2.0', method: 'notifications/initialized' }, { jsonrpc: '2.0', method: 'notifications/whatever', params: {} }])
    s.send({ jsonrpc: '2.0', id: 'ping-after-batch', method: 'ping' })
    const next = await s.nextMessage(() => true, { after })
    t.same(next, { jsonrpc: '2.0', id: 'ping-after-batch', result: {} }, 'the next line is the ping reply: the batch wrote nothing')
    await s.nextMessage(m => m.id === 'ping-after-batch', { after }) // consumed before the next subtest, even on failure
  })

  t.test('all/stdio/notifications-and-responses-never-answered', async t => {
    const after = s.messages.length
    s.send({ jsonrpc: '2.0', method: 'notifications/no_such_thing', params: {} })
    s.send({ jsonrpc: '2.0', method: 'notifications/progress', params: 5 })
    s.send({ jsonrpc: '1.0', method: 'notifications/initialized' })
    s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'nobody' } })
    s.send({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'a response nothing waits for' } })
    s.send({ jsonrpc: '2.0', id: 'no-question', result: {} })
    s.send({ jsonrpc: '2.0', id: 'ping-after-notifications', method: 'ping' })
    const next = await s.nextMessage(() => true, { after })
    t.same(next, { jsonrpc: '2.0', id: 'ping-after-notifications', result: {} }, 'nothing was written for the notifications')
    await s.nextMessage(m => m.id === 'ping-after-notifications', { after })
  })

  t.test('all/stdio/ids-echoed-exactly', async t => {
    const after = s.messages.length
    s.send('{"jsonrpc":"2.0","id":0,"method":"ping"}')
    s.send('{"jsonrpc":"2.0","id":"0","method":"ping"}')
    s.send('{"jsonrpc":"2.0","id":-1,"method":"ping"}')
    s.send('{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}')
    await s.nextMessage(m => typeof m.id === 'number' && m.id > 2 ** 52, { after })
    await s.nextMessage(m => m.id === -1, { after })
    await s.nextMessage(m => m.id === '0', { after })
    await s.nextMessage(m => m.id === 0, { after })
    const raw = s.lines.slice(after)
    t.ok(raw.includes('{"jsonrpc":"2.0","id":0,"result":{}}'), 'id 0')
    t.ok(raw.includes('{"jsonrpc":"2.0","id":"0","result":{}}'), 'id "0"')
    t.ok(raw.includes('{"jsonrpc":"2.0","id":-1,"result":{}}'), 'id -1')
    t.ok(raw.includes('{"jsonrpc":"2.0","id":9007199254740993,"result":{}}'), 'id 9007199254740993, digit for digit')
  })

  t.test('2024-11-05/stdio/before-initialize-answered-in-oldest-shapes', async t => {
    const ping = await s.request({ jsonrpc: '2.0', id: 1, method: 'ping' })
    t.same(ping, { jsonrpc: '2.0', id: 1, result: {} })
    const list = await s.request({ jsonrpc: '2.0', id: 2, method: 'tools/list' })
    t.ok(Array.isArray(list.result.tools))
    t.notOk(Object.hasOwn(list.result, 'resultType'))
    t.notOk(Object.hasOwn(list.result, 'ttlMs'))
  })

  t.test('all/stdio/sigterm-exits-0', async t => {
    s.child.kill('SIGTERM')
    const exit = await s.exited
    t.equal(exit.code, 0)
  })
})

t.test('all/stdio/cancelled-call-reaches-upstream-and-is-not-answered', async t => {
  const { s, logFile } = serve(t)
  await initialize(s)
  s.send({ jsonrpc: '2.0', id: 'slow-1', method: 'tools/call', params: { name: 'slow', arguments: { ms: 20_000, steps: 200 }, _meta: { progressToken: 'tok' } } })
  await fixtureEvent(logFile, e => e.event === 'started')
  await s.nextMessage(m => m.method === 'notifications/progress' && m.params.progressToken === 'tok')
  s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'slow-1', reason: 'test' } })
  const cancelled = await fixtureEvent(logFile, e => e.event === 'cancelled')
  t.equal(cancelled.tool, 'slow', 'the upstream saw the cancellation')
  // Two round trips after the cancellation: any reply or progress for slow-1 would be on stdout by now.
  await s.request({ jsonrpc: '2.0', id: 'after-1', method: 'ping' })
  const lastIndex = s.messages.length
  await s.request({ jsonrpc: '2.0', id: 'after-2', method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } })
  t.notOk(s.messages.some(m => (m as Message).id === 'slow-1'), 'no reply, not even an error, for a cancelled request')
  t.notOk(s.messages.slice(lastIndex).some(m => (m as Message).method === 'notifications/progress'), 'no progress after the cancellation')
})

t.test('all/stdio/ping-answered-while-slow-call-runs', async t => {
  const { s, logFile } = serve(t)
  await initialize(s)
  s.send({ jsonrpc: '2.0', id: 'slow', method: 'tools/call', params: { name: 'slow', arguments: { ms: 20_000, steps: 20 } } })
  await fixtureEvent(logFile, e => e.event === 'started')
  const ping = await s.request({ jsonrpc: '2.0', id: 'ping', method: 'ping' })
  t.same(ping, { jsonrpc: '2.0', id: 'ping', result: {} })
  t.notOk(s.messages.some(m => (m as Message).id === 'slow'), 'the slow call is still running')
  s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'slow' } })
  await fixtureEvent(logFile, e => e.event === 'cancelled')
})

t.test('2025-03-26/stdio/batch-answered-as-array', async t => {
  const { s, logFile } = serve(t)
  await initialize(s, '2025-03-26')
  const after = s.messages.length
  s.send([
    { jsonrpc: '2.0', id: 10, method: 'ping' },
    { jsonrpc: '2.0', method: 'notifications/whatever' },
    { jsonrpc: '2.0', id: 11, method: 'tools/call', params: { name: 'echo', arguments: { text: 'in a batch' } } }
  ])
  const reply = await s.nextMessage(() => true, { after })
  t.ok(Array.isArray(s.messages[after]), 'one line holding an array')
  const elements = s.messages[after] as Message[]
  t.equal(elements.length, 2, 'requests only: the notification has no element')
  const byId = new Map(elements.map(e => [e.id, e]))
  t.same(byId.get(10), { jsonrpc: '2.0', id: 10, result: {} })
  t.equal(text(byId.get(11) as Message), 'in a batch')
  t.ok(reply)

  t.test('all/stdio/cancel-names-an-unsafe-integer-id-exactly', async t => {
    // 9007199254740993 rounds to …992 in JSON.parse, itself an exact id in flight: the
    // cancellation must stop …993 (a call of a minute) and leave …992 (a second) to answer.
    s.send('{"jsonrpc":"2.0","id":9007199254740992,"method":"tools/call","params":{"name":"slow","arguments":{"ms":1000,"steps":1}}}')
    s.send('{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"slow","arguments":{"ms":60000,"steps":1}}}')
    const started = (): number => existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').filter(line => line.includes('"event":"started"')).length : 0
    await pollUntil('both calls started upstream', () => started() === 2, 20_000)
    const at = s.lines.length
    s.send('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9007199254740993}}')
    await fixtureEvent(logFile, e => e.event === 'cancelled')
    await s.nextMessage(m => m.result !== undefined && String(m.id) === '9007199254740992', { after: at })
    t.ok(s.lines.slice(at).some(line => line.startsWith('{"jsonrpc":"2.0","id":9007199254740992,"result"')), '…992 answered, its id exact')
    t.notOk(s.lines.slice(at).some(line => line.includes('9007199254740993')), '…993 cancelled: nothing more for it')
  })

  t.test('limits/stdio/batch-of-too-many-members-refused-whole', async t => {
    // transport.maxBatchMembers (default 1,000), as over HTTP: one id-less -32600 for the line.
    let after = s.messages.length
    s.send(JSON.stringify(new Array(1001).fill(0)))
    const refused = await s.nextMessage(() => true, { after })
    t.same(refused, { jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request: a batch of 1001 members is more than the 1000 allowed' } })
    after = s.messages.length
    s.send(Array.from({ length: 1000 }, (_, i) => ({ jsonrpc: '2.0', id: `m${i}`, method: 'ping' })))
    await s.nextMessage(() => true, { after })
    t.equal((s.messages[after] as unknown[]).length, 1000, 'a batch of exactly 1,000 members is served')
  })

  t.test('2025-03-26/stdio/batch-replies-carry-their-members-ids', async t => {
    // Seeded batches (test/helpers/batch-ids.ts), one line each; the reply ids are read from the
    // raw stdout line. A shifted id also made a later member "already in flight".
    const rand = prng(0x57d10)
    const problems: string[] = []
    for (let n = 0; n < 300 && problems.length < 3; n++) {
      const batch = generateBatch(rand)
      const at = s.lines.length
      s.send(batch.text.replace(/[\r\n]/g, ' '))
      await s.nextMessage(() => true, { after: s.messages.length })
      const line = s.lines[at]
      const got = replyIdTexts(line)
      const want = expectedReplies(batch)
      const nulls = got.ids.filter(id => id === 'null').length
      const ids = got.ids.filter(id => id !== 'null').sort()
      if (JSON.stringify(ids) !== JSON.stringify(want.ids) || nulls + got.idless !== want.idless) {
        problems.push(`${batch.text}\n→ ${line}\nwant ids ${want.ids.join(' ')} and ${want.idless} without one`)
      }
    }
    t.same(problems, [], 'each request answered once, with its own id')
  })
})

t.test('limits/stdio/batch-members-in-progress-bounded-replies-in-order', async t => {
  // The same bound as a POST batch's (transport.maxBatchInFlight, lib/connection/batch.ts), on a batch
  // line: runStdio (stdio.ts, what `mcpx serve` runs) in this process on a stream pair, over the
  // hand-written hostile upstream, which records how many calls it holds unanswered (`open`).
  // Before the bound every member started at once (open reached ~28).
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-stdio-batch-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const log = join(dir, 'fixture.log')
  const release = join(dir, 'release')
  writeFileSync(release, '') // each hold answers at its first 20 ms poll
  const BOUND = 4
  const input = new PassThrough()
  const output = new PassThrough()
  // The first array line on stdout is the batch's reply.
  const lines: unknown[] = []
  const reply = new Promise<Message[]>((resolve, reject) => {
    const timer = setTimeout(() => { reject(new Error(`no batch reply; stdout: ${JSON.stringify(lines)}`)) }, 60_000)
    createInterface({ input: output }).on('line', line => {
      const message = JSON.parse(line) as unknown
      lines.push(message)
      if (Array.isArray(message)) { clearTimeout(timer); resolve(message as Message[]) }
    })
  })
  const config = loadConfig({ transport: { maxBatchInFlight: BOUND }, upstreams: { h: { command: process.execPath, args: [HOSTILE_PATH], env: { FIXTURE_LOG: log } } } })
  const exited = runStdio(config, pino({ level: 'silent' }), { input, output })
  t.teardown(() => { input.end() })
  const members: object[] = []
  const expected: Array<string | number> = []
  for (let i = 0; i < 30; i++) {
    if (i === 5) members.push({ jsonrpc: '2.0', method: 'notifications/whatever' }) // no reply
    else if (i === 11) { members.push({ jsonrpc: '2.0', id: 'p', method: 'ping' }); expected.push('p') }
    else { const id = i % 2 === 0 ? i : `s${i}`; members.push({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hold', arguments: { tag: String(id), release } } }); expected.push(id) }
  }
  // Before any initialize a batch is judged as 2025-03-26 (seed › stdio › Batches).
  input.write(JSON.stringify(members) + '\n')
  const replies = await reply
  t.same(replies.map(m => m.id), expected, 'one reply per request member, in batch order, each with its own id')
  for (const m of replies.filter(m => m.id !== 'p')) t.equal(text(m), `released ${String(m.id)}`, `member ${String(m.id)} got its own result`)
  const calls = readFileSync(log, 'utf8').split('\n').filter(l => l !== '').map(l => JSON.parse(l) as { event: string, open?: number }).filter(r => r.event === 'call')
  t.equal(calls.length, 28, 'every tools/call member reached the upstream')
  const most = Math.max(...calls.map(r => r.open ?? 0))
  t.ok(most <= BOUND, `at most maxBatchInFlight (${BOUND}) members in progress at once: the upstream held ${most} at most`)
  input.end()
  t.equal(await exited, 0, 'runStdio returns 0 at EOF')
})

t.test('2025-06-18/stdio/batch-refused', async t => {
  const { s } = serve(t)
  await initialize(s, '2025-06-18')
  const after = s.messages.length
  s.send([{ jsonrpc: '2.0', id: 20, method: 'ping' }, { jsonrpc: '2.0', id: 21, method: 'ping' }])
  const reply = await s.nextMessage(() => true, { after })
  t.notOk(Array.isArray(reply))
  t.equal(reply.error.code, -32600)
  t.notOk(Object.hasOwn(reply, 'id'), 'one id-less error for the line')
  const ping = await s.request({ jsonrpc: '2.0', id: 22, method: 'ping' })
  t.same(ping.result, {})
})

t.test('all/stdio/eof-after-5-requests-all-answered', async t => {
  const { s } = serve(t)
  await initialize(s)
  const ids = ['r1', 'r2', 'r3', 'r4', 'r5']
  s.send({ jsonrpc: '2.0', id: 'r1', method: 'tools/call', params: { name: 'slow', arguments: { ms: 300, steps: 2 } } })
  s.send({ jsonrpc: '2.0', id: 'r2', method: 'ping' })
  s.send({ jsonrpc: '2.0', id: 'r3', method: 'tools/call', params: { name: 'slow', arguments: { ms: 400, steps: 2 } } })
  s.send({ jsonrpc: '2.0', id: 'r4', method: 'tools/call', params: { name: 'echo', arguments: { text: 'eof' } } })
  s.send({ jsonrpc: '2.0', id: 'r5', method: 'tools/list' })
  s.end()
  const exit = await s.exited
  t.equal(exit.code, 0, 'exits 0 after the drain')
  const answered = new Map(s.messages.map(m => [(m as Message).id, m as Message]))
  for (const id of ids) t.ok(answered.get(id)?.result, `${id} answered`)
  t.equal(text(answered.get('r1') as Message), 'slept 300')
  t.equal(text(answered.get('r3') as Message), 'slept 400')
})

t.test('all/stdio/eof-drain-expiry-cancels-and-exits', async t => {
  const { s, logFile } = serve(t, { stdioDrain: 300 })
  await initialize(s)
  s.send({ jsonrpc: '2.0', id: 'too-slow', method: 'tools/call', params: { name: 'slow', arguments: { ms: 60_000, steps: 600 } } })
  await fixtureEvent(logFile, e => e.event === 'started')
  s.end()
  const exit = await s.exited
  t.equal(exit.code, 0)
  t.notOk(s.messages.some(m => (m as Message).id === 'too-slow'), 'a request cancelled by the drain is not answered')
})

t.test('all/stdio/broken-stdout-exits-quietly', async t => {
  const { s } = serve(t)
  await initialize(s)
  s.child.stdout?.destroy() // the host stops reading: mcpx's next write fails with EPIPE
  for (let i = 0; i < 3; i++) s.send({ jsonrpc: '2.0', id: `lost-${i}`, method: 'ping' })
  const exit = await s.exited
  t.equal(exit.code, 0, 'exits 0, stdin still open')
  t.notMatch(s.stderr(), /EPIPE|Unhandled|at .*\.js:\d+/, 'no crash on stderr')
})

t.test('2026-07-28/stdio/modern-requests-served-statelessly', async t => {
  const { s } = serve(t)
  const discover = await s.request({ jsonrpc: '2.0', id: 'd', method: 'server/discover', params: { _meta: modernMeta() } })
  t.ok(discover.result.supportedVersions.includes(MODERN))
  t.equal(discover.result.resultType, 'complete')
  t.type(discover.result.ttlMs, 'number')
  t.ok(['public', 'private'].includes(discover.result.cacheScope))

  const list = await s.request({ jsonrpc: '2.0', id: 'l', method: 'tools/list', params: { _meta: modernMeta() } })
  t.equal(list.result.resultType, 'complete')
  t.type(list.result.ttlMs, 'number')
  t.ok(['public', 'private'].includes(list.result.cacheScope))
  t.ok((list.result.tools as Array<{ name: string }>).some(tool => tool.name === 'echo'))

  const call = await s.request({ jsonrpc: '2.0', id: 'c', method: 'tools/call', params: { name: 'echo', arguments: { text: 'modern' }, _meta: modernMeta() } })
  t.equal(call.result.resultType, 'complete')
  t.equal(text(call), 'modern')

  const noCaps = await s.request({ jsonrpc: '2.0', id: 'n', method: 'tools/list', params: { _meta: { [META_VERSION]: MODERN } } })
  t.equal(noCaps.error.code, -32602, 'missing clientCapabilities is invalid params')

  const discoverNoMeta = await s.request({ jsonrpc: '2.0', id: 'dn', method: 'server/discover' })
  t.equal(discoverNoMeta.error.code, -32602, 'server/discover without _meta: the envelope is missing')

  // A legacy initialize later does not stop modern requests from being served as modern (DIGEST A12, dual-era).
  await initialize(s)
  const after = await s.request({ jsonrpc: '2.0', id: 'l2', method: 'tools/list', params: { _meta: modernMeta() } })
  t.equal(after.result.resultType, 'complete')
})

// These two use a legacy-only upstream (fixture --era legacy): one upstream connection, so the
// tool added (or the counter bumped) is in the same process the lists come from. With a dual-era
// upstream the registry may serve legacy-era calls on a second connection (a second process).
t.test('2025-06-18/stdio/list-changed-forwarded-after-initialize', async t => {
  const { s } = serve(t, {}, ['--era', 'legacy'])
  await initialize(s)
  const after = s.messages.length
  const added = await s.request({ jsonrpc: '2.0', id: 'add', method: 'tools/call', params: { name: 'add_tool', arguments: { name: 'added_one' } } })
  t.equal(text(added), 'added added_one')
  const changed = await s.nextMessage(m => m.method === 'notifications/tools/list_changed', { after })
  t.same(changed, { jsonrpc: '2.0', method: 'notifications/tools/list_changed' })
  const list = await s.request({ jsonrpc: '2.0', id: 'l', method: 'tools/list' })
  t.ok((list.result.tools as Array<{ name: string }>).some(tool => tool.name === 'added_one'))
})

t.test('2025-06-18/stdio/resources-updated-after-subscribe', async t => {
  const { s } = serve(t, {}, ['--era', 'legacy'])
  await initialize(s)
  const sub = await s.request({ jsonrpc: '2.0', id: 'sub', method: 'resources/subscribe', params: { uri: 'fixture://counter' } })
  t.same(sub.result, {})
  const after = s.messages.length
  await s.request({ jsonrpc: '2.0', id: 'bump', method: 'tools/call', params: { name: 'bump', arguments: {} } })
  const updated = await s.nextMessage(m => m.method === 'notifications/resources/updated', { after })
  t.same(updated, { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'fixture://counter' } })
})

t.test('2026-07-28/stdio/subscriptions-listen', async t => {
  const { s } = serve(t)
  const tagged = (id: string) => (m: Message): boolean => m.params?._meta?.[META_SUB] === id
  s.send({ jsonrpc: '2.0', id: 'L', method: 'subscriptions/listen', params: { _meta: modernMeta(), notifications: { toolsListChanged: true } } })
  s.send({ jsonrpc: '2.0', id: 'M', method: 'subscriptions/listen', params: { _meta: modernMeta(), notifications: { toolsListChanged: true, promptsListChanged: false } } })
  const ackL = await s.nextMessage(tagged('L'))
  t.equal(ackL.method, 'notifications/subscriptions/acknowledged', 'the acknowledgement is the first message for the listen')
  t.same(ackL.params.notifications, { toolsListChanged: true })
  const ackM = await s.nextMessage(tagged('M'))
  t.equal(ackM.method, 'notifications/subscriptions/acknowledged')

  let after = s.messages.length
  await s.request({ jsonrpc: '2.0', id: 'add1', method: 'tools/call', params: { name: 'add_tool', arguments: { name: 'listen_one' }, _meta: modernMeta() } })
  const changed = await s.nextMessage(m => tagged('L')(m) && m.method === 'notifications/tools/list_changed', { after })
  t.same(changed.params, { _meta: { [META_SUB]: 'L' } })

  s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'L' } })
  after = s.messages.length
  await s.request({ jsonrpc: '2.0', id: 'add2', method: 'tools/call', params: { name: 'add_tool', arguments: { name: 'listen_two' }, _meta: modernMeta() } })
  // The same hub event reaches both listens; once M has it, L would have had it too.
  await s.nextMessage(m => tagged('M')(m) && m.method === 'notifications/tools/list_changed', { after })
  t.notOk(s.messages.slice(after).some(m => tagged('L')(m as Message) || (m as Message).id === 'L'), 'nothing more for a cancelled listen, not even a result')

  const bad = await s.request({ jsonrpc: '2.0', id: 'bad', method: 'subscriptions/listen', params: { _meta: modernMeta() } })
  t.equal(bad.error.code, -32602, 'notifications is required')
})

// A question reaches the stdio client whichever era the upstream speaks: a legacy upstream
// (fixture --era legacy) sends elicitation/create as a real server→client request; a dual-era one
// may instead be spoken to in the modern era and answer input_required, which the dispatcher's MRTR
// bridge turns into the same question. Either way mcpx writes it on stdout with its own id and
// routes the client's response back.
for (const [upstreamEra, flags] of [['legacy', ['--era', 'legacy']], ['dual-era', []]] as const) {
  t.test(`2025-06-18/stdio/question-relayed-to-a-capable-client-${upstreamEra}-upstream`, async t => {
    const { s } = serve(t, {}, [...flags])
    await initialize(s, '2025-06-18', { elicitation: {} })
    const after = s.messages.length
    s.send({ jsonrpc: '2.0', id: 'e', method: 'tools/call', params: { name: 'elicit', arguments: {} } })
    const question = await s.nextMessage(m => m.method === 'elicitation/create', { after })
    t.type(question.id, 'string')
    t.match(question.id, /^mcpx-q-/)
    t.equal(question.params.message, 'Who are you?')
    s.send({ jsonrpc: '2.0', id: 'unknown-answer', result: {} }) // a response nothing waits for: ignored
    s.send({ jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { name: 'Ada' } } })
    const reply = await s.nextMessage(m => m.id === 'e', { after })
    t.notOk(reply.result.isError)
    t.match(text(reply), /Ada/)
    t.notOk(Object.hasOwn(reply.result, 'resultType'), 'a legacy client never sees resultType')
  })

  t.test(`2025-06-18/stdio/question-refused-without-capability-${upstreamEra}-upstream`, async t => {
    const { s } = serve(t, {}, [...flags])
    await initialize(s, '2025-06-18', {})
    const after = s.messages.length
    const reply = await s.request({ jsonrpc: '2.0', id: 'e', method: 'tools/call', params: { name: 'elicit', arguments: {} } })
    t.ok(Object.hasOwn(reply, 'error') || reply.result.isError === true, 'the tool fails: the client cannot be asked')
    t.notOk(s.messages.slice(after).some(m => (m as Message).method === 'elicitation/create'), 'no question was written')
  })
}

t.test('2025-11-25/stdio/official-v1-client-lists-and-calls', async t => {
  const { config } = fixtureConfig(t)
  const file = writeConfig(t, config)
  const transport = new StdioClientTransportV1({ command: process.execPath, args: serveArgs(file), stderr: 'pipe' })
  const client = new ClientV1({ name: 'v1-test', version: '1.0.0' })
  t.teardown(() => client.close())
  await client.connect(transport)
  const { tools } = await client.listTools()
  t.ok(tools.some(tool => tool.name === 'echo'))
  const result = await client.callTool({ name: 'echo', arguments: { text: 'from v1' } })
  t.same(result.content, [{ type: 'text', text: 'from v1' }])
})

t.test('2026-07-28/stdio/official-v2-client-goes-modern', async t => {
  const { config } = fixtureConfig(t)
  const file = writeConfig(t, config)
  const transport = new StdioClientTransportV2({ command: process.execPath, args: serveArgs(file), stderr: 'pipe' })
  const client = new ClientV2({ name: 'v2-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } })
  t.teardown(() => client.close())
  await client.connect(transport)
  t.equal(client.getProtocolEra(), 'modern')
  const { tools } = await client.listTools()
  t.ok(tools.some(tool => tool.name === 'echo'))
  const result = await client.callTool({ name: 'echo', arguments: { text: 'from v2' } })
  t.same(result.content, [{ type: 'text', text: 'from v2' }])
})
