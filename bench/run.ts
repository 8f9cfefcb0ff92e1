/**
 * `npm run bench` (full) and `npm run bench -- --quick` (about 3.5 minutes): what mcpx costs,
 * measured side by side in one run on one machine (results: BENCHMARKS.md).
 *
 *   1 ceiling      bare Fastify route: parse a JSON-RPC body, answer a fixed result
 *   2 peer         official v2 SDK createMcpHandler serving `echo` in process, no gateway
 *   3 mcpx modern  2026-07-28 tools/call echo (all mirrored headers, _meta) → fixture over stdio
 *   4 mcpx legacy  the same call in 2025-11-25 sessions (one session per connection, JSON replies)
 *   5 mcpx → HTTP  as 3, the upstream reached over Streamable HTTP (the peer of 2; --http-upstream fixture);
 *                  see 25 for its alternating rounds
 *   6 stdio        pipelined round trips through `mcpx serve`
 *   7 memory       RSS per idle legacy session and per open GET stream
 *   8 mcpx legacy  legacy sessions (2025-11-25) → a v1-SDK stdio server (bench/v1-stdio-upstream.ts)
 *   9 supergateway the same load, supergateway 4 (stdio → Streamable HTTP, --stateful) in front of the same server
 *  10 mcp-proxy    the same load, mcp-proxy 6 (--server stream) in front of the same server; then
 *                  8 and 10 again in alternating rounds, a fresh server of each per round (ABBA):
 *                  8/10's goal (≥ 4) is judged on the median of the rounds' ratios; with 21 in the
 *                  run, the same rounds for 21 against 10 follow (no goal), printed beside it
 *  11 static token as 3, each request with a static bearer token (auth.tokens)
 *  12 OAuth JWT    as 3, each request with an RS256 at+jwt access token (auth.oauth, JWKS cached);
 *                  11 and 12 share one daemon; also mcpx's JWT validation alone, in process, µs/token
 *  13 tracing on   as 3, with OpenTelemetry on (OTEL_EXPORTER_OTLP_ENDPOINT: a local sink that
 *                  answers 200 and drops the spans); 3 is the same daemon with tracing off (the
 *                  default), so 13/3 is what tracing costs when on; also the off path's hooks alone,
 *                  in process, ns per request
 *  14 in-flight cap an upstream's maxInFlight gate alone, in process: ns per call under the cap
 *                  (and whether it allocates), µs per call through its queue
 *  15 policy off   as 11 (a static bearer token), on a daemon with no policy and no audit trail
 *  16 policy on    the same call on a daemon with a 50-rule policy (the caller's rule carries a
 *                  rateLimit it never reaches, so the in-memory limiter counts every call) and the
 *                  audit trail on with arguments "keys" (to a file); 15 and 16 run back to back, then
 *                  in alternating rounds, a fresh daemon of each per round; 16/15 is what policy and audit
 *                  cost (goal ≤ 15 % of req/s), judged on the median of the rounds
 *  17 call stats   the status page's per-call counting alone (two clock reads and CallStats.record),
 *                  in process: ns per call and whether it allocates
 *  18 instances    RSS per per-session instance of the fixture (isolation "per-session"):
 *                  each instance child's RSS, and the daemon's own growth per instance
 *  19 DPoP         as 12 on the same daemon, the OAuth JWT DPoP-bound (cnf.jkt) and sent with
 *                  `Authorization: DPoP` and a fresh ES256 proof per request (made before the load):
 *                  19−12 is what checking a proof costs the server, per request
 *  20 tool search  in process (bench/discovery.ts): tools/list bytes of the 1,024-tool catalogue against
 *                  a search endpoint's tools/list plus one search_tools answer; search_tools p50/p99;
 *                  index build time for 2,000 tools; tools/call CPU on a list-mode endpoint with and
 *                  without discovery configured elsewhere
 *  21 forwarding ceiling  the least a Fastify gateway must do to put the v1 stdio server of 8–10 on
 *                  HTTP (bench/forward-server.ts: one route, fresh id, one shared child, reply
 *                  matched by id); the modern tools/call of 3 through it
 *  22 mcpx modern  the modern tools/call of 3 on scenario 8's daemon (→ the v1 server); 8/21 and
 *                  22/21 are mcpx against the forwarding ceiling in both eras, log line and metrics on
 *  23 bytes/call   bytes allocated per call inside the server (bench/alloc.ts: V8 sampling heap
 *                  profiler, freed objects included), for 21, 22 and 8's call, one call at a time
 *                  and with 16 connections
 *  24 integrity    pinned definitions (quarantine) against off, in process (bench/integrity.ts):
 *                  CPU µs per tools/list and per tools/call, and per rebuild of the lists
 *  25 HTTP forwarding ceiling  the least a Fastify gateway must do to put the HTTP peer of 2 and 5
 *                  behind its own endpoint (bench/forward-http-server.ts: one route, the body and
 *                  MCP headers sent on an undici Pool, the reply passed back); then 5, and 25,
 *                  against 2 in alternating rounds, a fresh peer per side per round: 5/2's goal
 *                  (≥ 0.9) is judged on the median of the rounds' ratios
 *
 * The load generator (autocannon, or the stdio client) runs in this process; every server runs in
 * its own child process (its own process group, its output in a log file under the run's temp
 * directory). All traffic is on 127.0.0.1.
 *
 * Options: --quick; --only 1,3,4 (a subset); --connections N; --out FILE (also write the report);
 *          --http-upstream peer|fixture (scenario 5's upstream; default peer);
 *          --mcpx-node-arg ARG (repeatable: passed to node for mcpx daemons/serve, e.g. --cpu-prof);
 *          --help. An unknown or malformed option exits 2 with the usage.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { Agent } from 'node:http'
import { connect } from 'node:net'
import { cpus, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  alternatingLoads, echoCheck, freePort, httpLoad, killAll, loadAverage1m, median, oneOf, parseFlags, positiveInt, postOnce, startChild, waitForLog, waitHttp, type AlternatingRps, type Child, type LoadOptions, type Row, type StartedLoad
} from './harness.js'
import { stdioLoad } from './stdio-load.js'
import { measureMemory, type MemoryFigures } from './memory.js'
import { measureInstances, type InstanceFigures } from './instances.js'
import { INITIALIZED_BODY, INITIALIZE_BODY, LEGACY_BODY, MODERN_BODY, MODERN_HEADERS, legacyHeaders } from './wire.js'
import { dpopLoad, startBenchIssuer, verificationCostUs } from './auth.js'
import { createServer } from 'node:http'
import { once } from 'node:events'
import { activeTracing, httpTraceIn } from '../lib/telemetry/trace.js'
import { gateCost, type GateFigures } from './gate.js'
import { callStatsCost, type CallStatsFigures } from './call-stats.js'
import { fiftyRules, policyCost, type PolicyFigures } from './policy.js'
import { discoveryCost, type DiscoveryFigures } from './discovery.js'
import { ALLOC_METHOD, allocPerCall, type AllocFigure } from './alloc.js'
import { integrityCost, integrityLine, type IntegrityFigures } from './integrity.js'

const USAGE = `usage: npm run bench -- [options]   (or node dist/bench/run.js [options])
  --quick                 short runs (about 3.5 minutes in all)
  --only 1,3,4            a subset of the scenarios
  --connections N         HTTP connections per scenario (default 32)
  --out FILE              also write the report to FILE
  --http-upstream peer|fixture   scenario 5's upstream (default peer)
  --mcpx-node-arg ARG     passed to node for mcpx daemons and serve (repeatable; e.g. --cpu-prof)
  --help                  this text`

/** The command line (harness.ts parseFlags: --help prints the usage, a bad option exits 2 with it). */
const { values: flags } = parseFlags('bench', USAGE, {
  quick: { type: 'boolean', default: false },
  only: { type: 'string' },
  connections: { type: 'string', default: '32' },
  out: { type: 'string' },
  'http-upstream': { type: 'string', default: 'peer' },
  'mcpx-node-arg': { type: 'string', multiple: true, default: [] }
})
const CONNECTIONS = positiveInt('bench', USAGE, 'connections', flags.connections)
const HTTP_UPSTREAM = oneOf('bench', USAGE, 'http-upstream', flags['http-upstream'], ['peer', 'fixture'])

const QUICK = flags.quick === true
const IN_FLIGHT = 64
const DURATION_S = QUICK ? 3 : 10
const WARMUP_S = QUICK ? 1 : 3
/** Alternating rounds (16/15, 8/10, 5/2): a fresh server of each per round, warmed up WARMUP_S s, loaded ROUND_S s (bench/harness.ts alternatingLoads). */
const ROUNDS = QUICK ? 2 : 4
const ROUND_S = QUICK ? 2 : 5
const SESSIONS = 10_000
const STREAMS = 1_000
const ONLY = flags.only === undefined ? undefined : new Set(flags.only.split(',').map(s => s.trim()))
const MCPX_NODE_ARGS = flags['mcpx-node-arg'] ?? []

const NODE = process.execPath
const path = (relative: string): string => fileURLToPath(new URL(relative, import.meta.url))
const CLI = path('../cli.js')
const FIXTURE = path('../test/fixtures/echo-upstream.js')
const CEILING = path('./ceiling-server.js')
const PEER = path('./peer-server.js')
const V1_UPSTREAM = path('./v1-stdio-upstream.js')
const FORWARD = path('./forward-server.js')
const FORWARD_HTTP = path('./forward-http-server.js')
const SUPERGATEWAY = path('../../node_modules/supergateway/dist/index.js')
const MCP_PROXY = path('../../node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs')
const LOG_DIR = mkdtempSync(join(tmpdir(), 'mcpx-bench-'))

const LOAD_AT_START = loadAverage1m()

const wanted = (n: number): boolean => ONLY === undefined || ONLY.has(String(n))

/** Writes an mcpx config file for a daemon on `port` (or for `serve`), returning its path. */
function writeConfig (name: string, port: number, upstream: Record<string, unknown>, transport: Record<string, unknown> = {}, auth?: Record<string, unknown>): string {
  const file = join(LOG_DIR, `${name}.json`)
  writeFileSync(file, JSON.stringify({ daemon: { address: `127.0.0.1:${port}` }, transport, upstreams: { fixture: upstream }, ...(auth !== undefined ? { auth } : {}) }, null, 2))
  return file
}

const STDIO_UPSTREAM = { command: NODE, args: [FIXTURE] }

/** Starts `mcpx daemon` with `config` and waits until /readyz is 200 (every upstream ready). */
async function startDaemon (label: string, config: string, port: number, env?: NodeJS.ProcessEnv): Promise<Child> {
  const child = startChild(label, NODE, [...MCPX_NODE_ARGS, CLI, 'daemon', '--config', config], { logDir: LOG_DIR, ...(env !== undefined ? { env } : {}) })
  await waitHttp(`http://127.0.0.1:${port}/readyz`)
  return child
}

/** Starts a bench server script that prints `listening <port>`; returns the child and port. */
async function startListening (label: string, script: string, args: string[] = []): Promise<{ child: Child, port: number }> {
  const child = startChild(label, NODE, [script, ...args], { logDir: LOG_DIR })
  const match = await waitForLog(child, /listening (\d+)/)
  return { child, port: Number(match[1]) }
}

/** One request before the load, so a broken setup fails loudly with the reply in the message. */
async function sanity (label: string, port: number, headers: Record<string, string>, body: string): Promise<void> {
  const agent = new Agent({ keepAlive: false })
  const reply = await postOnce(agent, port, '/mcp', headers, body)
  agent.destroy()
  if (reply.status !== 200 || !echoCheck()(reply.body, true)) {
    throw new Error(`bench: ${label}: the sanity call failed: ${reply.status} ${reply.body.slice(0, 500)}`)
  }
}

const rows = new Map<number, Row>()
let memory: MemoryFigures | undefined
let jwtValidation: { firstUs: number, repeatUs: number } | undefined
/** Scenario 13: the tracing-off hooks alone, ns per request. */
let tracingOffNs: number | undefined
const base = { connections: CONNECTIONS, durationS: DURATION_S, warmupS: WARMUP_S, check: echoCheck() }
/** Errors of the warm-ups that run apart from a row (before row 8): they fail the bench as a row's would. */
let warmupErrors = 0

async function scenarioCeiling (): Promise<void> {
  const { child, port } = await startListening('1-ceiling', CEILING)
  try {
    await sanity('ceiling', port, MODERN_HEADERS, MODERN_BODY)
    rows.set(1, await httpLoad({ ...base, serverPgid: child.pid, scenario: '1 ceiling: bare Fastify JSON route', url: `http://127.0.0.1:${port}/mcp`, headers: MODERN_HEADERS, body: MODERN_BODY }))
  } finally { await child.stop() }
}

async function scenarioPeer (): Promise<void> {
  const { child, port } = await startListening('2-peer', PEER)
  try {
    await sanity('peer', port, MODERN_HEADERS, MODERN_BODY)
    rows.set(2, await httpLoad({ ...base, serverPgid: child.pid, scenario: '2 peer: SDK createMcpHandler, 2026-07-28', url: `http://127.0.0.1:${port}/mcp`, headers: MODERN_HEADERS, body: MODERN_BODY }))
  } finally { await child.stop() }
}

async function scenarioModernAndLegacy (): Promise<void> {
  const port = await freePort()
  const config = writeConfig('mcpx-stdio-upstream', port, STDIO_UPSTREAM)
  const child = await startDaemon('3-4-mcpx-daemon', config, port)
  const url = `http://127.0.0.1:${port}/mcp`
  try {
    if (wanted(3)) {
      await sanity('mcpx modern', port, MODERN_HEADERS, MODERN_BODY)
      rows.set(3, await httpLoad({ ...base, serverPgid: child.pid, scenario: '3 mcpx modern → fixture (stdio)', url, headers: MODERN_HEADERS, body: MODERN_BODY }))
    }
    if (wanted(4)) {
      // A pool of sessions, one per connection, minted before the load.
      const agent = new Agent({ keepAlive: true })
      const sessionIds: string[] = []
      for (let i = 0; i < CONNECTIONS; i++) {
        const reply = await postOnce(agent, port, '/mcp', legacyHeaders(undefined), INITIALIZE_BODY)
        const id = reply.headers['mcp-session-id']
        if (reply.status !== 200 || typeof id !== 'string') throw new Error(`bench: initialize failed: ${reply.status} ${reply.body}`)
        sessionIds.push(id)
      }
      agent.destroy()
      await sanity('mcpx legacy', port, legacyHeaders(sessionIds[0]), LEGACY_BODY)
      rows.set(4, await httpLoad({
        ...base,
        scenario: '4 mcpx legacy (sessions) → fixture (stdio)',
        serverPgid: child.pid,
        url,
        headers: legacyHeaders(sessionIds[0]),
        headersFor: connection => legacyHeaders(sessionIds[connection % sessionIds.length]),
        body: LEGACY_BODY
      }))
    }
  } finally { await child.stop() }
}

/** The modern `tools/call echo` load on a server at `port` (its process group `pid`), labelled `label`. */
function modernLoad (label: string, pid: number, port: number): LoadOptions {
  return { ...base, scenario: label, serverPgid: pid, url: `http://127.0.0.1:${port}/mcp`, headers: MODERN_HEADERS, body: MODERN_BODY }
}

/** Starts a gateway in front of the HTTP upstream at `upstreamUrl`; `tag` names its log file. */
type HttpGateway = (tag: string, upstreamUrl: string) => Promise<{ child: Child, port: number }>

/** mcpx in front of the HTTP upstream (scenario 5). */
const mcpxGateway: HttpGateway = async (tag, url) => {
  const port = await freePort()
  return { child: await startDaemon(`${tag}-mcpx-daemon`, writeConfig(`mcpx-http-upstream-${tag}`, port, { url }), port), port }
}

/** The HTTP forwarding ceiling in front of the HTTP upstream (scenario 25, bench/forward-http-server.ts). */
const forwardGateway: HttpGateway = async (tag, url) => await startListening(`${tag}-forward-http`, FORWARD_HTTP, [url])

/**
 * A fresh HTTP upstream and `gateway` in front of it, checked with one call: the load `label`
 * names, and how to stop both. The upstream is, by default, the peer server of scenario 2 (the
 * same SDK handler and echo tool): the test fixture's `--http` entry rebuilds every tool schema per
 * request (its factory runs per request), which caps it near 100 req/s here and would measure the
 * fixture, not mcpx; `fixture` uses it anyway (`--http-upstream fixture`, scenario 5 only).
 * `tag` names the log files.
 */
async function inFrontOfUpstream (tag: string, label: string, gateway: HttpGateway, upstreamKind: 'peer' | 'fixture' = 'peer'): Promise<StartedLoad> {
  const upstream = upstreamKind === 'fixture'
    ? await startListening(`${tag}-fixture-http`, FIXTURE, ['--http', '0'])
    : await startListening(`${tag}-peer-upstream`, PEER)
  try {
    const { child, port } = await gateway(tag, `http://127.0.0.1:${upstream.port}/mcp`)
    const stop = async (): Promise<void> => { await child.stop(); await upstream.child.stop() }
    try {
      await sanity(label, port, MODERN_HEADERS, MODERN_BODY)
    } catch (error) { await stop(); throw error }
    return { load: modernLoad(label, child.pid, port), stop }
  } catch (error) { await upstream.child.stop(); throw error }
}

/** 5 and 25: mcpx, then the HTTP forwarding ceiling, each in front of a fresh HTTP upstream. */
async function scenarioHttpUpstream (): Promise<void> {
  const gateways = [
    [5, `5 mcpx modern → ${HTTP_UPSTREAM === 'fixture' ? 'fixture' : 'SDK peer'} (HTTP)`, mcpxGateway, HTTP_UPSTREAM],
    [25, '25 HTTP forwarding ceiling → SDK peer (HTTP)', forwardGateway, 'peer']
  ] as const
  for (const [n, label, gateway, upstreamKind] of gateways) {
    if (!wanted(n)) continue
    const { load, stop } = await inFrontOfUpstream(String(n), label, gateway, upstreamKind)
    try {
      rows.set(n, await httpLoad(load))
    } finally { await stop() }
  }
}

let peerAlternating: AlternatingRps | undefined
let forwardHttpAlternating: AlternatingRps | undefined
/**
 * 5/2 and 25/2 in alternating rounds (bench/harness.ts alternatingLoads): the SDK peer served
 * directly against mcpx, then against the HTTP forwarding ceiling, each in front of a peer of its
 * own, every side started fresh per round. Rows 2, 5 and 25 run minutes apart, and this VM's drift
 * over that time is of the goal's own size.
 */
async function alternatingHttpUpstream (): Promise<void> {
  let started = 0
  const startPeer = async (): Promise<StartedLoad> => {
    const { child, port } = await startListening(`2-alternating-${++started}`, PEER)
    return { load: modernLoad('2 peer (alternating)', child.pid, port), stop: async () => { await child.stop() } }
  }
  const startMcpx = async (): Promise<StartedLoad> => await inFrontOfUpstream(`5-alternating-${++started}`, '5 mcpx → SDK peer (alternating)', mcpxGateway)
  const startForward = async (): Promise<StartedLoad> => await inFrontOfUpstream(`25-alternating-${++started}`, '25 HTTP forwarding ceiling → SDK peer (alternating)', forwardGateway)
  try {
    peerAlternating = await alternatingLoads(startPeer, startMcpx, ROUNDS, ROUND_S)
    warmupErrors += peerAlternating.errors
    if (wanted(25)) {
      forwardHttpAlternating = await alternatingLoads(startPeer, startForward, ROUNDS, ROUND_S)
      warmupErrors += forwardHttpAlternating.errors
    }
  } catch (error) {
    notServed.push(`5/2 alternating: ${(error as Error).message}`)
  }
}

/** 11, 12 and 19: one daemon with a static token and OAuth; the same modern call with each credential (19: a DPoP-bound JWT and a proof per request). */
async function scenarioAuth (): Promise<void> {
  const port = await freePort()
  const resource = `http://127.0.0.1:${port}/mcp`
  const issuer = await startBenchIssuer(resource)
  const staticToken = `bench-static-${'x'.repeat(32)}`
  process.env.MCPX_BENCH_STATIC_TOKEN = staticToken
  const config = writeConfig('mcpx-auth', port, STDIO_UPSTREAM, {}, {
    tokens: [{ name: 'bench', tokenEnv: 'MCPX_BENCH_STATIC_TOKEN' }],
    // dpopProofMaxAge covers the whole run: scenario 19's proofs are all made before its load.
    oauth: { issuer: issuer.issuer, resource, jwksUri: issuer.jwksUri, requiredScopes: ['mcp:tools'], dpopProofMaxAge: '10m' }
  })
  const child = await startDaemon('11-12-mcpx-auth', config, port)
  const url = `http://127.0.0.1:${port}/mcp`
  try {
    for (const [n, label, token] of [[11, '11 mcpx modern, static bearer token', staticToken], [12, '12 mcpx modern, OAuth JWT (JWKS cached)', issuer.token]] as const) {
      if (!wanted(n)) continue
      const headers = { ...MODERN_HEADERS, authorization: `Bearer ${token}` }
      await sanity(label, port, headers, MODERN_BODY)
      rows.set(n, await httpLoad({ ...base, serverPgid: child.pid, scenario: label, url, headers, body: MODERN_BODY }))
    }
    if (wanted(19)) {
      // One proof per request: as many as the run could send at 5,000 req/s (autocannon on 2 cores sends fewer).
      const dpop = await dpopLoad(issuer, url, (WARMUP_S + DURATION_S) * 5_000 + 1)
      const label = '19 mcpx modern, OAuth JWT + DPoP proof'
      const headers = { ...MODERN_HEADERS, authorization: `DPoP ${dpop.token}` }
      await sanity(label, port, { ...headers, dpop: dpop.next() }, MODERN_BODY)
      rows.set(19, await httpLoad({ ...base, serverPgid: child.pid, scenario: label, url, headers, headersPerRequest: () => ({ dpop: dpop.next() }), body: MODERN_BODY, note: `${dpop.size} proofs, one per request` }))
    }
    if (wanted(12)) jwtValidation = await verificationCostUs(issuer, resource)
  } finally {
    await child.stop()
    issuer.close()
  }
}

async function scenarioStdio (): Promise<void> {
  const config = writeConfig('mcpx-serve', 0, STDIO_UPSTREAM)
  const child = startChild('6-mcpx-serve', NODE, [...MCPX_NODE_ARGS, CLI, 'serve', '--config', config], { logDir: LOG_DIR, stdin: true, stdoutPipe: true })
  try {
    await waitForLog(child, /serving MCP on stdio/)
    rows.set(6, await stdioLoad({ child, inFlight: IN_FLIGHT, durationS: DURATION_S, warmupS: WARMUP_S }))
    child.proc.stdin?.end()
  } finally { await child.stop() }
}

/** Resolves once 127.0.0.1:`port` accepts a TCP connection; rejects after `boundMs`. */
async function waitTcp (port: number, boundMs = 15_000): Promise<void> {
  const deadline = Date.now() + boundMs
  for (;;) {
    const open = await new Promise<boolean>(resolve => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => { socket.destroy(); resolve(true) })
      socket.once('error', () => resolve(false))
    })
    if (open) return
    if (Date.now() > deadline) throw new Error(`nothing listens on port ${port} after ${boundMs} ms`)
    await new Promise(resolve => setTimeout(resolve, 50))
  }
}

/** Why a peer proxy could not be measured (printed in the report instead of its row). */
const notServed: string[] = []

/** The session-opening exchange of a legacy client: `initialize`, then `notifications/initialized`. @returns the session id. */
async function openSession (agent: Agent, port: number): Promise<string> {
  const reply = await postOnce(agent, port, '/mcp', legacyHeaders(undefined), INITIALIZE_BODY)
  const id = reply.headers['mcp-session-id']
  if (reply.status !== 200 || typeof id !== 'string') throw new Error(`initialize answered ${reply.status} ${reply.body.slice(0, 300)}`)
  const initialized = await postOnce(agent, port, '/mcp', legacyHeaders(id), INITIALIZED_BODY)
  if (initialized.status !== 202) throw new Error(`notifications/initialized answered ${initialized.status} ${initialized.body.slice(0, 300)}`)
  return id
}

/** Opens CONNECTIONS legacy sessions on a server, checks one call, and returns the load that spreads its connections over them. */
async function legacySessionLoad (label: string, child: Child, port: number): Promise<LoadOptions> {
  const agent = new Agent({ keepAlive: true })
  const sessionIds: string[] = []
  try {
    for (let i = 0; i < CONNECTIONS; i++) sessionIds.push(await openSession(agent, port))
  } finally { agent.destroy() }
  await sanity(label, port, legacyHeaders(sessionIds[0]), LEGACY_BODY)
  return {
    ...base,
    scenario: label,
    serverPgid: child.pid,
    url: `http://127.0.0.1:${port}/mcp`,
    headers: legacyHeaders(sessionIds[0]),
    headersFor: connection => legacyHeaders(sessionIds[connection % sessionIds.length]),
    body: LEGACY_BODY
  }
}

/**
 * Scenarios 8–10: one legacy session per connection (minted before the load, as a client does),
 * `tools/call echo` in it; the server `child` is in front of the v1-SDK stdio upstream. When the
 * server cannot serve the load (a session or the sanity call fails), the reason is printed instead.
 */
async function legacySessionScenario (n: number, label: string, child: Child, port: number): Promise<void> {
  try {
    rows.set(n, await httpLoad(await legacySessionLoad(label, child, port)))
  } catch (error) {
    notServed.push(`${label}: cannot serve ${CONNECTIONS} legacy sessions: ${(error as Error).message}`)
  }
}

/** Starts mcp-proxy 6 (--server stream) on `port` in front of the v1 server and waits until it listens; stops it and rejects when it does not. */
async function mcpProxyOn (label: string, port: number): Promise<Child> {
  const child = startChild(label, NODE, [MCP_PROXY, '--port', String(port), '--host', '127.0.0.1', '--server', 'stream', '--', NODE, V1_UPSTREAM], { logDir: LOG_DIR })
  try {
    await waitForLog(child, /starting server on port/)
    await waitTcp(port) // it prints that line before its socket listens
    return child
  } catch (error) { await child.stop(); throw error }
}

/**
 * Starts the forwarding ceiling (bench/forward-server.ts) in front of the v1 server, waits until it
 * listens and checks one modern `tools/call` through it; stops it and rejects when that fails.
 * Row 21 and the 21/10 rounds both start it here.
 */
async function forwardingCeilingOnV1 (label: string): Promise<{ child: Child, port: number }> {
  const started = await startListening(label, FORWARD, ['--', NODE, V1_UPSTREAM])
  try {
    await sanity('forwarding ceiling', started.port, MODERN_HEADERS, MODERN_BODY)
    return started
  } catch (error) { await started.child.stop(); throw error }
}

/** 8/10 in alternating rounds: the goal's figure (a: mcp-proxy, b: mcpx). */
let proxyAlternating: AlternatingRps | undefined
/** 21/10 in the same kind of rounds, no goal (a: mcp-proxy, b: the forwarding ceiling): what the least forwarder reads against mcp-proxy. */
let forwardProxyAlternating: AlternatingRps | undefined

/**
 * 8 against 10 in alternating rounds (bench/harness.ts alternatingLoads): in each round a fresh mcpx
 * daemon and a fresh mcp-proxy, both in front of the v1 server, with CONNECTIONS legacy sessions each.
 * Then, with 21 wanted, the same rounds for the forwarding ceiling (its 2026-07-28 call, as in row 21)
 * against mcp-proxy: 21/10 is what any forwarder reads against mcp-proxy on this machine, the
 * bound of what 8/10 can read (8/21 is the share of it mcpx keeps).
 */
async function alternatingProxies (): Promise<void> {
  let started = 0
  const startMcpx = async (): Promise<StartedLoad> => {
    const port = await freePort()
    const config = writeConfig(`mcpx-v1-alternating-${++started}`, port, { command: NODE, args: [V1_UPSTREAM] }, { maxSessions: 1000 })
    const child = await startDaemon(`8-alternating-${started}`, config, port)
    try {
      return { load: await legacySessionLoad('8 mcpx legacy (alternating)', child, port), stop: async () => { await child.stop() } }
    } catch (error) { await child.stop(); throw error }
  }
  const startProxy = async (): Promise<StartedLoad> => {
    const port = await freePort()
    const child = await mcpProxyOn(`10-alternating-${++started}`, port)
    try {
      return { load: await legacySessionLoad('10 mcp-proxy (alternating)', child, port), stop: async () => { await child.stop() } }
    } catch (error) { await child.stop(); throw error }
  }
  const startForward = async (): Promise<StartedLoad> => {
    const { child, port } = await forwardingCeilingOnV1(`21-alternating-${++started}`)
    return { load: modernLoad('21 forwarding ceiling (alternating)', child.pid, port), stop: async () => { await child.stop() } }
  }
  try {
    proxyAlternating = await alternatingLoads(startProxy, startMcpx, ROUNDS, ROUND_S)
    warmupErrors += proxyAlternating.errors
    if (wanted(21)) {
      forwardProxyAlternating = await alternatingLoads(startProxy, startForward, ROUNDS, ROUND_S)
      warmupErrors += forwardProxyAlternating.errors
    }
  } catch (error) {
    notServed.push(`8/10 alternating: ${(error as Error).message}`)
  }
}

async function scenarioPeerProxies (): Promise<void> {
  const upstreamCommand = [NODE, V1_UPSTREAM]
  if (wanted(21)) {
    const { child, port } = await forwardingCeilingOnV1('21-forward')
    try {
      rows.set(21, await httpLoad({ ...base, serverPgid: child.pid, scenario: '21 forwarding ceiling → v1 server (stdio)', url: `http://127.0.0.1:${port}/mcp`, headers: MODERN_HEADERS, body: MODERN_BODY }))
    } finally { await child.stop() }
  }
  if (wanted(8) || wanted(22)) {
    const port = await freePort()
    const config = writeConfig('mcpx-v1-upstream', port, { command: NODE, args: [V1_UPSTREAM] }, { maxSessions: 1000 })
    const child = await startDaemon('8-22-mcpx-daemon-v1', config, port)
    try {
      // Row 8 runs first on this freshly started daemon. Before it, the daemon serves row 22's modern
      // call for one warm-up period (not counted; its errors are): both rows are then measured on a
      // daemon whose JIT has seen both eras, as row 22 always was (row 8 measured twice in a row on
      // one daemon: 167, then 157 µs of server CPU per call).
      if (wanted(8) && wanted(22)) warmupErrors += (await httpLoad({ ...base, warmupS: 0, durationS: WARMUP_S, serverPgid: child.pid, scenario: 'warm-up of 8 and 22', url: `http://127.0.0.1:${port}/mcp`, headers: MODERN_HEADERS, body: MODERN_BODY })).errors
      if (wanted(8)) await legacySessionScenario(8, '8 mcpx legacy (sessions) → v1 server (stdio)', child, port)
      if (wanted(22)) {
        await sanity('mcpx modern → v1', port, MODERN_HEADERS, MODERN_BODY)
        rows.set(22, await httpLoad({ ...base, serverPgid: child.pid, scenario: '22 mcpx modern → v1 server (stdio)', url: `http://127.0.0.1:${port}/mcp`, headers: MODERN_HEADERS, body: MODERN_BODY }))
      }
    } finally { await child.stop() }
  }
  if (wanted(9)) {
    const port = await freePort()
    // --stateful: one child per session (supergateway's model for stdio → Streamable HTTP sessions).
    const child = startChild('9-supergateway', NODE, [SUPERGATEWAY, '--stdio', upstreamCommand.join(' '), '--outputTransport', 'streamableHttp', '--stateful', '--port', String(port), '--logLevel', 'none', '--healthEndpoint', '/healthz'], { logDir: LOG_DIR })
    try {
      await waitHttp(`http://127.0.0.1:${port}/healthz`)
      await legacySessionScenario(9, '9 supergateway --stateful → v1 server (stdio)', child, port)
    } catch (error) {
      notServed.push(`9 supergateway: ${(error as Error).message}`)
    } finally { await child.stop() }
  }
  if (wanted(10)) {
    const port = await freePort()
    try {
      const child = await mcpProxyOn('10-mcp-proxy', port)
      try {
        await legacySessionScenario(10, '10 mcp-proxy (stream) → v1 server (stdio)', child, port)
      } finally { await child.stop() }
    } catch (error) {
      notServed.push(`10 mcp-proxy: ${(error as Error).message}`)
    }
  }
  if (wanted(8) && wanted(10)) await alternatingProxies()
}

async function scenarioMemory (): Promise<void> {
  const port = await freePort()
  const warmupSessions = 200
  const config = writeConfig('mcpx-memory', port, STDIO_UPSTREAM, { maxSessions: SESSIONS + warmupSessions + 100, maxGetStreams: STREAMS })
  const child = await startDaemon('7-mcpx-daemon-memory', config, port)
  try {
    memory = await measureMemory({ pid: child.pid, port, sessions: SESSIONS, streams: STREAMS, warmupSessions, concurrency: 16, settleMs: QUICK ? 500 : 1500 })
  } finally { await child.stop() }
}

const allocs: AllocFigure[] = []
/** 23: bytes allocated per call inside the server (bench/alloc.ts), the forwarding ceiling and mcpx in both eras. */
async function scenarioAlloc (): Promise<void> {
  const calls = QUICK ? 1000 : 3000
  for (const connections of [1, 16]) {
    for (const target of ['forward', 'modern', 'legacy'] as const) allocs.push(await allocPerCall(target, calls, calls, connections))
  }
}

let instances: InstanceFigures | undefined
/** 18: a daemon whose fixture upstream is isolated per session; one instance per session (bench/instances.ts). */
async function scenarioInstances (): Promise<void> {
  const port = await freePort()
  const count = QUICK ? 5 : 20
  const config = writeConfig('mcpx-instances', port, { ...STDIO_UPSTREAM, isolation: 'per-session', maxInstances: count + 2 })
  const child = await startDaemon('18-mcpx-daemon-instances', config, port)
  try {
    instances = await measureInstances({ pid: child.pid, port, instances: count, settleMs: QUICK ? 500 : 1500 })
  } finally { await child.stop() }
}

/* ------------------------------------------------------------------ report */

const fmt = (n: number, digits = 2): string => Number.isFinite(n) ? n.toFixed(digits) : 'n/a'
/** Each alternating round as `b/a = ratio`, joined with ' · '. */
const roundRatios = (p: AlternatingRps): string => p.ratios.map((ratio, i) => `${fmt(p.b[i], 0)}/${fmt(p.a[i], 0)} = ${fmt(ratio)}`).join(' · ')
const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`

function report (startedAt: Date, elapsedS: number): string {
  const cpu = cpus()
  const lines: string[] = []
  lines.push(`mcpx bench ${QUICK ? '--quick ' : ''}— ${startedAt.toISOString()} (${elapsedS.toFixed(0)} s)`)
  lines.push(`machine: ${cpu.length} cores (${cpu[0]?.model.trim() ?? 'unknown'}), ${mib(totalmem())} RAM, Node ${process.version}, ${process.platform}/${process.arch}`)
  lines.push(`load: HTTP ${CONNECTIONS} connections (pipelining 1), ${WARMUP_S} s warm-up + ${DURATION_S} s measured per scenario; stdio ${IN_FLIGHT} requests in flight, same durations`)
  lines.push(`processes: the load generator runs in the bench process; each server (and each upstream fixture) in its own child process.`)
  if (cpu.length <= 2) lines.push(`note: ${cpu.length} cores: the generator, the server and (3–6) the upstream child share them, so every figure is bounded by CPU contention; compare ratios, which come from this one run.`)
  lines.push(`machine load (1-min load average): ${LOAD_AT_START.toFixed(2)} at start, ${loadAverage1m().toFixed(2)} at end${LOAD_AT_START > cpu.length ? ' — other work was running: throughput and latency are skewed; CPU µs per request is the steadier figure' : ''}`)
  lines.push('CPU µs/req: user+system CPU of the server process (and, apart, of its children: the upstream) over the measured run, per completed request (/proc, 10 ms ticks).')
  if (MCPX_NODE_ARGS.length > 0) lines.push(`mcpx node args: ${MCPX_NODE_ARGS.join(' ')}`)
  lines.push('')
  lines.push('| scenario | load | requests | req/s | p50 ms | p99 ms | p99.9 ms | errors | server CPU µs/req | upstream CPU µs/req |')
  lines.push('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const n of [...rows.keys()].sort((a, b) => a - b)) {
    const r = rows.get(n) as Row
    lines.push(`| ${r.scenario} | ${r.load} | ${r.requests} | ${fmt(r.rps, 0)} | ${fmt(r.p50Ms)} | ${fmt(r.p99Ms)} | ${fmt(r.p999Ms)} | ${r.errors} | ${r.serverCpuUs === undefined ? '' : fmt(r.serverCpuUs, 0)} | ${r.upstreamCpuUs === undefined || r.upstreamCpuUs === 0 ? '' : fmt(r.upstreamCpuUs, 0)} |`)
  }
  let first = true
  const ratio = (a: number, b: number, label: string): void => {
    const ra = rows.get(a)
    const rb = rows.get(b)
    if (ra === undefined || rb === undefined) return
    if (first) { lines.push(''); first = false }
    const cpu = ra.serverCpuUs !== undefined && rb.serverCpuUs !== undefined ? `, server CPU per request ${fmt(ra.serverCpuUs / rb.serverCpuUs)}×` : ''
    lines.push(`ratio ${a}/${b} (${label}): req/s ${fmt(ra.rps / rb.rps)}, p50 ${fmt(ra.p50Ms / rb.p50Ms)}×${cpu}`)
  }
  ratio(3, 2, 'mcpx modern vs SDK peer')
  ratio(3, 1, 'mcpx modern vs Fastify ceiling')
  ratio(4, 3, 'mcpx legacy vs mcpx modern')
  ratio(5, 2, 'mcpx → HTTP upstream vs that peer served directly')
  ratio(25, 2, 'HTTP forwarding ceiling → peer vs that peer served directly')
  ratio(5, 25, 'mcpx → HTTP upstream vs the HTTP forwarding ceiling, same peer')
  ratio(8, 9, 'mcpx legacy sessions vs supergateway, same v1 stdio upstream')
  ratio(8, 10, 'mcpx legacy sessions vs mcp-proxy, same v1 stdio upstream')
  ratio(8, 21, 'mcpx legacy sessions vs the forwarding ceiling, same v1 stdio upstream')
  ratio(22, 21, 'mcpx modern vs the forwarding ceiling, same v1 stdio upstream')
  for (const line of notServed) lines.push(`not measured: ${line}`)
  const goal = (label: string, value: number | undefined, test: (v: number) => boolean, want: string): string =>
    `  ${label}: ${value === undefined ? 'n/a' : fmt(value)} (goal ${want}${value === undefined ? '' : test(value) ? ', met' : ', not met'})`
  const r = (n: number): Row | undefined => rows.get(n)
  const quotient = (a: number | undefined, b: number | undefined): number | undefined => a === undefined || b === undefined || b === 0 ? undefined : a / b
  if (r(3) !== undefined || r(5) !== undefined || r(8) !== undefined || r(21) !== undefined) {
    lines.push('')
    lines.push('goals, ratios from this run:')
    lines.push(goal('3/1 req/s (mcpx modern, share of the ceiling)', quotient(r(3)?.rps, r(1)?.rps), v => v >= 0.25, '≥ 0.25'))
    lines.push(goal('3/1 server CPU per request', quotient(r(3)?.serverCpuUs, r(1)?.serverCpuUs), v => v <= 3.5, '≤ 3.5×'))
    if (peerAlternating === undefined) lines.push(goal('5/2 req/s (mcpx → HTTP peer, against the peer served directly)', quotient(r(5)?.rps, r(2)?.rps), v => v >= 0.9, '≥ 0.9'))
    else {
      const p = peerAlternating
      lines.push(goal(`5/2 req/s (mcpx → HTTP peer, against the peer served directly; median of ${p.ratios.length} alternating rounds of ${ROUND_S} s)`, median(p.ratios), v => v >= 0.9, '≥ 0.9'))
      lines.push(`    rounds (mcpx → peer / peer req/s): ${roundRatios(p)}; the rows above, one run each: ${fmt(quotient(r(5)?.rps, r(2)?.rps) ?? NaN)}`)
      const f = forwardHttpAlternating
      if (f !== undefined) {
        lines.push(`    the same for the HTTP forwarding ceiling (25/2; the least a forwarder does, no goal): median ${fmt(median(f.ratios))}; rounds ${roundRatios(f)}; the rows above, one run each: ${fmt(quotient(r(25)?.rps, r(2)?.rps) ?? NaN)}`)
      }
    }
    lines.push(goal('8/9 req/s (against supergateway)', quotient(r(8)?.rps, r(9)?.rps), v => v >= 4, '≥ 4'))
    if (proxyAlternating === undefined) lines.push(goal('8/10 req/s (against mcp-proxy)', quotient(r(8)?.rps, r(10)?.rps), v => v >= 4, '≥ 4'))
    else {
      const p = proxyAlternating
      lines.push(goal(`8/10 req/s (against mcp-proxy; median of ${p.ratios.length} alternating rounds of ${ROUND_S} s)`, median(p.ratios), v => v >= 4, '≥ 4'))
      lines.push(`    rounds (mcpx / mcp-proxy req/s): ${roundRatios(p)}; the rows above, one run each: ${fmt(quotient(r(8)?.rps, r(10)?.rps) ?? NaN)}`)
      const f = forwardProxyAlternating
      if (f !== undefined) {
        lines.push(`    the same for the forwarding ceiling (21/10; the least a forwarder does, no goal): median ${fmt(median(f.ratios))}; rounds ${roundRatios(f)}; the rows above, one run each: ${fmt(quotient(r(21)?.rps, r(10)?.rps) ?? NaN)}`)
      }
    }
    lines.push(goal('8/21 server CPU per request (mcpx legacy, against the forwarding ceiling)', quotient(r(8)?.serverCpuUs, r(21)?.serverCpuUs), v => v <= 1.75, '≤ 1.75×'))
    lines.push(goal('22/21 server CPU per request (mcpx 2026-07-28, against the forwarding ceiling)', quotient(r(22)?.serverCpuUs, r(21)?.serverCpuUs), v => v <= 1.75, '≤ 1.75×'))
    lines.push(goal('8/21 req/s (mcpx legacy, share of the forwarding ceiling)', quotient(r(8)?.rps, r(21)?.rps), v => v >= 0.7, '≥ 0.7'))
    lines.push(goal('22/21 req/s (mcpx 2026-07-28, share of the forwarding ceiling)', quotient(r(22)?.rps, r(21)?.rps), v => v >= 0.7, '≥ 0.7'))
  }
  if (allocs.length > 0) {
    lines.push('')
    lines.push(`bytes allocated per call (23): ${ALLOC_METHOD}:`)
    for (const a of allocs) lines.push(`  ${a.target === 'forward' ? 'forwarding ceiling (21)' : a.target === 'modern' ? 'mcpx 2026-07-28 (22)' : 'mcpx legacy session (8)'}, ${a.connections === 1 ? 'calls one at a time' : `${a.connections} connections`}: ${Math.round(a.bytesPerCall).toLocaleString('en-US')} bytes/call (${a.calls} calls)`)
    for (const modern of allocs.filter(a => a.target === 'modern')) lines.push(goal(`bytes per modern call, KB (${modern.connections} connection${modern.connections === 1 ? '' : 's'})`, modern.bytesPerCall / 1000, v => v <= 12, '≤ 12 KB'))
  }
  ratio(12, 11, 'OAuth JWT vs static token')
  ratio(13, 3, 'tracing on vs off (the default), same call')
  ratio(16, 15, '50-rule policy + audit keys vs both off, same call')
  const r15 = rows.get(15)
  const r16 = rows.get(16)
  if (r15 !== undefined && r16 !== undefined) {
    const cost = 1 - r16.rps / r15.rps
    const signed = (v: number, digits: number): string => `${v < 0 ? '−' : '+'}${fmt(Math.abs(v), digits)}`
    const judged = policyAlternating === undefined ? '; goal ≤ 15 %' + (cost <= 0.15 ? ', met' : ', not met') : ''
    lines.push(`policy + audit (16 vs 15), one run each: ${fmt(r15.rps, 0)} → ${fmt(r16.rps, 0)} req/s, cost ${fmt(cost * 100, 1)} % of req/s (a negative cost is load noise${judged})` +
      (r15.serverCpuUs !== undefined && r16.serverCpuUs !== undefined ? `; server CPU ${fmt(r15.serverCpuUs, 0)} → ${fmt(r16.serverCpuUs, 0)} µs/req (${signed(r16.serverCpuUs - r15.serverCpuUs, 0)})` : ''))
  }
  if (policyAlternating !== undefined) {
    const p = policyAlternating
    const costs = p.ratios.map(ratio => 1 - ratio)
    const cost = median(costs)
    lines.push(`policy + audit (16 vs 15), ${costs.length} alternating rounds of ${ROUND_S} s: cost ${costs.map(c => `${fmt(c * 100, 1)} %`).join(' · ')} of req/s ` +
      `(${p.a.map((a, i) => `${fmt(a, 0)} → ${fmt(p.b[i], 0)}`).join(' · ')}); median ${fmt(cost * 100, 1)} % (goal ≤ 15 %${cost <= 0.15 ? ', met' : ', not met'})`)
  }
  if (policy !== undefined) {
    lines.push(`policy + audit in process (15–16; the real Dispatcher, 50 rules, MemoryRateLimiter, AuditTrail "keys" to a file; ${policy.calls} calls × 5 rounds, alternating, median): ` +
      `${fmt(policy.offUs, 2)} CPU µs per tools/call off, ${fmt(policy.onUs, 2)} on: ${policy.onUs >= policy.offUs ? "+" : "−"}${fmt(Math.abs(policy.onUs - policy.offUs), 2)} µs per call; ${policy.auditLines} audit lines`)
  }
  if (tracingOffNs !== undefined) lines.push(`tracing off (13): the request path's hooks (activeTracing, httpTraceIn), in process: ${fmt(tracingOffNs, 1)} ns per request`)
  const r11 = rows.get(11)
  const r12 = rows.get(12)
  if (r11?.serverCpuUs !== undefined && r12?.serverCpuUs !== undefined) lines.push(`auth (12−11): an OAuth JWT costs ${fmt(r12.serverCpuUs - r11.serverCpuUs, 0)} µs more server CPU per request than a static token`)
  const r19 = rows.get(19)
  if (r12?.serverCpuUs !== undefined && r19?.serverCpuUs !== undefined) lines.push(`DPoP (19−12): a DPoP proof (ES256, jose, replay cache in memory) costs ${fmt(r19.serverCpuUs - r12.serverCpuUs, 0)} µs more server CPU per request than the same JWT as a plain bearer token (${fmt(r12.serverCpuUs, 0)} → ${fmt(r19.serverCpuUs, 0)} µs/req)`)
  if (jwtValidation !== undefined) lines.push(`auth: mcpx's JWT validation alone (RS256, cached JWKS, in process, CPU µs per request; target ≤ 40): ${fmt(jwtValidation.firstUs, 1)} for a token's first request (signature), ${fmt(jwtValidation.repeatUs, 1)} for its later ones (verdict cache)`)
  if (gate !== undefined) {
    lines.push('')
    lines.push(`in-flight cap (14, in process): ${fmt(gate.hotNs, 1)} ns per call under maxInFlight (tryAcquire + release, ${gate.calls} calls × 5 rounds, ` +
      `${gate.hotGcs} garbage collections in the window, where 16 bytes allocated per call would cause about ${Math.round(gate.calls * 5 * 16 / (16 * 1024 * 1024))}); ` +
      `${fmt(gate.queuedUs, 2)} µs per call through the queue (${gate.queuedCalls} calls)`)
  }
  if (callStats !== undefined) {
    lines.push('')
    lines.push(`status page call stats (17, in process): ${fmt(callStats.perCallNs, 1)} ns per call (two performance.now() reads and CallStats.record, ` +
      `${callStats.calls} calls × 5 rounds), of which record alone ${fmt(callStats.recordNs, 1)} ns; ${callStats.gcs} garbage collections in the window, ` +
      `where 16 bytes allocated per call would cause about ${Math.round(callStats.calls * 10 * 16 / (16 * 1024 * 1024))}; one snapshot (per upstream, per page view) ${fmt(callStats.snapshotUs, 1)} µs`)
  }
  if (discovery !== undefined) {
    const d = discovery
    lines.push('')
    lines.push(`tool search (20, in process): tools/list of ${d.tools} tools ${(d.listBytes / 1024).toFixed(1)} KiB; search endpoint tools/list + one search_tools answer (8 results) ` +
      `${(d.searchBytes / 1024).toFixed(1)} KiB (${(d.listBytes / d.searchBytes).toFixed(0)}× less)`)
    lines.push(`tool search (20): search_tools over ${d.tools} tools, index warm: p50 ${fmt(d.p50Ms, 2)} ms, p99 ${fmt(d.p99Ms, 2)} ms (${d.searches} calls through Dispatcher.handle); ` +
      `first search (builds the index) ${fmt(d.firstSearchMs, 1)} ms`)
    lines.push(`tool search (20): index build for 2,000 tools ${fmt(d.build2000Ms, 1)} ms CPU (median of 5; the first build in the process, cold JIT, ${fmt(d.build2000FirstMs, 1)} ms); ` +
      `in-place update after a list_changed (every tool a new object, ${d.changedTools} changed) ${fmt(d.update2000Ms, 1)} ms CPU`)
    lines.push(`tool search (20): tools/call on a list-mode endpoint ${fmt(d.callOffUs, 2)} µs CPU per call without discovery configured, ${fmt(d.callOnUs, 2)} µs with /mcp and another endpoint in search mode ` +
      `(${d.calls} calls × 5 alternating rounds, median)`)
  }
  if (memory !== undefined) {
    lines.push('')
    lines.push(`memory (7): daemon RSS ${mib(memory.baselineRssBytes)} → ${mib(memory.afterSessionsRssBytes)} after ${memory.sessions} idle legacy sessions (minted in ${memory.mintSeconds.toFixed(1)} s) → ${mib(memory.afterStreamsRssBytes)} after ${memory.streams} open GET streams; errors ${memory.errors}`)
    lines.push(`memory (7): ${(memory.bytesPerSession / 1024).toFixed(2)} KiB per idle session, ${(memory.bytesPerStream / 1024).toFixed(2)} KiB per open GET stream`)
  }
  if (instances !== undefined) {
    lines.push('')
    lines.push(`instances (18): ${instances.instances} per-session instances of the fixture (stdio, isolation "per-session"), started in ${instances.startSeconds.toFixed(1)} s; ` +
      `RSS per instance child ${mib(instances.childRssMeanBytes)} mean, ${mib(instances.childRssMaxBytes)} max; daemon growth ${(instances.daemonBytesPerInstance / 1024).toFixed(0)} KiB per instance; errors ${instances.errors}`)
  }
  if (integrity !== undefined) {
    lines.push('')
    lines.push(integrityLine(integrity))
  }
  lines.push('')
  lines.push(`logs: ${LOG_DIR}`)
  return lines.join('\n')
}

/** 13: scenario 3's daemon and load with tracing on, exporting by OTLP to a sink in this process. */
async function scenarioTracing (): Promise<void> {
  let spans = 0
  const sink = createServer((req, res) => {
    req.on('data', () => {})
    req.on('end', () => { spans++; res.writeHead(200, { 'content-type': 'application/json' }).end('{}') })
  })
  sink.listen(0, '127.0.0.1')
  await once(sink, 'listening')
  const sinkPort = (sink.address() as { port: number }).port
  const port = await freePort()
  const config = writeConfig('mcpx-tracing', port, STDIO_UPSTREAM)
  const child = await startDaemon('13-mcpx-tracing', config, port, { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sinkPort}` })
  try {
    await sanity('mcpx tracing on', port, MODERN_HEADERS, MODERN_BODY)
    rows.set(13, await httpLoad({ ...base, serverPgid: child.pid, scenario: '13 mcpx modern, tracing on (OTLP to a local sink)', url: `http://127.0.0.1:${port}/mcp`, headers: MODERN_HEADERS, body: MODERN_BODY }))
  } finally {
    await child.stop()
    sink.close()
  }
  if (spans === 0) notServed.push('13: the OTLP sink received no export (tracing did not turn on)')
  // The off path's hooks, in process: what every request pays while tracing is off (the default).
  const headers = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', accept: 'application/json' }
  const n = 2_000_000
  let sinkhole = 0
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < n; i++) {
    if (activeTracing() !== undefined) sinkhole++ // Dispatcher.handle, stdio contextFor
    if (httpTraceIn(headers) !== undefined) sinkhole++ // routes/mcp/post.ts channelFor
  }
  tracingOffNs = Number(process.hrtime.bigint() - t0) / n
  if (sinkhole !== 0) throw new Error('bench: tracing is on in the bench process')
}

/**
 * 15 and 16: the same modern call with a static token on two daemons, one without policy and audit,
 * one with a 50-rule policy (49 rules for other tokens, each with its globs, 10 with a rateLimit,
 * and the caller's own rule, with a rateLimit of a million calls a second) and audit `keys` to a file.
 */
async function scenarioPolicy (): Promise<void> {
  if (!wanted(15) && !wanted(16)) return
  const token = `bench-policy-${'y'.repeat(32)}`
  process.env.MCPX_BENCH_POLICY_TOKEN = token
  const tokens = [{ name: 'bench', tokenEnv: 'MCPX_BENCH_POLICY_TOKEN' }]
  const headers = { ...MODERN_HEADERS, authorization: `Bearer ${token}` }
  const variants = [
    [15, '15 mcpx modern, static token, no policy, no audit', {}],
    [16, '16 the same, 50-rule policy (rate-limited rule) + audit "keys"', { policy: fiftyRules(), audit: { file: join(LOG_DIR, 'audit.jsonl'), arguments: 'keys' } }]
  ] as const
  let started = 0
  const start = async ([n, label, extra]: typeof variants[number]): Promise<StartedLoad> => {
    const port = await freePort()
    const file = join(LOG_DIR, `mcpx-policy-${n}-${++started}.json`)
    writeFileSync(file, JSON.stringify({ daemon: { address: `127.0.0.1:${port}` }, auth: { tokens }, upstreams: { fixture: STDIO_UPSTREAM }, ...extra }, null, 2))
    const child = await startDaemon(`${n}-mcpx-policy-${started}`, file, port)
    try {
      await sanity(label, port, headers, MODERN_BODY)
    } catch (error) { await child.stop(); throw error }
    return { load: { ...base, serverPgid: child.pid, scenario: label, url: `http://127.0.0.1:${port}/mcp`, headers, body: MODERN_BODY }, stop: async () => { await child.stop() } }
  }
  for (const variant of variants) {
    const { load, stop } = await start(variant)
    try {
      rows.set(variant[0], await httpLoad(load))
    } finally { await stop() }
  }
  policyAlternating = await alternatingLoads(async () => await start(variants[0]), async () => await start(variants[1]), ROUNDS, ROUND_S)
  warmupErrors += policyAlternating.errors
  policy = await policyCost(QUICK ? 10_000 : 50_000)
}

let policy: PolicyFigures | undefined
/** 16/15 in alternating rounds: the goal's figure. */
let policyAlternating: AlternatingRps | undefined

let gate: GateFigures | undefined
async function scenarioGate (): Promise<void> {
  gate = await gateCost(QUICK ? 1_000_000 : 5_000_000, QUICK ? 10_000 : 50_000)
}

let integrity: IntegrityFigures | undefined
async function scenarioIntegrity (): Promise<void> {
  integrity = await integrityCost(QUICK ? 500 : 2_000)
}

let callStats: CallStatsFigures | undefined
let discovery: DiscoveryFigures | undefined
async function scenarioDiscovery (): Promise<void> {
  discovery = await discoveryCost(QUICK ? 500 : 2_000, QUICK ? 5_000 : 20_000)
}
async function scenarioCallStats (): Promise<void> {
  callStats = await callStatsCost(QUICK ? 1_000_000 : 5_000_000)
}

async function main (): Promise<number> {
  const startedAt = new Date()
  const t0 = performance.now()
  if (wanted(1)) await scenarioCeiling()
  if (wanted(2)) await scenarioPeer()
  if (wanted(3) || wanted(4)) await scenarioModernAndLegacy()
  if (wanted(5) || wanted(25)) await scenarioHttpUpstream()
  if (wanted(2) && wanted(5) && HTTP_UPSTREAM === 'peer') await alternatingHttpUpstream()
  if (wanted(6)) await scenarioStdio()
  if (wanted(7)) await scenarioMemory()
  if (wanted(8) || wanted(9) || wanted(10) || wanted(21) || wanted(22)) await scenarioPeerProxies()
  if (wanted(11) || wanted(12) || wanted(19)) await scenarioAuth()
  if (wanted(13)) await scenarioTracing()
  if (wanted(14)) await scenarioGate()
  if (wanted(15) || wanted(16)) await scenarioPolicy()
  if (wanted(17)) await scenarioCallStats()
  if (wanted(18)) await scenarioInstances()
  if (wanted(20)) await scenarioDiscovery()
  if (wanted(23)) await scenarioAlloc()
  if (wanted(24)) await scenarioIntegrity()
  const text = report(startedAt, (performance.now() - t0) / 1000)
  process.stdout.write(text + '\n')
  if (flags.out !== undefined) writeFileSync(flags.out, text + '\n')
  const errors = [...rows.values()].reduce((sum, r) => sum + r.errors, 0) + warmupErrors + (memory?.errors ?? 0) + (instances?.errors ?? 0)
  if (errors > 0) process.stderr.write(`bench: ${errors} errors (must be 0)\n`)
  return errors > 0 ? 1 : 0
}

main().then(code => { killAll(); process.exit(code) }, (err: unknown) => {
  process.stderr.write(`${(err as Error)?.stack ?? String(err)}\nlogs: ${LOG_DIR}\n`)
  killAll()
  process.exit(1)
})
