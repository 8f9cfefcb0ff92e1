/**
 * A paired A/B of scenario 3 (mcpx modern `tools/call` echo → the fixture over stdio): this build's
 * daemon and another build's run AT THE SAME TIME, each under its own autocannon load of the same
 * shape, so both see the same machine load (two runs minutes apart on a shared machine differ by
 * 2× in req/s). Reports, per round and as the median of the rounds, each daemon's req/s and its
 * server CPU per request (the daemon process) and upstream CPU per request (its fixture child).
 * Run under `flock /tmp/mcpx-bench.lock`.
 *
 *   node dist/bench/paired.js --other /path/to/other/dist [--rounds 4] [--seconds 10] [--connections 16]
 *                             [--node-arg ARG]… (passed to node for both daemons, e.g. --cpu-prof
 *                             --cpu-prof-dir=DIR: one profile per daemon, written when it stops)
 *                             [--other-node-arg ARG]… (for the other build's daemon only: `--other` may
 *                             name this build's own dist/ to compare node flags, e.g. --max-semi-space-size=32)
 *
 * `--other` is another build's dist/ directory (its cli.js and test/fixtures/echo-upstream.js are
 * used; it needs a node_modules next to it). Figures are printed only; nothing here is part of `npm test`.
 */
import { mkdtempSync } from 'node:fs'
import { Agent } from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { echoCheck, fixtureDaemonConfig, freePort, httpLoad, killAll, loadAverage1m, median, parseFlags, positiveInt, postOnce, startChild, usageError, waitHttp, type Child, type Row } from './harness.js'
import { MODERN_BODY, MODERN_HEADERS } from './wire.js'

const USAGE = 'usage: node dist/bench/paired.js --other DIST_DIR [--rounds 4] [--seconds 10] [--connections 16] [--node-arg ARG]… [--other-node-arg ARG]…'

/** The command line (harness.ts parseFlags: --help prints the usage, a bad option exits 2 with it). */
const { values: flags } = parseFlags('paired', USAGE, {
  other: { type: 'string' },
  rounds: { type: 'string', default: '4' },
  seconds: { type: 'string', default: '10' },
  connections: { type: 'string', default: '16' },
  'node-arg': { type: 'string', multiple: true, default: [] },
  'other-node-arg': { type: 'string', multiple: true, default: [] }
})
const OTHER = flags.other ?? usageError('paired', USAGE, '--other DIST_DIR is required')
const ROUNDS = positiveInt('paired', USAGE, 'rounds', flags.rounds)
const SECONDS = positiveInt('paired', USAGE, 'seconds', flags.seconds)
const CONNECTIONS = positiveInt('paired', USAGE, 'connections', flags.connections)

const NODE = process.execPath
const LOG_DIR = mkdtempSync(join(tmpdir(), 'mcpx-paired-'))
const THIS_DIST = fileURLToPath(new URL('..', import.meta.url))
const builds = [{ name: 'other', dist: resolve(OTHER) }, { name: 'this', dist: THIS_DIST }]

/** Starts one build's daemon with the fixture as its stdio upstream; resolves once /readyz is 200. */
async function startDaemon (name: string, dist: string): Promise<{ child: Child, port: number }> {
  const port = await freePort()
  const config = fixtureDaemonConfig(LOG_DIR, name, dist, port)
  const own = name === 'other' ? flags['other-node-arg'] ?? [] : []
  const child = startChild(name, NODE, [...(flags['node-arg'] ?? []), ...own, join(dist, 'cli.js'), 'daemon', '--config', config], { logDir: LOG_DIR })
  await waitHttp(`http://127.0.0.1:${port}/readyz`)
  const agent = new Agent({ keepAlive: false })
  const reply = await postOnce(agent, port, '/mcp', MODERN_HEADERS, MODERN_BODY)
  agent.destroy()
  if (reply.status !== 200 || !echoCheck()(reply.body, true)) throw new Error(`paired: ${name}: the sanity call failed: ${reply.status} ${reply.body.slice(0, 300)}`)
  return { child, port }
}

const fmt = (n: number | undefined): string => n === undefined ? '-' : n.toFixed(0)

async function main (): Promise<void> {
  const daemons: Array<{ name: string, dist: string, child: Child, port: number }> = []
  for (const build of builds) daemons.push({ ...build, ...(await startDaemon(build.name, build.dist)) })
  console.log('daemons: ' + daemons.map(d => `${d.name} pid ${d.child.pid}`).join(', '))
  const rows = new Map<string, Row[]>(builds.map(b => [b.name, []]))
  const loads: number[] = []
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      loads.push(loadAverage1m())
      const results = await Promise.all(daemons.map(async d => await httpLoad({
        scenario: `3 paired (${d.name})`, url: `http://127.0.0.1:${d.port}/mcp`, connections: CONNECTIONS,
        durationS: SECONDS, warmupS: 2, headers: MODERN_HEADERS, body: MODERN_BODY, check: echoCheck(), serverPgid: d.child.pid
      })))
      results.forEach((row, i) => rows.get(daemons[i].name)?.push(row))
      console.log(`round ${round} (load ${loads[round - 1].toFixed(1)}): ` + results.map((r, i) =>
        `${daemons[i].name} ${fmt(r.rps)} req/s, ${fmt(r.serverCpuUs)} µs server, ${fmt(r.upstreamCpuUs)} µs upstream, ${r.errors} errors`).join(' | '))
    }
  } finally {
    for (const d of daemons) await d.child.stop()
  }
  console.log(`\nmedian of ${flags.rounds} rounds (${flags.seconds} s each, ${flags.connections} connections per daemon, 1-min load ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}):`)
  console.log('| build | req/s | server CPU µs/req | upstream CPU µs/req | errors |')
  console.log('| --- | ---: | ---: | ---: | ---: |')
  for (const d of daemons) {
    const r = rows.get(d.name) ?? []
    console.log(`| ${d.name} (${d.dist}) | ${fmt(median(r.map(x => x.rps)))} | ${fmt(median(r.map(x => x.serverCpuUs ?? NaN)))} | ${fmt(median(r.map(x => x.upstreamCpuUs ?? NaN)))} | ${r.reduce((s, x) => s + x.errors, 0)} |`)
  }
}

main().then(() => { killAll() }, (error: unknown) => { killAll(); console.error(error); process.exitCode = 1 })
