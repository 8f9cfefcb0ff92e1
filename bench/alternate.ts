/**
 * Alternating rounds of the server targets of instructions.js and alloc.js (harness.ts ServerTarget:
 * `forward` the forwarding ceiling, `modern` and `legacy` an mcpx daemon, each in front of the v1
 * SDK's stdio server; `forward-http` the HTTP forwarding ceiling and `modern-http` an mcpx daemon,
 * each in front of a trivial HTTP server, bench/echo-http-upstream.ts), ONE server at a time: each
 * round starts a fresh server of each target in turn, warms it up, loads it alone, reads its CPU
 * from `/proc` and stops it. Prints, per round and as the median of the rounds, each target's req/s
 * and server CPU µs per call (all the server's threads; its upstream apart), and each mcpx target's
 * CPU against its ceiling's (`forward`, or `forward-http` for `modern-http`), both as the ratio of
 * the medians and as the median of the per-round ratios. Steadier than paired.js, whose
 * two daemons share the cores at once and favour the one started second; a noisy neighbour still
 * shows as a round far off the others, so read several rounds.
 *
 *   node dist/bench/alternate.js [--target forward|modern|legacy|forward-http|modern-http[@DIST]]…
 *                                [--rounds 4] [--seconds 8] [--warmup 4] [--connections 32]
 *
 * `@DIST` runs an mcpx target (not a ceiling) from another build's dist/ (with a node_modules next to it), so
 * `--target modern@OTHER/dist --target modern` is an A/B of two builds. Default targets: forward,
 * modern, legacy. Figures are printed only; nothing here is part of `npm test`. Run under
 * `flock /tmp/mcpx-bench.lock`.
 */
import { existsSync, mkdtempSync } from 'node:fs'
import { Agent } from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { DEFAULT_TARGETS, SERVER_TARGETS, ceilingOf, echoCheck, httpLoad, killAll, loadAverage1m, median, oneOf, parseFlags, positiveInt, startTarget, usageError, targetCall, type ServerTarget } from './harness.js'

const USAGE = 'usage: node dist/bench/alternate.js [--target forward|modern|legacy|forward-http|modern-http[@DIST]]… [--rounds 4] [--seconds 8] [--warmup 4] [--connections 32]'

const { values: flags } = parseFlags('alternate', USAGE, {
  target: { type: 'string', multiple: true, default: [] },
  rounds: { type: 'string', default: '4' },
  seconds: { type: 'string', default: '8' },
  warmup: { type: 'string', default: '4' },
  connections: { type: 'string', default: '32' }
})
const ROUNDS = positiveInt('alternate', USAGE, 'rounds', flags.rounds)
const SECONDS = positiveInt('alternate', USAGE, 'seconds', flags.seconds)
const WARMUP = positiveInt('alternate', USAGE, 'warmup', flags.warmup, 0)
const CONNECTIONS = positiveInt('alternate', USAGE, 'connections', flags.connections)

/** One target as given: its kind, and the dist/ of an mcpx target from another build (undefined: this build). */
interface Spec { label: string, target: ServerTarget, dist?: string }
const SPECS: Spec[] = (flags.target?.length === 0 ? [...DEFAULT_TARGETS] : flags.target ?? []).map(text => {
  const at = text.indexOf('@')
  const target = oneOf('alternate', USAGE, 'target', at < 0 ? text : text.slice(0, at), SERVER_TARGETS)
  if (at >= 0 && ceilingOf(target) === target) usageError('alternate', USAGE, `--target ${target} takes no @DIST (a ceiling is always this build's): ${text}`)
  const dist = at < 0 ? undefined : resolve(text.slice(at + 1))
  if (dist !== undefined && !existsSync(join(dist, 'cli.js'))) usageError('alternate', USAGE, `--target ${text}: no cli.js in ${dist} (DIST is another build's dist/)`)
  return { label: text, target, dist }
})
const LOG_DIR = mkdtempSync(join(tmpdir(), 'mcpx-alternate-'))

/** One round of one target on a fresh server: req/s and server CPU µs per call of the measured run. */
async function measure (spec: Spec, round: number): Promise<{ rps: number, cpuUs: number }> {
  const { child, port } = await startTarget(spec.target, { label: `${spec.target}-${round}-${Math.random().toString(36).slice(2, 8)}`, logDir: LOG_DIR, dist: spec.dist })
  try {
    const url = `http://127.0.0.1:${port}/mcp`
    const call = await targetCall(spec.target, new Agent({ keepAlive: true }), port)
    // Legacy: one session per connection, each opened (initialize, initialized) before the load.
    const sessions = spec.target === 'legacy' ? await Promise.all(Array.from({ length: CONNECTIONS }, async () => (await targetCall('legacy', new Agent({ keepAlive: true }), port)).headers)) : undefined
    const load = { url, connections: CONNECTIONS, headers: call.headers, body: call.body, check: echoCheck(), headersFor: sessions === undefined ? undefined : (c: number) => sessions[c % sessions.length] }
    if (WARMUP > 0) await httpLoad({ ...load, scenario: `${spec.label} warm-up`, durationS: WARMUP, warmupS: 0 })
    const row = await httpLoad({ ...load, scenario: spec.label, durationS: SECONDS, warmupS: 0, serverPgid: child.pid })
    if (row.errors > 0) throw new Error(`alternate: ${spec.label}: ${row.errors} errors in round ${round}; see ${LOG_DIR}`)
    if (row.serverCpuUs === undefined) throw new Error(`alternate: ${spec.label}: no CPU reading`)
    return { rps: row.rps, cpuUs: row.serverCpuUs }
  } finally {
    await child.stop()
  }
}

async function main (): Promise<void> {
  console.log(`alternate: ${ROUNDS} rounds of ${SPECS.map(s => s.label).join(', ')}; ${WARMUP} s warm-up + ${SECONDS} s measured, ${CONNECTIONS} connections, one server at a time; 1-min load ${loadAverage1m()}`)
  const results = new Map<string, Array<{ rps: number, cpuUs: number }>>(SPECS.map(s => [s.label, []]))
  for (let round = 1; round <= ROUNDS; round++) {
    const line: string[] = []
    for (const spec of SPECS) {
      const result = await measure(spec, round)
      results.get(spec.label)?.push(result)
      line.push(`${spec.label} ${result.cpuUs.toFixed(1)} µs (${result.rps.toFixed(0)} req/s)`)
    }
    console.log(`round ${round}: ${line.join(', ')}`)
  }
  /** The rounds of `target`'s ceiling, when it ran. */
  const ceilingRounds = (target: ServerTarget): Array<{ rps: number, cpuUs: number }> | undefined => {
    const ceiling = SPECS.find(s => s.target === ceilingOf(target))
    return ceiling === undefined ? undefined : results.get(ceiling.label)
  }
  console.log(`\n| target | server CPU µs per call, median | rounds | req/s, median | against the ceiling (ratio of medians · median of per-round ratios) |`)
  console.log('| --- | ---: | --- | ---: | ---: |')
  for (const spec of SPECS) {
    const rows = results.get(spec.label) ?? []
    const cpu = median(rows.map(r => r.cpuUs))
    const ceiling = ceilingRounds(spec.target)
    const against = ceiling === undefined || ceilingOf(spec.target) === spec.target
      ? ''
      : `${(cpu / median(ceiling.map(r => r.cpuUs))).toFixed(2)}× · ${median(rows.map((r, i) => r.cpuUs / ceiling[i].cpuUs)).toFixed(2)}×`
    console.log(`| ${spec.label} | ${cpu.toFixed(1)} | ${rows.map(r => r.cpuUs.toFixed(1)).join(', ')} | ${median(rows.map(r => r.rps)).toFixed(0)} | ${against} |`)
  }
  console.log(`\n1-min load at the end ${loadAverage1m()}; logs: ${LOG_DIR}`)
}

main().then(() => { killAll(); process.exit(0) }, (err: unknown) => { console.error(err instanceof Error ? err.message : err); killAll(); process.exit(1) })
