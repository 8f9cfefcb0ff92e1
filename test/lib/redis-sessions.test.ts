/**
 * lib/sessions/redis-store.ts's side of isolated upstreams, two stores (two replicas) on the
 * real Redis at 127.0.0.1:6379 (REDIS_URL) with a registry that records what they ask of it:
 * a session's per-principal subscriptions are released with its principal, however the session
 * ends (its hash names the principal key), and a session's own per-session instances follow its
 * stored subscriptions on the replica that claims them, whichever replica took them.
 */
import t, { type Test } from 'tap'
import { EventEmitter } from 'node:events'
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { RedisSessionStore } from '../../lib/sessions/redis-store.js'
import type { InstanceOwner } from '../../lib/upstreams/isolation.js'
import type { JsonObject } from '../../lib/protocol/jsonrpc.js'

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const REVISION = '2025-06-18'
const URI = 'fixture://counter'

/** The registry as a store uses it, recording every subscription call (who: its owner and principal, and whether it had a home). */
class Recorder extends EventEmitter {
  readonly calls: unknown[] = []
  tools (): JsonObject[] { return [] }
  prompts (): JsonObject[] { return [] }
  resources (): JsonObject[] { return [] }
  resourceTemplates (): JsonObject[] { return [] }
  async subscribe (uri: string): Promise<void> { this.calls.push(['subscribe', uri]) }
  async unsubscribe (uri: string, who?: InstanceOwner): Promise<void> {
    this.calls.push(['unsubscribe', uri, who === undefined ? null : { owner: who.owner, principalKey: who.principalKey, home: who.home !== undefined }])
  }

  async instanceSubscription (uri: string, sid: string, add: boolean): Promise<void> { this.calls.push(['instance', uri, sid, add]) }
  async endSession (key: string): Promise<void> { this.calls.push(['endSession', key]) }
}

/** Two stores (replicas) on one fresh key prefix, closed and cleaned at teardown. */
async function replicas (t: Test, idleTimeoutMs: number): Promise<Array<{ store: RedisSessionStore, registry: Recorder }>> {
  const keyPrefix = `mcpx-test:${randomBytes(6).toString('hex')}:`
  const made = [0, 1].map(() => {
    const registry = new Recorder()
    const store = new RedisSessionStore({ redis: REDIS_URL, keyPrefix, idleTimeoutMs, streamLeaseMs: 3_000, upstreams: registry, relay: () => {}, logger: pino({ level: 'silent' }) })
    return { store, registry }
  })
  t.teardown(async () => {
    await Promise.all(made.map(async ({ store }) => { await store.closeAll() }))
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
    const keys = await redis.keys(`${keyPrefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    redis.disconnect()
  })
  for (const { store } of made) t.ok(await store.connect(), 'connected to Redis')
  return made
}

/** Waits (bounded, 5 s) until `check` holds. */
async function until (what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 20))
  }
}

const has = (calls: unknown[], call: unknown): boolean => calls.some(c => JSON.stringify(c) === JSON.stringify(call))

t.test('isolation/per-principal/redis-session-releases-its-subscriptions-with-its-principal', async t => {
  const [a, b] = await replicas(t, 600)
  const minted = await a.store.mint(REVISION, {}, 'p1')
  if (minted.kind !== 'minted') throw new Error(minted.kind)
  const sid = minted.session.id
  const found = await b.store.find(sid)
  if (found.kind !== 'found') throw new Error(found.kind)
  t.equal(found.session.principal, 'p1', 'the other replica knows the session\'s principal (the hash\'s pr)')
  // The dispatcher subscribed on B with the session as `who` (registry.subscribe(uri, who)), then recorded it.
  await b.store.subscriptionsOf(found.session).add(URI)
  // Ended on A: B releases its subscription as it was made, so a per-principal instance's count goes with it.
  t.equal(await a.store.end(sid), 'ended')
  const released = ['unsubscribe', URI, { owner: sid, principalKey: 'p1', home: true }]
  await until('B to release the ended session\'s subscription', () => has(b.registry.calls, released))
  t.pass('released with its principal on end')

  // Expiry (the TTL, told to nobody): B forgets the session on its sweep and releases it the same way.
  const second = await a.store.mint(REVISION, {}, 'p2')
  if (second.kind !== 'minted') throw new Error(second.kind)
  const found2 = await b.store.find(second.session.id)
  if (found2.kind !== 'found') throw new Error(found2.kind)
  await b.store.subscriptionsOf(found2.session).add(URI)
  await until('B to release the expired session\'s subscription', () => has(b.registry.calls, ['unsubscribe', URI, { owner: second.session.id, principalKey: 'p2', home: true }]))
  t.pass('released with its principal on expiry')
  t.notOk(b.registry.calls.some(c => Array.isArray(c) && c[0] === 'unsubscribe' && c[2] === null), 'never released without its owner')
})

t.test('isolation/per-session/redis-owner-applies-the-stored-subscriptions', async t => {
  const [a, b] = await replicas(t, 60_000)
  const minted = await a.store.mint(REVISION, {})
  if (minted.kind !== 'minted') throw new Error(minted.kind)
  const sid = minted.session.id
  const onB = await b.store.find(sid)
  if (onB.kind !== 'found') throw new Error(onB.kind)
  await b.store.subscriptionsOf(onB.session).add(URI)
  t.notOk(a.registry.calls.some(c => Array.isArray(c) && c[0] === 'instance'), 'no replica holds the instances yet: nothing applied')
  // A claims the session's instances (its first isolated call): they start with the stored subscriptions.
  const onA = await a.store.find(sid)
  if (onA.kind !== 'found' || onA.session.instanceHome === undefined) throw new Error('no instance home')
  t.equal(await onA.session.instanceHome.isHere(), true, 'A claims them')
  t.ok(has(a.registry.calls, ['instance', URI, sid, true]), 'the subscription taken through B is applied on A at the claim')
  // Later changes through B reach A (the bus), and never B's registry (not the owner).
  await b.store.subscriptionsOf(onB.session).add('fixture://other')
  await until('A to apply the later subscription', () => has(a.registry.calls, ['instance', 'fixture://other', sid, true]))
  t.equal(await b.store.subscriptionsOf(onB.session).delete(URI), true, 'B\'s own upstream subscription is released by the dispatcher, as it was made')
  await until('A to apply the unsubscription', () => has(a.registry.calls, ['instance', URI, sid, false]))
  t.notOk(b.registry.calls.some(c => Array.isArray(c) && c[0] === 'instance'), 'B applied nothing to instances it does not hold')
})
