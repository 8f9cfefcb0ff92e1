/**
 * Bench: legacy `tools/call echo` in 2025-11-25 sessions, on one mcpx daemon with the memory
 * session store, on one daemon with the Redis store, and on three daemons sharing Redis
 * (docs/replicas.md › Running several replicas). Run after a build: `node dist/bench/replicas.js [--quick] [--connections 32]`.
 *
 * The same total connections in every case. Sessions are all minted on the first daemon, and
 * with three daemons each takes a third of the connections, so two thirds of the requests are
 * served by a replica that did not mint their session. Every daemon has its own fixture upstream
 * over stdio. Redis is `REDIS_URL` (default redis://127.0.0.1:6379), under a key prefix unique to
 * the run (deleted at the end). Per request over the measured run: "Redis scripts/req" counts
 * EVALSHA calls (each one round trip; the hot path's lookup is one), "Redis cmds/req" Redis's
 * total_commands_processed, which also counts the commands a script runs inside Redis.
 *
 * Everything stays on 127.0.0.1 and is bounded in time; nothing here is part of `npm test`.
 */
import { writeFileSync, mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import { tmpdir, cpus } from 'node:os'
import { Agent } from 'node:http'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { startChild, freePort, waitHttp, postOnce, httpLoad, echoCheck, loadAverage1m, killAll, parseFlags, positiveInt, type Child, type Row } from './harness.js'
import { INITIALIZE_BODY, LEGACY_BODY, legacyHeaders } from './wire.js'

const USAGE = 'usage: node dist/bench/replicas.js [--quick] [--connections 32]   (Redis at REDIS_URL, default redis://127.0.0.1:6379)'

const { values: flags } = parseFlags('replicas', USAGE, { quick: { type: 'boolean', default: false }, connections: { type: 'string', default: '32' } })
const QUICK = flags.quick === true
const CONNECTIONS = positiveInt('replicas', USAGE, 'connections', flags.connections)
const DURATION_S = QUICK ? 3 : 10
const WARMUP_S = QUICK ? 1 : 3
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const PREFIX = `mcpx-bench:${randomBytes(4).toString('hex')}:`

const NODE = process.execPath
const path = (relative: string): string => fileURLToPath(new URL(relative, import.meta.url))
const CLI = path('../cli.js')
const FIXTURE = path('../test/fixtures/echo-upstream.js')
const LOG_DIR = mkdtempSync(join(tmpdir(), 'mcpx-bench-replicas-'))

interface Daemon { child: Child, port: number }

async function startDaemon (label: string, sessions: Record<string, unknown>): Promise<Daemon> {
  const port = await freePort()
  const config = join(LOG_DIR, `${label}.json`)
  writeFileSync(config, JSON.stringify({
    daemon: { address: `127.0.0.1:${port}` },
    transport: { maxSessions: 10_000 },
    sessions,
    upstreams: { fixture: { command: NODE, args: [FIXTURE] } }
  }))
  const child = startChild(label, NODE, [CLI, 'daemon', '--config', config], { logDir: LOG_DIR })
  await waitHttp(`http://127.0.0.1:${port}/readyz`)
  return { child, port }
}

async function mint (port: number, count: number): Promise<string[]> {
  const agent = new Agent({ keepAlive: true })
  const ids: string[] = []
  for (let i = 0; i < count; i++) {
    const reply = await postOnce(agent, port, '/mcp', legacyHeaders(undefined), INITIALIZE_BODY)
    const id = reply.headers['mcp-session-id']
    if (reply.status !== 200 || typeof id !== 'string') throw new Error(`bench: initialize failed: ${reply.status} ${reply.body}`)
    ids.push(id)
  }
  // A sanity call on every daemon later used, so a broken setup fails loudly.
  agent.destroy()
  return ids
}

async function sanity (port: number, sessionId: string): Promise<void> {
  const agent = new Agent({ keepAlive: false })
  const reply = await postOnce(agent, port, '/mcp', legacyHeaders(sessionId), LEGACY_BODY)
  agent.destroy()
  if (reply.status !== 200 || !echoCheck()(reply.body, true)) throw new Error(`bench: sanity call on :${port} failed: ${reply.status} ${reply.body.slice(0, 300)}`)
}

/** Redis's counters: every command (those run inside scripts included) and EVALSHA calls alone (one per script run). */
async function redisCommands (redis: Redis): Promise<{ all: number, scripts: number }> {
  const stats = await redis.info('stats')
  const commands = await redis.info('commandstats')
  return {
    all: Number(/total_commands_processed:(\d+)/.exec(stats)?.[1] ?? NaN),
    scripts: Number(/cmdstat_evalsha:calls=(\d+)/.exec(commands)?.[1] ?? 0) + Number(/cmdstat_eval:calls=(\d+)/.exec(commands)?.[1] ?? 0)
  }
}

/** Loads `daemons` at once, CONNECTIONS split evenly, each connection on one session; one combined row. */
async function load (scenario: string, daemons: Daemon[], sessionIds: string[], redis: Redis | undefined): Promise<Row & { redisPerRequest?: { all: number, scripts: number } }> {
  for (const d of daemons) await sanity(d.port, sessionIds[0])
  const per = Math.floor(CONNECTIONS / daemons.length)
  const run = async (durationS: number): Promise<Row[]> => await Promise.all(daemons.map(async (d, i) => await httpLoad({
    scenario,
    url: `http://127.0.0.1:${d.port}/mcp`,
    connections: per,
    durationS,
    warmupS: 0,
    headers: legacyHeaders(sessionIds[i * per]),
    headersFor: connection => legacyHeaders(sessionIds[(i * per + connection) % sessionIds.length]),
    body: LEGACY_BODY,
    check: echoCheck(),
    serverPgid: d.child.pid
  })))
  // Warm-up first (its errors count too), then the counters, then the measured run.
  const warmupErrors = (await run(WARMUP_S)).reduce((n, r) => n + r.errors, 0)
  const before = redis === undefined ? undefined : await redisCommands(redis)
  const rows = await run(DURATION_S)
  const after = redis === undefined ? undefined : await redisCommands(redis)
  const requests = rows.reduce((n, r) => n + r.requests, 0)
  return {
    scenario,
    load: `${per * daemons.length} conn`,
    requests,
    rps: rows.reduce((n, r) => n + r.rps, 0),
    p50Ms: Math.max(...rows.map(r => r.p50Ms)),
    p99Ms: Math.max(...rows.map(r => r.p99Ms)),
    p999Ms: Math.max(...rows.map(r => r.p999Ms)),
    errors: warmupErrors + rows.reduce((n, r) => n + r.errors, 0),
    serverCpuUs: rows.reduce((n, r) => n + (r.serverCpuUs ?? 0) * r.requests, 0) / Math.max(1, requests),
    ...(before !== undefined && after !== undefined ? { redisPerRequest: { all: (after.all - before.all) / Math.max(1, requests), scripts: (after.scripts - before.scripts) / Math.max(1, requests) } } : {})
  }
}

async function main (): Promise<void> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
  const results: Array<Row & { redisPerRequest?: { all: number, scripts: number } }> = []
  try {
    const memory = await startDaemon('memory-1', { store: 'memory' })
    try {
      results.push(await load('1 replica, memory store', [memory], await mint(memory.port, CONNECTIONS), undefined))
    } finally { await memory.child.stop() }

    const redisSessions = { store: 'redis', redis: REDIS_URL, keyPrefix: PREFIX }
    const single = await startDaemon('redis-1', redisSessions)
    try {
      results.push(await load('1 replica, Redis store', [single], await mint(single.port, CONNECTIONS), redis))
    } finally { await single.child.stop() }

    const three = [await startDaemon('redis-3a', redisSessions), await startDaemon('redis-3b', redisSessions), await startDaemon('redis-3c', redisSessions)]
    try {
      results.push(await load('3 replicas, Redis store (sessions minted on the first)', three, await mint(three[0].port, CONNECTIONS), redis))
    } finally { await Promise.all(three.map(async d => await d.child.stop())) }
  } finally {
    const keys = await redis.keys(`${PREFIX}*`).catch(() => [] as string[])
    if (keys.length > 0) await redis.del(...keys).catch(() => {})
    redis.disconnect()
  }
  const lines = [
    `replicas bench: ${new Date().toISOString()}, ${QUICK ? 'quick' : 'full'} (${WARMUP_S} s warm-up + ${DURATION_S} s), ${cpus().length} CPUs, load average ${loadAverage1m().toFixed(2)}, logs in ${LOG_DIR}`,
    '',
    '| scenario | load | requests | req/s | p50 ms | p99 ms | p99.9 ms | errors | server CPU µs/req | Redis scripts/req | Redis cmds/req |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...results.map(r => `| ${r.scenario} | ${r.load} | ${r.requests} | ${Math.round(r.rps)} | ${r.p50Ms.toFixed(2)} | ${r.p99Ms.toFixed(2)} | ${r.p999Ms.toFixed(2)} | ${r.errors} | ${Math.round(r.serverCpuUs ?? 0)} | ${r.redisPerRequest === undefined ? ' | ' : `${r.redisPerRequest.scripts.toFixed(2)} | ${r.redisPerRequest.all.toFixed(2)}`} |`)
  ]
  process.stdout.write(lines.join('\n') + '\n')
}

main().catch(err => {
  process.stderr.write(`bench: ${(err as Error).stack ?? String(err)}\n`)
  killAll()
  process.exitCode = 1
})
