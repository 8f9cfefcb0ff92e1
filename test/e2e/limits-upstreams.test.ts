/**
 * Bounds, the upstream side: each upstream's in-flight cap and queue (maxInFlight, maxQueued),
 * its message size bound (maxMessageBytes), and cancels delivered before exit. Every test runs a
 * real `mcpx serve` child (test/helpers/spawn.ts) or a real daemon (test/helpers/daemon.ts) over
 * the hand-written hostile upstream (test/fixtures/hostile-upstream.ts), which records what it
 * received to a file.
 */
import t from 'tap'
import { mkdtempSync, rmSync, writeFileSync, existsSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { spawnServe, type Message, type ServeChild, type Teardown } from '../helpers/spawn.js'
import { daemonReady, startDaemon } from '../helpers/daemon.js'
import { startHttpUpstream } from '../helpers/fixture.js'
import { callBody, fixtureEvents, initializeBody, pollUntil, type FixtureEvent } from '../helpers/legacy.js'
import { legacyHeaders, modernHeaders, modernMeta } from '../helpers/app.js'
import { PassThrough } from 'node:stream'
import { createInterface } from 'node:readline'
import { pino } from 'pino'
import { runStdio } from '../../stdio.js'
import { loadConfig } from '../../lib/config/load.js'

// Twenty EOF drains, eight SIGTERMed daemons, 10,000 requests and 50 MB lines: minutes on a
// loaded 2-core machine, beyond the suite's 480 s per file (.taprc).
t.setTimeout(720_000)

const HOSTILE = fileURLToPath(new URL('../fixtures/hostile-upstream.js', import.meta.url))
const ECHO = fileURLToPath(new URL('../fixtures/echo-upstream.js', import.meta.url))

interface Record_ { event: 'call' | 'cancelled', tool?: string, tag?: string, id?: unknown, open?: number, requestId?: unknown }

function scratch (t: Teardown): { log: string, release: string } {
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-limits-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return { log: join(dir, 'fixture.log'), release: join(dir, 'release') }
}

function records (log: string): Record_[] {
  if (!existsSync(log)) return []
  return readFileSync(log, 'utf8').split('\n').filter(l => l !== '').map(l => JSON.parse(l) as Record_)
}

function hostile (log: string, limits: Record<string, number> = {}): Record<string, unknown> {
  return { command: process.execPath, args: [HOSTILE], env: { FIXTURE_LOG: log }, ...limits }
}

/**
 * Initializes, then waits until the upstream lists its tools: on a loaded machine an upstream may
 * still be connecting when `mcpx serve` starts reading (its calls would fail "is connecting").
 */
async function initialized (serve: ServeChild): Promise<void> {
  const init = await serve.request(initializeBody('2025-06-18', {}, 'init'), 60_000)
  if (init.result === undefined) throw new Error(`initialize failed: ${JSON.stringify(init)}`)
  serve.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
  let probe = 0
  await pollUntil('the upstream ready', async () => {
    const list = await serve.request({ jsonrpc: '2.0', id: `ready-${++probe}`, method: 'tools/list' }, 60_000)
    return Array.isArray(list.result?.tools) && list.result.tools.length > 0
  }, 60_000)
}

t.test('limits/upstreams/max-in-flight-and-queue-stdio', async t => {
  const { log, release } = scratch(t)
  const serve = spawnServe(t, { config: { upstreams: { h: hostile(log, { maxInFlight: 2, maxQueued: 2 }) } } })
  await initialized(serve)
  for (let i = 1; i <= 4; i++) serve.send(callBody(i, 'hold', { tag: `c${i}`, release }))
  const first = await pollUntil('two calls at the upstream', () => { const calls = records(log).filter(r => r.event === 'call'); return calls.length >= 2 && calls }, 20_000)
  // Two in flight, two queued: the fifth is refused at once, naming the upstream and both limits.
  const refused = await serve.request(callBody(5, 'hold', { tag: 'c5', release }))
  t.equal(refused.error?.code, -32603, 'the JSON-RPC error of mcpx\'s other "server busy" refusals')
  t.match(refused.error?.message, /upstream h/)
  t.match(refused.error?.message, /maxInFlight 2/)
  t.match(refused.error?.message, /maxQueued 2/)
  // A queued call that is cancelled leaves the queue without reaching the upstream.
  const started = new Set(first.map(r => r.tag))
  const queued = ['c1', 'c2', 'c3', 'c4'].filter(tag => !started.has(tag))
  t.equal(queued.length, 2, 'two calls wait in the queue')
  const cancelledTag = queued[0]
  serve.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: Number(cancelledTag.slice(1)), reason: 'test' } })
  // Its place is free again: a sixth call queues instead of being refused.
  serve.send(callBody(6, 'hold', { tag: 'c6', release }))
  writeFileSync(release, '')
  const answered = new Map<number, Message>()
  for (const id of [1, 2, 3, 4, 6].filter(id => `c${id}` !== cancelledTag)) {
    const reply = await serve.nextMessage(m => m.id === id)
    answered.set(id, reply)
    t.match(reply.result?.content?.[0]?.text, /^released c/, `call ${id} answered once a slot was free`)
  }
  const calls = records(log).filter(r => r.event === 'call')
  t.same(calls.map(r => r.tag).sort(), ['c1', 'c2', 'c3', 'c4', 'c6'].filter(tag => tag !== cancelledTag).sort(), 'the refused and the cancelled calls never reached the upstream')
  t.ok(calls.every(r => (r.open ?? 0) <= 2), `never more than maxInFlight at the upstream (${calls.map(r => r.open).join(',')})`)
  t.same(records(log).filter(r => r.event === 'cancelled'), [], 'no cancel was sent for a call the upstream never saw')
  t.notOk(serve.messages.some(m => (m as Message)?.id === Number(cancelledTag.slice(1))), 'the cancelled call got no reply (stdio: suppressed)')
})

t.test('limits/upstreams/queue-full-503-retry-after', async t => {
  const { log, release } = scratch(t)
  const daemon = await startDaemon(t, { upstreams: { h: hostile(log, { maxInFlight: 1, maxQueued: 1 }) } })
  await daemonReady(daemon.base)
  const url = `${daemon.base}/mcp`
  const modernCall = (id: number, tag: string): string => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hold', arguments: { tag, release }, _meta: modernMeta() } })
  // One in flight, one queued (both modern, stateless).
  const held = [1, 2].map(async id => await fetch(url, { method: 'POST', headers: modernHeaders('tools/call', 'hold'), body: modernCall(id, `h${id}`) }))
  await pollUntil('one call at the upstream', () => records(log).some(r => r.event === 'call'), 20_000)
  // The metrics show the slot taken and the queue full; a third call is then refused.
  await pollUntil('the queue full', async () => {
    const metrics = await (await fetch(`${daemon.base}/metrics`)).text()
    return /mcpx_upstream_in_flight\{upstream="h"\} 1\n/.test(metrics) && /mcpx_upstream_queued\{upstream="h"\} 1\n/.test(metrics)
  }, 20_000)
  const refused = await fetch(url, { method: 'POST', headers: modernHeaders('tools/call', 'hold'), body: modernCall(3, 'h3') })
  t.equal(refused.status, 503)
  t.equal(refused.headers.get('retry-after'), '5')
  t.equal(refused.headers.get('content-type')?.split(';')[0], 'application/json')
  const body = await refused.json() as Message
  t.equal(body.id, 3, 'the refusal carries the request\'s id')
  t.equal(body.error.code, -32603)
  t.match(body.error.message, /upstream h .*maxInFlight 1.*maxQueued 1/)
  // A legacy (sessionless) request is refused the same way.
  const legacy = await fetch(url, { method: 'POST', headers: legacyHeaders({ 'mcp-protocol-version': '2025-06-18' }), body: JSON.stringify(callBody(4, 'hold', { tag: 'h4', release })) })
  t.equal(legacy.status, 503)
  t.equal(legacy.headers.get('retry-after'), '5')
  const legacyBody = await legacy.json() as Message
  t.equal(legacyBody.id, 4)
  t.equal(legacyBody.error.code, -32603)
  writeFileSync(release, '')
  for (const res of await Promise.all(held)) {
    t.equal(res.status, 200)
    t.match(await res.text(), /released h/)
  }
  t.same(records(log).filter(r => r.event === 'call').map(r => r.tag).sort(), ['h1', 'h2'], 'refused calls never reached the upstream')
  // The refusals are counted per upstream.
  const metrics = await (await fetch(`${daemon.base}/metrics`)).text()
  t.match(metrics, /mcpx_upstream_refused_total\{upstream="h"\} 2/)
  t.match(metrics, /mcpx_requests_total\{[^}]*status="503"[^}]*\} 1/)
})

t.test('limits/upstreams/ten-thousand-requests-capped', async t => {
  // A host that pushes 10,000 requests at once used to get them all sent to the one stdio upstream
  // (whose SDK then warned MaxListenersExceededWarning); now at most maxInFlight are sent, the
  // rest wait or are refused, and each request gets an answer.
  const serve = spawnServe(t, { config: { upstreams: { e: { command: process.execPath, args: [ECHO, '--era', 'legacy'] } } } })
  await initialized(serve)
  const total = 10_000
  let batch = ''
  for (let i = 1; i <= total; i++) batch += JSON.stringify(callBody(i, 'echo', { text: `m${i}` })) + '\n'
  serve.child.stdin?.write(batch)
  await serve.nextMessage(m => m.id === total, { timeoutMs: 120_000 })
  await pollUntil('every answer', () => serve.messages.filter(m => typeof (m as Message)?.id === 'number').length >= total, 120_000)
  const replies = serve.messages.filter((m): m is Message => typeof (m as Message)?.id === 'number')
  const ok = replies.filter(m => m.result !== undefined).length
  const busy = replies.filter(m => m.error?.code === -32603 && /Server busy/.test(String(m.error.message))).length
  t.equal(ok + busy, total, `each request answered once: ${ok} results, ${busy} "server busy"`)
  t.ok(ok >= 256 + 1024, 'at least maxInFlight + maxQueued were served')
  t.notMatch(serve.stderr(), /MaxListenersExceededWarning/, 'the upstream never had enough requests at once to warn')
})

t.test('limits/upstreams/oversized-line-skipped-stdio', async t => {
  // 50 MB lines against the default maxMessageBytes (16 MiB): each is skipped to its newline, the
  // call it answered gets an error naming both sizes, one log line says the same, and the next call
  // to the same child succeeds (no restart).
  const { log } = scratch(t)
  const serve = spawnServe(t, { config: { upstreams: { h: hostile(log) } } })
  await initialized(serve)
  const bytes = 50_000_000
  let id = 0
  for (const order of ['id-last', 'id-first']) {
    const big = await serve.request(callBody(++id, 'big', { bytes, order }), 60_000)
    t.equal(big.error?.code, -31000, `${order}: the call fails`)
    const size = /its reply is (\d+) bytes, over maxMessageBytes \(16777216\)/.exec(String(big.error?.message))
    t.ok(size !== null, `${order}: the error names the limit and the size: ${String(big.error?.message)}`)
    t.ok(Number(size?.[1]) > bytes && Number(size?.[1]) < bytes + 200, `${order}: the size is the line's (${size?.[1]})`)
    const next = await serve.request(callBody(++id, 'echo', { text: `after ${order}` }))
    t.equal(next.result?.content?.[0]?.text, `after ${order}`, `${order}: the next call to the same upstream succeeds`)
  }
  // An oversized notification is skipped too; the call's own response still arrives.
  const noisy = await serve.request(callBody(++id, 'noise', { bytes: 20_000_000 }), 60_000)
  t.equal(noisy.result?.content?.[0]?.text, 'after the noise')
  // Log lines reach stderr asynchronously: wait for them.
  const warnings = await pollUntil('three log lines', () => { const lines = serve.stderr().split('\n').filter(l => l.includes('over maxMessageBytes')); return lines.length >= 3 && lines }, 20_000)
  t.equal(warnings.length, 3, 'one log line per skipped message')
  t.match(warnings[0], /"bytes":5000\d{4}/)
  t.match(warnings[0], /"maxMessageBytes":16777216/)
  t.notMatch(serve.stderr(), /upstream down/, 'the upstream was never restarted')
  t.equal(records(log).filter(r => r.event === 'call').length, 5, 'one child served every call')
})

t.test('limits/upstreams/eof-drain-cancel-reaches-upstream', async t => {
  // At stdin EOF, a call still running after transport.stdioDrain is cancelled and mcpx exits; the
  // cancel must be written, flushed and acted on by the child before it is ended: 20 runs out of 20.
  // The upstream is the SDK-based echo fixture (its `slow` tool records its start and its
  // cancellation to FIXTURE_LOG): with the child SIGTERMed right after the cancel was written (the
  // old shutdown), it saw none in 10 runs out of 10 here.
  // Run 1 is a real `mcpx serve` process; runs 2-20 run the same runStdio (stdio.ts) in this process
  // on stream pairs, each with its own real upstream child (starting 20 mcpx processes would take
  // minutes on a loaded machine, and the race is between mcpx and its child, not the host).
  const runs = 20
  let delivered = 0
  const echo = (log: string): Record<string, unknown> => ({ command: process.execPath, args: [ECHO, '--era', 'legacy'], env: { FIXTURE_LOG: log } })
  const slow = (id: number): Record<string, unknown> => callBody(id, 'slow', { ms: 600_000, steps: 1 })
  const started = async (log: string): Promise<FixtureEvent> => await pollUntil('the call at the upstream', () => fixtureEvents(log).find(e => e.event === 'started'), 60_000)
  const check = (run: number, log: string, call: FixtureEvent): void => {
    const cancels = fixtureEvents(log).filter(e => e.event === 'cancelled')
    if (cancels.length === 1 && cancels[0].id === call.id) delivered++
    else t.fail(`run ${run}: the upstream recorded ${JSON.stringify(cancels)} for call ${String(call.id)}`)
  }
  {
    const { log } = scratch(t)
    const serve = spawnServe(t, { config: { transport: { stdioDrain: '100ms' }, upstreams: { e: echo(log) } } })
    await initialized(serve)
    serve.send(slow(1))
    const call = await started(log)
    serve.end()
    t.equal((await serve.exited).code, 0, 'mcpx serve exits 0')
    check(1, log, call)
  }
  const logger = pino({ level: 'silent' })
  // Runs 2-20 are independent (own streams, own upstream child, own log): four at a time, so one
  // run's child start overlaps another's waits.
  const wave = 4
  const inProcessRun = async (run: number): Promise<void> => {
    const { log } = scratch(t)
    const input = new PassThrough()
    const output = new PassThrough()
    const replies: Message[] = []
    createInterface({ input: output }).on('line', line => { replies.push(JSON.parse(line) as Message) })
    const exited = runStdio(loadConfig({ transport: { stdioDrain: '100ms' }, upstreams: { e: echo(log) } }), logger, { input, output })
    input.write(JSON.stringify(initializeBody('2025-06-18', {}, 'init')) + '\n')
    await pollUntil('initialize answered', () => replies.some(m => m.id === 'init'), 60_000)
    input.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n')
    let probe = 0
    await pollUntil('the upstream ready', async () => {
      const id = `ready-${++probe}`
      input.write(JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list' }) + '\n')
      const list = await pollUntil('tools/list answered', () => replies.find(m => m.id === id), 60_000)
      return Array.isArray(list.result?.tools) && list.result.tools.length > 0
    }, 60_000)
    input.write(JSON.stringify(slow(1)) + '\n')
    const call = await started(log)
    input.end()
    t.equal(await exited, 0, `run ${run}: runStdio returns 0`)
    check(run, log, call)
  }
  for (let first = 2; first <= runs; first += wave) {
    await Promise.all(Array.from({ length: Math.min(wave, runs - first + 1) }, async (_, i) => { await inProcessRun(first + i) }))
  }
  t.equal(delivered, runs, `the cancel reached the upstream in ${delivered} runs out of ${runs}`)
})

t.test('limits/upstreams/sigterm-cancel-reaches-upstream', async t => {
  // At SIGTERM the daemon lets in-flight requests finish for daemon.shutdownTimeout, then cuts
  // them: each cut call's notifications/cancelled must be written and flushed to its stdio upstream,
  // and the child must read it before it is ended (cancels are delivered before exit).
  // 8 real daemons, 3 calls in flight on each at its SIGTERM: 24 cancels, every one must arrive (a
  // daemon start and stop takes ~8 s on the loaded 2-core machine, so not 20 daemons). The hostile
  // fixture appends a record for every notifications/cancelled it reads, synchronously.
  const runs = 8
  const callsPerRun = 3
  // The runs are independent (own daemon, child, log): four at a time, so one run's process
  // starts overlap another's waits.
  const wave = 4
  let delivered = 0
  const sigtermRun = async (run: number): Promise<void> => {
    const { log, release } = scratch(t)
    const daemon = await startDaemon(t, { daemon: { shutdownTimeout: '100ms' }, upstreams: { h: hostile(log) } })
    await daemonReady(daemon.base)
    const replies = Array.from({ length: callsPerRun }, async (_, i) => {
      const body = JSON.stringify({ jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'hold', arguments: { tag: `r${run}-${i}`, release }, _meta: modernMeta() } })
      return await fetch(`${daemon.base}/mcp`, { method: 'POST', headers: modernHeaders('tools/call', 'hold'), body }).then(async res => await res.text(), () => 'cut')
    })
    const calls = await pollUntil('the calls at the upstream', () => { const c = records(log).filter(r => r.event === 'call'); return c.length === callsPerRun ? c : undefined }, 60_000)
    daemon.child.kill('SIGTERM')
    const code = await daemon.exited
    await Promise.all(replies)
    if (code !== 0) t.fail(`run ${run}: the daemon exited ${String(code)}`)
    const cancelled = new Set(records(log).filter(r => r.event === 'cancelled').map(r => r.requestId))
    for (const call of calls) {
      if (cancelled.has(call.id)) delivered++
      else t.fail(`run ${run}: no cancel recorded for call ${String(call.id)} (recorded: ${JSON.stringify([...cancelled])})`)
    }
  }
  for (let first = 1; first <= runs; first += wave) {
    await Promise.all(Array.from({ length: Math.min(wave, runs - first + 1) }, async (_, i) => { await sigtermRun(first + i) }))
  }
  t.equal(delivered, runs * callsPerRun, `the cancel reached the upstream for ${delivered} calls out of ${runs * callsPerRun} (${runs} SIGTERMs)`)
})

t.test('limits/upstreams/stalled-upstream-stdin-bounded', async t => {
  // An upstream that stops reading its stdin: mcpx holds the calls that follow (unserialised)
  // instead of queueing their frames on the pipe: at most the high-water mark (1 MiB) plus one
  // frame waits there, and every call is answered once the child reads again.
  const { log, release } = scratch(t)
  const daemon = await startDaemon(t, { upstreams: { h: hostile(log) } })
  await daemonReady(daemon.base)
  const url = `${daemon.base}/mcp`
  const call = (id: number, name: string, args: Record<string, unknown>): Promise<Response> => fetch(url, {
    method: 'POST', headers: modernHeaders('tools/call', name), body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta: modernMeta() } })
  })
  const gauge = async (name: string): Promise<number> => {
    const text = await (await fetch(`${daemon.base}/metrics`)).text()
    const match = new RegExp(`^${name}\\{upstream="h"\\} (\\d+)$`, 'm').exec(text)
    return match === null ? NaN : Number(match[1])
  }
  const stalled = call(1, 'stall', { release })
  await pollUntil('the upstream stalled', () => records(log).some(r => r.tool === 'stall'), 20_000)
  const frame = 512 * 1024
  const calls = 24
  const pending = Array.from({ length: calls }, async (_, i) => await call(100 + i, 'echo', { text: `${i}:`.padEnd(frame, 'z') }))
  await pollUntil('every call in flight', async () => await gauge('mcpx_upstream_in_flight') === calls + 1, 30_000)
  const buffered = await gauge('mcpx_upstream_stdin_buffered_bytes')
  t.ok(buffered > 0, `frames wait for the stalled child (${buffered} bytes)`)
  t.ok(buffered <= 1024 * 1024 + 2 * frame, `at most the high-water mark and a frame wait in mcpx (${buffered} bytes, ${calls * frame} sent)`)
  writeFileSync(release, '')
  t.equal((await stalled).status, 200)
  for (const [i, res] of (await Promise.all(pending)).entries()) {
    const text = await res.text()
    t.ok(res.status === 200 && text.includes(`"${i}:zzz`), `call ${i} answered once the child reads again`)
  }
  t.equal(await gauge('mcpx_upstream_stdin_buffered_bytes'), 0)
})

/** The hostile upstream over HTTP; resolves with its URL. Stopped at teardown. */
async function hostileHttp (t: Teardown, log: string): Promise<string> {
  return await startHttpUpstream(t, process.execPath, [HOSTILE, '--http'], { FIXTURE_LOG: log })
}

t.test('limits/upstreams/oversized-reply-http', async t => {
  // An HTTP upstream's JSON body or SSE event over maxMessageBytes: the call fails naming both
  // sizes, one log line says the same, and the next call to the same upstream succeeds.
  const { log } = scratch(t)
  const url = await hostileHttp(t, log)
  const limit = 1024 * 1024
  const daemon = await startDaemon(t, { upstreams: { h: { url, maxMessageBytes: limit } } })
  await daemonReady(daemon.base)
  const call = async (id: number, name: string, args: Record<string, unknown>): Promise<Message> => {
    const res = await fetch(`${daemon.base}/mcp`, { method: 'POST', headers: legacyHeaders({ 'mcp-protocol-version': '2025-06-18' }), body: JSON.stringify(callBody(id, name, args)) })
    return await res.json() as Message
  }
  const bytes = 5_000_000
  const json = await call(1, 'big', { bytes })
  t.equal(json.error?.code, -31000)
  t.match(json.error?.message, new RegExp(`its reply is ${bytes + 73} bytes, over maxMessageBytes \\(${limit}\\)`), 'a JSON body: its Content-Length named')
  t.equal((await call(2, 'echo', { text: 'after json' })).result?.content?.[0]?.text, 'after json')
  const sse = await call(3, 'big', { bytes, sse: true })
  t.equal(sse.error?.code, -31000)
  t.match(sse.error?.message, new RegExp(`its reply is ${bytes + 73} bytes, over maxMessageBytes \\(${limit}\\)`), 'an SSE event: its size named, its id read from its end')
  t.equal((await call(4, 'echo', { text: 'after sse' })).result?.content?.[0]?.text, 'after sse')
  const noisy = await call(5, 'noise', { bytes: 2 * limit })
  t.equal(noisy.result?.content?.[0]?.text, 'after the noise', 'an oversized notification is skipped; the response after it arrives')
  const warned = await pollUntil('three log lines', () => { const lines = daemon.lines.filter(l => String(l.msg).includes('over maxMessageBytes')); return lines.length >= 3 && lines }, 20_000)
  t.equal(warned.length, 3, 'one log line per skipped message')
  const metrics = await (await fetch(`${daemon.base}/metrics`)).text()
  t.match(metrics, /mcpx_upstream_oversized_messages_total\{upstream="h"\} 3/)
})
