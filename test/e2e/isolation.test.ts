/**
 * Isolated upstreams and shared upstreams that stop guessing (docs/upstreams.md › Isolated upstreams), on a REAL daemon with
 * real fixture children and real legacy HTTP sessions.
 *
 * A shared stdio upstream (the fixture in its legacy era: its `elicit` tool sends a real
 * `elicitation/create`, its `log` tool real `notifications/message`) serves two sessions at once.
 * Nothing on the stdio wire says which call a question or log line belongs to, so with both
 * sessions' calls in flight mcpx must deliver it to neither: the question is refused upstream,
 * the log line dropped, both counted (mcpx_upstream_unrouted_total), warned once.
 */
import t from 'tap'
import { execFileSync } from 'node:child_process'
import { isAlive, startDaemon } from '../helpers/daemon.js'
import { fixtureCommand } from '../helpers/fixture.js'
import { legacyHeaders, modernHeaders, sseMessages } from '../helpers/app.js'
import { modernBody } from '../helpers/modern-wire.js'
import { callBody, fetchSession, fixtureEvents, fixtureLogPath, pollUntil, post, sessionHeaders, SseReader } from '../helpers/legacy.js'
import { REDIS_URL, redisTestPrefix } from '../helpers/redis.js'
import { spawnServe } from '../helpers/spawn.js'

const REVISION = '2025-06-18'
const isMethod = (method: string) => (m: Record<string, unknown>): boolean => m.method === method

/** Every message of a reply, whether it came as JSON or as an SSE stream (read to its end). */
async function replyMessages (res: Response): Promise<any[]> {
  const text = await res.text()
  return res.headers.get('content-type') === 'text/event-stream' ? sseMessages(text) : [JSON.parse(text)]
}

/** The value of one sample of /metrics, or 0 when absent. */
async function metric (base: string, sample: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text()
  const line = text.split('\n').find(l => l.startsWith(sample + ' '))
  return line === undefined ? 0 : Number(line.slice(sample.length + 1))
}

t.test('isolation/shared/question-never-guessed', async t => {
  const daemon = await startDaemon(t, { upstreams: { fixture: fixtureCommand('--era', 'legacy') } })
  const base = daemon.base
  const a = await fetchSession(base, REVISION, { elicitation: {} })
  const b = await fetchSession(base, REVISION, { elicitation: {} })
  // A's call asks while it is the only call in flight: tied to A, relayed to A.
  const streamA = new SseReader(await post(base, callBody(21, 'elicit'), sessionHeaders(a, REVISION)))
  const questionA = await streamA.message('A\'s question', isMethod('elicitation/create'))
  // B's call asks while A's is still in flight (A has not answered): whose question is it? mcpx cannot tell.
  const messagesB = await replyMessages(await post(base, callBody(22, 'elicit'), sessionHeaders(b, REVISION)))
  const replyB = messagesB.find(m => m.id === 22)
  t.same(messagesB.filter(m => m.method !== undefined).map(m => m.method), [], 'B received no question')
  t.ok(replyB.error !== undefined || replyB.result?.isError === true, 'B\'s call failed: the upstream got an error for its question')
  t.match(JSON.stringify(replyB), /cannot be tied to one of the calls in flight on upstream fixture/, 'the error the upstream got is mcpx\'s refusal')
  t.equal(streamA.messages.filter(isMethod('elicitation/create')).length, 1, 'A received only its own question')
  // A answers its own question and gets its result.
  const answer = await post(base, { jsonrpc: '2.0', id: questionA.id, result: { action: 'accept', content: { name: 'Ada' } } }, sessionHeaders(a, REVISION))
  t.equal(answer.status, 202)
  const replyA = await streamA.message('A\'s reply', m => m.id === 21) as any
  t.match(replyA.result.content[0].text, /Ada/, 'A\'s call completes with A\'s answer')
  t.equal(await metric(base, 'mcpx_upstream_unrouted_total{upstream="fixture",kind="question"}'), 1, 'the refused question is counted')
  // The daemon's stdout is read asynchronously: wait for the line, then check it came once.
  const tiedWarnings = (): unknown[] => daemon.lines.filter(l => /cannot be tied to one caller/.test(String(l.msg)))
  await pollUntil('the warning to reach the log', () => tiedWarnings().length > 0, 10_000)
  const warnings = tiedWarnings()
  t.equal(warnings.length, 1, 'warned once for the upstream')
  t.match(warnings[0], { upstream: 'fixture', level: 40 })
})

t.test('isolation/shared/log-line-never-guessed', async t => {
  const log = fixtureLogPath()
  const daemon = await startDaemon(t, { upstreams: { fixture: { ...fixtureCommand('--era', 'legacy'), env: { FIXTURE_LOG: log } } } })
  const base = daemon.base
  const a = await fetchSession(base, REVISION)
  const b = await fetchSession(base, REVISION)
  // A's long call is in flight while B's call logs.
  const abortA = new AbortController()
  const pendingA = post(base, callBody(31, 'slow', { ms: 60_000, steps: 1 }), sessionHeaders(a, REVISION), abortA.signal)
  pendingA.catch(() => {})
  await pollUntil('A\'s call to start upstream', () => fixtureEvents(log).some(e => e.event === 'started'), 20_000)
  const messagesB = await replyMessages(await post(base, callBody(32, 'log'), sessionHeaders(b, REVISION)))
  t.match(messagesB.find(m => m.id === 32)?.result.content[0].text, 'logged 2', 'B\'s call itself succeeds')
  t.same(messagesB.filter(isMethod('notifications/message')), [], 'B received no log line (it cannot be told whose they are)')
  t.equal(await metric(base, 'mcpx_upstream_unrouted_total{upstream="fixture",kind="log"}'), 2, 'both dropped lines are counted')
  // A's call ends (cancelled); alone in flight, B's next call gets its log lines.
  await post(base, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 31 } }, sessionHeaders(a, REVISION))
  abortA.abort()
  await pollUntil('A\'s call to be cancelled upstream', () => fixtureEvents(log).some(e => e.event === 'cancelled'), 20_000)
  const again = await replyMessages(await post(base, callBody(33, 'log'), sessionHeaders(b, REVISION)))
  t.ok(again.some(m => m.id === 33), 'B\'s second call answered')
  t.equal(again.filter(isMethod('notifications/message')).length, 2, 'with one caller in flight, its log lines reach it')
})

t.test('isolation/per-session/daemon-own-state-delete-and-cap-503', async t => {
  const daemon = await startDaemon(t, { upstreams: { fixture: { ...fixtureCommand(), isolation: 'per-session', maxInstances: 2 } } })
  const base = daemon.base
  const [a, b, c] = [await fetchSession(base, REVISION), await fetchSession(base, REVISION), await fetchSession(base, REVISION)]
  const bump = async (sid: string, id: number): Promise<{ status: number, body: any, retryAfter: string | null }> => {
    const res = await post(base, callBody(id, 'bump'), { ...sessionHeaders(sid, REVISION), accept: 'application/json' })
    return { status: res.status, body: await res.json(), retryAfter: res.headers.get('retry-after') }
  }
  t.equal((await bump(a, 1)).body.result.content[0].text, 'counter 1')
  t.equal((await bump(a, 2)).body.result.content[0].text, 'counter 2')
  t.equal((await bump(b, 3)).body.result.content[0].text, 'counter 1', 'session B has its own instance and counter')
  const capped = await bump(c, 4)
  t.equal(capped.status, 503, 'a third session past maxInstances 2 is 503')
  t.match(capped.body, { jsonrpc: '2.0', id: 4, error: { code: -31_001, message: /all 2 isolated instances are in use/ } })
  t.equal(capped.retryAfter, '5', 'with Retry-After (lib/protocol/http-status.ts refusal row instancesExhausted)')
  const deleted = await fetch(`${base}/mcp`, { method: 'DELETE', headers: sessionHeaders(a, REVISION) })
  t.equal(deleted.status, 204, 'session A deleted')
  await pollUntil('A\'s instance to stop', async () => (await bump(c, 5)).status === 200 || undefined, 20_000)
  t.pass('DELETE stopped A\'s instance: its slot serves session C')
})

/** The pids of a process's children (pgrep -P), sorted; [] when none. */
function childPids (pid: number): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).split('\n').filter(l => l !== '').map(Number).sort((x, y) => x - y)
  } catch {
    return []
  }
}

t.test('isolation/per-session/redis-call-on-another-replica-reaches-the-owner-instance', async t => {
  // Two real daemons sharing one Redis; the upstream in its legacy era, so its `elicit` tool asks a
  // real elicitation/create. Sessions expire after 6 s idle (Redis TTL), so expiry can be watched.
  const config = {
    upstreams: { fixture: { ...fixtureCommand('--era', 'legacy'), isolation: 'per-session' } },
    transport: { sessionIdleTimeout: '6s' },
    sessions: { store: 'redis', redis: REDIS_URL, keyPrefix: redisTestPrefix(t) }
  }
  const [a, b] = await Promise.all([startDaemon(t, config), startDaemon(t, config)])
  const [pidA, pidB] = [a.child.pid as number, b.child.pid as number]
  const sharedA = childPids(pidA)
  const sharedB = childPids(pidB)
  const bump = async (base: string, sid: string, id: number): Promise<{ status: number, body: any }> => {
    const res = await post(base, callBody(id, 'bump'), { ...sessionHeaders(sid, REVISION), accept: 'application/json' })
    return { status: res.status, body: await res.json() }
  }
  const sid = await fetchSession(a.base, REVISION, { elicitation: {} })
  t.equal((await bump(a.base, sid, 1)).body.result.content[0].text, 'counter 1', 'the first call starts the session\'s instance on A')
  const instance = childPids(pidA).filter(pid => !sharedA.includes(pid))
  t.equal(instance.length, 1, 'A runs one instance besides its shared child')
  t.equal((await bump(b.base, sid, 2)).body.result.content[0].text, 'counter 2', 'a call on B reaches A\'s instance: the counter continues')
  t.equal((await bump(b.base, sid, 3)).body.result.content[0].text, 'counter 3')
  t.same(childPids(pidB), sharedB, 'B started no instance of its own')

  // Progress and a question travel back through B: the question is asked on B's reply stream and answered on A.
  const progress = await replyMessages(await post(b.base, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'slow', arguments: { ms: 100, steps: 2 }, _meta: { progressToken: 'p4' } } }, sessionHeaders(sid, REVISION)))
  t.same(progress.filter(isMethod('notifications/progress')).map(m => m.params.progress), [1, 2], 'the instance\'s progress reaches the client on B')
  t.match(progress.find(m => m.id === 4), { result: { content: [{ type: 'text' }] } })
  const stream = new SseReader(await post(b.base, callBody(5, 'elicit'), sessionHeaders(sid, REVISION)))
  const question = await stream.message('the forwarded question', isMethod('elicitation/create'))
  const answer = await post(a.base, { jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { name: 'Ada' } } }, sessionHeaders(sid, REVISION))
  t.equal(answer.status, 202, 'the answer, posted to A, is taken')
  const elicited = await stream.message('the elicit reply', m => m.id === 5) as any
  t.match(elicited.result.content[0].text, /Ada/, 'the instance on A got the answer')

  // What A's instance announces reaches the session's GET stream, held by B.
  const abortGet = new AbortController()
  t.teardown(() => abortGet.abort())
  const get = await fetch(`${b.base}/mcp`, { method: 'GET', headers: { accept: 'text/event-stream', ...sessionHeaders(sid, REVISION) }, signal: abortGet.signal })
  t.equal(get.status, 200)
  const getStream = new SseReader(get)
  t.match((await bump(b.base, sid, 11)).body, { result: { content: [{ text: 'counter 4' }] } }, 'the stream is open (a call between)')
  const added = await post(b.base, callBody(12, 'add_tool', { name: 'instance_tool' }), { ...sessionHeaders(sid, REVISION), accept: 'application/json' })
  t.match(await added.json(), { result: { content: [{ text: 'added instance_tool' }] } }, 'the tool is added on A\'s instance')
  t.same(await getStream.message('the instance\'s list_changed on B', isMethod('notifications/tools/list_changed')), { jsonrpc: '2.0', method: 'notifications/tools/list_changed' })

  // resources/subscribe through B reaches A's instance (the fixture's `bump` announces the counter
  // only to a connection subscribed to it): its resources/updated comes to the GET stream on B.
  const updated = isMethod('notifications/resources/updated')
  const toolsChanged = isMethod('notifications/tools/list_changed')
  const counterRequest = async (base: string, session: string, id: number, method: string): Promise<unknown> =>
    await (await post(base, { jsonrpc: '2.0', id, method, params: { uri: 'fixture://counter' } }, { ...sessionHeaders(session, REVISION), accept: 'application/json' })).json()
  t.same(await counterRequest(b.base, sid, 13, 'resources/subscribe'), { jsonrpc: '2.0', id: 13, result: {} }, 'subscribed through B')
  t.match((await bump(b.base, sid, 14)).body, { result: { content: [{ text: 'counter 5' }] } })
  t.same(await getStream.message('A\'s instance\'s resources/updated on B', updated), { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'fixture://counter' } })
  // Unsubscribed through A: the next bump announces nothing (the list_changed after it shows the stream is past it).
  t.same(await counterRequest(a.base, sid, 15, 'resources/unsubscribe'), { jsonrpc: '2.0', id: 15, result: {} }, 'unsubscribed through A')
  t.match((await bump(b.base, sid, 16)).body, { result: { content: [{ text: 'counter 6' }] } })
  t.match(await (await post(b.base, callBody(17, 'add_tool', { name: 'after_unsubscribe' }), { ...sessionHeaders(sid, REVISION), accept: 'application/json' })).json(), { result: { content: [{ text: 'added after_unsubscribe' }] } })
  await getStream.until('the second tools/list_changed', () => getStream.messages.filter(toolsChanged).length === 2)
  t.equal(getStream.messages.filter(updated).length, 1, 'no resources/updated after the unsubscribe')

  // A subscription made before any replica claimed the instances (through B) is applied when A starts them.
  const sid4 = await fetchSession(a.base, REVISION)
  const get4 = await fetch(`${b.base}/mcp`, { method: 'GET', headers: { accept: 'text/event-stream', ...sessionHeaders(sid4, REVISION) }, signal: abortGet.signal })
  t.equal(get4.status, 200)
  const stream4 = new SseReader(get4)
  t.same(await counterRequest(b.base, sid4, 18, 'resources/subscribe'), { jsonrpc: '2.0', id: 18, result: {} }, 'subscribed through B, no instance yet')
  t.match((await bump(a.base, sid4, 19)).body, { result: { content: [{ text: 'counter 1' }] } }, 'the first call starts its instance on A')
  t.match(await stream4.message('the new instance\'s resources/updated on B', updated), { params: { uri: 'fixture://counter' } })
  const instance4 = childPids(pidA).filter(pid => !sharedA.includes(pid) && !instance.includes(pid))
  t.equal(instance4.length, 1, 'on A')
  t.equal((await fetch(`${b.base}/mcp`, { method: 'DELETE', headers: sessionHeaders(sid4, REVISION) })).status, 204)

  // DELETE on B stops A's instance.
  const deleted = await fetch(`${b.base}/mcp`, { method: 'DELETE', headers: sessionHeaders(sid, REVISION) })
  t.equal(deleted.status, 204)
  await pollUntil('A\'s instances to stop', () => !isAlive(instance[0]) && !isAlive(instance4[0]), 20_000)
  t.same(childPids(pidA), sharedA, 'only A\'s shared child is left')

  // Expiry (a Redis TTL, noticed by nobody) stops the owner's instance too: here B's.
  const sid3 = await fetchSession(a.base, REVISION)
  t.equal((await bump(b.base, sid3, 9)).body.result.content[0].text, 'counter 1', 'a session whose instance is on B')
  const [instanceB] = childPids(pidB).filter(pid => !sharedB.includes(pid))
  t.ok(instanceB, 'B runs it')
  await pollUntil('the expired session\'s instance to stop', () => !isAlive(instanceB), 30_000)
  t.equal((await post(a.base, { jsonrpc: '2.0', id: 10, method: 'ping' }, sessionHeaders(sid3, REVISION))).status, 404, 'the session had expired')

  // The owner dies: B ends the session rather than serve it from a fresh instance.
  const sid2 = await fetchSession(b.base, REVISION)
  t.equal((await bump(a.base, sid2, 6)).body.result.content[0].text, 'counter 1', 'a second session, its instance on A')
  a.child.kill('SIGKILL')
  await a.exited
  const lost = await bump(b.base, sid2, 7)
  t.equal(lost.status, 404, 'the owner is gone: 404, the client starts a new session')
  t.match(lost.body, { jsonrpc: '2.0', id: 7, error: { code: -32_603, message: /replica holding its isolated upstream instances is gone/ } })
  const after = await post(b.base, { jsonrpc: '2.0', id: 8, method: 'ping' }, sessionHeaders(sid2, REVISION))
  t.equal(after.status, 404, 'the session has ended')
  t.equal(((await after.json()) as any).error.code, -32_600)
  t.same(childPids(pidB), sharedB, 'and B started no instance for it')
})

t.test('isolation/per-session/instance-events-reach-their-owner-only', async t => {
  // Isolated instances of the legacy-era fixture: `bump` sends notifications/resources/updated only
  // for a URI its session subscribed (so the owner's subscription must reach its own instance),
  // `add_tool` a tools/list_changed. Owners: two legacy sessions (GET streams) and two 2026-07-28
  // callers told apart by their Authorization header (subscriptions/listen streams).
  const daemon = await startDaemon(t, { upstreams: { fixture: { ...fixtureCommand('--era', 'legacy'), isolation: 'per-session' } } })
  const base = daemon.base
  const abort = new AbortController()
  t.teardown(() => abort.abort())
  const legacyStream = async (sid: string): Promise<SseReader> => {
    const res = await fetch(`${base}/mcp`, { method: 'GET', headers: { accept: 'text/event-stream', ...sessionHeaders(sid, REVISION) }, signal: abort.signal })
    t.equal(res.status, 200)
    return new SseReader(res)
  }
  const [a, b] = [await fetchSession(base, REVISION), await fetchSession(base, REVISION)]
  const [streamA, streamB] = [await legacyStream(a), await legacyStream(b)]
  for (const sid of [a, b]) {
    const res = await post(base, { jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri: 'fixture://counter' } }, { ...sessionHeaders(sid, REVISION), accept: 'application/json' })
    t.same(await res.json(), { jsonrpc: '2.0', id: 1, result: {} }, 'subscribed')
  }
  const modern = (who: string, method: string, name?: string): Record<string, string> => ({ ...modernHeaders(method, name), authorization: `Bearer ${who}` })
  const listenOf = async (who: string): Promise<SseReader> => {
    const res = await fetch(`${base}/mcp`, { method: 'POST', headers: modern(who, 'subscriptions/listen'), body: modernBody('l', 'subscriptions/listen', { notifications: { toolsListChanged: true, resourceSubscriptions: ['fixture://counter'] } }), signal: abort.signal })
    const reader = new SseReader(res)
    await reader.message('the acknowledgement', isMethod('notifications/subscriptions/acknowledged'))
    return reader
  }
  const [m1, m2] = [await listenOf('m1'), await listenOf('m2')]
  const callLegacy = async (sid: string, id: number, name: string, args: Record<string, unknown> = {}): Promise<any> =>
    await (await post(base, callBody(id, name, args), { ...sessionHeaders(sid, REVISION), accept: 'application/json' })).json()
  const callModern = async (who: string, id: number, name: string, args: Record<string, unknown> = {}): Promise<any> =>
    await (await fetch(`${base}/mcp`, { method: 'POST', headers: { ...modern(who, 'tools/call', name), accept: 'application/json' }, body: modernBody(id, 'tools/call', { name, arguments: args }) })).json()
  const updated = isMethod('notifications/resources/updated')
  const toolsChanged = isMethod('notifications/tools/list_changed')

  t.equal((await callLegacy(a, 2, 'bump')).result.content[0].text, 'counter 1', 'A bumps its own instance')
  t.match(await streamA.message('A\'s resources/updated', updated), { method: 'notifications/resources/updated', params: { uri: 'fixture://counter' } })
  t.equal((await callLegacy(a, 3, 'add_tool', { name: 'only_a' })).result.content[0].text, 'added only_a')
  await streamA.message('A\'s tools/list_changed', toolsChanged)
  t.equal((await callModern('m1', 4, 'bump')).result.content[0].text, 'counter 1', 'M1 has an instance of its own')
  t.match(await m1.message('M1\'s resources/updated', updated), { params: { uri: 'fixture://counter', _meta: { 'io.modelcontextprotocol/subscriptionId': 'l' } } })
  await callModern('m1', 5, 'add_tool', { name: 'only_m1' })
  await m1.message('M1\'s tools/list_changed', toolsChanged)

  // B and M2 now get their own instances' update: anything of A's or M1's would have come before it.
  t.equal((await callLegacy(b, 6, 'bump')).result.content[0].text, 'counter 1', 'B\'s own instance')
  await streamB.message('B\'s own resources/updated', updated)
  t.equal((await callModern('m2', 7, 'bump')).result.content[0].text, 'counter 1', 'M2\'s own instance')
  await m2.message('M2\'s own resources/updated', updated)
  for (const [who, reader] of [['A', streamA], ['B', streamB], ['M1', m1], ['M2', m2]] as const) {
    t.equal(reader.messages.filter(updated).length, 1, `${who} got exactly one resources/updated: its own instance's`)
  }
  t.equal(streamB.messages.filter(toolsChanged).length, 0, 'B got no tools/list_changed (only A\'s and M1\'s instances changed)')
  t.equal(m2.messages.filter(toolsChanged).length, 0, 'M2 got no tools/list_changed')
  t.equal(streamA.messages.filter(toolsChanged).length, 1, 'A got its own one only')
  t.equal(m1.messages.filter(toolsChanged).length, 1, 'M1 got its own one only')
})

t.test('isolation/per-principal/legacy-sessions-keyed-by-their-principal', async t => {
  // No auth configured: a caller is told apart by its Authorization header (lib/auth/principal.ts
  // bindingKeyOf), and a legacy session is bound to it. Before, legacy requests carried no principal
  // and every legacy session shared one 'anonymous' instance of a per-principal upstream.
  const daemon = await startDaemon(t, { upstreams: { fixture: { ...fixtureCommand(), isolation: 'per-principal' } } })
  const base = daemon.base
  const sessionOf = async (who: string): Promise<Record<string, string>> => {
    const auth = { authorization: `Bearer ${who}` }
    const res = await post(base, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: REVISION, capabilities: {}, clientInfo: { name: 'iso', version: '0' } } }, legacyHeaders(auth))
    const sid = res.headers.get('mcp-session-id')
    await res.text()
    if (sid === null) throw new Error(`initialize failed: ${res.status}`)
    return { ...sessionHeaders(sid, REVISION), ...auth, accept: 'application/json' }
  }
  const bump = async (headers: Record<string, string>, id: number): Promise<string> =>
    ((await (await post(base, callBody(id, 'bump'), headers)).json()) as any).result.content[0].text
  const [p1a, p1b, p2] = [await sessionOf('p1'), await sessionOf('p1'), await sessionOf('p2')]
  t.equal(await bump(p1a, 1), 'counter 1', 'p1\'s first session starts p1\'s instance')
  t.equal(await bump(p1b, 2), 'counter 2', 'p1\'s second session uses the same instance')
  t.equal(await bump(p2, 3), 'counter 1', 'p2\'s session has an instance of its own')
})

t.test('isolation/per-session/stdio-client-gets-its-instance-events', async t => {
  // `mcpx serve`: one client, one instance; what the instance announces reaches that client on stdout.
  const serve = spawnServe(t, { config: { upstreams: { fixture: { ...fixtureCommand('--era', 'legacy'), isolation: 'per-session' } } } })
  let id = 1
  const request = async (method: string, params: Record<string, unknown>): Promise<any> => await serve.request({ jsonrpc: '2.0', id: id++, method, params })
  await request('initialize', { protocolVersion: REVISION, capabilities: {}, clientInfo: { name: 'iso-stdio', version: '0' } })
  serve.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
  await pollUntil('the resource listed', async () => ((await request('resources/list', {})).result.resources as Array<{ uri: string }>).some(r => r.uri === 'fixture://counter'), 60_000)
  t.same((await request('resources/subscribe', { uri: 'fixture://counter' })).result, {}, 'subscribed')
  t.equal((await request('tools/call', { name: 'bump', arguments: {} })).result.content[0].text, 'counter 1', 'the client\'s own instance')
  t.match(await serve.nextMessage(m => m.method === 'notifications/resources/updated'), { params: { uri: 'fixture://counter' } }, 'its resources/updated on stdout')
  await request('tools/call', { name: 'add_tool', arguments: { name: 'only_stdio' } })
  await serve.nextMessage(m => m.method === 'notifications/tools/list_changed')
  t.pass('its tools/list_changed on stdout')
  t.equal(serve.messages.filter(m => m === undefined).length, 0, 'every stdout line is JSON')
})
