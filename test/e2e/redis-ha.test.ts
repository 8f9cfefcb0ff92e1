/**
 * Redis that survives a node (docs/replicas.md › Surviving a Redis node): the legacy session store on a 3-master Redis Cluster and
 * on a Sentinel set-up with a failover mid-session. Each test starts its own redis-server
 * processes on free loopback ports (test/helpers/redis-ha.ts) and two in-process mcpx replicas
 * sharing them; nothing here uses the Redis on 6379.
 */
import t, { type Test } from 'tap'
import { callBody, post, fetchSession, sessionHeaders, pollUntil, SseReader } from '../helpers/legacy.js'
import { REDIS_HA_SKIP, command, replicasOn, startRedisCluster, startRedisSentinels, storeLogTail, type RedisClusterSetup } from '../helpers/redis-ha.js'

const REVISION = '2025-11-25'
const skip = REDIS_HA_SKIP === false ? {} : { skip: REDIS_HA_SKIP }

/** One cluster for the file's cluster tests (each under its own key prefix), stopped when the file ends. */
let sharedCluster: Promise<RedisClusterSetup> | undefined
const cluster3 = async (): Promise<RedisClusterSetup> => await (sharedCluster ??= startRedisCluster(t, 3))

const ping = (id: number | string): Record<string, unknown> => ({ jsonrpc: '2.0', id, method: 'ping' })

/** A request in a session: status and parsed JSON body (the last SSE message when it streamed). */
async function call (base: string, sid: string, body: unknown): Promise<{ status: number, body: any }> {
  const res = await post(base, body, sessionHeaders(sid, REVISION))
  const text = await res.text()
  if (res.headers.get('content-type')?.startsWith('text/event-stream') === true) {
    const data = text.split('\n\n').map(b => b.split('\n').filter(l => l.startsWith('data:')).map(l => l.slice(5).trim()).join('')).filter(d => d !== '')
    return { status: res.status, body: JSON.parse(data[data.length - 1]) }
  }
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) }
}

async function openGet (t: Test, base: string, sid: string): Promise<SseReader> {
  const abort = new AbortController()
  t.teardown(() => abort.abort())
  const res = await fetch(`${base}/mcp`, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': REVISION }, signal: abort.signal })
  if (res.status !== 200) throw new Error(`GET failed: ${res.status} ${await res.text()}`)
  return new SseReader(res)
}

async function del (base: string, sid: string): Promise<number> {
  const res = await fetch(`${base}/mcp`, { method: 'DELETE', headers: { 'mcp-session-id': sid, 'mcp-protocol-version': REVISION } })
  await res.text()
  return res.status
}

t.test('redis/cluster/sessions-spread-over-three-masters-served-by-every-replica', skip, async t => {
  const cluster = await cluster3()
  const { bases, prefix } = await replicasOn(t, { cluster: [cluster.addresses[0]] }, 2) // one startup node: the rest are discovered
  const [a, b] = bases
  const sids: string[] = []
  for (let i = 0; i < 12; i++) sids.push(await fetchSession(bases[i % 2], REVISION))
  // Where each session's hash lives: exactly one master owns its slot (the others answer MOVED).
  const owners = new Set<number>()
  for (const sid of sids) {
    const holders: number[] = []
    for (const node of cluster.nodes) if (await command(node.port, 'EXISTS', `${prefix}s:{${sid}}`) === 1) holders.push(node.port)
    t.equal(holders.length, 1, `session ${sid} is on one master`)
    owners.add(holders[0])
  }
  t.ok(owners.size >= 2, `12 sessions landed on ${owners.size} of 3 masters (hash tags spread them)`)
  for (const [i, sid] of sids.entries()) {
    const other = bases[(i + 1) % 2]
    const reply = await call(other, sid, callBody(i, 'echo', { text: `hop ${i}` }))
    t.same(reply.body?.result?.content, [{ type: 'text', text: `hop ${i}` }], `session ${i} served by the replica that did not mint it`)
  }
  // The END script deletes the keys and publishes on the bus from the session's node; the GET
  // stream held by the other replica (subscribed through whichever node) closes.
  const stream = await openGet(t, b, sids[0])
  t.equal(await del(a, sids[0]), 204, 'DELETE on A')
  await stream.end()
  t.ok(stream.ended, 'the GET stream on B closed: the bus crossed the cluster')
  t.equal((await call(b, sids[0], ping(1))).status, 404, 'the session is gone on B')
  t.equal((await call(a, sids[1], ping(2))).status, 200, 'other sessions live on')
})

t.test('redis/cluster/stream-lease-and-relayed-messages-across-nodes', skip, async t => {
  const cluster = await cluster3()
  const { bases } = await replicasOn(t, { cluster: cluster.addresses }, 2, ['--era', 'modern'])
  const [a, b] = bases
  const sid = await fetchSession(a, REVISION, { elicitation: {} })
  const stream = await openGet(t, b, sid)
  // The lease (SET NX in the claim script) is cluster-wide: a second GET on A is refused.
  const second = await fetch(`${a}/mcp`, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': REVISION } })
  t.equal(second.status, 409, 'one GET stream per session across replicas')
  await second.text()
  // A's upstream changes: the event crosses the bus to B's stream.
  const added = await call(a, sid, callBody(1, 'add_tool', { name: 'cluster_tool' }))
  t.same(added.body?.result?.content, [{ type: 'text', text: 'added cluster_tool' }])
  const changed = await stream.message('tools/list_changed on B', m => m.method === 'notifications/tools/list_changed')
  t.same(changed, { jsonrpc: '2.0', method: 'notifications/tools/list_changed' })
})

t.test('redis/sentinel/failover-mid-session-503-then-the-session-carries-on', skip, async t => {
  const ha = await startRedisSentinels(t)
  // The replicas' session-store log lines (each failed command's error): a timeout below names the last ones.
  const storeLog: string[] = []
  const { bases, prefix } = await replicasOn(t, { sentinels: ha.addresses, name: ha.name }, 2, [], storeLog)
  const [a, b] = bases
  const sid = await fetchSession(a, REVISION)
  t.equal((await call(b, sid, ping(1))).status, 200, 'served through the master the sentinels name')
  t.equal(await ha.currentMaster(), ha.master.address)
  // The session's facts reached the replica (asynchronous replication) before the master dies.
  await pollUntil('the session to be replicated', async () => await command(ha.replica.port, 'EXISTS', `${prefix}s:{${sid}}`) === 1, 10_000)

  await ha.master.kill()
  const during = await pollUntil('a 503 while the master is down', async () => {
    const res = await post(a, ping('during'), sessionHeaders(sid, REVISION))
    if (res.status === 503) return res
    await res.text()
    return false
  }, 10_000)
  t.equal(during.status, 503, 'a session request during the failover is 503')
  t.ok(during.headers.get('retry-after') !== null, 'with Retry-After')
  const body = await during.json() as any
  t.equal(body.error?.code, -32_603, 'a JSON-RPC error')
  t.equal(body.id, 'during', 'carrying the request id')

  // The sentinels agree the master is down and promote the replica; ioredis reconnects to it. Alone this
  // takes ~10 s; the bounds are generous because under the full suite's load (two test files at once on
  // two cores) a reconnect once took longer than 45 s. The last reply is kept for the failure message, with
  // the replicas' last session-store lines (why the store was unreachable). With a load average of ~15 on
  // two cores, A and B were served again within 0.5 s of the promotion (3 s after the kill).
  await pollUntil('the replica to be promoted', async () => await ha.currentMaster() === ha.replica.address, 90_000)
  let lastOnA: unknown
  const recovered = await pollUntil('the session to be served again', async () => {
    const reply = await call(a, sid, ping('after'))
    lastOnA = reply
    return reply.status === 200 ? reply : false
  }, 90_000).catch((err: Error) => { throw new Error(`${err.message}; last reply ${JSON.stringify(lastOnA)}; the replicas' last session-store lines:\n${storeLogTail(storeLog)}`) })
  t.same(recovered.body, { jsonrpc: '2.0', id: 'after', result: {} }, 'the same session carries on, on A')
  let lastOnB: unknown
  const onB = await pollUntil('B to be served again', async () => {
    const reply = await call(b, sid, callBody(2, 'echo', { text: 'after failover' }))
    lastOnB = reply
    return reply.status === 200 ? reply : false
  }, 90_000).catch((err: Error) => { throw new Error(`${err.message}; last reply ${JSON.stringify(lastOnB)}; the replicas' last session-store lines:\n${storeLogTail(storeLog)}`) })
  t.same(onB.body?.result?.content, [{ type: 'text', text: 'after failover' }], 'and on B')
  const role = await command(ha.replica.port, 'ROLE') as unknown[] | undefined
  t.equal(role?.[0], 'master', 'the old replica is the master now')
  // The subscriber connections followed the failover too: a DELETE on A closes B's GET stream.
  const stream = await pollUntil('a GET stream on B', async () => { try { return await openGet(t, b, sid) } catch { return false } }, 20_000)
  await pollUntil('B to be subscribed again', async () => {
    const channels = await command(ha.replica.port, 'PUBSUB', 'NUMSUB', `${prefix}bus`) as [string, number] | undefined
    return channels?.[1] === 2
  }, 20_000)
  t.equal(await del(a, sid), 204, 'DELETE on A')
  await stream.end()
  t.ok(stream.ended, 'the stream on B closed: pub/sub works on the new master')
})
