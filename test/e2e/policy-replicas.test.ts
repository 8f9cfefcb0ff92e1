/**
 * Per-caller notification filtering across replicas (list_changed and
 * resources/updated reach a caller only for what it can see) with `sessions.store: "redis"`: a
 * change one replica's upstream saw is relayed over Redis to the replica holding a legacy session's
 * GET stream, and must pass the same per-caller filter there as a local one. Two in-process mcpx
 * instances, each with its own fixture child, share the real Redis (`REDIS_URL`, default
 * redis://127.0.0.1:6379) under a key prefix unique to the run. Fixture state is per child, so a
 * change made through B is seen by A only as a relayed event.
 */
import t, { type Test } from 'tap'
import { REDIS_URL, redisTestPrefix } from '../helpers/redis.js'
import Fastify from 'fastify'
import mcpx, { type McpxOptions } from '../../app.js'
import { fixtureUpstreams } from '../helpers/app.js'
import { legacyRpc, legacySession, modernRpc, openGetStream, request, tokensAuth, type Collected } from '../helpers/policy.js'


/** ci sees echo, head*, slow and fixture://static, fixture://items/*; admin everything. */
const POLICY = {
  default: 'deny',
  rules: [
    { principals: { scopes: ['mcp:admin'] }, allow: { tools: ['*'], prompts: ['*'], resources: ['*'] } },
    { principals: { tokens: ['ci'] }, allow: { tools: ['echo', 'head*', 'slow'], resources: ['fixture://static', 'fixture://items/*'] } }
  ]
}

/** One mcpx instance on 127.0.0.1:0 (forceCloseConnections: aborted streams leave idle-less sockets; see replicas.test.ts). */
async function replica (t: Test, prefix: string, options: Partial<McpxOptions>): Promise<string> {
  const app = Fastify({ logger: { level: process.env.TEST_LOG_LEVEL ?? 'silent' }, forceCloseConnections: true })
  await app.register(mcpx, {
    upstreams: fixtureUpstreams(),
    auth: tokensAuth(),
    policy: POLICY,
    transport: { sseKeepAlive: 1_000 },
    sessions: { store: 'redis', redis: REDIS_URL, keyPrefix: prefix, streamLease: '10s' },
    ...options
  } as McpxOptions)
  t.teardown(async () => { await app.close() })
  await app.upstreams.ready()
  return await app.listen({ host: '127.0.0.1', port: 0 })
}

async function pair (t: Test, optionsOfB: Partial<McpxOptions> = {}): Promise<[string, string]> {
  const prefix = redisTestPrefix(t)
  return [await replica(t, prefix, {}), await replica(t, prefix, optionsOfB)]
}

/** Waits (bounded) until `check` holds on the collected messages. */
async function until (stream: Collected, what: string, check: (messages: Collected['messages']) => boolean): Promise<void> {
  const deadline = Date.now() + 10_000
  while (!check(stream.messages)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(stream.messages)}`)
    await new Promise(resolve => setTimeout(resolve, 25))
  }
}

const methods = (stream: Collected): string[] => stream.messages.map(m => m.method as string)

t.test('policy/notifications/relayed-list-changed-only-when-the-callers-view-changed', async t => {
  const [a, b] = await pair(t)
  const ci = await legacySession({ base: a, token: 'ci' }, '2025-11-25')
  const admin = await legacySession({ base: a, token: 'admin' }, '2025-11-25')
  const ciStream = await openGetStream({ base: a, token: 'ci' }, ci)
  const adminStream = await openGetStream({ base: a, token: 'admin' }, admin)
  t.teardown(() => { ciStream.close(); adminStream.close() })
  // B's upstream gains a tool ci cannot see: A hears of it only through Redis.
  const hidden = await modernRpc({ base: b, token: 'admin' }, 1, 'tools/call', { name: 'add_tool', arguments: { name: 'replica_hidden' } })
  t.equal(hidden.json?.result?.content?.[0]?.text, 'added replica_hidden', hidden.text)
  await until(adminStream, "admin's relayed tools/list_changed", m => m.length >= 1)
  t.same(adminStream.messages, [{ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }], 'admin sees the new tool: told')
  // Then one ci can see: ci is told once, for that one (relayed in order, so a leak of the first would show).
  const visible = await modernRpc({ base: b, token: 'admin' }, 2, 'tools/call', { name: 'add_tool', arguments: { name: 'head_visible' } })
  t.equal(visible.json?.result?.content?.[0]?.text, 'added head_visible', visible.text)
  await until(adminStream, "admin's second tools/list_changed", m => m.length >= 2)
  await until(ciStream, "ci's tools/list_changed", m => m.length >= 1)
  await new Promise(resolve => setTimeout(resolve, 200))
  t.same(methods(ciStream), ['notifications/tools/list_changed'], 'ci is told only of the change to its view, not of the hidden tool')
})

t.test('policy/notifications/relayed-resources-updated-only-for-a-visible-uri', async t => {
  // B runs a newer policy that lets ci see fixture://counter (a policy rolled out to one replica
  // first): ci subscribes through B; its stream is held by A, where the URI is hidden.
  const wider = { ...POLICY, rules: [POLICY.rules[0], { ...POLICY.rules[1], allow: { ...POLICY.rules[1].allow, resources: ['fixture://*'] } }] }
  const [a, b] = await pair(t, { policy: wider })
  const ci = await legacySession({ base: a, token: 'ci' }, '2025-11-25')
  const admin = await legacySession({ base: a, token: 'admin' }, '2025-11-25')
  for (const [token, session] of [['ci', ci], ['admin', admin]] as const) {
    const sub = await legacyRpc({ base: b, token }, request(1, 'resources/subscribe', { uri: 'fixture://counter' }), session)
    t.same(sub.json, { jsonrpc: '2.0', id: 1, result: {} }, `${token} subscribed through B`)
  }
  const ciStream = await openGetStream({ base: a, token: 'ci' }, ci)
  const adminStream = await openGetStream({ base: a, token: 'admin' }, admin)
  t.teardown(() => { ciStream.close(); adminStream.close() })
  // B's upstream changes the counter; A relays it to both streams, filtered by A's policy.
  const bumped = await modernRpc({ base: b, token: 'admin' }, 2, 'tools/call', { name: 'bump', arguments: {} })
  t.notOk(bumped.json?.error, bumped.text)
  await until(adminStream, "admin's relayed resources/updated", m => m.some(n => n.method === 'notifications/resources/updated'))
  await new Promise(resolve => setTimeout(resolve, 200))
  t.same(ciStream.messages.filter(m => m.method === 'notifications/resources/updated'), [], 'ci is not told of a URI it cannot see on the replica holding its stream')
})
