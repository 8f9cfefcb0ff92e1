/**
 * The audit trail (docs/policy.md › Audit) over real HTTP in both eras, on a real daemon and a
 * spawned `mcpx serve`: the line keys, denials logged as `denied`, no token and no session id in
 * the trail, the `arguments` modes, stderr (never stdout) on stdio, and a full disk or an
 * unwritable file that never stops serving (counted in mcpx_audit_failures_total, logged once),
 * whose lost lines are counted one by one (mcpx_audit_lines_lost_total), while a write that fails
 * and is retried loses none (a FIFO whose reader goes away and comes back: EPIPE, then served).
 * Tests are named audit/<area>/<requirement>.
 */
import t from 'tap'
import { readFileSync, existsSync, openSync, constants } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { once } from 'node:events'
import { Socket } from 'node:net'
import { join } from 'node:path'
import { pino } from 'pino'
import { listen, fixtureUpstreams } from '../helpers/app.js'
import { startDaemon } from '../helpers/daemon.js'
import { spawnServe } from '../helpers/spawn.js'
import { fixtureCommand } from '../helpers/fixture.js'
import { pollUntil } from '../helpers/legacy.js'
import { captureLogger } from '../helpers/registry.js'
import { TOKENS, legacyRpc, legacySession, modernRpc, request, tokensAuth, untilReady } from '../helpers/policy.js'
import { AuditTrail, sessionHash, type AuditEvent } from '../../lib/policy/audit.js'

const POLICY = {
  rules: [
    { principals: { scopes: ['mcp:admin'] }, allow: { tools: ['*'], prompts: ['*'], resources: ['*'] } },
    { principals: { tokens: ['ci'] }, allow: { tools: ['echo'] } }
  ]
}
const SERVERS = { support: { tools: { allow: ['echo'] }, rename: { echo: 'say' } } }

/** The keys every line carries (others: session, name, upstream, upstreamName, code, argumentKeys/arguments). */
const ALWAYS = ['time', 'principal', 'endpoint', 'era', 'revision', 'method', 'outcome', 'durationMs', 'requestId']

type Line = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

function linesOf (file: string): Line[] {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8').split('\n').filter(l => l !== '').map(l => JSON.parse(l) as Line)
}

async function untilLines (file: string, count: number): Promise<Line[]> {
  return await pollUntil(`${count} audit lines`, () => { const lines = linesOf(file); return lines.length >= count ? lines : undefined }, 20_000)
}

t.test('audit/lines/one-per-call-and-denial-in-both-eras', async t => {
  const file = join(t.testdir(), 'logs', 'audit.jsonl')
  const { base, app } = await listen(t, { upstreams: fixtureUpstreams(), auth: tokensAuth(), policy: POLICY, servers: SERVERS, audit: { file, arguments: 'keys' } })
  await app.upstreams.ready()
  const ci = { base, token: 'ci' }
  const admin = { base, token: 'admin' }
  await modernRpc(ci, 'm1', 'tools/call', { name: 'echo', arguments: { text: 'hi' } }) // ok
  await modernRpc(ci, 'm2', 'tools/call', { name: 'bump', arguments: {} }) // denied (looks absent)
  await modernRpc(ci, 'm3', 'tools/list') // not audited
  const session = await legacySession(admin)
  await legacyRpc(admin, request(4, 'tools/call', { name: 'fail', arguments: {} }), session) // tool_error
  await legacyRpc(admin, request(5, 'tools/call', { name: 'no_such_tool', arguments: {} }), session) // error -32602
  await legacyRpc(admin, request(6, 'prompts/get', { name: 'greet', arguments: { name: 'x' } }), session) // ok
  await legacyRpc(admin, request(7, 'resources/read', { uri: 'fixture://static' })) // ok, sessionless
  await legacyRpc(ci, request(8, 'completion/complete', { ref: { type: 'ref/prompt', name: 'greet' }, argument: { name: 'name', value: 'a' } })) // denied, not a call method
  await modernRpc({ base, path: '/mcp/support', token: 'ci' }, 9, 'tools/call', { name: 'say', arguments: { text: 'renamed' } }) // ok, exposed name
  const lines = await untilLines(file, 8)
  t.equal(lines.length, 8, 'one line per audited request; tools/list is not audited')
  for (const line of lines) for (const key of ALWAYS) t.ok(key in line, `${String(line.requestId)}: has ${key}`)
  const byId = new Map(lines.map(l => [l.requestId, l]))
  t.match(byId.get('m1'), { principal: 'token:ci', endpoint: '/mcp', era: 'modern', revision: '2026-07-28', method: 'tools/call', name: 'echo', upstream: 'fixture', upstreamName: 'echo', outcome: 'ok', argumentKeys: ['text'] })
  t.notOk('session' in (byId.get('m1') ?? {}), 'a modern request has no session')
  t.match(byId.get('m2'), { principal: 'token:ci', method: 'tools/call', name: 'bump', outcome: 'denied' }, 'a hidden call is logged as denied')
  t.notOk('code' in (byId.get('m2') ?? {}), 'denied carries no code')
  t.match(byId.get(4), { principal: 'token:admin', era: 'legacy', revision: '2025-03-26', outcome: 'tool_error', session: sessionHash(session.id) })
  t.match(byId.get(5), { outcome: 'error', code: -32602, name: 'no_such_tool' })
  t.notOk('upstream' in (byId.get(5) ?? {}), 'no upstream for a name none serves')
  t.match(byId.get(6), { method: 'prompts/get', name: 'greet', upstream: 'fixture', upstreamName: 'greet', outcome: 'ok', argumentKeys: ['name'] })
  t.match(byId.get(7), { method: 'resources/read', name: 'fixture://static', upstream: 'fixture', outcome: 'ok' })
  t.notOk('session' in (byId.get(7) ?? {}))
  t.match(byId.get(8), { method: 'completion/complete', name: 'greet', outcome: 'denied' }, 'a denial of any method is logged')
  t.match(byId.get(9), { endpoint: '/mcp/support', name: 'say', upstreamName: 'echo', outcome: 'ok' }, 'the exposed name, and the upstream\'s own')
  for (const line of lines) t.equal(typeof line.durationMs, 'number')
  const text = readFileSync(file, 'utf8')
  for (const secret of Object.values(TOKENS)) t.notOk(text.includes(secret), 'no token in the trail')
  t.notOk(text.includes(session.id), 'the session id itself is never written')
  t.notOk(text.includes('"hi"'), 'arguments "keys": no values')
})

t.test('audit/arguments/none-keys-full', async t => {
  const dir = t.testdir()
  const event = { principal: 'local', endpoint: '/mcp', era: 'legacy', revision: '2025-03-26', method: 'tools/call', name: 'echo', outcome: 'ok' as const, durationMs: 1, requestId: 1, arguments: { text: 'secret value', n: 2 } }
  const got: Record<string, Line> = {}
  for (const mode of ['none', 'keys', 'full'] as const) {
    const file = join(dir, `${mode}.jsonl`)
    const trail = new AuditTrail({ file, arguments: mode }, { logger: pino({ level: 'silent' }) })
    trail.record(event)
    await trail.close()
    got[mode] = linesOf(file)[0]
  }
  t.notOk('arguments' in got.none || 'argumentKeys' in got.none, 'none: nothing of the arguments')
  t.same(got.keys.argumentKeys, ['text', 'n'], 'keys: their names')
  t.notOk('arguments' in got.keys)
  t.same(got.full.arguments, { text: 'secret value', n: 2 }, 'full: the arguments')
})

/** An audited call of `requestId` (the lines of the tests below). */
function callEvent (requestId: number): AuditEvent {
  return { principal: 'local', endpoint: '/mcp', era: 'legacy', revision: '2025-03-26', method: 'tools/call', outcome: 'ok', durationMs: 0, requestId }
}

t.test('audit/failures/full-disk-and-unwritable-counted-and-logged-once', async t => {
  for (const file of ['/dev/full', '/dev/null/not-a-dir/audit.jsonl']) {
    const log = captureLogger()
    const failed: string[] = []
    const trail = new AuditTrail({ file, arguments: 'none' }, { logger: log.logger, onFailure: reason => failed.push(reason) })
    for (let i = 0; i < 5; i++) {
      trail.record(callEvent(i))
      await new Promise(resolve => setImmediate(resolve))
    }
    await pollUntil(`${file}: failures counted`, () => trail.failures >= 1, 10_000)
    await trail.close()
    t.ok(trail.failures >= 1, `${file}: counted (${trail.failures})`)
    t.equal(failed.length, trail.failures, `${file}: every failure reaches the metric callback`)
    t.equal(log.lines.filter(l => String(l.msg).startsWith('audit trail')).length, 1, `${file}: logged once`)
    t.equal(trail.linesLost, 5, `${file}: the 5 lines counted lost, once each`)
  }
})

/** The value of a counter's series in the app's metrics text, or undefined when it has none. */
async function counterOf (app: { mcpxMetrics: { registry: { metrics: () => Promise<string> } } }, series: string): Promise<number | undefined> {
  const text = await app.mcpxMetrics.registry.metrics()
  const line = text.split('\n').find(l => l.startsWith(series + ' '))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

t.test('audit/lost/full-disk-counts-each-line-lost', async t => {
  // Through HTTP: serving goes on; each line the full disk took is counted lost once it is given up
  // (GIVE_UP_MS of failing writes), however few writes failed.
  const { base, app } = await listen(t, { upstreams: fixtureUpstreams(), audit: { file: '/dev/full' } })
  await app.upstreams.ready()
  const calls = 20
  for (let i = 0; i < calls; i++) {
    const reply = await modernRpc({ base }, i, 'tools/call', { name: 'echo', arguments: { text: 'still' } })
    t.equal(reply.json.result.content[0].text, 'still', 'a full disk never stops serving')
  }
  const lost = await pollUntil(`mcpx_audit_lines_lost_total{reason="write"} ${calls}`, async () => {
    const value = await counterOf(app, 'mcpx_audit_lines_lost_total{reason="write"}')
    return value !== undefined && value >= calls ? value : undefined
  }, 20_000)
  t.equal(lost, calls, 'every line lost is counted, once')
  const failures = await counterOf(app, 'mcpx_audit_failures_total{reason="write"}')
  t.ok(failures !== undefined && failures >= 1, `mcpx_audit_failures_total{reason="write"} ${String(failures)}: the refused writes`)
})

/** Reads a FIFO without blocking (a pipe handle on a non-blocking descriptor): what came, and a close that resolves once the read end is gone. */
function fifoReader (path: string): { lines: () => Line[], close: () => Promise<void> } {
  const socket = new Socket({ fd: openSync(path, constants.O_RDONLY | constants.O_NONBLOCK), readable: true, writable: false })
  let text = ''
  socket.on('data', (chunk: Buffer) => { text += chunk.toString('utf8') })
  return {
    lines: () => text.split('\n').filter(l => l !== '').map(l => JSON.parse(l) as Line),
    close: async () => { const closed = once(socket, 'close'); socket.destroy(); await closed }
  }
}

t.test('audit/lost/retried-write-that-succeeds-loses-nothing', async t => {
  // A real sink that refuses writes and then takes them again: a FIFO whose reader goes away (EPIPE) and comes back.
  const fifo = join(t.testdir(), 'audit.fifo')
  execFileSync('mkfifo', [fifo])
  let reader = fifoReader(fifo)
  const failures: string[] = []
  const lost: number[] = []
  const log = captureLogger()
  const trail = new AuditTrail({ file: fifo, arguments: 'none' }, { logger: log.logger, onFailure: reason => failures.push(reason), onLinesLost: (_reason, lines) => lost.push(lines) })
  t.teardown(async () => { await trail.close() })
  trail.record(callEvent(1))
  await pollUntil('line 1 read', () => reader.lines().length >= 1, 10_000)
  await reader.close()
  for (let i = 2; i <= 6; i++) trail.record(callEvent(i))
  await pollUntil('a write refused (EPIPE)', () => failures.length >= 1, 10_000)
  reader = fifoReader(fifo)
  const read = await pollUntil('lines 2 to 6 read once the reader is back', () => { const got = reader.lines(); return got.length >= 5 ? got : undefined }, 10_000)
  t.same(read.map(l => l.requestId), [2, 3, 4, 5, 6], 'every line, in order, none torn')
  t.same(failures[0], 'write', 'the refused write is a failure')
  t.equal(trail.linesLost, 0, 'nothing lost')
  t.same(lost, [], 'nothing counted lost')
  await trail.close()
  await reader.close()
})

t.test('audit/daemon/lines-on-a-real-daemon', async t => {
  const file = join(t.testdir(), 'audit.jsonl')
  const daemon = await startDaemon(t, { upstreams: fixtureUpstreams(), audit: { file, arguments: 'full' } })
  await untilReady(daemon.base)
  await modernRpc({ base: daemon.base }, 1, 'tools/call', { name: 'echo', arguments: { text: 'daemon' } })
  const [line] = await untilLines(file, 1)
  t.match(line, { principal: 'anonymous', endpoint: '/mcp', era: 'modern', method: 'tools/call', name: 'echo', outcome: 'ok', requestId: 1, arguments: { text: 'daemon' } })
})

t.test('audit/stdio/stderr-never-stdout', async t => {
  const { command, args } = fixtureCommand()
  const child = spawnServe(t, { config: { upstreams: { fixture: { command, args } }, audit: { file: '-', arguments: 'keys' }, policy: { rules: [{ principals: { local: true }, allow: { tools: ['echo'] } }] } } })
  let seq = 100
  await pollUntil('the fixture listed', async () => {
    const reply = await child.request({ jsonrpc: '2.0', id: seq++, method: 'tools/list' })
    return reply.result.tools.length > 0 ? reply : undefined
  }, 20_000)
  await child.request({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } })
  await child.request({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'bump', arguments: {} } })
  const audit = await pollUntil('two audit lines on stderr', () => {
    const found = child.stderr().split('\n').filter(l => l.startsWith('{"time"')).map(l => JSON.parse(l) as Line)
    return found.length >= 2 ? found : undefined
  }, 20_000)
  t.match(audit[0], { principal: 'local', endpoint: '/mcp', method: 'tools/call', name: 'echo', outcome: 'ok', argumentKeys: ['text'] })
  t.match(audit[1], { principal: 'local', name: 'bump', outcome: 'denied' })
  t.ok(child.lines.every(l => { const m = JSON.parse(l) as Line; return m.jsonrpc === '2.0' }), 'stdout carries only MCP')
  const refused = spawnServe(t, { config: { upstreams: { fixture: { command, args } }, audit: { file: '/dev/stdout' } } })
  const exited = await refused.exited
  t.not(exited.code, 0, 'an audit file that is stdout is refused in mcpx serve')
  t.match(refused.stderr(), /audit\.file "\/dev\/stdout" is stdout/)
  t.same(refused.lines, [], 'nothing on stdout')
})
