/**
 * Throwaway Redis set-ups on loopback for the `redis/…` tests (docs: Running several replicas ›
 * Surviving a Redis node): a Redis Cluster of N masters, and a Sentinel set-up (a master, a replica, three
 * sentinels). Every process is a real `redis-server` (Debian `redis-server`; `redis-cli` from
 * `redis-tools` creates the cluster), on free ports, with its files in a fresh temp dir, started
 * by the test and killed (SIGKILL, then awaited) at its teardown, or at the latest when the test
 * process exits. Every wait is bounded.
 *
 * Missing binaries: under `npm test` the tests are skipped with the command that installs them
 * ({@link REDIS_HA_SKIP}); under CI (`CI=true`) they run and fail. `.ci/run` installs them.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import Fastify, { type FastifyInstance } from 'fastify'
import mcpx from '../../app.js'
import type { RedisTarget } from '../../lib/base/redis.js'
import { fixtureUpstreams, type Teardown } from './app.js'
import { freePort } from './daemon.js'
import { pollUntil } from './legacy.js'

const HOST = '127.0.0.1'

function hasBinary (name: string): boolean {
  return spawnSync(name, ['--version'], { stdio: 'ignore' }).status === 0
}

/**
 * tap's `skip` option for the `redis/…` tests: a reason (with the install command) when
 * redis-server or redis-cli is missing on a developer machine, false otherwise. Under CI never a
 * skip: the tests run and fail on the missing binary.
 */
export const REDIS_HA_SKIP: string | false = (!hasBinary('redis-server') || !hasBinary('redis-cli')) && process.env.CI !== 'true'
  ? 'redis-server/redis-cli are not installed: apt-get install redis-server redis-tools (Debian\'s packages; .ci/run installs them in CI)'
  : false

/** Every child still running, killed when the test process exits (a test that threw past its teardown). */
const running = new Set<ChildProcess>()
process.on('exit', () => { for (const child of running) child.kill('SIGKILL') })

/** One redis-server process (a data node or a sentinel). */
export interface RedisNode {
  port: number
  /** "127.0.0.1:port" */
  address: string
  child: ChildProcess
  /** SIGKILLs the process and waits for its exit. Idempotent. */
  kill: () => Promise<void>
}

async function stop (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  child.kill('SIGKILL')
  await exited
}

/** A temp dir removed at teardown. */
function tempDir (t: Teardown, what: string): string {
  const dir = mkdtempSync(join(tmpdir(), `mcpx-${what}-`))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  return dir
}

/** A one-shot connection that gives up at once (no retries): for probes and set-up commands. */
export function probe (port: number): Redis {
  const redis = new Redis(port, HOST, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1_000, commandTimeout: 2_000 })
  redis.on('error', () => {})
  return redis
}

/** Runs one command on the server at `port`; undefined when it cannot be reached. */
export async function command (port: number, name: string, ...args: Array<string | number>): Promise<unknown> {
  const redis = probe(port)
  try {
    await redis.connect()
    return await redis.call(name, ...args)
  } catch {
    return undefined
  } finally {
    redis.disconnect()
  }
}

/**
 * Starts `redis-server <configFile> <args>` on a free port in `dir` and waits (bounded) until it
 * answers PING. Killed at teardown.
 * @param configFile a config file (sentinels need one they can rewrite), or undefined
 */
async function startServer (t: Teardown, dir: string, args: string[], options: { port?: number, configFile?: string } = {}): Promise<RedisNode> {
  const port = options.port ?? await freePort()
  const argv = [...(options.configFile !== undefined ? [options.configFile] : []), '--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--dir', dir, ...args]
  const child = spawn('redis-server', argv, { stdio: ['ignore', 'ignore', 'pipe'] })
  running.add(child)
  child.once('exit', () => running.delete(child))
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => { if (stderr.length < 4_096) stderr += chunk.toString() })
  const kill = async (): Promise<void> => { await stop(child) }
  t.teardown(kill)
  await pollUntil(`redis-server on port ${port} to answer`, async () => {
    if (child.exitCode !== null) throw new Error(`redis-server ${argv.join(' ')} exited (${child.exitCode}): ${stderr}`)
    return await command(port, 'PING') === 'PONG'
  }, 10_000)
  return { port, address: `${HOST}:${port}`, child, kill }
}

/** A running Redis Cluster. */
export interface RedisClusterSetup {
  nodes: RedisNode[]
  /** The startup nodes for `sessions.redis: { cluster }`. */
  addresses: string[]
}

/**
 * Starts `masters` cluster-enabled redis-servers (no replicas), joins them with
 * `redis-cli --cluster create … --cluster-yes` (slots split evenly), and waits until every node
 * reports `cluster_state:ok` and knows all the others. Bounded by about 30 s.
 */
export async function startRedisCluster (t: Teardown, masters = 3): Promise<RedisClusterSetup> {
  const nodes: RedisNode[] = []
  for (let i = 0; i < masters; i++) {
    const dir = tempDir(t, `redis-cluster-${i}`)
    // The bus port defaults to port + 10000, which may be taken or past 65535: choose it too.
    const busPort = await freePort()
    nodes.push(await startServer(t, dir, ['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'), '--cluster-port', String(busPort), '--cluster-node-timeout', '3000']))
  }
  const addresses = nodes.map(n => n.address)
  const create = spawn('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes'], { stdio: ['ignore', 'pipe', 'pipe'] })
  running.add(create)
  let output = ''
  create.stdout?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  create.stderr?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const timer = setTimeout(() => create.kill('SIGKILL'), 30_000)
  const [code] = await once(create, 'exit') as [number | null]
  clearTimeout(timer)
  running.delete(create)
  if (code !== 0) throw new Error(`redis-cli --cluster create failed (${String(code)}): ${output.slice(-2_000)}`)
  await pollUntil('every cluster node to report cluster_state:ok', async () => {
    for (const node of nodes) {
      const info = String(await command(node.port, 'CLUSTER', 'INFO') ?? '')
      if (!info.includes('cluster_state:ok') || !info.includes(`cluster_known_nodes:${masters}`)) return false
    }
    return true
  }, 30_000)
  return { nodes, addresses }
}

/** A running Sentinel set-up. */
export interface RedisSentinelSetup {
  /** The master's name, as in `sentinel monitor`. */
  name: string
  master: RedisNode
  replica: RedisNode
  sentinels: RedisNode[]
  /** The sentinel addresses for `sessions.redis: { sentinels, name }`. */
  addresses: string[]
  /** "host:port" of the master the sentinels currently name. */
  currentMaster: () => Promise<string | undefined>
}

/**
 * Starts a master, a replica of it, and three sentinels (quorum 2, down-after 1 s, failover
 * timeout 3 s), and waits until every sentinel knows the replica and the two other sentinels, so
 * that a failover can be agreed. Bounded by about 40 s.
 */
export async function startRedisSentinels (t: Teardown, name = 'mymaster'): Promise<RedisSentinelSetup> {
  const master = await startServer(t, tempDir(t, 'redis-master'), [])
  const replica = await startServer(t, tempDir(t, 'redis-replica'), ['--replicaof', HOST, String(master.port)])
  await pollUntil('the replica to sync with the master', async () => String(await command(replica.port, 'INFO', 'replication') ?? '').includes('master_link_status:up'), 15_000)
  const sentinels: RedisNode[] = []
  for (let i = 0; i < 3; i++) {
    const dir = tempDir(t, `redis-sentinel-${i}`)
    const configFile = join(dir, 'sentinel.conf') // sentinels rewrite their config: it must be a writable file
    writeFileSync(configFile, [
      `sentinel monitor ${name} ${HOST} ${master.port} 2`,
      `sentinel down-after-milliseconds ${name} 1000`,
      `sentinel failover-timeout ${name} 3000`,
      `sentinel parallel-syncs ${name} 1`,
      ''
    ].join('\n'))
    sentinels.push(await startServer(t, dir, ['--sentinel'], { configFile }))
  }
  await pollUntil('every sentinel to know the replica and the other sentinels', async () => {
    for (const sentinel of sentinels) {
      const replicas = await command(sentinel.port, 'SENTINEL', 'REPLICAS', name) as unknown[] | undefined
      const peers = await command(sentinel.port, 'SENTINEL', 'SENTINELS', name) as unknown[] | undefined
      if (replicas?.length !== 1 || peers?.length !== 2) return false
    }
    return true
  }, 30_000)
  const currentMaster = async (): Promise<string | undefined> => {
    for (const sentinel of sentinels) {
      const reply = await command(sentinel.port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name) as [string, string] | null | undefined
      if (Array.isArray(reply)) return `${reply[0]}:${reply[1]}`
    }
    return undefined
  }
  return { name, master, replica, sentinels, addresses: sentinels.map(s => s.address), currentMaster }
}

/** How many session-store log lines {@link replicasOn} keeps. */
export const STORE_LOG_LINES = 200

/**
 * The last `count` lines of a {@link replicasOn} store log, shortened to time, replica (A, B, …), message and
 * error: what a failure message shows of why the store was unreachable.
 */
export function storeLogTail (storeLog: readonly string[], count = 12): string {
  return storeLog.slice(-count).map(line => {
    try {
      const { time, app, msg, err } = JSON.parse(line) as { time?: number, app?: string, msg?: string, err?: { message?: string } }
      return `${new Date(time ?? 0).toISOString().slice(11, 23)} ${app ?? '?'} ${msg ?? ''}${err?.message !== undefined ? `: ${err.message}` : ''}`
    } catch {
      return line.slice(0, 300)
    }
  }).join('\n')
}

/** mcpx replicas sharing one Redis target. */
export interface Replicas {
  bases: string[]
  apps: FastifyInstance[]
  prefix: string
}

/**
 * `n` in-process mcpx instances on 127.0.0.1:0, each with its own fixture upstream child, all with
 * `sessions: { store: "redis", redis: target }` under a fresh key prefix; closed at teardown.
 * `forceCloseConnections`: an aborted stream's follow-up connection must not hold app.close().
 * @param storeLog when given, the replicas log at debug level and their session store's lines
 *        (those naming "session store": outages, recoveries, each failed command with its error)
 *        are appended to it, the last {@link STORE_LOG_LINES} kept, for a failure message
 */
export async function replicasOn (t: Teardown, target: RedisTarget, n = 2, flags: string[] = [], storeLog?: string[]): Promise<Replicas> {
  const prefix = `mcpx-ha-${Math.random().toString(36).slice(2, 10)}:`
  const bases: string[] = []
  const apps: FastifyInstance[] = []
  for (let i = 0; i < n; i++) {
    const logger = storeLog === undefined
      ? { level: process.env.TEST_LOG_LEVEL ?? 'silent' }
      : { level: 'debug', base: { app: String.fromCharCode(65 + i) }, stream: { write: (line: string) => { if (line.includes('session store')) { storeLog.push(line.trimEnd()); if (storeLog.length > STORE_LOG_LINES) storeLog.shift() } } } }
    const app = Fastify({ logger, forceCloseConnections: true })
    await app.register(mcpx, { upstreams: fixtureUpstreams(flags), transport: { sseKeepAlive: 50 }, sessions: { store: 'redis', redis: target, keyPrefix: prefix } })
    t.teardown(async () => { await app.close() })
    bases.push(await app.listen({ host: HOST, port: 0 }))
    apps.push(app)
  }
  return { bases, apps, prefix }
}
