/**
 * Instructions per call (BENCHMARKS.md): a server's user-space instructions per `tools/call echo`,
 * counted by valgrind's callgrind. On a shared machine CPU time per request moves by ±10–20 % from
 * one run to the next, and by 5 % even in a paired run (bench/paired.ts); an instruction count does
 * not depend on what else runs, so a change of a few percent can be seen. It is not time: syscalls,
 * cache misses and the other processes' work are not in it, and the server runs ~5× slower under
 * valgrind, so this is for comparing builds and servers, never for req/s.
 *
 *   node dist/bench/instructions.js [--target forward|modern|legacy|forward-http|modern-http]… [--dist DIR]… [--runs 3]
 *                                   [--warmup 10000] [--requests 2000] [--connections 1]
 *
 * Targets (harness.ts startTarget, as bench/alloc.ts starts them), default `modern`; the first three
 * in front of the v1 SDK's stdio server (bench/v1-stdio-upstream.ts):
 * - `forward`: the forwarding ceiling (bench/forward-server.ts), the 2026-07-28 call;
 * - `modern`: an mcpx daemon, the 2026-07-28 tools/call with every mirrored header and `_meta`;
 * - `legacy`: the same daemon in a 2025-11-25 session (initialize and notifications/initialized
 *   before the warm-up, then every call with its Mcp-Session-Id);
 * - `forward-http` and `modern-http`: the HTTP forwarding ceiling (bench/forward-http-server.ts)
 *   and an mcpx daemon, each in front of bench/echo-http-upstream.ts (its own process, not counted).
 * With a target's ceiling in the run (`forward`, or `forward-http` for `modern-http`), each mcpx
 * row also gets its ratio against it (scenarios 22/21 and 8/21 of run.ts, counted in instructions
 * instead of CPU time).
 *
 * Each mcpx target runs for each `--dist` (default: this build's dist/; the forwarding ceiling and
 * the v1 server are always this build's), `--runs` times, alternating targets and builds. A run:
 * the server starts under `valgrind --tool=callgrind --instr-atstart=no` (without
 * --trace-children, so the upstream child it spawns runs natively and is not counted), takes
 * `--warmup` calls uninstrumented (so the JIT has settled: after 3,000 calls TurboFan still made
 * ~45 optimisations and deopts in the next 2,000, in every build; after 10,000, ~3), then
 * `callgrind_control -i on`, `--requests` calls, `-i off` and a dump. Every reply is checked
 * (status 200, no error, and the echo text: harness.ts echoCheck). Needs valgrind (every machine
 * kind here has it; CI does not run this).
 *
 * One connection by default: calls one at a time, each with its own loop turns, so the count does
 * not depend on how many calls one turn happens to batch (with 8 connections two runs of one build
 * differed by 25 %; with one, by 1–10 %, mostly GC). Run each build at least three times and read the mean
 * of the main-thread column: V8's compiler and GC threads are counted apart (--separate-threads), and
 * how much of their work falls inside the window varies from run to run by more than a 10 % step.
 */
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { Agent } from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ceilingOf, echoCheck, killAll, oneOf, parseFlags, positiveInt, postOnce, startTarget, targetCall, SERVER_TARGETS, type ServerTarget } from './harness.js'

const check = echoCheck()

const USAGE = 'usage: node dist/bench/instructions.js [--target forward|modern|legacy|forward-http|modern-http]… [--dist DIR]… [--runs N] [--warmup N] [--requests N] [--connections N]'

/** The command line (harness.ts parseFlags: --help prints the usage, a bad option exits 2 with it). */
function options (): { targets: ServerTarget[], dists: string[], runs: number, warmup: number, requests: number, connections: number } {
  const { values } = parseFlags('instructions', USAGE, {
    target: { type: 'string', multiple: true, default: [] },
    dist: { type: 'string', multiple: true, default: [] },
    runs: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '10000' },
    requests: { type: 'string', default: '2000' },
    connections: { type: 'string', default: '1' }
  })
  const count = (name: string, text: string): number => positiveInt('instructions', USAGE, name, text)
  const targets = values.target.length > 0 ? [...new Set(values.target.map(t => oneOf('instructions', USAGE, 'target', t, SERVER_TARGETS)))] : ['modern' as const]
  const dists = values.dist.length > 0 ? values.dist.map(d => resolve(d)) : [fileURLToPath(new URL('..', import.meta.url))]
  return { targets, dists, runs: count('runs', values.runs), warmup: count('warmup', values.warmup), requests: count('requests', values.requests), connections: count('connections', values.connections) }
}

/** One tools/call echo (`headers`, `body`) on `agent`; resolves true when the reply is a 200 that passes the echo check. */
async function call (agent: Agent, port: number, headers: Record<string, string>, body: string): Promise<boolean> {
  try {
    const reply = await postOnce(agent, port, '/mcp', headers, body)
    return reply.status === 200 && check(reply.body, true)
  } catch {
    return false
  }
}

/** `total` calls over `connections` keep-alive connections; resolves to the number that failed. */
async function load (port: number, total: number, connections: number, headers: Record<string, string>, body: string): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  let left = total
  let failed = 0
  await Promise.all(Array.from({ length: connections }, async () => {
    while (left-- > 0) if (!await call(agent, port, headers, body)) failed++
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

/**
 * One instrumented run of `target`'s server (for an mcpx target, `dist`'s daemon); resolves to its
 * instructions per call. @throws Error when the server is not ready, a call failed or nothing was counted
 */
async function measure (target: ServerTarget, dist: string, warmup: number, requests: number, connections: number): Promise<InstructionCount> {
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-instructions-'))
  // One dump file per thread (`callgrind.out.<dump>-<thread>`; thread 01 is the main thread). No
  // --trace-children: the upstream the server spawns runs natively, uncounted.
  const valgrind = ['valgrind', '--tool=callgrind', '--instr-atstart=no', '--separate-threads=yes', `--callgrind-out-file=${join(dir, 'callgrind.out')}`]
  const { child, port } = await startTarget(target, { label: target, logDir: dir, dist, wrapper: valgrind, readyBoundMs: 300_000 })
  try {
    const opening = new Agent({ keepAlive: false })
    const { headers, body } = await targetCall(target, opening, port).finally(() => opening.destroy())
    const control = (...args: string[]): void => { execFileSync('callgrind_control', [...args, String(child.pid)], { stdio: 'ignore' }) }
    let failed = await load(port, warmup, connections, headers, body)
    control('-i', 'on')
    failed += await load(port, requests, connections, headers, body)
    control('-i', 'off')
    control('-d')
    if (failed > 0) throw new Error(`instructions: ${target}: ${failed} calls failed (${dist}; log ${child.logFile})`)
  } finally {
    await child.stop(60_000)
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
  if (total === 0 || main === 0) throw new Error(`instructions: ${target}: callgrind counted nothing (${dir})`)
  return { total: total / requests, main: main / requests }
}

/** One line of the table: a target, for an mcpx target one build (`dist`), and its runs. */
interface Line { target: ServerTarget, dist: string | undefined, counts: InstructionCount[] }

async function main (): Promise<void> {
  const { targets, dists, runs, warmup, requests, connections } = options()
  console.log(`instructions per tools/call (the server process, user space, callgrind; its upstream not counted): ${targets.join(', ')}; ${warmup} warm-up calls, then ${requests} counted, ${connections} connections, ${runs} runs per line`)
  // A forwarding ceiling is this build's bench/forward-server.ts (forward-http-server.ts) whatever --dist says: one line.
  const lines = targets.flatMap<Line>(target => ceilingOf(target) === target ? [{ target, dist: undefined, counts: [] }] : dists.map(dist => ({ target, dist, counts: [] })))
  const name = (line: Line): string => line.dist === undefined ? line.target : `${line.target} ${line.dist}`
  const fmt = (x: number): string => Math.round(x).toLocaleString('en-US')
  for (let run = 1; run <= runs; run++) {
    for (const line of lines) {
      const count = await measure(line.target, line.dist ?? dists[0], warmup, requests, connections)
      line.counts.push(count)
      console.log(`run ${run}: ${name(line)}: ${fmt(count.total)} (main thread ${fmt(count.main)})`)
    }
  }
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length
  const means = (line: Line): InstructionCount => ({ total: mean(line.counts.map(x => x.total)), main: mean(line.counts.map(x => x.main)) })
  const k = (x: number): string => Math.round(x / 1000) + 'k'
  const ratio = (x: number, of: number | undefined): string => of === undefined ? '—' : (x / of).toFixed(3)
  // Ratios against a line's forwarding ceiling when it ran, against the first build when there are several.
  const ceilingLine = (line: Line): Line | undefined => ceilingOf(line.target) === line.target ? undefined : lines.find(other => other.target === ceilingOf(line.target))
  const withCeiling = lines.some(line => ceilingLine(line) !== undefined)
  const severalBuilds = dists.length > 1
  /** The means of the first build's line of the same mcpx target (none for the forwarding ceiling). */
  const firstBuild = (line: Line): InstructionCount | undefined => {
    const first = line.dist === undefined ? undefined : lines.find(other => other.target === line.target && other.dist === dists[0])
    return first === undefined ? undefined : means(first)
  }
  const group = (label: string): string[] => [label, 'runs', ...(withCeiling ? ['against its ceiling'] : []), ...(severalBuilds ? ['against the first build'] : [])]
  const head = ['target', 'build', ...group('instructions per call (mean)'), ...group('main thread (mean)')]
  console.log(`\n| ${head.join(' | ')} |`)
  console.log(`| ${head.map((h, i) => i < 2 ? '---' : h === 'runs' ? '---' : '---:').join(' | ')} |`)
  for (const line of lines) {
    const m = means(line)
    const base = firstBuild(line)
    const ceilingRow = ceilingLine(line)
    const ceiling = ceilingRow === undefined ? undefined : means(ceilingRow)
    const cells = (pick: (c: InstructionCount) => number): string[] => [
      fmt(pick(m)),
      line.counts.map(c => k(pick(c))).join(', '),
      ...(withCeiling ? [ratio(pick(m), ceiling === undefined ? undefined : pick(ceiling))] : []),
      ...(severalBuilds ? [ratio(pick(m), base === undefined ? undefined : pick(base))] : [])
    ]
    console.log(`| ${[line.target, line.dist ?? (line.target === 'forward' ? '(bench/forward-server.js)' : '(bench/forward-http-server.js)'), ...cells(c => c.total), ...cells(c => c.main)].join(' | ')} |`)
  }
}

main().catch((error: unknown) => { console.error(error); killAll(); process.exitCode = 1 })
