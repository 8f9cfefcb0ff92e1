/**
 * lib/policy/rate-limit alone (docs/policy.md › Rate limits): GCRA on a test clock (burst of `calls`, then one
 * per `per / calls` ms, the exact retry time), all-or-nothing across a call's limits, counters per
 * (principal, tool), the memory store's bound and sweep; the Redis store against the real Redis on
 * 127.0.0.1:6379 (REDIS_URL), two limiters sharing one count, keys in one hash slot with an expiry,
 * and fail-closed when Redis cannot be reached; the HTTP face of the refusal (lib/protocol/http-status.ts).
 */
import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:net'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { MemoryRateLimiter, RedisRateLimiter, createRateLimiter, type RateDecision } from '../../lib/policy/rate-limit.js'
import { Policy, type AppliedLimit } from '../../lib/policy/rules.js'
import { REFUSALS, markRefused, markedRefusal, modernStatus, legacyStatus, refusal } from '../../lib/protocol/http-status.js'
import { errorResponse, RATE_LIMITED } from '../../lib/protocol/jsonrpc.js'
import { loadConfig } from '../../lib/config/load.js'

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const silent = pino({ level: 'silent' })

function limit (calls: number, per: number, rule = 0): AppliedLimit {
  return { rule, id: `${rule}:${calls}/${per}`, calls, per, allows: /^.*$/ }
}

/** A memory limiter on a clock the test moves. */
function clocked (options: { maxCounters?: number } = {}): { limiter: MemoryRateLimiter, at: (ms: number) => void } {
  let now = 1_000_000
  const limiter = new MemoryRateLimiter({ now: () => now, sweepIntervalMs: 0, ...options })
  return { limiter, at: (ms: number) => { now = 1_000_000 + ms } }
}

t.test('policy/rate-limit/gcra-burst-then-one-per-interval', async t => {
  const { limiter, at } = clocked()
  const three = [limit(3, 3_000)]
  t.same([1, 2, 3].map(() => limiter.take('p', 'echo', three).kind), ['allowed', 'allowed', 'allowed'], 'a fresh caller may make `calls` calls at once')
  t.same(limiter.take('p', 'echo', three), { kind: 'limited', retryAfterMs: 1_000 }, 'the fourth waits one interval (per / calls)')
  at(999)
  t.same(limiter.take('p', 'echo', three), { kind: 'limited', retryAfterMs: 1 }, 'the retry time counts down exactly')
  at(1_000)
  t.equal(limiter.take('p', 'echo', three).kind, 'allowed', 'after retryAfterMs the call is allowed')
  t.same(limiter.take('p', 'echo', three), { kind: 'limited', retryAfterMs: 1_000 }, 'and the next one waits again')
  at(10_000)
  t.same([1, 2, 3, 4].map(() => limiter.take('p', 'echo', three).kind), ['allowed', 'allowed', 'allowed', 'limited'], 'an idle caller earns the whole burst back, no more')
  const fractional = clocked()
  const seven = [limit(7, 1_000)] // interval 142.857… ms: the wait is rounded up to whole ms
  for (let i = 0; i < 7; i++) fractional.limiter.take('p', 'echo', seven)
  t.same(fractional.limiter.take('p', 'echo', seven), { kind: 'limited', retryAfterMs: 143 })
})

t.test('policy/rate-limit/counted-per-principal-and-tool', async t => {
  const { limiter } = clocked()
  const one = [limit(1, 60_000)]
  t.equal(limiter.take('alice', 'echo', one).kind, 'allowed')
  t.equal(limiter.take('alice', 'echo', one).kind, 'limited')
  t.equal(limiter.take('alice', 'bump', one).kind, 'allowed', 'another tool has its own counter')
  t.equal(limiter.take('bob', 'echo', one).kind, 'allowed', 'another principal has its own counter')
  t.equal(limiter.take('alice', 'echo', [limit(1, 60_000, 3)]).kind, 'allowed', 'another rule\'s limit has its own counter')
})

t.test('policy/rate-limit/all-or-nothing-across-limits', async t => {
  const { limiter, at } = clocked()
  const loose = limit(10, 10_000, 0)
  const tight = limit(1, 5_000, 1)
  t.equal(limiter.take('p', 'echo', [loose, tight]).kind, 'allowed')
  const refused = limiter.take('p', 'echo', [loose, tight])
  t.same(refused, { kind: 'limited', retryAfterMs: 5_000 }, 'the tightest limit decides, with its wait')
  for (let i = 0; i < 8; i++) t.equal(limiter.take('p', 'echo', [tight, loose]).kind, 'limited')
  at(5_000)
  // Had the refused calls been counted against `loose`, its 10 would be used up (1 + 9).
  t.equal(limiter.take('p', 'echo', [loose, tight]).kind, 'allowed', 'refused calls were not counted against the limit that had room')
  t.same(limiter.take('p', 'echo', [loose]).kind, 'allowed', 'loose has counted two calls only')
})

t.test('policy/rate-limit/memory-counters-bounded-and-swept', async t => {
  const { limiter, at } = clocked({ maxCounters: 100 })
  const one = [limit(1, 1_000)]
  for (let i = 0; i < 1_000; i++) limiter.take(`p${i}`, 'echo', one)
  t.equal(limiter.size, 100, 'never more than maxCounters')
  t.equal(limiter.take('p999', 'echo', one).kind, 'limited', 'the most recently counted are kept')
  t.equal(limiter.take('p0', 'echo', one).kind, 'allowed', 'the one counted longest ago was dropped (starts afresh)')
  at(999)
  limiter.sweep()
  t.equal(limiter.size, 100, 'a sweep keeps the counters not yet expired')
  at(1_000)
  limiter.sweep()
  t.equal(limiter.size, 0, 'a counter whose tat has passed is dropped: it equals an absent one')
  await limiter.close()
})

t.test('policy/rate-limit/limits-come-from-the-applying-rules', async t => {
  const p = new Policy({ default: 'deny', rules: [{ allow: { tools: ['kb__*'] }, rateLimit: { calls: 5, per: 60_000 } }, { allow: { tools: ['kb__search', 'crm__*'] }, rateLimit: { calls: 2, per: 1_000 } }] })
  t.ok(p.hasLimits)
  const view = p.viewOf(undefined)
  t.same(view.limitsFor('kb__search').map(l => l.id), ['0:5/60000', '1:2/1000'], 'both rules allow it: both count it')
  t.same(view.limitsFor('crm__x').map(l => l.id), ['1:2/1000'])
  t.equal(view.limitsFor('other').length, 0)
  t.equal(view.limitsFor('kb__search'), view.limitsFor('kb__search'), 'cached per name')
  t.notOk(new Policy({ default: 'allow', rules: [] }).hasLimits)
  t.equal(loadConfig({ policy: { rules: [{ rateLimit: { calls: 60, per: '1m' } }] } }).policy?.rules[0].rateLimit?.per, 60_000, 'per is a duration, ms')
  t.throws(() => loadConfig({ policy: { rules: [{ rateLimit: { calls: 1, per: 0 } }] } }), /policy\.rules\[0\]\.rateLimit\.per: must be more than 0 ms/, 'per 0 is refused, naming the key')
  t.throws(() => loadConfig({ policy: { rules: [{ rateLimit: { calls: 0, per: '1s' } }] } }), /calls/, 'calls 0 is refused')
  t.equal(createRateLimiter(false, { store: 'redis', redis: REDIS_URL, keyPrefix: 'x:' }, silent), undefined, 'no limit configured: no limiter, no Redis connection')
  const memory = createRateLimiter(true, { store: 'memory', redis: REDIS_URL, keyPrefix: 'x:' }, silent)
  t.equal(memory?.store, 'memory')
  await memory?.close()
})

t.test('policy/rate-limit/status-429-retry-after-rounded-up', async t => {
  t.equal(REFUSALS.rateLimited.status, 429)
  t.equal(REFUSALS.rateLimited.code, RATE_LIMITED)
  for (const [ms, seconds] of [[1, '1'], [1_000, '1'], [1_001, '2'], [59_999, '60']] as const) {
    const response = markRefused(errorResponse(7, RATE_LIMITED, 'Rate limit exceeded', { retryAfterMs: ms }), 'rateLimited')
    const refused = markedRefusal(response)
    t.equal(refused?.status, 429)
    t.equal(refused?.headers['retry-after'], seconds, `${ms} ms → Retry-After ${seconds}`)
    t.strictSame(JSON.parse(refused?.body ?? ''), { jsonrpc: '2.0', id: 7, error: { code: RATE_LIMITED, message: 'Rate limit exceeded', data: { retryAfterMs: ms } } }, 'the body is the response itself: id, code, message, data')
  }
  t.equal(markedRefusal(errorResponse(7, RATE_LIMITED, 'from an upstream', { retryAfterMs: 5 })), undefined, 'an unmarked response is no refusal')
  t.equal(modernStatus({ code: RATE_LIMITED, message: '' }), 429, 'modern: the status is a function of the response')
  t.equal(legacyStatus({ code: RATE_LIMITED, message: '' }), 429)
  const down = refusal('rateLimitUnavailable', 3)
  t.same([down.status, down.headers['retry-after'], down.message.error.code], [503, '1', -32_603], 'the store unreachable: 503 with Retry-After')
})

/** A key prefix no other run uses; its keys are deleted at teardown. */
async function redisPrefix (t: Test): Promise<{ prefix: string, redis: Redis }> {
  const prefix = `mcpx-test:${randomBytes(6).toString('hex')}:`
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
  t.teardown(async () => {
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    redis.disconnect()
  })
  return { prefix, redis }
}

t.test('policy/rate-limit/redis-shared-by-two-limiters', async t => {
  const { prefix, redis } = await redisPrefix(t)
  const a = new RedisRateLimiter({ redis: REDIS_URL, keyPrefix: prefix, logger: silent })
  const b = new RedisRateLimiter({ redis: REDIS_URL, keyPrefix: prefix, logger: silent })
  t.teardown(async () => { await Promise.all([a.close(), b.close()]) })
  const three = [limit(3, 60_000)]
  const decisions: RateDecision[] = []
  for (const limiter of [a, b, a]) decisions.push(await limiter.take('alice', 'kb__search', three))
  t.same(decisions.map(d => d.kind), ['allowed', 'allowed', 'allowed'])
  const refused = await b.take('alice', 'kb__search', three)
  t.equal(refused.kind, 'limited', 'the fourth call, on the other limiter, is past the shared limit')
  const wait = refused.kind === 'limited' ? refused.retryAfterMs : 0
  t.ok(wait > 19_000 && wait <= 20_000, `retryAfterMs is about one interval (20 000 ms): ${wait}`)
  t.equal((await a.take('bob', 'kb__search', three)).kind, 'allowed', 'another principal is not affected')
  const key = a.keyOf('alice', 'kb__search', three[0])
  t.equal(key, `${prefix}rl:{alice}:kb__search:0:3/60000`, 'the principal is the hash tag: one call\'s keys share a Cluster slot')
  const ttl = await redis.pttl(key)
  t.ok(ttl > 59_000 && ttl <= 60_000, `the counter expires when it equals an absent one (PX ${ttl})`)
  // all or nothing in the script too
  const both = [limit(100, 60_000, 1), limit(1, 60_000, 2)]
  t.equal((await a.take('carol', 'x', both)).kind, 'allowed')
  t.equal((await b.take('carol', 'x', both)).kind, 'limited')
  const looseTat = Number(await redis.get(a.keyOf('carol', 'x', both[0])))
  const now = Number((await redis.time())[0]) * 1000
  t.ok(looseTat - now < 600 + 1_000, 'the refused call was not counted against the limit with room (one interval of 600 ms, not two)')
})

t.test('policy/rate-limit/redis-unreachable-fails-closed', async t => {
  // A port nothing listens on: bind one, note it, close it.
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise<void>(resolve => server.close(() => { resolve() }))
  const limiter = new RedisRateLimiter({ redis: `redis://127.0.0.1:${port}`, keyPrefix: 'mcpx-test:', logger: silent })
  t.teardown(async () => { await limiter.close() })
  t.same(await limiter.take('alice', 'echo', [limit(100, 1_000)]), { kind: 'unavailable' }, 'no store, no call: refused rather than unlimited')
})
