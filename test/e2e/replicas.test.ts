/**
 * Legacy sessions across replicas with Redis (docs/replicas.md › Running several replicas; the legacy rules of seed › Streamable
 * HTTP, 2025-03-26 … 2025-11-25). Three in-process mcpx instances, each with its own fixture
 * upstream child, share one Redis (`REDIS_URL`, default redis://127.0.0.1:6379) under a key
 * prefix unique to the test; a client rotates its requests across them.
 *
 * Fixture state (its counter, tools added at runtime) is per child, as upstream connections are
 * per replica: a change is made through the replica whose upstream changes, and observed on a
 * GET stream held by another replica.
 */
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { REDIS_URL, redisTestPrefix } from '../helpers/redis.js'
import Fastify, { type FastifyInstance } from 'fastify'
import mcpx, { type McpxOptions } from '../../app.js'
import { fixtureUpstreams, modernHeaders, modernMeta } from '../helpers/app.js'
import { callBody, post, fetchSession, sessionHeaders, pollUntil, fixtureLogPath, fixtureEvents, initializeBody, SseReader } from '../helpers/legacy.js'

const KEEP_ALIVE_MS = 50
const REVISION = '2025-11-25'

/**
 * One mcpx instance on 127.0.0.1:0, closed at teardown. Like helpers/app.ts `listen`, but with
 * `forceCloseConnections`: after a client aborts a streamed response, undici opens a fresh
 * connection that never sends a request, and Node does not count it idle, so app.close() would
 * wait for it until the headers timeout.
 */
async function listen (t: Test, options: McpxOptions): Promise<{ base: string, app: FastifyInstance }> {
  const app = Fastify({ logger: { level: process.env.TEST_LOG_LEVEL ?? 'silent' }, forceCloseConnections: true })
  await app.register(mcpx, options)
  t.teardown(async () => { await app.close() })
  const base = await app.listen({ host: '127.0.0.1', port: 0 })
  return { base, app }
}

interface Cluster {
  bases: string[]
  apps: FastifyInstance[]
  prefix: string
  /** The next replica's base URL, round-robin. */
  next: () => string
}

async function cluster (t: Test, options: { flags?: string[], log?: string, redisUrl?: string, streamLease?: string, n?: number } = {}): Promise<Cluster> {
  const prefix = redisTestPrefix(t)
  const apps: Cluster['apps'] = []
  const bases: string[] = []
  for (let i = 0; i < (options.n ?? 3); i++) {
    const { base, app } = await listen(t, {
      upstreams: fixtureUpstreams(options.flags ?? [], options.log !== undefined ? { FIXTURE_LOG: options.log } : undefined),
      transport: { sseKeepAlive: KEEP_ALIVE_MS },
      sessions: { store: 'redis', redis: options.redisUrl ?? REDIS_URL, keyPrefix: prefix, streamLease: options.streamLease ?? '10s' }
    })
    apps.push(app)
    bases.push(base)
  }
  let turn = 0
  return { bases, apps, prefix, next: () => bases[turn++ % bases.length] }
}

/**
 * Three replicas per fixture flags, shared by the cases that need nothing of their own (no fixture
 * log, no other Redis, lease or size): sessions keep those cases apart, as they keep clients apart
 * in production, and the cases run one at a time. Started on first use, closed when the file ends;
 * sharing saves 21 apps and fixtures.
 */
const sharedClusters = new Map<string, Promise<Cluster>>()
async function sharedCluster (flags: string[] = []): Promise<Cluster> {
  const key = flags.join(' ')
  let shared = sharedClusters.get(key)
  if (shared === undefined) {
    shared = cluster(t, { flags })
    sharedClusters.set(key, shared)
  }
  return await shared
}

/**
 * Three replicas whose fixtures record to one log, shared by the two cancel cases: each reads only
 * the records written since it began (`events()`), and each ends only once its own call has
 * (cancelled, or answered), so no record of one lands in the other. Three app and fixture starts fewer.
 */
let logged: Promise<{ c: Cluster, log: string }> | undefined
async function sharedLoggedCluster (): Promise<{ c: Cluster, events: () => ReturnType<typeof fixtureEvents> }> {
  logged ??= (async () => { const log = fixtureLogPath(); return { c: await cluster(t, { log }), log } })()
  const { c, log } = await logged
  const from = fixtureEvents(log).length
  return { c, events: () => fixtureEvents(log).slice(from) }
}

/** Opens the session's GET stream on `base`; aborted at teardown. Throws unless 200. */
async function openGet (t: Test, base: string, sid: string, abort = new AbortController()): Promise<SseReader> {
  const res = await getStream(t, base, sid, abort)
  if (res.status !== 200) throw new Error(`GET failed: ${res.status} ${await res.text()}`)
  return new SseReader(res)
}

async function getStream (t: Test, base: string, sid: string, abort = new AbortController(), revision = REVISION): Promise<Response> {
  t.teardown(() => abort.abort())
  return await fetch(`${base}/mcp`, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': revision }, signal: abort.signal })
}

async function del (base: string, sid: string): Promise<number> {
  const res = await fetch(`${base}/mcp`, { method: 'DELETE', headers: { 'mcp-session-id': sid, 'mcp-protocol-version': REVISION } })
  await res.text()
  return res.status
}

/** A request in a session; its reply (the last message when it streamed). */
async function call (base: string, sid: string, body: unknown, revision = REVISION): Promise<any> {
  const res = await post(base, body, sessionHeaders(sid, revision))
  const text = await res.text()
  if (res.headers.get('content-type')?.startsWith('text/event-stream') === true) {
    const messages = text.split('\n\n').map(b => b.split('\n').filter(l => l.startsWith('data:')).map(l => l.slice(5).trim()).join('')).filter(d => d !== '').map(d => JSON.parse(d))
    return messages[messages.length - 1]
  }
  return { status: res.status, ...JSON.parse(text) }
}

const ping = (id: number | string): Record<string, unknown> => ({ jsonrpc: '2.0', id, method: 'ping' })
const isMethod = (method: string) => (m: Record<string, unknown>) => m.method === method

t.test('replicas/sessions/unknown-404-on-every-replica', async t => {
  const { bases } = await sharedCluster()
  const sid = randomBytes(16).toString('base64url')
  for (const base of bases) {
    const res = await post(base, ping(1), sessionHeaders(sid, REVISION))
    t.equal(res.status, 404, `POST on ${base}`)
    t.equal(((await res.json()) as any).error.code, -32_600)
    t.equal((await getStream(t, base, sid)).status, 404, `GET on ${base}`)
    t.equal(await del(base, sid), 404, `DELETE on ${base}`)
  }
})

t.test('replicas/sessions/any-replica-serves-the-session', async t => {
  const c = await sharedCluster()
  const sid = await fetchSession(c.next(), REVISION, { elicitation: {} })
  for (let i = 0; i < 6; i++) {
    const base = c.next()
    const reply = await call(base, sid, callBody(i, 'echo', { text: `hop ${i}` }))
    t.same(reply.result?.content, [{ type: 'text', text: `hop ${i}` }], `call ${i} on ${base}`)
  }
  // The negotiated revision governs on every replica: a batch is refused at 2025-11-25.
  const batch = await post(c.next(), [ping(1), ping(2)], sessionHeaders(sid, REVISION))
  t.equal(batch.status, 400)
})

t.test('replicas/sessions/delete-on-one-ends-it-everywhere', async t => {
  const c = await sharedCluster()
  const [a, b, z] = c.bases
  const sid = await fetchSession(a, REVISION)
  t.equal((await call(b, sid, ping(1))).status, 200)
  const stream = await openGet(t, b, sid)
  t.equal(await del(z, sid), 204, 'DELETE on the third replica')
  await stream.end()
  t.ok(stream.ended, "the GET stream held by another replica closed")
  for (const base of c.bases) {
    const res = await post(base, ping(2), sessionHeaders(sid, REVISION))
    t.equal(res.status, 404, `gone on ${base}`)
    await res.text()
    t.equal((await getStream(t, base, sid)).status, 404)
  }
  t.equal(await del(a, sid), 404, 'a second DELETE is 404')
})

t.test('replicas/get/one-stream-cluster-wide-409-keep-alive', async t => {
  const c = await sharedCluster()
  const [a, b, z] = c.bases
  const sid = await fetchSession(a, REVISION)
  const abort = new AbortController()
  const stream = await openGet(t, b, sid, abort)
  t.equal(stream.response.headers.get('content-type'), 'text/event-stream')
  t.equal(stream.response.headers.get('x-accel-buffering'), 'no')
  await stream.until('a keep-alive comment', () => /(^|\n): ?[^\n]*\n\n/.test(stream.raw))
  for (const base of [z, a, b]) {
    const second = await getStream(t, base, sid)
    t.equal(second.status, 409, `a second GET on ${base} is 409`)
    t.equal(((await second.json()) as any).error.code, -32_600)
  }
  t.notOk(stream.ended, 'the first stream is still open')
  // Closing it frees the slot for any replica.
  abort.abort()
  await pollUntil('the slot to be released', async () => {
    const res = await getStream(t, z, sid)
    if (res.status === 200) { await res.body?.cancel(); return true }
    await res.text()
    return false
  })
  t.pass('reopened on another replica after the first closed')
})

t.test('replicas/get/list-changed-to-a-stream-on-another-replica', async t => {
  // A modern-only fixture: the upstream layer's list_changed path is its primary connection.
  const c = await cluster(t, { flags: ['--era', 'modern'] })
  const [a, b] = c.bases
  const sid = await fetchSession(a, REVISION)
  const stream = await openGet(t, a, sid)
  const added = await call(b, sid, callBody(1, 'add_tool', { name: 'replica_tool' }))
  t.same(added.result.content, [{ type: 'text', text: 'added replica_tool' }])
  const notification = await stream.message('tools/list_changed on A', isMethod('notifications/tools/list_changed'))
  t.same(notification, { jsonrpc: '2.0', method: 'notifications/tools/list_changed' })
})

t.test('replicas/get/resources-updated-subscribed-through-another-replica', async t => {
  const c = await sharedCluster()
  const [a, b, z] = c.bases
  const sid = await fetchSession(a, REVISION)
  const stream = await openGet(t, a, sid)
  const sub = await call(b, sid, { jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri: 'fixture://counter' } })
  t.same(sub, { status: 200, jsonrpc: '2.0', id: 1, result: {} })
  // B's upstream changes; the stream is on A.
  await call(b, sid, callBody(2, 'bump'))
  const updated = await stream.message('resources/updated on A', isMethod('notifications/resources/updated'))
  t.same(updated, { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'fixture://counter' } })
  // A subscribed upstream itself for the session: a change of A's own upstream reaches the stream
  // too (A learns of the subscription over pub/sub, so retry until it has).
  const updates = (): number => stream.messages.filter(isMethod('notifications/resources/updated')).length
  await pollUntil("A's own upstream change delivered", async () => {
    const before = updates()
    await call(a, sid, callBody(3, 'bump'))
    await new Promise(resolve => setTimeout(resolve, 100))
    return updates() > before
  })
  // Another session on Z sees none of it.
  const other = await fetchSession(z, REVISION)
  const otherStream = await openGet(t, z, other)
  const seen = updates()
  await call(b, sid, callBody(5, 'bump'))
  await stream.until('one more resources/updated', () => updates() > seen)
  t.same(otherStream.messages, [], "a session never sees another session's resources/updated")
})

t.test('replicas/get/subscription-before-stream-delivers-on-another-replica', async t => {
  const c = await sharedCluster()
  const [a, b, z] = c.bases
  const sid = await fetchSession(a, REVISION)
  await call(b, sid, { jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri: 'fixture://counter' } })
  const stream = await openGet(t, z, sid)
  // Z subscribes upstream when it opens the stream: a change of Z's own upstream is delivered
  // (the upstream subscription completes just after the GET opens, so retry).
  await pollUntil("Z's own upstream change delivered", async () => {
    await call(z, sid, callBody(2, 'bump'))
    await new Promise(resolve => setTimeout(resolve, 100))
    return stream.messages.some(isMethod('notifications/resources/updated'))
  })
  const updated = await stream.message('resources/updated on Z', isMethod('notifications/resources/updated'))
  t.same(updated.params, { uri: 'fixture://counter' })
})

t.test('replicas/cancel/posted-to-another-replica-reaches-the-upstream', async t => {
  const { c, events } = await sharedLoggedCluster()
  const [a, b] = c.bases
  const sid = await fetchSession(a, REVISION)
  const pending = post(a, callBody(7, 'slow', { ms: 60_000, steps: 600 }), sessionHeaders(sid, REVISION))
  await pollUntil('the fixture to start slow', () => events().some(e => e.event === 'started'))
  const cancel = await post(b, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'test' } }, sessionHeaders(sid, REVISION))
  t.equal(cancel.status, 202)
  await pollUntil('the fixture to record the cancellation', () => events().some(e => e.event === 'cancelled'))
  const res = await pending
  t.equal(res.headers.get('content-type'), 'text/event-stream', 'the POST on A ends as an event stream')
  t.notMatch(await res.text(), /data:/, 'with nothing on it')
  t.same(events().map(e => e.event), ['started', 'cancelled'])
})

t.test('replicas/cancel/from-another-session-is-ignored', async t => {
  const { c, events } = await sharedLoggedCluster()
  const [a, b] = c.bases
  const mine = await fetchSession(a, REVISION)
  const theirs = await fetchSession(b, REVISION)
  const pending = call(a, mine, callBody(31, 'slow', { ms: 1_000, steps: 2 }))
  await pollUntil('the fixture to start slow', () => events().some(e => e.event === 'started'))
  const cancel = await post(b, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 31 } }, sessionHeaders(theirs, REVISION))
  t.equal(cancel.status, 202)
  t.same(await pending, { status: 200, jsonrpc: '2.0', id: 31, result: { content: [{ type: 'text', text: 'slept 1000' }] } })
  t.same(events().map(e => e.event), ['started'])
})

t.test('replicas/questions/answered-through-another-replica', async t => {
  const c = await sharedCluster(['--era', 'legacy'])
  const [a, b, z] = c.bases
  const sid = await fetchSession(a, REVISION, { elicitation: {} })
  const stream = new SseReader(await post(a, callBody(11, 'elicit'), sessionHeaders(sid, REVISION)))
  const question = await stream.message('elicitation/create', isMethod('elicitation/create'))
  t.type(question.id, 'string', 'an id mcpx minted')
  // Another session cannot answer it, on any replica.
  const other = await fetchSession(z, REVISION, { elicitation: {} })
  const stolen = await post(z, { jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { name: 'Mallory' } } }, sessionHeaders(other, REVISION))
  t.equal(stolen.status, 400, "another session cannot answer A's question")
  const answer = await post(b, { jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { name: 'Ada' } } }, sessionHeaders(sid, REVISION))
  t.equal(answer.status, 202, 'the answer posted to B is accepted')
  const reply = await stream.message('the call result', m => m.id === 11)
  t.match((reply as any).result.content[0].text, /Ada/, 'and reached the call on A')
  const again = await post(z, { jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { name: 'Ada' } } }, sessionHeaders(sid, REVISION))
  t.equal(again.status, 400, 'a response nothing waits for any more is 400')
})

t.test('replicas/questions/on-a-get-stream-held-by-another-replica', async t => {
  const c = await sharedCluster(['--era', 'legacy'])
  const [a, b, z] = c.bases
  const sid = await fetchSession(a, REVISION, { elicitation: {} })
  const stream = await openGet(t, z, sid)
  // A JSON-only call on A: its question goes on the session's GET stream, held by Z.
  const pending = post(a, callBody(13, 'elicit'), { ...sessionHeaders(sid, REVISION), accept: 'application/json' })
  const question = await stream.message('elicitation/create on Z', isMethod('elicitation/create'))
  const answer = await post(b, { jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { name: 'Grace' } } }, sessionHeaders(sid, REVISION))
  t.equal(answer.status, 202)
  const reply = await (await pending).json() as any
  t.equal(reply.id, 13)
  t.match(reply.result.content[0].text, /Grace/)
})

t.test('2025-03-26/replicas/batch', async t => {
  const c = await sharedCluster(['--era', 'legacy'])
  const [a, b, z] = c.bases
  const sid = await fetchSession(a, '2025-03-26', { elicitation: {} })
  const res = await post(b, [ping('p'), callBody('e', 'echo', { text: 'batched' })], sessionHeaders(sid, '2025-03-26'))
  t.equal(res.status, 200)
  const replies = await res.json() as any[]
  t.ok(Array.isArray(replies), 'a JSON array')
  t.same(replies.map(r => r.id).sort(), ['e', 'p'])
  t.same(replies.find(r => r.id === 'e').result.content, [{ type: 'text', text: 'batched' }])
  // A question asked on A answered inside a batch posted to Z.
  const stream = new SseReader(await post(a, callBody(1, 'elicit'), sessionHeaders(sid, '2025-03-26')))
  const question = await stream.message('elicitation/create', isMethod('elicitation/create'))
  const answered = await post(z, [
    { jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { name: 'Batched' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' }
  ], sessionHeaders(sid, '2025-03-26'))
  t.equal(answered.status, 202)
  const reply = await stream.message('the call result', m => m.id === 1)
  t.match((reply as any).result.content[0].text, /Batched/)
  // The session's revision governs on every replica: 2025-06-18 refuses batches.
  const later = await fetchSession(z, '2025-06-18')
  const refused = await post(a, [ping(1)], sessionHeaders(later, '2025-06-18'))
  t.equal(refused.status, 400)
  t.equal(((await refused.json()) as any).error.code, -32_600)
})

t.test('replicas/failover/killed-replica-sessions-continue-stream-reopens', async t => {
  const c = await cluster(t)
  const [a, b, z] = c.bases
  const sid = await fetchSession(a, REVISION)
  const stream = await openGet(t, z, sid)
  await c.apps[2].close()
  await stream.end()
  t.ok(stream.ended, 'the GET stream on the closed replica ended')
  t.equal((await call(a, sid, ping(1))).status, 200, 'the session continues on A')
  t.equal((await call(b, sid, ping(2))).status, 200, 'and on B')
  const reopened = await openGet(t, b, sid)
  t.equal(reopened.response.status, 200, 'the client reopens its GET stream on B at once')
  await reopened.until('a keep-alive comment', () => reopened.raw.includes(':'))
})

t.test('replicas/failover/crashed-stream-owner-blocks-for-one-lease-only', async t => {
  const c = await cluster(t, { streamLease: '600ms' })
  const sid = await fetchSession(c.bases[0], REVISION)
  // What a replica that died without closing leaves behind: a stream-owner key with its lease.
  const redis = new Redis(REDIS_URL)
  t.teardown(() => redis.disconnect())
  await redis.set(`${c.prefix}s:{${sid}}:stream`, 'dead-replica', 'PX', 600)
  const blocked = await getStream(t, c.bases[1], sid)
  t.equal(blocked.status, 409, 'the slot is held while the lease runs')
  await blocked.text()
  const started = Date.now()
  await pollUntil('the lease to run out', async () => {
    const res = await getStream(t, c.bases[1], sid)
    if (res.status === 200) { await res.body?.cancel(); return true }
    await res.text()
    return false
  }, 5_000)
  t.ok(Date.now() - started < 2_000, 'reopened within about one lease')
})

/* ------------------------------------------------------------------ Redis faults */

/** A TCP port nothing listens on (bound, then released). */
async function freePort (): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const port = (server.address() as { port: number }).port
  server.close()
  await once(server, 'close')
  return port
}

function modernCall (id: number): { headers: Record<string, string>, body: unknown } {
  return { headers: modernHeaders('tools/call', 'echo'), body: { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: 'modern' }, _meta: modernMeta() } } }
}

async function expect503 (t: Test, res: Response, id: unknown, what: string): Promise<void> {
  t.equal(res.status, 503, `${what}: 503`)
  t.ok(res.headers.get('retry-after') !== null, `${what}: Retry-After`)
  const body = await res.json() as any
  t.equal(body.error?.code, -32_603, `${what}: a JSON-RPC error`)
  t.equal(body.id ?? null, id, `${what}: id`)
}

t.test('replicas/redis/unreachable-503-modern-keeps-working', async t => {
  const port = await freePort()
  const { base } = await listen(t, { upstreams: fixtureUpstreams(), sessions: { store: 'redis', redis: `redis://127.0.0.1:${port}`, keyPrefix: redisTestPrefix(t) } })
  await expect503(t, await post(base, initializeBody(REVISION, {}, 'init-1')), 'init-1', 'initialize')
  const sid = randomBytes(16).toString('base64url')
  await expect503(t, await post(base, ping('p-1'), sessionHeaders(sid, REVISION)), 'p-1', 'a session request')
  await expect503(t, await getStream(t, base, sid), null, 'GET')
  const deleted = await fetch(`${base}/mcp`, { method: 'DELETE', headers: { 'mcp-session-id': sid } })
  await expect503(t, deleted, null, 'DELETE')
  const { headers, body } = modernCall(5)
  const modern = await post(base, body, headers)
  t.equal(modern.status, 200, 'modern traffic keeps working')
  t.match(await modern.json(), { id: 5, result: { content: [{ type: 'text', text: 'modern' }] } })
  const sessionless = await post(base, callBody(6, 'echo', { text: 'stateless' }))
  t.equal(sessionless.status, 200, 'sessionless legacy requests keep working')
  t.match(await sessionless.json(), { id: 6, result: { content: [{ type: 'text', text: 'stateless' }] } })
})

t.test('replicas/redis/outage-and-recovery', async t => {
  const port = await freePort()
  const startRedis = async (): Promise<ReturnType<typeof spawn>> => {
    const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
    t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
    const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
    await pollUntil('redis-server to answer', async () => { try { await probe.connect(); return await probe.ping() === 'PONG' } catch { return false } })
    probe.disconnect()
    return child
  }
  let redisChild = await startRedis()
  const c = await cluster(t, { n: 2, redisUrl: `redis://127.0.0.1:${port}` })
  const sid = await fetchSession(c.bases[0], REVISION)
  t.equal((await call(c.bases[1], sid, ping(1))).status, 200, 'served while Redis is up')
  redisChild.kill('SIGKILL')
  await once(redisChild, 'exit')
  const down = await pollUntil('a 503', async () => {
    const res = await post(c.bases[1], ping('down'), sessionHeaders(sid, REVISION))
    if (res.status === 503) return res
    await res.text()
    return false
  })
  await expect503(t, down, 'down', 'a session request during the outage')
  const { headers, body } = modernCall(9)
  t.equal((await post(c.bases[0], body, headers)).status, 200, 'modern traffic is served during the outage')
  redisChild = await startRedis()
  // mcpx reconnects on its own. The facts died with that (non-persistent) Redis: the old session is
  // 404 (initialize again), and new sessions work on every replica.
  const fresh = await pollUntil('a new session after recovery', async () => {
    const res = await post(c.bases[0], initializeBody(REVISION))
    const sid = res.headers.get('mcp-session-id')
    await res.text()
    return res.status === 200 && sid !== null ? sid : false
  })
  // Each replica reconnects on its own schedule (ioredis backoff): wait for the other one too.
  const other = await pollUntil('the other replica to reconnect', async () => {
    const res = await call(c.bases[1], fresh, ping(2))
    return res.status === 503 ? false : res
  })
  t.equal(other.status, 200, 'the new session is served by the other replica')
  const old = await post(c.bases[1], ping(3), sessionHeaders(sid, REVISION))
  t.equal(old.status, 404, 'the session lost with the Redis data is 404')
})
