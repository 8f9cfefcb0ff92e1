/**
 * Isolated upstreams and shared upstreams that stop guessing (issue #18), on a REAL daemon with
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
import { sseMessages } from '../helpers/app.js'
import { callBody, fetchSession, fixtureEvents, fixtureLogPath, pollUntil, post, sessionHeaders, SseReader } from '../helpers/legacy.js'
import { REDIS_URL, redisTestPrefix } from '../helpers/redis.js'

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
  const warnings = daemon.lines.filter(l => /cannot be tied to one caller/.test(String(l.msg)))
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
  t.equal(capped.retryAfter, '5', 'with Retry-After (lib/status.ts refusal row instancesExhausted)')
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

  // DELETE on B stops A's instance.
  const deleted = await fetch(`${b.base}/mcp`, { method: 'DELETE', headers: sessionHeaders(sid, REVISION) })
  t.equal(deleted.status, 204)
  await pollUntil('A\'s instance to stop', () => !isAlive(instance[0]), 20_000)
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
