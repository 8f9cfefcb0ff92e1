/**
 * Per-caller rate limits (docs/policy.md › Rate limits; config `policy.rules[].rateLimit: { calls, per }`).
 * A rule's limit counts the calls of each tool it allows, per (principal, tool): every caller has
 * its own allowance for every tool. A call is counted against every limit that applies to it (the
 * applying rules' limits whose `allow.tools` match the tool), all or nothing: it goes through only
 * when every one of them has room, and only then is it counted against all of them.
 *
 * Algorithm: GCRA (the generic cell rate algorithm, i.e. a token bucket kept as one timestamp).
 * `calls` per `per` ms means a bucket of `calls` calls that refills one call every
 * `per / calls` ms (the emission interval T). Per counter mcpx keeps one number, the theoretical
 * arrival time `tat` (absent: now). A call at `now`:
 *
 *   tat  = max(stored tat, now)
 *   next = tat + T
 *   next − now > per  → refused; retryAfterMs = ceil(next − per − now): the wait until one call fits
 *   otherwise        → allowed; stored tat = next, kept for (next − now) ms, after which it is
 *                      indistinguishable from an absent one (so it expires then)
 *
 * So a fresh caller may make `calls` calls at once, then one every T ms; an idle one earns its
 * allowance back at that rate. `retryAfterMs` is exact: a retry after it is allowed (absent other
 * callers' traffic on the same counter, which there is not: counters are per principal).
 *
 * Stores:
 * - {@link MemoryRateLimiter} (default): a Map in this process, on a monotonic clock. Bounded: at
 *   most {@link MAX_MEMORY_COUNTERS} counters; expired ones are swept every {@link SWEEP_INTERVAL_MS}
 *   (and before an insert into a full table); a full table drops the counter counted longest ago
 *   (that caller's allowance for that tool starts afresh).
 * - {@link RedisRateLimiter} (`sessions.store: "redis"`): one Lua script per call, on Redis's own
 *   clock (TIME), so replicas share counters and never disagree about time. Keys are
 *   `<keyPrefix>rl:{<principal key>}:<tool>:<limit id>`: the hash tag keeps one call's keys (its
 *   limits) in one Cluster slot. PX expiry bounds Redis memory the same way.
 *   Redis unreachable → the call is refused ({@link RateDecision} `unavailable`): fail closed. A
 *   limit is a security and cost control; failing open would let any Redis outage lift every
 *   limit. Calls that no limit applies to never touch Redis and are unaffected.
 *
 * Pure of Fastify; used by the dispatcher (lib/dispatch/dispatcher.ts), so HTTP (both eras, batches) and stdio
 * are limited alike.
 */
import type { Logger } from '../telemetry/log.js'
import type { AppliedLimit } from './rules.js'
import { createRedisConnection, describeRedisTarget, type RedisConnection, type RedisTarget } from '../base/redis.js'

/** What a call's limits decided. */
export type RateDecision =
  | { readonly kind: 'allowed' }
  /** Past a limit: `retryAfterMs` (integer ≥ 1) until the call would be allowed. */
  | { readonly kind: 'limited', readonly retryAfterMs: number }
  /** The shared store (Redis) could not be asked: refused (fail closed). */
  | { readonly kind: 'unavailable' }

/** The one allowed decision (no allocation per call). */
export const ALLOWED: RateDecision = Object.freeze({ kind: 'allowed' })
const UNAVAILABLE: RateDecision = Object.freeze({ kind: 'unavailable' })

/** Counts calls against limits. */
export interface RateLimiter {
  /** `memory` or `redis`. */
  readonly store: 'memory' | 'redis'
  /**
   * Counts one call of `tool` by `principal` against `limits` (all or nothing, see the module comment).
   * @param principal the caller's key (lib/auth/principal.ts Principal.key, or `anonymous`)
   * @param tool the catalogue name of the tool
   * @param limits the applying limits (non-empty; lib/policy/rules.ts PolicyView.limitsFor)
   * @returns the decision; the memory store answers synchronously. Never throws or rejects.
   */
  take: (principal: string, tool: string, limits: readonly AppliedLimit[]) => RateDecision | Promise<RateDecision>
  /** Stops timers and closes connections. Never rejects. */
  close: () => Promise<void>
}

/** Most counters the memory store holds (about 200 bytes each: ~20 MB at the bound). */
export const MAX_MEMORY_COUNTERS = 100_000
/** How often the memory store drops expired counters, ms. */
export const SWEEP_INTERVAL_MS = 60_000

/**
 * Slack in the "past the limit" comparison, ms: `per / calls` is rarely exact in binary floating
 * point (7 × (1000 / 7) is 1000.0000000000001), and Redis keeps tats to 1 µs, so a call that is
 * over by less than this is within the limit.
 */
const SLACK_MS = 0.001

/** The GCRA step for one counter: the new tat when allowed, or the wait (ms, > 0) when refused. */
function gcra (stored: number | undefined, now: number, limit: AppliedLimit): { next: number, waitMs: number } {
  const tat = stored === undefined || stored < now ? now : stored
  const next = tat + limit.per / limit.calls
  const over = next - now - limit.per
  return { next, waitMs: over > SLACK_MS ? over : 0 }
}

/** Options of {@link MemoryRateLimiter}. */
export interface MemoryRateLimiterOptions {
  /** Clock, ms (default `performance.now`: monotonic). Tests pass their own. */
  now?: () => number
  /** Most counters kept (default {@link MAX_MEMORY_COUNTERS}). */
  maxCounters?: number
  /** Sweep interval, ms (default {@link SWEEP_INTERVAL_MS}; 0: no timer). */
  sweepIntervalMs?: number
}

/** The in-process store. See the module comment. */
export class MemoryRateLimiter implements RateLimiter {
  readonly store = 'memory' as const
  /** counter key → tat (ms, on {@link now}); Map order is the order of last counting. */
  private readonly tats = new Map<string, number>()
  private readonly now: () => number
  private readonly max: number
  private readonly sweeper: NodeJS.Timeout | undefined

  constructor (options: MemoryRateLimiterOptions = {}) {
    this.now = options.now ?? (() => performance.now())
    this.max = options.maxCounters ?? MAX_MEMORY_COUNTERS
    const every = options.sweepIntervalMs ?? SWEEP_INTERVAL_MS
    this.sweeper = every > 0 ? setInterval(() => { this.sweep() }, every).unref() : undefined
  }

  /** Counters held (for tests and the bound). */
  get size (): number { return this.tats.size }

  take (principal: string, tool: string, limits: readonly AppliedLimit[]): RateDecision {
    const now = this.now()
    if (limits.length === 1) return this.takeOne(`${principal}\0${tool}\0${limits[0].id}`, now, limits[0])
    const keys = limits.map(limit => `${principal}\0${tool}\0${limit.id}`)
    const nexts: number[] = []
    let waitMs = 0
    for (let i = 0; i < limits.length; i++) {
      const step = gcra(this.tats.get(keys[i]), now, limits[i])
      if (step.waitMs > waitMs) waitMs = step.waitMs
      nexts.push(step.next)
    }
    if (waitMs > 0) return { kind: 'limited', retryAfterMs: Math.ceil(waitMs) }
    for (let i = 0; i < keys.length; i++) this.store1(keys[i], nexts[i], now)
    return ALLOWED
  }

  private takeOne (key: string, now: number, limit: AppliedLimit): RateDecision {
    const step = gcra(this.tats.get(key), now, limit)
    if (step.waitMs > 0) return { kind: 'limited', retryAfterMs: Math.ceil(step.waitMs) }
    this.store1(key, step.next, now)
    return ALLOWED
  }

  private store1 (key: string, tat: number, now: number): void {
    // delete + set moves the key to the end: the Map's first key is the one counted longest ago.
    if (!this.tats.delete(key) && this.tats.size >= this.max) {
      this.sweep(now)
      if (this.tats.size >= this.max) this.tats.delete(this.tats.keys().next().value as string)
    }
    this.tats.set(key, tat)
  }

  /** Drops every counter whose tat has passed (it then equals an absent one). */
  sweep (now = this.now()): void {
    for (const [key, tat] of this.tats) if (tat <= now) this.tats.delete(key)
  }

  async close (): Promise<void> {
    if (this.sweeper !== undefined) clearInterval(this.sweeper)
    this.tats.clear()
  }
}

/**
 * The GCRA step over every key of one call, atomically, on Redis's clock (TIME; Redis ≥ 5
 * replicates a script's effects, so reading the clock in it is allowed). KEYS: one per limit;
 * ARGV: per limit, its emission interval T (ms) and `per` (ms). Returns "0" when allowed (every key
 * then set to its new tat with PX expiry), else the wait in ms as a string (Lua numbers returned as
 * integers would lose the fraction).
 */
const TAKE_LUA = `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local wait = 0
local nexts = {}
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[2 * i - 1])
  local per = tonumber(ARGV[2 * i])
  local tat = now
  local stored = redis.call('GET', key)
  if stored then
    local v = tonumber(stored)
    if v and v > now then tat = v end
  end
  local nxt = tat + interval
  local over = nxt - now - per
  if over > 0.001 and over > wait then wait = over end
  nexts[i] = nxt
end
if wait > 0 then return string.format('%.3f', wait) end
for i, key in ipairs(KEYS) do
  redis.call('SET', key, string.format('%.3f', nexts[i]), 'PX', math.max(1, math.ceil(nexts[i] - now)))
end
return '0'
`

/** Options of {@link RedisRateLimiter}. */
export interface RedisRateLimiterOptions {
  /** The Redis of `sessions.redis` (a URL, Sentinel or Cluster). */
  redis: RedisTarget
  /** `sessions.keyPrefix` (no braces). */
  keyPrefix: string
  logger: Logger
  /** A script not answered within this fails (the call is refused: fail closed), ms. Default 1000. */
  commandTimeoutMs?: number
}

type TakeScript = (numberOfKeys: number, ...keysAndArgs: Array<string | number>) => Promise<string>

/** The shared store. See the module comment. */
export class RedisRateLimiter implements RateLimiter {
  readonly store = 'redis' as const
  private readonly redis: RedisConnection
  private readonly log: Logger
  /** The first connection attempt, until it settles: the first calls wait for it rather than fail. */
  private connecting: Promise<void> | undefined
  private down = false

  constructor (private readonly options: RedisRateLimiterOptions) {
    this.log = options.logger.child({ component: 'rate-limit' })
    this.redis = createRedisConnection(options.redis, { commandTimeoutMs: options.commandTimeoutMs ?? 1_000 })
    this.redis.defineCommand('mcpxRateTake', { lua: TAKE_LUA })
    // No unhandled 'error' events: log the first failure of an outage, and the recovery.
    this.redis.on('error', (err: Error) => {
      if (!this.down) this.log.warn({ err, redis: describeRedisTarget(options.redis) }, 'rate-limit store (Redis) unreachable: rate-limited calls are refused (503) until it returns')
      this.down = true
    })
    this.redis.on('ready', () => {
      if (this.down) this.log.info('rate-limit store (Redis) reachable again')
      this.down = false
    })
    const connecting = this.redis.connect().then(() => {}, () => {})
    this.connecting = connecting
    void connecting.then(() => { this.connecting = undefined })
  }

  /** The Redis key of one counter (exported shape: `<prefix>rl:{<principal>}:<tool>:<limit id>`). */
  keyOf (principal: string, tool: string, limit: AppliedLimit): string {
    return `${this.options.keyPrefix}rl:{${principal}}:${tool}:${limit.id}`
  }

  async take (principal: string, tool: string, limits: readonly AppliedLimit[]): Promise<RateDecision> {
    if (this.connecting !== undefined) await this.connecting
    const args: Array<string | number> = limits.map(limit => this.keyOf(principal, tool, limit))
    for (const limit of limits) args.push(limit.per / limit.calls, limit.per)
    try {
      const run = (this.redis as unknown as { mcpxRateTake: TakeScript }).mcpxRateTake
      const wait = Number(await run.call(this.redis, limits.length, ...args))
      if (!Number.isFinite(wait)) return UNAVAILABLE
      return wait > 0 ? { kind: 'limited', retryAfterMs: Math.ceil(wait) } : ALLOWED
    } catch (err) {
      this.log.debug({ err }, 'rate-limit store unavailable: call refused')
      return UNAVAILABLE
    }
  }

  async close (): Promise<void> {
    if (this.redis.status === 'ready') {
      await Promise.race([this.redis.quit().catch(() => {}), new Promise(resolve => setTimeout(resolve, 500).unref())])
    }
    this.redis.disconnect()
  }
}

/** What {@link createRateLimiter} needs of the config. */
export interface RateLimitStoreConfig {
  /** `sessions.store`: `redis` shares the counters through Redis. */
  store: 'memory' | 'redis'
  redis: RedisTarget
  keyPrefix: string
}

/**
 * The limiter for a loaded config, or undefined when no policy rule has a `rateLimit` (no cost).
 * @throws McpxError MCPX_ERR_CONFIG as lib/base/redis createRedisConnection (an unset password variable)
 */
export function createRateLimiter (hasLimits: boolean, sessions: RateLimitStoreConfig, logger: Logger): RateLimiter | undefined {
  if (!hasLimits) return undefined
  if (sessions.store === 'redis') return new RedisRateLimiter({ redis: sessions.redis, keyPrefix: sessions.keyPrefix, logger })
  return new MemoryRateLimiter()
}
