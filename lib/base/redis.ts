/**
 * Redis connections from config (docs/replicas.md › Surviving a Redis node). One factory builds every
 * Redis connection mcpx makes, from one of three shapes, all through ioredis 5:
 *
 *   "redis://host:port[/db]"                            one server (`rediss://` for TLS)
 *   { "sentinels": ["host:port", …], "name": "mymaster" } the master that Redis Sentinel names;
 *                                                        on a failover ioredis asks the sentinels again
 *   { "cluster": ["host:port", …] }                     a Redis Cluster (any reachable nodes; the rest
 *                                                        are discovered), commands routed by key slot
 *
 * Callers that run Lua scripts or MULTI on a Cluster must keep every key of one script or
 * transaction in one slot: a shared `{hash tag}` (lib/sessions/redis-store.ts does, per session).
 * Classic pub/sub (PUBLISH/SUBSCRIBE) reaches every node of a Cluster, so channels need no tag.
 *
 * Connections fail fast rather than queue: no offline queue, one retry, a command timeout; ioredis
 * reconnects in the background (for Sentinel: asking the sentinels for the current master, and
 * reconnecting at once when a sentinel announces a switch; for Cluster: refreshing the slot map).
 * A caller maps a failed command to its own answer (the session store: 503). Reusable by other
 * features that need Redis (e.g. shared rate limits).
 */
import { createRequire } from 'node:module'
import type { Redis, Cluster, RedisOptions, ClusterOptions } from 'ioredis'
import { McpxError } from './errors.js'
import { parseNodeAddress } from './net.js'
import { redactUrl } from './redact.js'

/**
 * ioredis, loaded by the first connection made: a process with no Redis configured never loads it
 * (~40 modules, ~50 ms of every start). ioredis is CommonJS, so a synchronous require does.
 */
function ioredis (): typeof import('ioredis') {
  return createRequire(import.meta.url)('ioredis') as typeof import('ioredis')
}

/** `sessions.redis` and any other Redis setting: a URL, a Sentinel set-up, or a Cluster. */
export type RedisTarget = string | RedisSentinelTarget | RedisClusterTarget

/** A master found through Redis Sentinel. */
export interface RedisSentinelTarget {
  /** Sentinel addresses, "host:port" (at least one; list them all so any one may be down). */
  sentinels: string[]
  /** The master's name in the sentinels' config (`sentinel monitor <name> …`). */
  name: string
  /** Database index on the master. Default 0. */
  db?: number
  /** Environment variable holding the data nodes' password (AUTH); unset: none. */
  passwordEnv?: string
  /** Environment variable holding the sentinels' own password; unset: none. */
  sentinelPasswordEnv?: string
}

/** A Redis Cluster. */
export interface RedisClusterTarget {
  /** Startup nodes, "host:port" (at least one; the others are discovered with CLUSTER SLOTS). */
  cluster: string[]
  /** Environment variable holding the nodes' password (AUTH); unset: none. */
  passwordEnv?: string
}

/** One ioredis connection: a single server or Sentinel master (`Redis`), or a `Cluster`. */
export type RedisConnection = Redis | Cluster

/** How a connection behaves; all durations ms. */
export interface RedisConnectionOptions {
  /** A command not answered within this fails (the caller reports unavailable). Default 1000. */
  commandTimeoutMs?: number
  /** Opening one TCP connection may take this long. Default 1000. */
  connectTimeoutMs?: number
  /** Connect on `connect()` only (default true), so the caller chooses when to wait. */
  lazyConnect?: boolean
  /** Batch concurrent commands into one write (default true: same round trips, fewer syscalls). */
  autoPipelining?: boolean
  /** ioredis resubscribes after a reconnect (default false: callers subscribe on every 'ready'). */
  autoResubscribe?: boolean
}

/** JSON Schema of a {@link RedisTarget} (used by lib/config/schema.ts). */
export const REDIS_TARGET_SCHEMA = {
  oneOf: [
    { type: 'string', pattern: '^rediss?://', description: 'redis://[user:password@]host:port[/db] (rediss:// for TLS)' },
    {
      type: 'object',
      additionalProperties: false,
      required: ['sentinels', 'name'],
      properties: {
        sentinels: { type: 'array', minItems: 1, items: { type: 'string', pattern: '^(\\[[0-9a-fA-F:.]+\\]|[^:\\s]+):\\d{1,5}$' }, description: 'sentinel addresses, host:port' },
        name: { type: 'string', minLength: 1, description: 'the master name the sentinels monitor' },
        db: { type: 'integer', minimum: 0, description: 'database index (default 0)' },
        passwordEnv: { type: 'string', minLength: 1, description: 'environment variable holding the Redis password' },
        sentinelPasswordEnv: { type: 'string', minLength: 1, description: 'environment variable holding the sentinels\' password' }
      }
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['cluster'],
      properties: {
        cluster: { type: 'array', minItems: 1, items: { type: 'string', pattern: '^(\\[[0-9a-fA-F:.]+\\]|[^:\\s]+):\\d{1,5}$' }, description: 'startup nodes, host:port' },
        passwordEnv: { type: 'string', minLength: 1, description: 'environment variable holding the Redis password' }
      }
    }
  ]
} as const

/** A target for logs and errors: URL credentials redacted, env var names only (never their values). */
export function describeRedisTarget (target: RedisTarget): string {
  if (typeof target === 'string') return redactUrl(target)
  if ('cluster' in target) return `cluster ${target.cluster.join(',')}`
  return `sentinel master "${target.name}" via ${target.sentinels.join(',')}`
}

/** The kind of a target: 'single', 'sentinel' or 'cluster'. */
export function redisTargetKind (target: RedisTarget): 'single' | 'sentinel' | 'cluster' {
  return typeof target === 'string' ? 'single' : 'cluster' in target ? 'cluster' : 'sentinel'
}

function secretFromEnv (name: string | undefined, env: NodeJS.ProcessEnv, what: string): string | undefined {
  if (name === undefined) return undefined
  const value = env[name]
  if (value === undefined || value === '') throw new McpxError('MCPX_ERR_CONFIG', `mcpx: ${what} names environment variable ${name}, which is not set`)
  return value
}

/**
 * Builds (does not connect, unless `lazyConnect: false`) one ioredis connection for `target`.
 * A caller that needs a subscriber calls this twice: a connection in subscriber mode runs nothing else.
 * @param env where `passwordEnv`/`sentinelPasswordEnv` are read (default process.env)
 * @throws McpxError MCPX_ERR_CONFIG for a bad address or an unset password variable
 */
export function createRedisConnection (target: RedisTarget, options: RedisConnectionOptions = {}, env: NodeJS.ProcessEnv = process.env): RedisConnection {
  const { Redis, Cluster } = ioredis()
  const base: RedisOptions = {
    lazyConnect: options.lazyConnect ?? true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: options.connectTimeoutMs ?? 1_000,
    commandTimeout: options.commandTimeoutMs ?? 1_000,
    autoResubscribe: options.autoResubscribe ?? false,
    enableAutoPipelining: options.autoPipelining ?? true,
    retryStrategy: (times: number) => Math.min(50 * times, 1_000)
  }
  if (typeof target === 'string') return new Redis(target, base)
  if ('cluster' in target) {
    const password = secretFromEnv(target.passwordEnv, env, 'sessions.redis.passwordEnv')
    const clusterOptions: ClusterOptions = {
      lazyConnect: base.lazyConnect,
      // Cluster-level: fail at once while no slot map is known. ioredis keeps its per-node
      // connections' queues on (bounded by commandTimeout) so a node met mid-refresh is not an error.
      enableOfflineQueue: false,
      enableAutoPipelining: base.enableAutoPipelining,
      clusterRetryStrategy: (times: number) => Math.min(100 * times, 2_000),
      slotsRefreshTimeout: base.connectTimeout,
      redisOptions: {
        connectTimeout: base.connectTimeout,
        commandTimeout: base.commandTimeout,
        maxRetriesPerRequest: base.maxRetriesPerRequest,
        ...(password !== undefined ? { password } : {})
      }
    }
    return new Cluster(target.cluster.map(parseNodeAddress), clusterOptions)
  }
  const password = secretFromEnv(target.passwordEnv, env, 'sessions.redis.passwordEnv')
  const sentinelPassword = secretFromEnv(target.sentinelPasswordEnv, env, 'sessions.redis.sentinelPasswordEnv')
  return new Redis({
    ...base,
    sentinels: target.sentinels.map(parseNodeAddress),
    name: target.name,
    db: target.db ?? 0,
    ...(password !== undefined ? { password } : {}),
    ...(sentinelPassword !== undefined ? { sentinelPassword } : {}),
    sentinelRetryStrategy: (times: number) => Math.min(100 * times, 1_000),
    // A sentinel's +switch-master makes ioredis reconnect to the new master at once, instead of
    // when the old one's connection breaks (a demoted master keeps accepting reads).
    failoverDetector: true,
    // A write refused by a demoted master (READONLY): reconnect, which asks the sentinels again.
    reconnectOnError: (err: Error) => err.message.startsWith('READONLY') ? 2 : false
  })
}
