/**
 * Bytes allocated per call inside a server process (BENCHMARKS: "bytes/call"), a figure that does
 * not depend on machine load. Method: the server runs with bench/alloc-probe.ts preloaded (V8's
 * sampling heap profiler, 256-byte interval, objects freed by minor and major GCs kept in the
 * profile, so every allocation counts, not only survivors). The bench makes `warmup` calls, starts
 * sampling (SIGUSR2), makes `calls` calls one at a time on one keep-alive connection (each reply
 * checked: 200, no error, the echo text), stops sampling (SIGUSR2) and divides the sampled bytes
 * by `calls`. The load generator runs in this process, so its allocations are not counted.
 *
 *   node dist/bench/alloc.js [--target forward|modern|legacy|forward-http|modern-http]… [--calls 2000] [--warmup 2000] [--connections 1] [--sites 15]
 *
 * `--connections N` keeps N calls in flight (one per keep-alive connection): what one event-loop
 * turn costs (the batched stdin write, the log batch, the socket writes) is then shared by the
 * calls it serves, as under load; the default, one, charges every call a turn of its own.
 *
 * Targets, the first three in front of the v1-SDK stdio server (bench/v1-stdio-upstream.ts): `forward` the
 * forwarding ceiling (bench/forward-server.ts), `modern` mcpx 2026-07-28 tools/call, `legacy` mcpx in
 * a 2025-11-25 session (the request log line and metrics on, as shipped); by name only, `forward-http`
 * the HTTP forwarding ceiling and `modern-http` mcpx, each in front of bench/echo-http-upstream.ts
 * (default: the first three). `--sites N` also prints
 * the N largest allocating frames of each target.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { Agent } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { DEFAULT_TARGETS, SERVER_TARGETS, echoCheck, killAll, oneOf, parseFlags, positiveInt, postOnce, sleep, startTarget, targetCall, type ServerTarget } from './harness.js'

/** A target of the allocation figure (harness.ts ServerTarget). */
export type AllocTarget = ServerTarget

/** One target's figure: `bytesPerCall` (bytes, sampled), the calls counted, the largest sites. */
export interface AllocFigure { target: AllocTarget, bytesPerCall: number, calls: number, connections: number, sites: Array<{ site: string, bytes: number }> }

const PROBE = fileURLToPath(new URL('./alloc-probe.js', import.meta.url))

/** The printed method, for a report. */
export const ALLOC_METHOD = 'V8 sampling heap profiler in the server process (256-byte interval, objects freed by minor and major GC included), after a warm-up, sampled bytes / calls'

const USAGE = 'usage: node dist/bench/alloc.js [--target forward|modern|legacy|forward-http|modern-http]… [--calls 2000] [--warmup 2000] [--connections 1] [--sites N]'

async function waitFile (file: string, boundMs = 60_000): Promise<string> {
  const deadline = Date.now() + boundMs
  while (!existsSync(file)) {
    if (Date.now() > deadline) throw new Error(`alloc: ${file} not written within ${boundMs} ms`)
    await sleep(20)
  }
  await sleep(20)
  return readFileSync(file, 'utf8')
}

/**
 * Measures one target. @returns its figure. @throws Error when a call fails or the probe reports an error
 */
export async function allocPerCall (target: AllocTarget, calls: number, warmup: number, connections = 1): Promise<AllocFigure> {
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-alloc-'))
  const out = join(dir, 'profile.json')
  const { child, port } = await startTarget(target, { label: `alloc-${target}`, logDir: dir, nodeArgs: ['--import', PROBE], env: { MCPX_BENCH_ALLOC_OUT: out } })
  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  const check = echoCheck()
  try {
    const { headers, body } = await targetCall(target, agent, port)
    // `connections` loops share the n calls (one: calls one at a time); each loop keeps one call in flight.
    const run = async (n: number): Promise<void> => {
      let left = n
      await Promise.all(Array.from({ length: connections }, async () => {
        while (left-- > 0) {
          const reply = await postOnce(agent, port, '/mcp', headers, body)
          if (reply.status !== 200 || !check(reply.body, true)) throw new Error(`alloc: ${target}: call failed: ${reply.status} ${reply.body.slice(0, 300)}`)
        }
      }))
    }
    await run(warmup)
    process.kill(child.pid, 'SIGUSR2')
    const started = await waitFile(out + '.started')
    if (started !== 'ok') throw new Error(`alloc: the probe could not start: ${started}`)
    await run(calls)
    process.kill(child.pid, 'SIGUSR2')
    const result = JSON.parse(await waitFile(out)) as { bytes?: number, sites?: Array<{ site: string, bytes: number }>, error?: string }
    if (result.error !== undefined || result.bytes === undefined) throw new Error(`alloc: ${target}: ${result.error ?? 'no figure'}`)
    return { target, bytesPerCall: result.bytes / calls, calls, connections, sites: (result.sites ?? []).map(s => ({ site: s.site, bytes: s.bytes / calls })) }
  } finally {
    agent.destroy()
    await child.stop()
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseFlags('alloc', USAGE, { target: { type: 'string', multiple: true, default: [] }, calls: { type: 'string', default: '2000' }, warmup: { type: 'string', default: '2000' }, connections: { type: 'string', default: '1' }, sites: { type: 'string', default: '0' } })
  const targets = values.target.length > 0 ? values.target.map(t => oneOf('alloc', USAGE, 'target', t, SERVER_TARGETS)) : [...DEFAULT_TARGETS]
  const count = (name: string, text: string, min = 1): number => positiveInt('alloc', USAGE, name, text, min)
  const calls = count('calls', values.calls)
  const warmup = count('warmup', values.warmup, 0)
  const connections = count('connections', values.connections)
  const sites = count('sites', values.sites, 0)
  console.log(`bytes allocated per call: ${ALLOC_METHOD}; ${values.calls} calls after ${values.warmup}, ${values.connections} connection(s)`)
  for (const target of targets) {
    const figure = await allocPerCall(target, calls, warmup, connections)
    console.log(`${target}: ${Math.round(figure.bytesPerCall).toLocaleString('en-US')} bytes/call`)
    for (const s of figure.sites.slice(0, sites)) console.log(`  ${Math.round(s.bytes).toString().padStart(6)}  ${s.site}`)
  }
  killAll()
}
