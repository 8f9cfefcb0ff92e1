/**
 * What a start costs: `mcpx daemon` from spawn to its "mcpx daemon ready" line, and `mcpx serve` from spawn to its
 * answer to a first `tools/list` (after initialize), each with one stdio fixture upstream
 * (test/fixtures/echo-upstream.js). Prints, per build, each round's CPU of the mcpx process
 * (`/proc/<pid>/stat` utime + stime, ms; its upstream child apart) and wall time (ms), and the
 * medians. Builds alternate round by round, so a noisy neighbour hits both alike.
 *
 *   node dist/bench/startup.js [--dist OTHER/dist]… [--rounds 8]
 *
 * Each `--dist` is another build's dist/ (with a node_modules beside it); this build's own is
 * always measured, last. Figures are printed only; nothing here is part of `npm test`.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { fixtureDaemonConfig, freePort, median, parseFlags, positiveInt } from './harness.js'

const USAGE = 'usage: node dist/bench/startup.js [--dist OTHER/dist]… [--rounds 8]'
const { values: flags } = parseFlags('startup', USAGE, {
  dist: { type: 'string', multiple: true, default: [] },
  rounds: { type: 'string', default: '8' }
})
const ROUNDS = positiveInt('startup', USAGE, 'rounds', flags.rounds)
const THIS_DIST = fileURLToPath(new URL('..', import.meta.url))
const DISTS = [...(flags.dist ?? []).map(d => resolve(d)), THIS_DIST]
const DIR = mkdtempSync(join(tmpdir(), 'mcpx-startup-'))

/** CPU time of a live process so far, ms (utime + stime, clock ticks of 10 ms). */
function cpuMs (pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** A config with one stdio fixture upstream, this build's (so every build runs the same upstream), on a free port. */
async function config (): Promise<string> {
  const port = await freePort()
  return fixtureDaemonConfig(DIR, `mcpx-${port}`, THIS_DIST, port)
}

interface Start { cpuMs: number, wallMs: number }

/** Starts `mcpx daemon` from `dist` and stops it at its ready line (SIGTERM). Rejects after 30 s. */
async function daemon (dist: string): Promise<Start> {
  const t0 = performance.now()
  const child = spawn(process.execPath, [join(dist, 'cli.js'), 'daemon', '--config', await config()], { stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, MCPX_LOG_FORMAT: 'json', MCPX_LOG_LEVEL: 'info' } })
  return await measure(child, t0, text => text.includes('"msg":"mcpx daemon ready"'), () => { child.kill('SIGTERM') })
}

/** Starts `mcpx serve` from `dist`, sends initialize and tools/list, and ends its stdin at the list's answer. Rejects after 30 s. */
async function serve (dist: string): Promise<Start> {
  const t0 = performance.now()
  const child = spawn(process.execPath, [join(dist, 'cli.js'), 'serve', '--config', await config()], { stdio: ['pipe', 'pipe', 'ignore'] })
  child.stdin?.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'startup-bench', version: '1' } } }) + '\n' +
    JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n' +
    JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) + '\n')
  return await measure(child, t0, text => text.includes('"id":2'), () => { child.stdin?.end() })
}

async function measure (child: ReturnType<typeof spawn>, t0: number, done: (stdout: string) => boolean, stop: () => void): Promise<Start> {
  return await new Promise<Start>((resolvePromise, reject) => {
    let stdout = ''
    let result: Start | undefined
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error('no start within 30 s')) }, 30_000)
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
      if (result !== undefined || !done(stdout)) return
      result = { cpuMs: cpuMs(child.pid as number), wallMs: performance.now() - t0 }
      stop()
    })
    child.once('exit', () => { clearTimeout(timer); if (result !== undefined) resolvePromise(result); else reject(new Error(`exited before it started: ${stdout.slice(-300)}`)) })
  })
}

const faces = { daemon, serve }
for (const [face, start] of Object.entries(faces)) {
  const rounds = DISTS.map(() => [] as Start[])
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, dist] of DISTS.entries()) rounds[i].push(await start(dist))
  }
  console.log(`mcpx ${face}: ${face === 'daemon' ? 'spawn to ready' : 'spawn to the answer of its first tools/list'}, ${ROUNDS} rounds`)
  for (const [i, dist] of DISTS.entries()) {
    const cpu = rounds[i].map(r => r.cpuMs)
    const wall = rounds[i].map(r => Math.round(r.wallMs))
    console.log(`  ${dist === THIS_DIST ? 'this build' : dist}: CPU ms ${cpu.join(' ')} (median ${median(cpu)}); wall ms ${wall.join(' ')} (median ${median(wall)})`)
  }
}
