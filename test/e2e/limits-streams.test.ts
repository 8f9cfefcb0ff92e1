/**
 * Outgoing-stream limits (a high-water mark on every outgoing stream, `mcpx serve`'s stdout too),
 * against a REAL daemon process and a REAL `mcpx serve`, with hostile peers: clients that stop
 * reading their SSE reply or GET stream while test/fixtures/flood-upstream.ts floods them, a
 * client that reads slowly, and a stdio host that writes 10,000 requests without reading.
 *
 * Also the members of a batch in progress at once (transport.maxBatchInFlight): three sessionless
 * POSTs of 20,000 waiting members each.
 *
 * These are resource bounds with generous margins (RSS read from /proc/<pid>/status), not timing
 * assertions: before the fix the daemon went past 1 GB within 21 s with 4 stalled calls.
 */
import t from 'tap'
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { daemonReady, startDaemon, type DaemonProcess } from '../helpers/daemon.js'
import { spawnServe } from '../helpers/spawn.js'
import { modernHeaders, modernMeta, legacyHeaders } from '../helpers/app.js'
import { initializeBody, pollUntil, sessionHeaders } from '../helpers/legacy.js'

// Two 30 s RSS windows, a 10,000-request run and four daemons: past the suite's 240 s per file
// (.taprc) on a loaded 2-core machine.
t.setTimeout(480_000)
// Two tests at a time: each measures its own daemon's (or mcpx serve's) RSS, so the two 30 s
// windows (tests 1 and 2, the floods they hold) overlap instead of following each other.
t.jobs = 2

const FLOOD_PATH = fileURLToPath(new URL('../fixtures/flood-upstream.js', import.meta.url))
const FLOOD = { command: process.execPath, args: [FLOOD_PATH] }

/**
 * The issue's bounds, MB of RSS. The daemon's two (stalled SSE readers, stalled GET reader) are
 * held to 250 MB as written, whatever the baseline: an idle daemon starts at 110-150 MB here (more
 * on a loaded machine) and, since the relay allocates almost nothing that outlives a
 * young-generation GC (dispatch.ts onProgress; link.ts takes resources/updated), it stays within
 * ~20 MB of its baseline under the flood (measured here on a loaded machine: 157 → 173 MB with 4
 * stalled calls, 153 → 168 MB with a stalled GET stream, 0.5-1.4M notifications dropped or
 * coalesced in 30 s). Before that fix it peaked at 306 and 328 MB on a quiet machine, and before
 * lib/connection/flow.ts past 1 GB within 21 s.
 * `mcpx serve`'s bound is held to the issue's 200 MB or to its baseline plus the same headroom,
 * whichever is larger: {@link bound}.
 */
const DAEMON_RSS_BOUND_MB = 250
const SERVE_RSS_BOUND_MB = 200
/** The issue's headroom over its baseline (200 - 81 for mcpx serve, rounded up). */
const SERVE_HEADROOM_MB = 120
/** The bound a peak is held to, given the measured baseline. */
const bound = (issueBoundMb: number, headroomMb: number, baselineMb: number): number => Math.max(issueBoundMb, baselineMb + headroomMb)
/**
 * "Back near baseline": within 60 MB of it once the readers left (measured: 13 MB over; a young
 * generation grown by the flood may keep its pages). The old relay stayed 85 MB over (the
 * promoted garbage of the flood, kept until a major GC that an idle daemon does not run) and the
 * original code ~600 MB over.
 */
const NEAR_BASELINE_MB = 60
/** How long the stalled readers are held (the issue's window). */
const STALLED_WINDOW_MS = 30_000
const SAMPLE_MS = 500
/**
 * The measured processes run as in production: without the test runner's NODE_OPTIONS
 * (`--import` of tap's processinfo hook, whose module-loader thread is a second V8 isolate that
 * alone adds ~40 MB of RSS to every child).
 */
const PRODUCTION_ENV = { NODE_OPTIONS: '' }
/**
 * Growth allowed over the baseline while three sessionless 20,000-member batches wait, MB: 8 × the
 * measured +15 MB; before the bound the same traffic took +240 MB within the window.
 */
const BATCH_HEADROOM_MB = 120
/** How long the waiting batches are watched once every one has its members in progress, ms. */
const BATCH_WINDOW_MS = 3000
/** The hand-written stdio upstream whose `hold` waits until cancelled (test/fixtures/hostile-upstream.ts). */
const HOSTILE_PATH = fileURLToPath(new URL('../fixtures/hostile-upstream.js', import.meta.url))
interface HostileRecord { event: string, tool?: string }
/** The hostile upstream's FIXTURE_LOG records so far. */
function hostileRecords (log: string): HostileRecord[] {
  if (!existsSync(log)) return []
  return readFileSync(log, 'utf8').split('\n').filter(l => l !== '').map(l => JSON.parse(l) as HostileRecord)
}
/** A long URI, so that the resources/updated flood is bytes, not only messages. */
const FLOOD_URI = 'flood://r/' + 'u'.repeat(500)

/** Resident set size of a process, MB (VmRSS). */
function rssMb (pid: number): number {
  const match = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (match === null) throw new Error(`no VmRSS for pid ${pid}`)
  return Number(match[1]) / 1024
}

const sleep = async (ms: number): Promise<void> => { await new Promise(resolve => setTimeout(resolve, ms)) }

/** Samples `pid`'s RSS every SAMPLE_MS for `ms`; fails fast past `boundMb`. Resolves with the peak. */
async function peakRss (t: { fail: (message: string) => void }, pid: number, ms: number, boundMb: number): Promise<number> {
  let peak = 0
  const until = Date.now() + ms
  while (Date.now() < until) {
    const now = rssMb(pid)
    peak = Math.max(peak, now)
    if (now > boundMb) { t.fail(`RSS ${now.toFixed(0)} MB is past ${boundMb} MB`); return peak }
    await sleep(SAMPLE_MS)
  }
  return peak
}

/** Samples `pid`'s RSS every 100 ms until stopped; `peak` is the highest reading, MB. */
function rssSampler (pid: number): { readonly peak: number, stop: () => void } {
  let peak = rssMb(pid)
  const timer = setInterval(() => { try { peak = Math.max(peak, rssMb(pid)) } catch { /* exited */ } }, 100)
  return { get peak () { return peak }, stop: () => { clearInterval(timer) } }
}

/** Polls until `pid`'s RSS is at most `mb` (bounded wait); resolves with the last reading. */
async function rssSettles (pid: number, mb: number, boundMs = 30_000): Promise<number> {
  const until = Date.now() + boundMs
  let now = rssMb(pid)
  while (now > mb && Date.now() < until) { await sleep(SAMPLE_MS); now = rssMb(pid) }
  return now
}

/** A request whose response head is awaited and whose body is then never read (a stalled client). */
async function stalled (base: string, method: 'GET' | 'POST', headers: Record<string, string>, body?: unknown): Promise<{ req: ClientRequest, res: IncomingMessage }> {
  return await new Promise((resolve, reject) => {
    const req = httpRequest(`${base}/mcp`, { method, headers, agent: false })
    req.on('error', reject)
    req.on('response', res => {
      res.pause() // never read: the socket stops reading, the daemon's writes back up
      res.on('error', () => {})
      req.off('error', reject)
      req.on('error', () => {})
      resolve({ req, res })
    })
    req.end(body === undefined ? undefined : JSON.stringify(body))
  })
}

/** A counter's value from the daemon's /metrics (0 when the series is absent). */
async function metric (daemon: DaemonProcess, series: string): Promise<number> {
  const text = await (await fetch(`${daemon.base}/metrics`)).text()
  const line = text.split('\n').find(l => l.startsWith(series + ' '))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

function floodCall (id: number | string, args: Record<string, unknown>, token: string, tool = 'flood'): { params: { name: string } & Record<string, unknown> } & Record<string, unknown> {
  return {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: tool, arguments: args, _meta: modernMeta({}, { progressToken: token, 'io.modelcontextprotocol/logLevel': 'info' }) }
  }
}

/** Reads a whole SSE response, after not reading it for `stallMs` (a client that falls behind); resolves with its messages. */
async function readLate (base: string, body: { params: { name: string } }, stallMs: number): Promise<Array<Record<string, any>>> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return await new Promise((resolve, reject) => {
    const req = httpRequest(`${base}/mcp`, { method: 'POST', headers: modernHeaders('tools/call', body.params.name), agent: false })
    req.on('error', reject)
    req.on('response', res => {
      let text = ''
      res.setEncoding('utf8')
      res.pause()
      setTimeout(() => res.resume(), stallMs)
      res.on('data', (chunk: string) => { text += chunk })
      res.on('end', () => {
        resolve(text.split('\n\n').map(block => block.split('\n').filter(l => l.startsWith('data:')).map(l => l.slice(5).trimStart()).join('\n'))
          .filter(data => data !== '').map(data => JSON.parse(data)))
      })
      res.on('error', reject)
    })
    req.end(JSON.stringify(body))
  })
}

t.test('limits/sse/stalled-readers-rss-bounded', async t => {
  // One flooding upstream per call: a log line is delivered only when it can be tied to exactly
  // one call of its upstream, so four calls on one upstream would carry none.
  const daemon = await startDaemon(t, { upstreams: { f1: FLOOD, f2: FLOOD, f3: FLOOD, f4: FLOOD } }, { env: PRODUCTION_ENV })
  await daemonReady(daemon.base) // its upstreams too: two tests start at once
  const pid = daemon.child.pid as number
  // Warm up (JIT, pools) with one flood read to its end, then take the baseline.
  const warm = await readLate(daemon.base, floodCall('warm', { count: 2000 }, 'warm', 'f1__flood'), 0)
  t.equal(warm.at(-1)?.result?.content?.[0]?.text, 'flooded 2000', 'a reading client gets its reply')
  await sleep(1000)
  const baseline = rssMb(pid)
  const calls = await Promise.all([1, 2, 3, 4].map(async i => await stalled(daemon.base, 'POST', modernHeaders('tools/call', `f${i}__flood`), floodCall(i, { seconds: 120 }, `p${i}`, `f${i}__flood`))))
  const limit = DAEMON_RSS_BOUND_MB
  const peak = await peakRss(t, pid, STALLED_WINDOW_MS, limit)
  const droppedLogs = await metric(daemon, 'mcpx_stream_dropped_total{stream="reply",kind="log"}')
  const coalesced = await metric(daemon, 'mcpx_stream_dropped_total{stream="reply",kind="progress"}')
  t.ok(droppedLogs > 1000, `the flood reached the stalled streams and their log lines were dropped (${droppedLogs})`)
  t.ok(coalesced > 1000, `their progress was coalesced (${coalesced})`)
  t.ok(daemon.lines.some(l => l.msg !== undefined && /past transport\.streamBufferBytes/.test(String(l.msg))), 'a warn line names the limit')
  t.ok(peak < limit, `peak RSS ${peak.toFixed(0)} MB (baseline ${baseline.toFixed(0)} MB) under ${limit.toFixed(0)} MB for ${STALLED_WINDOW_MS / 1000} s`)
  for (const { req } of calls) req.destroy()
  // Closing a modern stream cancels its call: the flood stops and the memory comes back.
  await daemon.waitForLine(l => /cancelled flood/.test(JSON.stringify(l)))
  const after = await rssSettles(pid, baseline + NEAR_BASELINE_MB)
  t.ok(after <= baseline + NEAR_BASELINE_MB, `RSS back near baseline after the readers left: ${after.toFixed(0)} MB (baseline ${baseline.toFixed(0)} MB)`)
})

t.test('limits/get/stalled-reader-rss-bounded', async t => {
  const daemon = await startDaemon(t, { upstreams: { flood: FLOOD } }, { env: PRODUCTION_ENV })
  await daemonReady(daemon.base) // its upstreams too: two tests start at once
  const pid = daemon.child.pid as number
  const init = await fetch(`${daemon.base}/mcp`, { method: 'POST', headers: legacyHeaders(), body: JSON.stringify(initializeBody('2025-06-18')) })
  t.equal(init.status, 200)
  const sid = init.headers.get('mcp-session-id') as string
  await init.text()
  const headers = sessionHeaders(sid, '2025-06-18')
  await (await fetch(`${daemon.base}/mcp`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text()
  await sleep(1000)
  const baseline = rssMb(pid)
  const get = await stalled(daemon.base, 'GET', { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' })
  t.equal(get.res.statusCode, 200, 'the GET stream is open')
  // Subscribing starts the upstream's resources/updated flood, delivered on the GET stream.
  const sub = await fetch(`${daemon.base}/mcp`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'resources/subscribe', params: { uri: FLOOD_URI } }) })
  t.equal(sub.status, 200)
  t.match(await sub.json(), { id: 2, result: {} }, 'subscribed')
  const limit = DAEMON_RSS_BOUND_MB
  const peak = await peakRss(t, pid, STALLED_WINDOW_MS, limit)
  const coalesced = await metric(daemon, 'mcpx_stream_dropped_total{stream="get",kind="resource"}')
  t.ok(coalesced > 1000, `the flood reached the stalled GET stream and was coalesced (${coalesced})`)
  t.ok(peak < limit, `peak RSS ${peak.toFixed(0)} MB (baseline ${baseline.toFixed(0)} MB) under ${limit.toFixed(0)} MB for ${STALLED_WINDOW_MS / 1000} s`)
  get.req.destroy()
  const unsub = await fetch(`${daemon.base}/mcp`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'resources/unsubscribe', params: { uri: FLOOD_URI } }) })
  await unsub.text()
  const after = await rssSettles(pid, baseline + NEAR_BASELINE_MB)
  t.ok(after <= baseline + NEAR_BASELINE_MB, `RSS back near baseline after the reader left: ${after.toFixed(0)} MB (baseline ${baseline.toFixed(0)} MB)`)
})

t.test('limits/sse/reading-client-gets-coalesced-progress-and-intact-reply', async t => {
  // A small mark so a slow reader on loopback is certainly behind.
  const daemon = await startDaemon(t, { transport: { streamBufferBytes: 65536 }, upstreams: { flood: FLOOD } }, { env: PRODUCTION_ENV })
  await daemonReady(daemon.base) // its upstreams too: two tests start at once
  const ROUNDS = 20_000
  const messages = await readLate(daemon.base, floodCall(7, { count: ROUNDS }, 'slow-reader'), 3000)
  const reply = messages.at(-1)
  t.match(reply, { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: `flooded ${ROUNDS}` }] } }, `the reply is last and intact: ${JSON.stringify(reply)}`)
  const progress = messages.filter(m => m.method === 'notifications/progress').map(m => m.params.progress as number)
  t.ok(messages.filter(m => m.method === 'notifications/progress').every(m => m.params.progressToken === 'slow-reader'), 'the client\'s own token')
  t.ok(progress.length < ROUNDS, `progress coalesced: ${progress.length} of ${ROUNDS} delivered`)
  t.equal(progress.at(-1), ROUNDS, 'the latest progress value arrives, before the reply')
  t.ok(progress.every((p, i) => i === 0 || p > progress[i - 1]), 'progress only goes up')
  t.ok(await metric(daemon, 'mcpx_stream_dropped_total{stream="reply",kind="progress"}') > 0, 'counted')
})

t.test('limits/sse/stalled-reply-past-max-ended-and-call-cancelled', async t => {
  // Past transport.streamBufferMaxBytes a reply stream is ended and its call cancelled upstream
  // (transport.streamBufferMaxBytes). What overflows it: frames the policy cannot coalesce or drop. The first progress
  // queued behind a stalled client is kept whole (only later ones replace it), so progress of
  // ~300 KB each, more than the hard limit by itself, overflows the stream as soon as the client's
  // socket (and the kernel's buffers) are full. Log lines are dropped past the mark and never do.
  const MAX_BYTES = 262_144
  const daemon = await startDaemon(t, { transport: { streamBufferBytes: 65_536, streamBufferMaxBytes: MAX_BYTES }, upstreams: { flood: FLOOD } }, { env: PRODUCTION_ENV })
  await daemonReady(daemon.base) // its upstreams too: two tests start at once
  const { res } = await stalled(daemon.base, 'POST', modernHeaders('tools/call', 'flood'), floodCall(9, { seconds: 120, progressPad: 300_000 }, 'fat'))
  t.equal(res.headers['content-type'], 'text/event-stream', 'the reply is an SSE stream')
  const warn = await daemon.waitForLine(l => /past transport\.streamBufferMaxBytes/.test(String(l.msg)))
  t.match(warn, { level: 40, stream: 'reply', streamBufferMaxBytes: MAX_BYTES }, 'one warn line names the limit and the stream')
  // A client that reads again gets what was already sent, then the end of a stream cut short.
  const closed = new Promise<void>(resolve => res.once('close', () => resolve()))
  res.resume()
  await closed
  t.notOk(res.complete, 'the client sees its stream cut, with no reply: it can reconnect')
  // The fixture writes `cancelled flood <id>` on stderr once notifications/cancelled reached it
  // mid-flood; mcpx logs its upstream's stderr lines.
  const cancelled = await daemon.waitForLine(l => typeof l.stderr === 'string' && /^cancelled flood /.test(l.stderr))
  t.equal(cancelled.upstream, 'flood', `the upstream received notifications/cancelled for the call (${String(cancelled.stderr)})`)
  t.equal(await metric(daemon, 'mcpx_stream_overflows_total{stream="reply"}'), 1, 'counted once')
  // The upstream and the daemon serve the next call.
  const next = await readLate(daemon.base, floodCall(10, { count: 3 }, 'next'), 0)
  t.equal(next.at(-1)?.result?.content?.[0]?.text, 'flooded 3', 'the next call is answered')
})

t.test('limits/batch/sessionless-batches-rss-bounded', async t => {
  // Three concurrent sessionless POSTs (no MCP-Protocol-Version: served as 2025-03-26, where
  // batches exist), each a batch of 20,000 tools/call members (2.3 MiB) to a call that never
  // answers: at most transport.maxBatchInFlight (64) members of each are in progress, the rest wait
  // unstarted. Before the bound all 60,000 were dispatched at once (the upstream admitted
  // maxInFlight + maxQueued, answered the rest "busy", and each member's state stayed until its
  // POST ended): +240 MB within 3 s here, and the attack's four 36,000-member POSTs went from 114 MB
  // to 1.37 GB. Measured with the bound: +15 MB; lib/connection/batch.ts.
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-batch-rss-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const log = join(dir, 'fixture.log')
  const release = join(dir, 'r') // never created: every hold waits until cancelled
  // transport.maxBatchMembers (default 1,000) would refuse these batches whole: raised here, so that
  // what is measured is the in-progress bound of a batch that is admitted.
  const daemon = await startDaemon(t, { transport: { maxBatchMembers: 50_000 }, upstreams: { h: { command: process.execPath, args: [HOSTILE_PATH], env: { FIXTURE_LOG: log } } } }, { env: PRODUCTION_ENV })
  await daemonReady(daemon.base) // its upstream too: two tests start at once
  const pid = daemon.child.pid as number
  const post = async (body: unknown, signal?: AbortSignal): Promise<Response> => await fetch(`${daemon.base}/mcp`, { method: 'POST', headers: legacyHeaders(), body: JSON.stringify(body), ...(signal !== undefined ? { signal } : {}) })
  // Warm up (JIT, pools) with a small batch read to its end, then take the baseline.
  const warm = await post(Array.from({ length: 100 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'echo', arguments: { text: `w${i}` } } })))
  t.equal((await warm.json() as unknown[]).length, 100, 'a small batch is answered whole')
  const baseline = rssMb(pid)
  const POSTS = 3
  const MEMBERS = 20_000
  const BOUND = 64 // transport.maxBatchInFlight's default
  const body = Array.from({ length: MEMBERS }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'hold', arguments: { release } } }))
  const abort = new AbortController()
  t.teardown(() => { abort.abort() })
  // Sampled from the first byte sent to the end of the test: before the bound the growth went on
  // after the window, while the daemon was still dispatching members on a loaded machine.
  const sampler = rssSampler(pid)
  t.teardown(() => { sampler.stop() })
  const posts = Array.from({ length: POSTS }, async () => await post(body, abort.signal).catch(() => undefined))
  const calls = (): HostileRecord[] => hostileRecords(log).filter(r => r.event === 'call' && r.tool === 'hold')
  await pollUntil('every batch in progress at the upstream', () => calls().length >= POSTS * BOUND, 60_000)
  const limit = baseline + BATCH_HEADROOM_MB
  const peak = await peakRss(t, pid, BATCH_WINDOW_MS, limit)
  t.ok(peak < limit, `peak RSS ${peak.toFixed(0)} MB (baseline ${baseline.toFixed(0)} MB) under ${limit.toFixed(0)} MB for ${BATCH_WINDOW_MS / 1000} s with ${POSTS} batches of ${MEMBERS} waiting members`)
  const started = calls().length
  t.ok(started <= POSTS * BOUND, `at most ${BOUND} members of each batch in progress: ${started} calls at the upstream`)
  // The clients leave: their members in progress are cancelled upstream, and none is started after.
  abort.abort()
  await Promise.all(posts)
  await pollUntil('the members in progress cancelled upstream', () => hostileRecords(log).filter(r => r.event === 'cancelled').length >= started, 60_000)
  const after = await rssSettles(pid, baseline + NEAR_BASELINE_MB)
  t.ok(after <= baseline + NEAR_BASELINE_MB, `RSS back near baseline after the POSTs ended: ${after.toFixed(0)} MB (baseline ${baseline.toFixed(0)} MB)`)
  const ping = await post({ jsonrpc: '2.0', id: 'after', method: 'ping' })
  t.same(await ping.json(), { jsonrpc: '2.0', id: 'after', result: {} }, 'the daemon still answers')
  sampler.stop()
  t.ok(sampler.peak < limit, `peak RSS ${sampler.peak.toFixed(0)} MB from the first POST to the end (baseline ${baseline.toFixed(0)} MB) under ${limit.toFixed(0)} MB`)
})

t.test('limits/stdio/unread-host-10000-requests-bounded-then-all-answered', async t => {
  const s = spawnServe(t, { config: { upstreams: { flood: FLOOD } }, env: PRODUCTION_ENV })
  const init = await s.request({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'host', version: '0' } } }, 60_000)
  t.ok(init.result, 'initialized')
  s.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
  // Its upstream listed (not still connecting): another test may be starting beside this one.
  let probe = 0
  await pollUntil('the upstream ready', async () => {
    const list = await s.request({ jsonrpc: '2.0', id: `ready-${++probe}`, method: 'tools/list' }, 60_000)
    return Array.isArray(list.result?.tools) && list.result.tools.length > 0
  }, 60_000)
  const pid = s.child.pid as number
  const baseline = rssMb(pid)
  const REQUESTS = 10_000
  // The host stops reading, then writes every request (each answer is 2 KiB: 20 MB in all).
  s.child.stdout?.pause()
  const after = s.messages.length
  for (let i = 1; i <= REQUESTS; i++) s.send({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'echo', arguments: { size: 2048 } } })
  const limit = bound(SERVE_RSS_BOUND_MB, SERVE_HEADROOM_MB, baseline)
  const peak = await peakRss(t, pid, 10_000, limit)
  t.ok(peak < limit, `mcpx serve's peak RSS ${peak.toFixed(0)} MB under ${limit.toFixed(0)} MB (baseline ${baseline.toFixed(0)} MB) while the host does not read`)
  s.child.stdout?.resume()
  // Every id answered exactly once, with the answer (not an error).
  const answered = new Map<unknown, Record<string, any>>() // eslint-disable-line @typescript-eslint/no-explicit-any
  await s.nextMessage(m => { if ('id' in m) answered.set(m.id, m); return answered.size >= REQUESTS }, { after, timeoutMs: 120_000 })
  t.equal(answered.size, REQUESTS, 'all 10,000 answered')
  const bad = [...answered.values()].filter(m => m.result?.content?.[0]?.text?.length !== 2048)
  t.equal(bad.length, 0, `every answer is the tool's result (first bad: ${JSON.stringify(bad[0])?.slice(0, 300)})`)
  t.equal(s.messages.slice(after).filter(m => m === undefined).length, 0, 'stdout carries only JSON-RPC')
})
