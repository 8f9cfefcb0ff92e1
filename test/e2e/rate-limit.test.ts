/**
 * Policy rate limits (docs/policy.md › Rate limits) over real HTTP in both eras, as a member of a
 * 2025-03-26 batch, on a real daemon, on a spawned `mcpx serve`, shared by two replicas through the
 * real Redis (REDIS_URL, default redis://127.0.0.1:6379, a key prefix per test), and refused (fail
 * closed) while that Redis cannot be reached. Past the limit: JSON-RPC -31002 with the request's id
 * and `data.retryAfterMs`, HTTP 429 with `Retry-After` (seconds, rounded up), an audit line
 * `rate_limited`, mcpx_rate_limit_refusals_total; the refused call never reaches the upstream (the
 * fixture's `bump` counter says so). Tests are named policy/rate-limit/<requirement>.
 */
import t, { type Test } from 'tap'
import { join } from 'node:path'
import { readFileSync, existsSync } from 'node:fs'
import { createServer } from 'node:net'
import { Redis } from 'ioredis'
import { REDIS_URL, redisTestPrefix } from '../helpers/redis.js'
import type { FastifyInstance } from 'fastify'
import { listen, fixtureUpstreams } from '../helpers/app.js'
import { startDaemon } from '../helpers/daemon.js'
import { spawnServe } from '../helpers/spawn.js'
import { fixtureCommand } from '../helpers/fixture.js'
import { pollUntil } from '../helpers/legacy.js'
import { legacyRpc, legacySession, modernRpc, request, tokenEnvironment, tokensAuth, untilReady, type RawReply, type Target } from '../helpers/policy.js'

const RATE_LIMITED = -31_002
const HOUR_MS = 3_600_000

/** admin: everything, unlimited. ci: bump at 2 calls per hour, echo unlimited (its own rule). */
const POLICY = {
  rules: [
    { principals: { scopes: ['mcp:admin'] }, allow: { tools: ['*'], resources: ['*'] } },
    { principals: { tokens: ['ci'] }, allow: { tools: ['bump'] }, rateLimit: { calls: 2, per: '1h' } },
    { principals: { tokens: ['ci'] }, allow: { tools: ['echo'] } }
  ]
}

type Line = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

function auditLines (file: string): Line[] {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8').split('\n').filter(l => l !== '').map(l => JSON.parse(l) as Line)
}

/** Checks one HTTP refusal: 429, Retry-After = ceil(retryAfterMs / 1000), the request's id, -31002, data.retryAfterMs ≤ per. */
function isRateLimited (t: Test, reply: RawReply, id: number | string, label: string, perMs = HOUR_MS): void {
  t.equal(reply.status, 429, `${label}: 429 (${reply.text})`)
  t.match(reply.headers.get('content-type'), /^application\/json\b/, `${label}: a JSON body (not SSE)`)
  const error = reply.json?.error
  t.equal(reply.json?.id, id, `${label}: the request's id`)
  t.equal(error?.code, RATE_LIMITED, `${label}: -31002`)
  t.match(error?.message, /^Rate limit exceeded: too many calls of bump; retry after \d+ ms$/, `${label}: the message says so`)
  const wait = error?.data?.retryAfterMs
  t.ok(Number.isInteger(wait) && wait > 0 && wait <= perMs, `${label}: data.retryAfterMs ${wait}`)
  t.equal(reply.headers.get('retry-after'), String(Math.ceil(wait / 1000)), `${label}: Retry-After is retryAfterMs in seconds, rounded up`)
}

async function counterOf (target: Target): Promise<string> {
  const read = await modernRpc(target, 'read', 'resources/read', { uri: 'fixture://counter' })
  return read.json.result.contents[0].text
}

async function metricLine (app: FastifyInstance, reason: string): Promise<string | undefined> {
  const text = await app.mcpxMetrics.registry.metrics()
  return text.split('\n').find(line => line.startsWith(`mcpx_rate_limit_refusals_total{reason="${reason}"}`))
}

t.test('policy/rate-limit/429-with-retry-after-in-both-eras', async t => {
  const file = join(t.testdir(), 'audit.jsonl')
  const { base, app } = await listen(t, { upstreams: fixtureUpstreams(), auth: tokensAuth(), policy: POLICY, audit: { file, arguments: 'keys' } })
  await app.upstreams.ready()
  const ci = { base, token: 'ci' }
  const admin = { base, token: 'admin' }
  for (const id of [1, 2]) t.equal((await modernRpc(ci, id, 'tools/call', { name: 'bump', arguments: {} })).json.result.content[0].text, `counter ${id}`, `modern call ${id} is within the limit`)
  isRateLimited(t, await modernRpc(ci, 'm-3', 'tools/call', { name: 'bump', arguments: {} }), 'm-3', 'modern (2026-07-28)')
  // Counted per (principal, tool), whatever the era: the legacy calls are past the same limit.
  isRateLimited(t, await legacyRpc(ci, request(4, 'tools/call', { name: 'bump', arguments: {} })), 4, 'legacy sessionless (2025-03-26), JSON reply')
  const session = await legacySession(ci, '2025-11-25')
  isRateLimited(t, await legacyRpc(ci, request(5, 'tools/call', { name: 'bump', arguments: {} }), session), 5, 'legacy in a session (2025-11-25)')
  t.equal((await modernRpc(ci, 6, 'tools/call', { name: 'echo', arguments: { text: 'free' } })).json.result.content[0].text, 'free', 'another tool of the same caller, under no limit, is served')
  t.equal((await modernRpc(admin, 7, 'tools/call', { name: 'bump', arguments: {} })).json.result.content[0].text, 'counter 3', 'another caller is not limited; the three refused calls never reached the upstream')
  t.equal(await counterOf(admin), '3')
  t.equal(await metricLine(app, 'limited'), 'mcpx_rate_limit_refusals_total{reason="limited"} 3', 'each refusal is counted')
  const lines = await pollUntil('the audit lines', () => { const all = auditLines(file); return all.length >= 8 ? all : undefined }, 20_000)
  const limited = lines.filter(l => l.outcome === 'rate_limited')
  t.same(limited.map(l => [l.era, l.requestId, l.name, l.principal, l.code]), [['modern', 'm-3', 'bump', 'token:ci', undefined], ['legacy', 4, 'bump', 'token:ci', undefined], ['legacy', 5, 'bump', 'token:ci', undefined]], 'one rate_limited line per refusal, without a code')
  t.ok(limited.every(l => l.upstream === 'fixture' && Array.isArray(l.argumentKeys)), 'the lines carry the upstream and, in keys mode, the argument keys')
})

t.test('policy/rate-limit/batch-member-in-2025-03-26', async t => {
  const { base, app } = await listen(t, { upstreams: fixtureUpstreams(), auth: tokensAuth(), policy: POLICY })
  await app.upstreams.ready()
  const ci = { base, token: 'ci' }
  const batch = [1, 2, 3].map(id => request(id, 'tools/call', { name: 'bump', arguments: {} }))
  batch.push(request(4, 'tools/call', { name: 'echo', arguments: { text: 'in the batch' } }))
  const reply = await legacyRpc(ci, batch)
  t.equal(reply.status, 200, 'the batch is 200: its status is the batch\'s, not a member\'s')
  t.equal(reply.headers.get('retry-after'), null, 'no Retry-After on a 200 batch: the member\'s data.retryAfterMs says it')
  const members = reply.json as Line[]
  t.equal(members.length, 4, 'one reply per request')
  const refused = members.filter(m => m.error !== undefined)
  t.equal(refused.length, 1, 'one of the three bump calls is past the limit of 2')
  t.equal(refused[0].error.code, RATE_LIMITED)
  t.ok(refused[0].error.data.retryAfterMs > 0 && refused[0].error.data.retryAfterMs <= HOUR_MS, 'with data.retryAfterMs')
  t.ok([1, 2, 3].includes(refused[0].id), 'with its own id')
  t.equal(members.find(m => m.id === 4)?.result.content[0].text, 'in the batch', 'the other members are served')
  t.equal(await counterOf({ base, token: 'admin' }), '2', 'the refused member never reached the upstream')
})

t.test('policy/rate-limit/daemon-both-eras', async t => {
  const env = tokenEnvironment()
  const daemon = await startDaemon(t, { upstreams: fixtureUpstreams(), auth: tokensAuth(), policy: POLICY }, { env })
  await untilReady(daemon.base)
  const ci = { base: daemon.base, token: 'ci' }
  await modernRpc(ci, 1, 'tools/call', { name: 'bump', arguments: {} })
  await legacyRpc(ci, request(2, 'tools/call', { name: 'bump', arguments: {} }))
  isRateLimited(t, await modernRpc(ci, 3, 'tools/call', { name: 'bump', arguments: {} }), 3, 'daemon, modern')
  isRateLimited(t, await legacyRpc(ci, request(4, 'tools/call', { name: 'bump', arguments: {} })), 4, 'daemon, legacy')
  const metrics = await (await fetch(`${daemon.base}/metrics`)).text()
  t.match(metrics, /^mcpx_rate_limit_refusals_total\{reason="limited"\} 2$/m, 'the daemon\'s /metrics counts the refusals')
  t.equal(await counterOf({ base: daemon.base, token: 'admin' }), '2')
})

t.test('policy/rate-limit/stdio-serve', async t => {
  const { command, args } = fixtureCommand()
  const child = spawnServe(t, {
    config: {
      upstreams: { fixture: { command, args } },
      policy: { rules: [{ principals: { local: true }, allow: { tools: ['bump', 'echo'], resources: ['fixture://counter'] }, rateLimit: { calls: 2, per: '1h' } }] }
    }
  })
  let seq = 100
  await pollUntil('the fixture listed', async () => {
    const reply = await child.request({ jsonrpc: '2.0', id: seq++, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } })
    return reply.result.tools.length > 0 ? reply : undefined
  }, 20_000)
  const call = async (id: number): Promise<Line> => await child.request({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'bump', arguments: {} } })
  t.equal((await call(1)).result.content[0].text, 'counter 1')
  t.equal((await call(2)).result.content[0].text, 'counter 2')
  const refused = await call(3)
  t.equal(refused.id, 3, 'the request\'s id')
  t.equal(refused.error.code, RATE_LIMITED, 'stdio: the JSON-RPC error alone')
  t.match(refused.error.message, /^Rate limit exceeded: too many calls of bump; retry after \d+ ms$/)
  t.ok(refused.error.data.retryAfterMs > 0 && refused.error.data.retryAfterMs <= HOUR_MS, `data.retryAfterMs ${refused.error.data.retryAfterMs}`)
  const modern = await child.request({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'bump', arguments: {}, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } })
  t.equal(modern.error?.code, RATE_LIMITED, 'a modern request on stdio is counted against the same limit')
  t.equal((await child.request({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } })).result.content[0].text, 'x', 'another tool has its own counter')
  t.equal((await child.request({ jsonrpc: '2.0', id: 6, method: 'resources/read', params: { uri: 'fixture://counter' } })).result.contents[0].text, '2', 'the refused calls never reached the upstream')
  t.ok(child.messages.every(m => m !== undefined), 'every stdout line is one JSON-RPC message')
})

t.test('policy/rate-limit/shared-by-two-replicas-through-redis', async t => {
  const prefix = redisTestPrefix(t)
  const replica = async (): Promise<{ base: string, app: FastifyInstance }> => await listen(t, {
    upstreams: fixtureUpstreams(),
    auth: tokensAuth(),
    policy: { rules: [{ principals: { tokens: ['ci'] }, allow: { tools: ['bump'] }, rateLimit: { calls: 3, per: '1h' } }, POLICY.rules[0]] },
    sessions: { store: 'redis', redis: REDIS_URL, keyPrefix: prefix }
  })
  const a = await replica()
  const b = await replica()
  await Promise.all([a.app.upstreams.ready(), b.app.upstreams.ready()])
  const on = (r: { base: string }): Target => ({ base: r.base, token: 'ci' })
  t.equal((await modernRpc(on(a), 1, 'tools/call', { name: 'bump', arguments: {} })).status, 200)
  t.equal((await legacyRpc(on(b), request(2, 'tools/call', { name: 'bump', arguments: {} }))).status, 200)
  t.equal((await modernRpc(on(a), 3, 'tools/call', { name: 'bump', arguments: {} })).status, 200)
  isRateLimited(t, await modernRpc(on(b), 4, 'tools/call', { name: 'bump', arguments: {} }), 4, 'the fourth call, on replica b, which served one', HOUR_MS)
  isRateLimited(t, await legacyRpc(on(a), request(5, 'tools/call', { name: 'bump', arguments: {} })), 5, 'and on replica a', HOUR_MS)
  t.equal(await counterOf({ base: a.base, token: 'admin' }), '2', 'replica a\'s upstream got its two allowed calls')
  t.equal(await counterOf({ base: b.base, token: 'admin' }), '1', 'replica b\'s upstream got one; the refused calls reached neither')
  const redis = new Redis(REDIS_URL)
  t.teardown(() => redis.disconnect())
  const keys = await redis.keys(`${prefix}rl:*`)
  t.equal(keys.length, 1, `one shared counter: ${keys.join(', ')}`)
  t.match(keys[0], new RegExp(`^${prefix}rl:\\{[0-9a-f]{32}\\}:bump:0:3/3600000$`), 'keyed by the principal\'s hashed key (the hash tag) and the tool, never the token')
  const ttl = await redis.pttl(keys[0])
  t.ok(ttl > 0 && ttl <= HOUR_MS, `the counter expires (PX ${ttl})`)
})

t.test('policy/rate-limit/redis-unreachable-refuses-limited-calls-503', async t => {
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise<void>(resolve => server.close(() => { resolve() }))
  const file = join(t.testdir(), 'audit.jsonl')
  const { base, app } = await listen(t, {
    upstreams: fixtureUpstreams(),
    auth: tokensAuth(),
    policy: POLICY,
    audit: { file, arguments: 'none' },
    sessions: { store: 'redis', redis: `redis://127.0.0.1:${port}`, keyPrefix: 'mcpx-test:' }
  })
  await app.upstreams.ready()
  const ci = { base, token: 'ci' }
  for (const [label, reply] of [['modern', await modernRpc(ci, 1, 'tools/call', { name: 'bump', arguments: {} })], ['legacy', await legacyRpc(ci, request(2, 'tools/call', { name: 'bump', arguments: {} }))]] as const) {
    t.equal(reply.status, 503, `${label}: 503 (${reply.text})`)
    t.equal(reply.headers.get('retry-after'), '1', `${label}: Retry-After 1`)
    t.same(reply.json.error, { code: -32_603, message: 'Service Unavailable: the rate-limit store cannot be reached; retry later' }, `${label}: fail closed, and says why`)
  }
  t.equal((await modernRpc(ci, 3, 'tools/call', { name: 'echo', arguments: { text: 'unlimited' } })).json.result.content[0].text, 'unlimited', 'a call no limit applies to never asks Redis, and is served')
  t.equal(await counterOf({ base, token: 'admin' }), '0', 'the refused calls never reached the upstream')
  t.equal(await metricLine(app, 'unavailable'), 'mcpx_rate_limit_refusals_total{reason="unavailable"} 2')
  const lines = await pollUntil('the audit lines', () => { const all = auditLines(file); return all.length >= 3 ? all : undefined }, 20_000)
  t.same(lines.filter(l => l.name === 'bump').map(l => [l.outcome, l.code]), [['error', -32_603], ['error', -32_603]], 'audited as errors with their code')
})
