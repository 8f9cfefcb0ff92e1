/**
 * The daemon as a real process (`node dist/cli.js daemon`), docs/operating.md:
 * /healthz and /readyz (outside /mcp rules, not logged at info), /metrics, one structured log line
 * per /mcp request with secrets never logged, and graceful shutdown on SIGTERM/SIGINT: an
 * in-flight slow call completes with its result, open streams end cleanly, the children are
 * stopped and the process exits 0.
 */
import t from 'tap'
import { modernHeaders, modernMeta } from '../helpers/app.js'
import { fetchSession } from '../helpers/legacy.js'
import { fixtureCommand } from '../helpers/fixture.js'
import { isAlive, readSse, startDaemon } from '../helpers/daemon.js'

interface ReadyBody { status: string, failing: string[], upstreams: Array<{ name: string, state: string, pid?: number }> }

const fixture = (): Record<string, unknown> => ({ fixture: fixtureCommand() })

/** A modern tools/call of the fixture's `slow` tool. */
function slowCall (id: number, ms: number): RequestInit {
  return {
    method: 'POST',
    headers: modernHeaders('tools/call', 'slow'),
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'slow', arguments: { ms }, _meta: modernMeta() } })
  }
}

t.test('daemon/ops/health-ready-metrics-logs', async t => {
  const daemon = await startDaemon(t, { upstreams: fixture() })
  const evil = { origin: 'http://evil.example', accept: 'image/png' }

  const health = await fetch(`${daemon.base}/healthz`, { headers: evil })
  t.equal(health.status, 200, '/healthz ignores /mcp rules (Origin, Accept)')
  t.same(await health.json(), { status: 'ok' })

  const ready = await fetch(`${daemon.base}/readyz`, { headers: evil })
  t.equal(ready.status, 200)
  const readyBody = await ready.json() as ReadyBody
  t.match(readyBody, { status: 'ready', failing: [], upstreams: [{ name: 'fixture', state: 'ready', pid: Number }] })

  const secret = 'Bearer s3cret-token-value'
  const call = await fetch(`${daemon.base}/mcp`, {
    method: 'POST',
    headers: modernHeaders('tools/call', 'echo', { authorization: secret, cookie: 'sid=s3cret-cookie' }),
    body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' }, _meta: modernMeta() } })
  })
  t.equal(call.status, 200)
  t.match(await call.json(), { id: 5, result: { content: [{ type: 'text' }] } })

  const line = await daemon.waitForLine(l => l.msg === 'mcp request' && l.rpcMethod === 'tools/call')
  t.match(line, { level: 30, method: 'POST', rpcMethod: 'tools/call', era: 'modern', revision: '2026-07-28', upstream: 'fixture', status: 200, durationMs: Number, reqId: String })

  const metrics = await fetch(`${daemon.base}/metrics`)
  t.equal(metrics.status, 200)
  t.match(metrics.headers.get('content-type'), /^text\/plain/)
  const text = await metrics.text()
  t.match(text, /mcpx_requests_total\{http_method="POST",rpc_method="tools\/call",era="modern",status="200"\} 1/)
  t.match(text, /mcpx_upstream_call_duration_seconds_count\{upstream="fixture",operation="callTool",outcome="ok"\} 1/)
  t.match(text, /mcpx_upstream_restarts_total\{upstream="fixture"\} 0/)
  t.match(text, /mcpx_upstream_up\{upstream="fixture"\} 1/)
  t.match(text, /mcpx_open_sessions 0/)
  t.match(text, /mcpx_open_streams\{kind="get"\} 0/)

  const all = JSON.stringify(daemon.lines)
  t.notOk(all.includes('s3cret'), 'no secret header value reaches the log')
  t.notOk(daemon.lines.some(l => typeof l.url === 'string' || String(l.msg).includes('/healthz') || String(l.msg).includes('/readyz')), 'health, readiness and metrics are not logged at info')
  t.notOk(daemon.stderr().includes('FSTDEP023'), 'no disableRequestLogging deprecation warning')

  daemon.child.kill('SIGINT')
  t.equal(await daemon.exited, 0, 'SIGINT exits 0')
})

t.test('daemon/ops/readyz-names-failing-upstreams', async t => {
  const daemon = await startDaemon(t, { upstreams: { ...fixture(), broken: { command: '/nonexistent/mcpx-no-such-command' } } })
  const ready = await fetch(`${daemon.base}/readyz`)
  t.equal(ready.status, 503)
  const body = await ready.json() as ReadyBody
  t.equal(body.status, 'not ready')
  t.same(body.failing, ['broken'], 'the failing upstream is named (and only it)')
  t.match(body.upstreams.find(u => u.name === 'fixture'), { state: 'ready' })
  const health = await fetch(`${daemon.base}/healthz`)
  t.equal(health.status, 200, 'still alive')
  daemon.child.kill('SIGTERM')
  t.equal(await daemon.exited, 0)
})

t.test('daemon/shutdown/sigterm-graceful', async t => {
  const daemon = await startDaemon(t, { upstreams: fixture() })
  const ready = await (await fetch(`${daemon.base}/readyz`)).json() as ReadyBody
  const pids = ready.upstreams.map(u => u.pid).filter((pid): pid is number => typeof pid === 'number')
  t.equal(pids.length, 1, 'readyz lists the fixture child pid')

  // An open legacy GET stream, which shutdown must end cleanly.
  const session = await fetchSession(daemon.base, '2025-06-18')
  const get = await fetch(`${daemon.base}/mcp`, { headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' } })
  t.equal(get.status, 200)
  const stream = readSse(get)

  // A slow call in flight when SIGTERM arrives.
  const since = daemon.lines.length
  const slow = fetch(`${daemon.base}/mcp`, slowCall(7, 1500))
  await daemon.waitForLine(l => l.msg === 'upstream stderr' && String(l.stderr).includes('started slow'), since)
  daemon.child.kill('SIGTERM')
  await daemon.waitForLine(l => l.msg === 'shutting down' && l.signal === 'SIGTERM', since)

  const response = await slow
  t.equal(response.status, 200, 'the in-flight call completes')
  t.match(await response.json(), { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'slept 1500' }] } }, 'with its result')
  t.equal(await stream.ended, 'end', 'the GET stream ended cleanly')
  t.equal(await daemon.exited, 0, 'the process exits 0')
  for (const pid of pids) t.notOk(isAlive(pid), `upstream child ${pid} is gone`)
  t.ok(daemon.lines.some(l => l.msg === 'mcpx daemon stopped'))
  t.notOk(daemon.lines.some(l => l.msg === 'shutdown timeout: closing remaining connections'), 'finished within daemon.shutdownTimeout')
})

t.test('daemon/shutdown/bounded', async t => {
  // A call longer than daemon.shutdownTimeout: the bound cuts it, the process still exits 0.
  const daemon = await startDaemon(t, { daemon: { shutdownTimeout: '300ms' }, upstreams: fixture() })
  const ready = await (await fetch(`${daemon.base}/readyz`)).json() as ReadyBody
  const pids = ready.upstreams.map(u => u.pid).filter((pid): pid is number => typeof pid === 'number')
  const since = daemon.lines.length
  const slow = fetch(`${daemon.base}/mcp`, slowCall(8, 20_000)).then(r => r.status, () => 'cut')
  await daemon.waitForLine(l => l.msg === 'upstream stderr' && String(l.stderr).includes('started slow'), since)
  daemon.child.kill('SIGTERM')
  t.equal(await daemon.exited, 0, 'exits 0 after the bound')
  t.equal(await slow, 'cut', 'the over-long call was cut')
  t.ok(daemon.lines.some(l => l.msg === 'shutdown timeout: closing remaining connections'))
  for (const pid of pids) t.notOk(isAlive(pid), `upstream child ${pid} is gone`)
})

// docs/operating.md › Logs: a request whose client went away first is logged with `aborted: true` and
// status 499, and counted; the upstream call is cancelled either way (seed › Closing the stream
// is cancellation). One case with a JSON reply pending, one with an SSE reply streaming.
t.test('2026-07-28/operability/aborted-request-logged-and-counted', async t => {
  const daemon = await startDaemon(t, { upstreams: fixture() })
  const cases = [
    { id: 41, reply: 'json', accept: 'application/json', meta: modernMeta() },
    { id: 42, reply: 'sse', accept: 'application/json, text/event-stream', meta: modernMeta({}, { progressToken: 'p42' }) }
  ]
  for (const c of cases) {
    const since = daemon.lines.length
    const abort = new AbortController()
    const pending = fetch(`${daemon.base}/mcp`, {
      method: 'POST',
      headers: modernHeaders('tools/call', 'slow', { accept: c.accept }),
      body: JSON.stringify({ jsonrpc: '2.0', id: c.id, method: 'tools/call', params: { name: 'slow', arguments: { ms: 60_000, steps: 600 }, _meta: c.meta } }),
      signal: abort.signal
    })
    if (c.reply === 'sse') {
      const res = await pending
      t.equal(res.headers.get('content-type'), 'text/event-stream', 'sse: the reply is streaming')
      t.match(await readSse(res).next(), { method: 'notifications/progress' })
    } else {
      pending.catch(() => {})
      await daemon.waitForLine(l => l.msg === 'upstream stderr' && String(l.stderr).startsWith('started slow'), since)
    }
    abort.abort()
    await daemon.waitForLine(l => l.msg === 'upstream stderr' && String(l.stderr).startsWith('cancelled slow'), since)
    const line = await daemon.waitForLine(l => l.msg === 'mcp request' && l.rpcMethod === 'tools/call', since)
    t.match(line, { method: 'POST', rpcMethod: 'tools/call', era: 'modern', status: 499, aborted: true, durationMs: Number }, `${c.reply}: logged as aborted`)
  }
  const text = await (await fetch(`${daemon.base}/metrics`)).text()
  t.match(text, /mcpx_requests_total\{http_method="POST",rpc_method="tools\/call",era="modern",status="499"\} 2/, 'both counted, status 499')
  t.equal(daemon.lines.filter(l => l.msg === 'mcp request' && l.rpcMethod === 'tools/call').length, 2, 'exactly one line per request')
})
