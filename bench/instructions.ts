/**
 * Instructions per call (BENCHMARKS.md): the daemon's user-space instructions per modern `tools/call
 * echo` (scenario 3's request, the fixture over stdio), counted by valgrind's callgrind. On a
 * shared machine CPU time per request moves by ±10–20 % from one run to the next, and by 5 % even
 * in a paired run (bench/paired.ts); an instruction count does not depend on what else runs, so a
 * change of a few percent can be seen. It is not time: syscalls, cache misses and the other
 * processes' work are not in it, and the daemon runs ~5× slower under valgrind, so this is for
 * comparing two builds, never for req/s.
 *
 *   node dist/bench/instructions.js [--dist DIR]… [--runs 3] [--warmup 10000] [--requests 2000] [--connections 1]
 *
 * Each `--dist` (default: this build's dist/) is measured `--runs` times, alternating builds. A run:
 * the daemon starts under `valgrind --tool=callgrind --instr-atstart=no` (its upstream child is not
 * instrumented), takes `--warmup` calls uninstrumented (so the JIT has settled: after 3,000 calls TurboFan still made
 * ~45 optimisations and deopts in the next 2,000, in every build; after 10,000, ~3), then
 * `callgrind_control -i on`, `--requests` calls, `-i off` and a dump. Every reply is checked
 * (status 200, no error, and the echo text: harness.ts echoCheck). Needs valgrind (every machine kind here has it; CI does not run this).
 *
 * One connection by default: calls one at a time, each with its own loop turns, so the count does
 * not depend on how many calls one turn happens to batch (with 8 connections two runs of one build
 * differed by 25 %; with one, by 1–10 %, mostly GC). Run each build at least three times and read the mean
 * of the main-thread column: V8's compiler and GC threads are counted apart (--separate-threads), and
 * how much of their work falls inside the window varies from run to run by more than a 10 % step.
 */
import { spawn, execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs'
import { Agent } from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { echoCheck, fixtureDaemonConfig, freePort, postOnce, waitHttp } from './harness.js'
import { MODERN_BODY, MODERN_HEADERS } from './wire.js'

const check = echoCheck()

const USAGE = 'usage: node dist/bench/instructions.js [--dist DIR]… [--runs N] [--warmup N] [--requests N] [--connections N]'

function options (): { dists: string[], runs: number, warmup: number, requests: number, connections: number } {
  let values
  try {
    values = parseArgs({
      options: {
        dist: { type: 'string', multiple: true, default: [] },
        runs: { type: 'string', default: '3' },
        warmup: { type: 'string', default: '10000' },
        requests: { type: 'string', default: '2000' },
        connections: { type: 'string', default: '1' },
        help: { type: 'boolean', default: false }
      },
      strict: true
    }).values
  } catch (err) {
    process.stderr.write(`instructions: ${(err as Error).message}\n${USAGE}\n`)
    process.exit(2)
  }
  if (values.help) { process.stdout.write(USAGE + '\n'); process.exit(0) }
  const count = (name: string, text: string): number => {
    const n = Number(text)
    if (!Number.isInteger(n) || n < 1) { process.stderr.write(`instructions: --${name} must be a positive integer, got ${JSON.stringify(text)}\n${USAGE}\n`); process.exit(2) }
    return n
  }
  const dists = values.dist.length > 0 ? values.dist.map(d => resolve(d)) : [fileURLToPath(new URL('..', import.meta.url))]
  return { dists, runs: count('runs', values.runs), warmup: count('warmup', values.warmup), requests: count('requests', values.requests), connections: count('connections', values.connections) }
}

/** One modern tools/call echo on `agent`; resolves true when the reply is a 200 that passes the echo check. */
async function call (agent: Agent, port: number): Promise<boolean> {
  try {
    const reply = await postOnce(agent, port, '/mcp', MODERN_HEADERS, MODERN_BODY)
    return reply.status === 200 && check(reply.body, true)
  } catch {
    return false
  }
}

/** `total` calls over `connections` keep-alive connections; resolves to the number that failed. */
async function load (port: number, total: number, connections: number): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  let left = total
  let failed = 0
  await Promise.all(Array.from({ length: connections }, async () => {
    while (left-- > 0) if (!await call(agent, port)) failed++
  }))
  agent.destroy()
  return failed
}

/**
 * Instructions per call of one run: `total` (every thread of the daemon) and `main` (its main
 * thread: the request path's JavaScript, its builtins and the scavenges it runs itself). The rest
 * is V8's background threads: concurrent TurboFan compilation and concurrent marking and sweeping
 * of major GCs, work whose amount in a counted window depends on when the JIT and the heap's
 * timers happen to run (under valgrind the daemon is ~50× slower in wall time, so a time-driven
 * major GC or a late optimisation lands in the window or not): compare `main` first.
 */
export interface InstructionCount { total: number, main: number }

/** One instrumented run of `dist`'s daemon; resolves to its instructions per call. @throws Error when a call failed or nothing was counted */
async function measure (dist: string, warmup: number, requests: number, connections: number): Promise<InstructionCount> {
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-instructions-'))
  const port = await freePort()
  const config = fixtureDaemonConfig(dir, 'config', dist, port)
  // One dump file per thread (`callgrind.out.<dump>-<thread>`; thread 01 is the main thread).
  const child = spawn('valgrind', ['--tool=callgrind', '--instr-atstart=no', '--separate-threads=yes', `--callgrind-out-file=${join(dir, 'callgrind.out')}`, process.execPath, join(dist, 'cli.js'), 'daemon', '--config', config],
    { stdio: ['ignore', 'ignore', 'ignore'] })
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))
  try {
    await waitHttp(`http://127.0.0.1:${port}/readyz`, 300_000)
    const control = (...args: string[]): void => { execFileSync('callgrind_control', [...args, String(child.pid)], { stdio: 'ignore' }) }
    let failed = await load(port, warmup, connections)
    control('-i', 'on')
    failed += await load(port, requests, connections)
    control('-i', 'off')
    control('-d')
    if (failed > 0) throw new Error(`instructions: ${failed} calls failed (${dist})`)
  } finally {
    child.kill('SIGTERM')
    await exited
  }
  // The dump's `totals:` lines, one file per thread (the files written at exit, without a dump
  // number, hold only the uninstrumented rest).
  let total = 0
  let main = 0
  for (const file of readdirSync(dir)) {
    const thread = /^callgrind\.out\.\d+-(\d+)$/.exec(file)?.[1]
    if (thread === undefined) continue
    const count = Number(/^totals: (\d+)/m.exec(readFileSync(join(dir, file), 'utf8'))?.[1] ?? 0)
    total += count
    if (Number(thread) === 1) main = count
  }
  if (total === 0 || main === 0) throw new Error(`instructions: callgrind counted nothing (${dir})`)
  return { total: total / requests, main: main / requests }
}

async function main (): Promise<void> {
  const { dists, runs, warmup, requests, connections } = options()
  console.log(`instructions per modern tools/call (daemon, user space, callgrind): ${warmup} warm-up calls, then ${requests} counted, ${connections} connections, ${runs} runs per build`)
  const results = new Map<string, InstructionCount[]>(dists.map(d => [d, []]))
  const k = (x: number): string => Math.round(x / 1000) + 'k'
  for (let run = 1; run <= runs; run++) {
    for (const dist of dists) {
      const count = await measure(dist, warmup, requests, connections)
      results.get(dist)?.push(count)
      console.log(`run ${run}: ${dist}: ${Math.round(count.total).toLocaleString('en-US')} (main thread ${Math.round(count.main).toLocaleString('en-US')})`)
    }
  }
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length
  const means = (dist: string): InstructionCount => {
    const xs = results.get(dist) ?? []
    return { total: mean(xs.map(x => x.total)), main: mean(xs.map(x => x.main)) }
  }
  const first = means(dists[0])
  console.log('\n| build | instructions per call (mean) | runs | against the first | main thread (mean) | runs | against the first |')
  console.log('| --- | ---: | --- | ---: | ---: | --- | ---: |')
  for (const dist of dists) {
    const xs = results.get(dist) ?? []
    const m = means(dist)
    console.log(`| ${dist} | ${Math.round(m.total).toLocaleString('en-US')} | ${xs.map(x => k(x.total)).join(', ')} | ${(m.total / first.total).toFixed(3)} | ${Math.round(m.main).toLocaleString('en-US')} | ${xs.map(x => k(x.main)).join(', ')} | ${(m.main / first.main).toFixed(3)} |`)
  }
}

main().catch((error: unknown) => { console.error(error); process.exitCode = 1 })
