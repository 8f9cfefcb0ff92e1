/**
 * The shared Redis of the tests that run replicas on it (replicas/…, policy/…, rate limits): its
 * URL, and key prefixes that keep each test's keys apart and are cleaned up after it.
 */
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import type { Teardown } from './spawn.js'

/** The Redis the tests share: `REDIS_URL`, default redis://127.0.0.1:6379. */
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

/**
 * A key prefix (`mcpx-test:<12 hex>:`) no other test or run uses; every key under it in
 * {@link REDIS_URL} is deleted at the test's teardown. A teardown that cannot reach that Redis (the
 * test used another one, or stopped it) leaves the keys: they are the test's only. Never throws.
 */
export function redisTestPrefix (t: Teardown): string {
  const prefix = `mcpx-test:${randomBytes(6).toString('hex')}:`
  t.teardown(async () => {
    const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 })
    try {
      await redis.connect()
      const keys = await redis.keys(`${prefix}*`)
      if (keys.length > 0) await redis.del(...keys)
    } catch { /* another Redis, or none: nothing of ours to delete there */ } finally { redis.disconnect() }
  })
  return prefix
}
