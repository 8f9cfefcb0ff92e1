/**
 * Bench harness: the command line of a bench tool (flags, usage, exit codes), child servers (each
 * in its own process group, output to a log file), free loopback ports, readiness polls, RSS of a
 * child, an HTTP load step on autocannon with sub-millisecond latency percentiles (wire.ts holds
 * the bodies).
 *
 * Scripts under bench/ only print figures; nothing here is part of `npm test` (STYLE › Layout).
 * Every load stays on 127.0.0.1 and is bounded in time.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { openSync, closeSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { createServer, request as httpRequest, type Agent, type IncomingHttpHeaders } from 'node:http'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs, type ParseArgsConfig } from 'node:util'
import autocannon from 'autocannon'
import { ECHO_TEXT, INITIALIZED_BODY, INITIALIZE_BODY, LEGACY_BODY, MODERN_BODY, MODERN_HEADERS, legacyHeaders } from './wire.js'

/* ------------------------------------------------------------------ command line */

/** A bench tool's flags, as node:util parseArgs takes them (`--help` is added by parseFlags). */
export type FlagOptions = NonNullable<ParseArgsConfig['options']>

/** What parseFlags returns for `options`: parseArgs' `{ values, positionals }` in strict mode. */
export type ParsedFlags<O extends FlagOptions, P extends boolean> = ReturnType<typeof parseArgs<{ options: O, strict: true, allowPositionals: P }>>

/**
 * Ends a bench tool over a bad command line: writes `<prog>: <message>` and the usage to stderr and
 * exits 2 (the exit status of a usage error, as the POSIX utilities use it).
 * @param prog the tool's name, e.g. `instructions`
 * @param usage the whole usage text, without a final newline
 * @returns never: the process exits
 */
export function usageError (prog: string, usage: string, message: string): never {
  process.stderr.write(`${prog}: ${message}\n${usage}\n`)
  process.exit(2)
}

/**
 * Reads `process.argv` for a bench tool with node:util parseArgs in strict mode, plus a `--help`
 * flag of its own: `--help` writes `usage` to stdout and exits 0; an unknown option, a missing
 * value or an unexpected positional goes to usageError (`<prog>: <parseArgs' message>` and the
 * usage on stderr, exit 2) instead of parseArgs' uncaught TypeError.
 * @param prog the tool's name, the prefix of its error lines (e.g. `alloc`)
 * @param usage the whole usage text, without a final newline
 * @param options the tool's flags (parseArgs `options`, defaults included), without `help`
 * @param allowPositionals whether bare arguments are taken (default false: each is an error)
 * @returns parseArgs' `{ values, positionals }` (values typed from `options`; strings stay strings:
 *          check numbers with positiveInt)
 * @throws TypeError only for a malformed `options` (a programmer error), never for the command line
 */
export function parseFlags<const O extends FlagOptions, const P extends boolean = false> (prog: string, usage: string, options: O, allowPositionals?: P): ParsedFlags<O, P> {
  let parsed
  try {
    parsed = parseArgs({ options: { ...options, help: { type: 'boolean', default: false } }, strict: true, allowPositionals: allowPositionals ?? false })
  } catch (error) {
    // ERR_PARSE_ARGS_UNKNOWN_OPTION, _INVALID_OPTION_VALUE, _UNEXPECTED_POSITIONAL: the user's mistake.
    const code = (error as { code?: unknown }).code
    if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS_')) throw error
    return usageError(prog, usage, (error as Error).message)
  }
  if ((parsed.values as { help?: boolean }).help === true) {
    process.stdout.write(usage + '\n')
    process.exit(0)
  }
  return parsed as unknown as ParsedFlags<O, P>
}

/**
 * The value of a count flag (`--runs 3`): decimal digits only, at least `min` (default 1).
 * @param text the flag's string value, as parseFlags returned it
 * @returns the number; otherwise usageError (`<prog>: --<name> must be a positive integer, not "x"`, exit 2)
 */
export function positiveInt (prog: string, usage: string, name: string, text: string, min = 1): number {
  const n = /^\d+$/.test(text) ? Number(text) : NaN
  if (!Number.isSafeInteger(n) || n < min) usageError(prog, usage, `--${name} must be ${min === 1 ? 'a positive integer' : `an integer ≥ ${min}`}, not ${JSON.stringify(text)}`)
  return n
}

/**
 * The value of a flag with a fixed set of values (`--target modern`).
 * @returns `text` narrowed to `choices`; otherwise usageError (`<prog>: --<name> must be a, b or c, not "x"`, exit 2)
 */
export function oneOf<const C extends readonly string[]> (prog: string, usage: string, name: string, text: string, choices: C): C[number] {
  if (choices.includes(text)) return text
  const list = choices.length === 1 ? choices[0] : `${choices.slice(0, -1).join(', ')} or ${choices[choices.length - 1]}`
  return usageError(prog, usage, `--${name} must be ${list}, not ${JSON.stringify(text)}`)
}

/* ------------------------------------------------------------------ children */

/** A server the bench started. `stop()` ends it (SIGTERM, then SIGKILL of its process group after `graceMs`). */
export interface Child {
  readonly label: string
  readonly proc: ChildProcess
  readonly pid: number
  readonly logFile: string
  stop: (graceMs?: number) => Promise<void>
}

const started = new Set<Child>()

/** Kills every child still running (their own process groups only). Called on exit and on failure. */
export function killAll (): void {
  for (const child of started) {
    try { process.kill(-child.pid, 'SIGKILL') } catch {}
  }
  started.clear()
}
process.once('exit', killAll)
// Interrupted (Ctrl-C, or a timeout's SIGTERM): the children run in process groups of their own, so
// they would outlive the bench; end them, then exit as the signal would have (128 + its number).
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) process.once(signal, () => { killAll(); process.exit(code) })

/**
 * Starts `command args` as its own process group leader (so its own children can be ended with it),
 * stdout and stderr appended to `<logDir>/<label>.log`, stdin piped when `stdin` is true.
 * @throws when the process cannot be spawned
 */
export function startChild (label: string, command: string, args: string[], options: { logDir: string, env?: NodeJS.ProcessEnv, stdin?: boolean, stdoutPipe?: boolean }): Child {
  const logFile = join(options.logDir, `${label}.log`)
  const fd = openSync(logFile, 'a')
  const proc = spawn(command, args, {
    stdio: [options.stdin === true ? 'pipe' : 'ignore', options.stdoutPipe === true ? 'pipe' : fd, fd],
    env: { ...process.env, ...options.env },
    detached: true
  })
  closeSync(fd)
  if (proc.pid === undefined) throw new Error(`bench: could not start ${label}`)
  const pid = proc.pid
  const exited = new Promise<void>(resolve => {
    if (proc.exitCode !== null || proc.signalCode !== null) resolve()
    else proc.once('exit', () => resolve())
  })
  const child: Child = {
    label,
    proc,
    pid,
    logFile,
    async stop (graceMs = 3000) {
      if (proc.exitCode === null && proc.signalCode === null) {
        try { proc.kill('SIGTERM') } catch {}
        const timer = setTimeout(() => { try { process.kill(-pid, 'SIGKILL') } catch {} }, graceMs)
        await exited
        clearTimeout(timer)
      }
      // Whatever the server left behind in its group (an upstream child) goes too.
      try { process.kill(-pid, 'SIGKILL') } catch {}
      started.delete(child)
    }
  }
  started.add(child)
  return child
}

/** Waits (bounded) until the child's log file matches `pattern`; returns the match. */
export async function waitForLog (child: Child, pattern: RegExp, boundMs = 15_000): Promise<RegExpMatchArray> {
  const deadline = Date.now() + boundMs
  for (;;) {
    const match = readFileSync(child.logFile, 'utf8').match(pattern)
    if (match !== null) return match
    if (child.proc.exitCode !== null) throw new Error(`bench: ${child.label} exited (${child.proc.exitCode}); see ${child.logFile}`)
    if (Date.now() > deadline) throw new Error(`bench: ${child.label} did not log ${String(pattern)} within ${boundMs} ms; see ${child.logFile}`)
    await sleep(25)
  }
}

/**
 * Writes `<dir>/<name>.json`: a daemon on 127.0.0.1:`port` whose one upstream is `dist`'s test
 * fixture over stdio (scenario 3's set-up), for comparing builds (paired.ts, instructions.ts).
 * @returns the file's path
 */
export function fixtureDaemonConfig (dir: string, name: string, dist: string, port: number): string {
  const file = join(dir, `${name}.json`)
  writeFileSync(file, JSON.stringify({ daemon: { address: `127.0.0.1:${port}` }, upstreams: { fixture: { command: process.execPath, args: [join(dist, 'test/fixtures/echo-upstream.js')] } } }))
  return file
}

/* ------------------------------------------------------------------ against the forwarding ceiling */

/**
 * A server of the comparison against the forwarding ceiling (BENCHMARKS scenarios 21, 22 and 8),
 * each in front of the v1 SDK's stdio server (bench/v1-stdio-upstream.ts): `forward` is
 * bench/forward-server.ts, `modern` an mcpx daemon called with the 2026-07-28 tools/call, `legacy`
 * the same daemon called in a 2025-11-25 session. In front of a trivial HTTP server instead
 * (bench/echo-http-upstream.ts): `forward-http` is bench/forward-http-server.ts (scenario 25's
 * forwarder), `modern-http` an mcpx daemon called with the 2026-07-28 tools/call.
 */
export type ServerTarget = 'forward' | 'modern' | 'legacy' | 'forward-http' | 'modern-http'

/** Every ServerTarget, in the order the usage texts name them. */
export const SERVER_TARGETS = ['forward', 'modern', 'legacy', 'forward-http', 'modern-http'] as const

/** The forwarding ceiling a target is measured against: `forward-http` for the `*-http` targets, else `forward`. */
export function ceilingOf (target: ServerTarget): 'forward' | 'forward-http' {
  return target.endsWith('-http') ? 'forward-http' : 'forward'
}

/** The targets a tool measures when given none: the stdio ones (the `*-http` ones are asked for by name). */
export const DEFAULT_TARGETS = ['forward', 'modern', 'legacy'] as const

const benchFile = (relative: string): string => fileURLToPath(new URL(relative, import.meta.url))
const V1_UPSTREAM = benchFile('./v1-stdio-upstream.js')
const FORWARD_SERVER = benchFile('./forward-server.js')
const FORWARD_HTTP_SERVER = benchFile('./forward-http-server.js')
const ECHO_HTTP_UPSTREAM = benchFile('./echo-http-upstream.js')
const THIS_DIST = benchFile('..')

export interface TargetOptions {
  /** The child's label (its log file is `<logDir>/<label>.log`; an mcpx config goes beside it as `<label>.json`). */
  label: string
  logDir: string
  /** The dist/ directory whose cli.js runs an mcpx target; default this build's. The forwarding ceiling and the v1 server are always this build's. */
  dist?: string
  /** A command the server runs under, e.g. `['valgrind', '--tool=callgrind']`; default none (node itself). */
  wrapper?: string[]
  /** Arguments for the server's node, before the script (e.g. `['--import', probe]`); the upstream's node gets none. */
  nodeArgs?: string[]
  env?: NodeJS.ProcessEnv
  /** How long the server may take to be ready, ms; default 20,000 (a server under valgrind needs minutes). */
  readyBoundMs?: number
}

/**
 * Starts a target's server as a bench child, in front of its upstream:
 * - `forward` and `modern`/`legacy`: the stdio forwarding ceiling (ready when it logs its port), or
 *   an mcpx daemon on a free port, with the v1 server as its one upstream, which the server spawns
 *   as its own child (so it is in the server's process group);
 * - `forward-http` and `modern-http`: the HTTP forwarding ceiling (forward-http-server.ts), or an
 *   mcpx daemon, in front of a fresh echo-http-upstream.ts, started first as a child of its own
 *   (outside the server's process group, so `/proc` readings of the group are the gateway's alone).
 *   Stopping the returned child stops that upstream too.
 * Every mcpx daemon has maxSessions 1000 and is ready when /readyz answers 200.
 * @returns the child and its loopback port
 * @throws Error when it cannot be started or is not ready within `readyBoundMs`
 */
export async function startTarget (target: ServerTarget, options: TargetOptions): Promise<{ child: Child, port: number }> {
  const node = process.execPath
  const [command, ...wrapperArgs] = [...(options.wrapper ?? []), node]
  const boundMs = options.readyBoundMs ?? 20_000
  const start = (script: string[]): Child => startChild(options.label, command, [...wrapperArgs, ...(options.nodeArgs ?? []), ...script], { logDir: options.logDir, env: options.env })
  const listening = async (child: Child): Promise<number> => Number((await waitForLog(child, /listening (\d+)/, boundMs))[1])
  if (target === 'forward') {
    const child = start([FORWARD_SERVER, '--', node, V1_UPSTREAM])
    return { child, port: await listening(child) }
  }
  let upstream: Record<string, unknown> = { command: node, args: [V1_UPSTREAM] }
  let echo: Child | undefined
  if (ceilingOf(target) === 'forward-http') { // the -http targets
    echo = startChild(`${options.label}-upstream`, node, [ECHO_HTTP_UPSTREAM], { logDir: options.logDir })
    upstream = { url: `http://127.0.0.1:${await listening(echo)}/mcp` }
  }
  const withUpstream = (child: Child): Child => echo === undefined ? child : { ...child, stop: async (graceMs?: number) => { await child.stop(graceMs); await echo.stop() } }
  try {
    if (target === 'forward-http') {
      const child = start([FORWARD_HTTP_SERVER, String(upstream.url)])
      return { child: withUpstream(child), port: await listening(child) }
    }
    const port = await freePort()
    const config = join(options.logDir, `${options.label}.json`)
    writeFileSync(config, JSON.stringify({ daemon: { address: `127.0.0.1:${port}` }, transport: { maxSessions: 1000 }, upstreams: { fixture: upstream } }))
    const child = start([join(options.dist ?? THIS_DIST, 'cli.js'), 'daemon', '--config', config])
    await waitHttp(`http://127.0.0.1:${port}/readyz`, boundMs)
    return { child: withUpstream(child), port }
  } catch (error) {
    await echo?.stop()
    throw error
  }
}

/**
 * The headers and body of a target's `tools/call echo`. For `legacy` it first opens a 2025-11-25
 * session on `agent` (initialize, then notifications/initialized) and the headers carry its
 * Mcp-Session-Id; every other target takes the 2026-07-28 call (wire.ts), no session.
 * @throws Error when initialize does not answer with a session id
 */
export async function targetCall (target: ServerTarget, agent: Agent, port: number): Promise<{ headers: Record<string, string>, body: string }> {
  if (target !== 'legacy') return { headers: MODERN_HEADERS, body: MODERN_BODY }
  const reply = await postOnce(agent, port, '/mcp', legacyHeaders(undefined), INITIALIZE_BODY)
  const id = reply.headers['mcp-session-id']
  if (typeof id !== 'string') throw new Error(`bench: initialize answered ${reply.status} ${reply.body.slice(0, 200)}`)
  await postOnce(agent, port, '/mcp', legacyHeaders(id), INITIALIZED_BODY)
  return { headers: legacyHeaders(id), body: LEGACY_BODY }
}

/** The median of `values` (the mean of the middle two for an even count); NaN for none. */
export function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** A loopback port that was free a moment ago. */
export async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}

/** Polls `GET url` every 50 ms until it answers 200; throws after `boundMs`. */
export async function waitHttp (url: string, boundMs = 20_000): Promise<void> {
  const deadline = Date.now() + boundMs
  for (;;) {
    try {
      const res = await fetch(url)
      await res.text()
      if (res.status === 200) return
    } catch {}
    if (Date.now() > deadline) throw new Error(`bench: ${url} not ready within ${boundMs} ms`)
    await sleep(50)
  }
}

export async function sleep (ms: number): Promise<void> {
  await new Promise(resolve => setTimeout(resolve, ms))
}

/** Resident set size of a process, in bytes (Linux /proc/<pid>/status VmRSS). */
export function rssBytes (pid: number): number {
  const match = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+)\s+kB/m)
  if (match === null) throw new Error(`bench: no VmRSS for pid ${pid}`)
  return Number(match[1]) * 1024
}

/** Clock ticks per second of /proc/<pid>/stat utime and stime (USER_HZ, 100 on Linux). */
const USER_HZ = 100

/**
 * CPU time (user + system, ms) used so far by every live process in process group `pgid`
 * (a bench child and whatever it spawned, e.g. mcpx's upstream), split into the leader and the rest.
 */
export function groupCpuMs (pgid: number): { leaderMs: number, othersMs: number } {
  let leaderMs = 0
  let othersMs = 0
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let stat: string
    try { stat = readFileSync(`/proc/${entry}/stat`, 'utf8') } catch { continue }
    // Fields after the command name, which is in parentheses and may contain spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (Number(fields[2]) !== pgid) continue // field 5: pgrp
    const ms = (Number(fields[11]) + Number(fields[12])) * 1000 / USER_HZ // fields 14, 15: utime, stime
    if (Number(entry) === pgid) leaderMs += ms
    else othersMs += ms
  }
  return { leaderMs, othersMs }
}

/** The 1-minute load average (other work on the machine skews every figure; the report prints it). */
export function loadAverage1m (): number {
  return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0])
}

/* ------------------------------------------------------------------ one HTTP exchange */

export interface SmallReply { status: number, headers: IncomingHttpHeaders, body: string }

/** POSTs `body` to `http://127.0.0.1:<port><path>` on `agent` and reads the whole reply. */
export async function postOnce (agent: Agent, port: number, path: string, headers: Record<string, string>, body: string): Promise<SmallReply> {
  return await new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, res => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', chunk => { text += chunk })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

/* ------------------------------------------------------------------ figures */

/** One row of the table. Latencies in ms. */
export interface Row {
  scenario: string
  /** How the load was applied, e.g. "32 conn" or "64 in flight". */
  load: string
  requests: number
  rps: number
  p50Ms: number
  p99Ms: number
  p999Ms: number
  errors: number
  /** CPU time of the server process per request, µs (undefined when not measured). */
  serverCpuUs?: number
  /** CPU time of the server's own children (the upstream) per request, µs. */
  upstreamCpuUs?: number
  note?: string
}

/** Growable list of latency samples (ms) with exact percentiles (nearest rank). */
export class Samples {
  private values = new Float64Array(1 << 16)
  length = 0
  add (ms: number): void {
    if (this.length === this.values.length) {
      const bigger = new Float64Array(this.values.length * 2)
      bigger.set(this.values)
      this.values = bigger
    }
    this.values[this.length++] = ms
  }

  /** @param p in [0, 100] */
  percentiles (...ps: number[]): number[] {
    if (this.length === 0) return ps.map(() => NaN)
    const sorted = this.values.slice(0, this.length).sort()
    return ps.map(p => sorted[Math.min(this.length - 1, Math.max(0, Math.ceil(p / 100 * this.length) - 1))])
  }
}

/** What a reply body must satisfy; returns false for a JSON-RPC error or a wrong echo. */
export type BodyCheck = (body: string, sampled: boolean) => boolean

/** The data of the last `data:` line of an SSE reply that has any (the response follows priming events). */
function sseData (body: string): string {
  let data = ''
  for (const line of body.split('\n')) if (line.startsWith('data:') && line.length > 6) data = line.slice(5).trim()
  return data
}

/**
 * A body check for a `tools/call echo` reply (a JSON body, or an SSE reply whose last data line is the response): never an `"error"` member, and on a
 * sample (every `sampleEvery`-th reply) the parsed `result.content[0].text` is the echo text.
 */
export function echoCheck (): BodyCheck {
  return (body, sampled) => {
    if (body.includes('"error"')) return false
    if (!sampled) return true
    try {
      const reply = JSON.parse(body.startsWith('{') ? body : sseData(body)) as { result?: { content?: Array<{ text?: unknown }> } }
      return reply.result?.content?.[0]?.text === ECHO_TEXT
    } catch {
      return false
    }
  }
}

export interface LoadOptions {
  scenario: string
  url: string
  connections: number
  durationS: number
  warmupS: number
  headers: Record<string, string>
  body: string
  check: BodyCheck
  /** Per-connection headers (e.g. one legacy session per connection), by connection index. */
  headersFor?: (connection: number) => Record<string, string>
  /** Per-request headers (e.g. a fresh DPoP proof), merged over `headers`; called once per request sent. */
  headersPerRequest?: () => Record<string, string>
  /** Process group of the server under load: its CPU time per request is reported. */
  serverPgid?: number
  /** Check every n-th body in full (JSON parse + echo text). Default 50. */
  sampleEvery?: number
  note?: string
}

/**
 * Runs autocannon against `url`: a warm-up (not counted), then the measured run. Latency is
 * recorded per response at sub-ms resolution (autocannon's own histogram keeps whole ms).
 * Errors = non-2xx + connection errors + timeouts + bodies failing `check`, warm-up included.
 */
export async function httpLoad (options: LoadOptions): Promise<Row> {
  // Warm-up errors count too: every reply must be right, not only the measured ones.
  const warmupErrors = options.warmupS > 0 ? (await autocannonRun(options, options.warmupS, undefined)).errors : 0
  const samples = new Samples()
  const cpuBefore = options.serverPgid === undefined ? undefined : groupCpuMs(options.serverPgid)
  const result = await autocannonRun(options, options.durationS, samples)
  const cpuAfter = options.serverPgid === undefined ? undefined : groupCpuMs(options.serverPgid)
  const [p50, p99, p999] = samples.percentiles(50, 99, 99.9)
  return {
    scenario: options.scenario,
    load: `${options.connections} conn`,
    requests: result.completed,
    rps: result.completed / options.durationS,
    p50Ms: p50,
    p99Ms: p99,
    p999Ms: p999,
    errors: warmupErrors + result.errors,
    ...cpuPerRequest(cpuBefore, cpuAfter, result.completed),
    note: options.note
  }
}

/** What {@link alternatingLoads} measured: each round's req/s of the two servers, and the errors of every round. */
export interface AlternatingRps {
  /** req/s of `a`, per round. */
  a: number[]
  /** req/s of `b`, per round. */
  b: number[]
  /** b/a per round; its median is the figure to judge on. */
  ratios: number[]
  errors: number
}

/** A server started for one round of {@link alternatingLoads}: the load to apply, and how to stop it. */
export interface StartedLoad {
  load: LoadOptions
  stop: () => Promise<void>
}

/**
 * Measures two servers in turn, `rounds` rounds: in each, a fresh server of each is started, warmed
 * up (its load's `warmupS`), loaded alone for `seconds` s and stopped, `a` first in even rounds and
 * `b` first in odd ones (ABBA). Only one of them runs at a time, and neither is always the one
 * started first or second (two daemons running side by side favour the one started second: seen
 * in bench/paired.ts, and here as a policy daemon that served 6–11 % more calls than its policy-free
 * twin), nor always meets the same drift of the machine.
 * @param a starts one server of `a` (its sessions opened, its sanity call made); rejects when it cannot serve
 * @returns per round, each server's req/s and b/a; errors summed over every round of both, warm-ups included
 */
export async function alternatingLoads (a: () => Promise<StartedLoad>, b: () => Promise<StartedLoad>, rounds: number, seconds: number): Promise<AlternatingRps> {
  const out: AlternatingRps = { a: [], b: [], ratios: [], errors: 0 }
  for (let round = 0; round < rounds; round++) {
    let ra = 0
    let rb = 0
    for (const which of round % 2 === 0 ? ['a', 'b'] : ['b', 'a']) {
      const started = await (which === 'a' ? a : b)()
      try {
        const row = await httpLoad({ ...started.load, durationS: seconds })
        out.errors += row.errors
        if (which === 'a') ra = row.rps
        else rb = row.rps
      } finally { await started.stop() }
    }
    out.a.push(ra)
    out.b.push(rb)
    out.ratios.push(ra === 0 ? 0 : rb / ra)
  }
  return out
}

/** CPU µs per request of a server (leader) and its children between two readings. */
export function cpuPerRequest (before: { leaderMs: number, othersMs: number } | undefined, after: { leaderMs: number, othersMs: number } | undefined, requests: number): { serverCpuUs?: number, upstreamCpuUs?: number } {
  if (before === undefined || after === undefined || requests === 0) return {}
  return { serverCpuUs: (after.leaderMs - before.leaderMs) * 1000 / requests, upstreamCpuUs: (after.othersMs - before.othersMs) * 1000 / requests }
}

async function autocannonRun (options: LoadOptions, durationS: number, samples: Samples | undefined): Promise<{ completed: number, errors: number }> {
  const sampleEvery = options.sampleEvery ?? 50
  let seen = 0
  let badBodies = 0
  let connection = 0
  const config: autocannon.Options = {
    url: options.url,
    method: 'POST',
    connections: options.connections,
    pipelining: 1,
    duration: durationS,
    timeout: 10,
    headers: options.headers,
    body: options.body,
    // A per-connection header (a legacy session) is set once, when the connection's client is built.
    setupClient: options.headersFor === undefined ? undefined : (client) => { client.setHeaders(options.headersFor?.(connection++) ?? {}) },
    // autocannon rebuilds a request that has a setupRequest for every send: a new object, never the shared defaults.
    requests: options.headersPerRequest === undefined
      ? undefined
      : [{ setupRequest: (request: { headers?: Record<string, string> }) => ({ ...request, headers: { ...request.headers, ...options.headersPerRequest?.() } }) }],
    verifyBody: (body: string) => {
      const ok = options.check(body, ++seen % sampleEvery === 0)
      if (!ok) badBodies++
      return ok
    }
  } as autocannon.Options
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(config, (err: unknown, done: autocannon.Result) => { if (err !== null && err !== undefined) reject(err); else resolve(done) })
    if (samples !== undefined) {
      instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTimeMs: number) => { samples.add(responseTimeMs) })
    }
  })
  const errors = result.non2xx + result.errors + result.timeouts + badBodies
  return { completed: result.requests.total, errors }
}
