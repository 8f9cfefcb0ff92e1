/**
 * An upstream's life around startup and shutdown, with real processes (the daemon, `mcpx serve`,
 * our fixture, server-everything, silent children): a silent upstream never holds the gateway
 * back, every child (including one spawned by a restart that never finished its setup) is killed
 * on exit, a failed listen stops the upstreams, a second signal during shutdown is not fatal,
 * a down upstream is logged with its exit code, URL secrets stay out of status and logs, and an
 * upstream's roots/list outside any call gets an empty list.
 */
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRegistry } from '../../lib/upstreams/registry.js'
import { redactUrl, redactText } from '../../lib/base/redact.js'
import { loadConfig } from '../../lib/config/load.js'
import type { JsonObject } from '../../lib/protocol/jsonrpc.js'
import type { UpstreamConfig } from '../../lib/upstreams/config.js'
import type { UpstreamStatus } from '../../lib/upstreams/status.js'
import { modernHeaders, modernMeta } from '../helpers/app.js'
import { CLI_PATH, WAIT_MS, isAlive, startDaemon } from '../helpers/daemon.js'
import { everythingCommand, fixtureCommand, FIXTURE_PATH } from '../helpers/fixture.js'
import { spawnServe } from '../helpers/spawn.js'
import { captureLogger, waitForState } from '../helpers/registry.js'
import { pollUntil } from '../helpers/legacy.js'

interface ReadyBody { status: string, failing: string[], upstreams: UpstreamStatus[] }

/** A stdio upstream that never answers; it writes its pid to `pidFile` first. */
function silent (pidFile: string): UpstreamConfig {
  return { command: process.execPath, args: ['-e', 'require("fs").writeFileSync(process.argv[1], String(process.pid)); setInterval(() => {}, 1000)', pidFile], timeout: 2_000 }
}

/** A fresh temp directory, removed at teardown. */
function tempDir (t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-lifecycle-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  return dir
}

/** Resolves once `file` exists and holds a pid (the silent child wrote it). Polls every 20 ms, bounded. */
async function pidFrom (file: string): Promise<number> {
  const deadline = Date.now() + WAIT_MS
  while (Date.now() < deadline) {
    if (existsSync(file)) {
      const pid = Number(readFileSync(file, 'utf8'))
      if (pid > 0) return pid
    }
    await new Promise(resolve => setTimeout(resolve, 20))
  }
  throw new Error(`no pid in ${file}`)
}

/** Polls /readyz (every 50 ms, bounded) until `match` holds for the named upstream. */
async function readyzUntil (base: string, name: string, match: (status: UpstreamStatus) => boolean): Promise<UpstreamStatus> {
  const deadline = Date.now() + WAIT_MS
  let last: UpstreamStatus | undefined
  while (Date.now() < deadline) {
    const body = await (await fetch(`${base}/readyz`)).json() as ReadyBody
    last = body.upstreams.find(u => u.name === name)
    if (last !== undefined && match(last)) return last
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  throw new Error(`/readyz never matched for ${name}; last: ${JSON.stringify(last)}`)
}

t.test('upstreams/lifecycle/silent-upstream-does-not-block-daemon-start', async t => {
  const pidFile = join(tempDir(t), 'silent.pid')
  // The daemon serving at all is the check: had it waited on the silent child, Fastify's 10 s plugin timeout would
  // have failed its start (startDaemon rejects). No wall-clock bound here: tests never depend on timing.
  const daemon = await startDaemon(t, { upstreams: { fixture: fixtureCommand(), silent: silent(pidFile) } })
  const silentPid = await pidFrom(pidFile)
  t.match(daemon.lines.find(l => l.msg === 'upstreams still connecting; serving without them until they are ready'), { level: 30, upstreams: ['silent'] })

  const ready = await fetch(`${daemon.base}/readyz`)
  t.equal(ready.status, 503)
  const body = await ready.json() as ReadyBody
  t.same(body.failing, ['silent'], 'only the silent upstream is named')
  t.match(body.upstreams.find(u => u.name === 'silent'), { state: 'connecting', pid: silentPid, pids: [silentPid] }, 'its child is tracked during setup')
  t.match(body.upstreams.find(u => u.name === 'fixture'), { state: 'ready' })

  const call = await fetch(`${daemon.base}/mcp`, {
    method: 'POST',
    headers: modernHeaders('tools/call', 'fixture__echo'),
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'fixture__echo', arguments: { text: 'hi' }, _meta: modernMeta() } })
  })
  t.equal(call.status, 200, 'the healthy upstream serves meanwhile')

  daemon.child.kill('SIGTERM')
  t.equal(await daemon.exited, 0)
  t.notOk(isAlive(silentPid), 'the silent child is killed on exit')
})

t.test('upstreams/lifecycle/restart-child-killed-on-shutdown', async t => {
  // The first spawn runs the fixture; every later one (the restart) stays silent.
  const dir = tempDir(t)
  const wrapper = join(dir, 'first-fixture-then-silent.mjs')
  writeFileSync(wrapper, [
    "import { existsSync, writeFileSync } from 'node:fs'",
    "import { pathToFileURL } from 'node:url'",
    'const [marker, fixture] = process.argv.splice(2, 2)',
    "if (existsSync(marker)) setInterval(() => {}, 1000)",
    "else { writeFileSync(marker, ''); await import(pathToFileURL(fixture).href) }"
  ].join('\n'))
  const daemon = await startDaemon(t, { upstreams: { flaky: { command: process.execPath, args: [wrapper, join(dir, 'marker'), FIXTURE_PATH] } } })
  const first = await readyzUntil(daemon.base, 'flaky', s => s.state === 'ready' && s.pid !== undefined)
  process.kill(first.pid as number, 'SIGKILL')
  const restarted = await readyzUntil(daemon.base, 'flaky', s => s.state === 'connecting' && s.pid !== undefined && s.pid !== first.pid)
  t.match(restarted, { restarts: 1, pids: [restarted.pid] }, 'the restart child is tracked while its setup runs')
  t.match(daemon.lines.find(l => l.msg === 'upstream down'), { level: 40, upstream: 'flaky', reason: /exited \(signal SIGKILL\)/ })

  daemon.child.kill('SIGTERM')
  t.equal(await daemon.exited, 0)
  t.notOk(isAlive(restarted.pid as number), 'the restart child is killed on shutdown')
})

t.test('upstreams/lifecycle/listen-failure-stops-upstreams', async t => {
  const blocker = createServer()
  blocker.listen(0, '127.0.0.1')
  await once(blocker, 'listening')
  t.teardown(() => { blocker.close() })
  const { port } = blocker.address() as { port: number }
  const file = join(tempDir(t), 'mcpx.config.json')
  writeFileSync(file, JSON.stringify({ daemon: { address: `127.0.0.1:${port}` }, upstreams: { fixture: fixtureCommand() } }))
  const child = spawn(process.execPath, [CLI_PATH, 'daemon', '--config', file], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, MCPX_LOG_LEVEL: 'info' } })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString('utf8') })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8') })
  const [code] = await once(child, 'exit') as [number | null]
  t.equal(code, 1)
  t.equal(stderr, `mcpx: cannot listen on 127.0.0.1:${port}: address in use\n`, 'one line, no stack trace')
  const ready = stdout.split('\n').filter(l => l !== '').map(l => JSON.parse(l) as JsonObject).find(l => l.msg === 'upstream ready')
  t.type(ready?.pid, 'number')
  t.notOk(isAlive(ready?.pid as number), 'the upstream child was stopped before exiting')
})

t.test('daemon/shutdown/second-signal-during-shutdown', async t => {
  const daemon = await startDaemon(t, { upstreams: { fixture: fixtureCommand() } })
  const body = await (await fetch(`${daemon.base}/readyz`)).json() as ReadyBody
  const pid = body.upstreams[0].pid as number
  // An in-flight slow call keeps the shutdown going long enough for a second signal.
  const slow = fetch(`${daemon.base}/mcp`, {
    method: 'POST',
    headers: modernHeaders('tools/call', 'slow'),
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'slow', arguments: { ms: 1_500 }, _meta: modernMeta() } })
  })
  await daemon.waitForLine(l => l.msg === 'upstream stderr' && String(l.stderr).includes('started slow'))
  const since = daemon.lines.length
  daemon.child.kill('SIGTERM')
  await daemon.waitForLine(l => l.msg === 'shutting down', since)
  daemon.child.kill('SIGINT')
  await daemon.waitForLine(l => l.msg === 'already shutting down' && l.signal === 'SIGINT', since)
  t.equal((await slow).status, 200, 'the in-flight call still completes')
  t.equal(await daemon.exited, 0, 'the second signal did not kill the daemon')
  t.notOk(isAlive(pid), 'the child was reaped')
})

t.test('upstreams/lifecycle/serve-does-not-wait-for-silent-upstream', async t => {
  const pidFile = join(tempDir(t), 'silent.pid')
  const serve = spawnServe(t, { config: { upstreams: { fixture: fixtureCommand(), silent: silent(pidFile) } } })
  const response = await serve.request({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, 15_000)
  t.match(response, { id: 1, result: { protocolVersion: '2025-06-18' } }, 'served long before the silent upstream\'s setup timeout')
  // The log line is written asynchronously (pino to fd 2): wait for it, bounded.
  await pollUntil('the still-connecting line on stderr', () => /upstreams still connecting/.test(serve.stderr()))
  t.match(serve.stderr(), /upstreams still connecting/)
  const silentPid = await pidFrom(pidFile)
  serve.end()
  t.match(await serve.exited, { code: 0 })
  t.notOk(isAlive(silentPid), 'the silent child is killed after stdin EOF')
})

t.test('upstreams/lifecycle/close-kills-child-during-setup', async t => {
  const pidFile = join(tempDir(t), 'silent.pid')
  const capture = captureLogger()
  const registry = createRegistry({ silent: silent(pidFile) }, { logger: capture.logger, defaultTimeoutMs: 2_000 })
  t.teardown(async () => { await registry.close() })
  void registry.start()
  const pid = await pidFrom(pidFile)
  const status = await waitForState(registry, s => s.pid === pid)
  t.match(status, { state: 'connecting', pid, pids: [pid] })
  await registry.close()
  t.notOk(isAlive(pid), 'close() killed the child whose setup never finished, and waited for its exit')
  t.match(registry.status(), [{ state: 'closed' }])
})

t.test('upstreams/lifecycle/down-logged-with-exit-code', async t => {
  const capture = captureLogger()
  const registry = createRegistry({ exits: { command: process.execPath, args: ['-e', 'process.exit(3)'] } }, { logger: capture.logger, defaultTimeoutMs: 2_000 })
  t.teardown(async () => { await registry.close() })
  await registry.start()
  const down = await waitForState(registry, s => s.state === 'down' && s.restarts >= 2)
  t.match(down.lastError, /\(child exited: code 3\)/, 'lastError keeps the exit code')
  const lines = capture.lines.filter(l => l.msg === 'upstream down')
  t.ok(lines.length >= 2, 'each failed attempt is logged')
  t.match(lines[0], { level: 40, upstream: 'exits', reason: /code 3/, failures: 1, restartInMs: 100 })
  t.ok(lines.length <= down.restarts + 1, 'at most one line per backoff step')
})

t.test('upstreams/logs/url-secrets-redacted', async t => {
  t.equal(redactUrl('http://admin:PASSWORD1@127.0.0.1:1/mcp?api_key=SECRET123#x'), 'http://***@127.0.0.1:1/mcp?***#x')
  t.equal(redactUrl('https://example.com/mcp'), 'https://example.com/mcp')
  t.equal(redactText('failed: http://u:p@h/x?k=v, then'), 'failed: http://***@h/x?***, then')

  const capture = captureLogger()
  // Built without loadConfig (which refuses userinfo): what a host app could hand the registry.
  const registry = createRegistry({ h: { url: 'http://admin:PASSWORD1@127.0.0.1:1/mcp?api_key=SECRET123' } }, { logger: capture.logger, defaultTimeoutMs: 2_000 })
  t.teardown(async () => { await registry.close() })
  await registry.start()
  const down = await waitForState(registry, s => s.state === 'down')
  t.match(down.lastError, /credentials: http:\/\/\*\*\*@127\.0\.0\.1:1\/mcp\?\*\*\*/)
  const exposed = JSON.stringify([registry.status(), capture.lines])
  t.notOk(exposed.includes('PASSWORD1'), 'no password in status or logs')
  t.notOk(exposed.includes('SECRET123'), 'no query secret in status or logs')

  t.throws(() => loadConfig({ upstreams: { h: { url: 'http://admin:pw@127.0.0.1:1/mcp' } } }), { code: 'MCPX_ERR_CONFIG', message: /upstreams\.h\.url: must match pattern/ })
  t.throws(() => loadConfig({ upstreams: { h: { url: 'http://127.0.0.1:1/mcp', headers: { 'x-key': 'a\r\nb' } } } }), { code: 'MCPX_ERR_CONFIG', message: /upstreams\.h\.headers\.x-key: must match pattern/ })
  t.doesNotThrow(() => loadConfig({ upstreams: { h: { url: 'http://127.0.0.1:1/mcp?x=@y', headers: { authorization: 'Bearer a\tb' } } } }))
})

t.test('upstreams/questions/roots-list-outside-call', async t => {
  const capture = captureLogger()
  const registry = createRegistry({ everything: everythingCommand() as UpstreamConfig }, { logger: capture.logger, defaultTimeoutMs: 10_000 })
  t.teardown(async () => { await registry.close() })
  await registry.start()
  // server-everything asks roots/list right after initialize, with no call in flight. Answered,
  // it sends a notifications/message ("Roots updated: 0 root(s)"), which no call takes; refused,
  // it prints "Failed to request roots" on stderr.
  const outcome = await capture.waitFor(l => l.msg === 'upstream notification with no call to take it: dropped' ||
    (typeof l.stderr === 'string' && l.stderr.includes('Failed to request roots')))
  t.equal(outcome.msg, 'upstream notification with no call to take it: dropped', 'roots/list got an answer')
  t.notOk(capture.lines.some(l => typeof l.stderr === 'string' && l.stderr.includes('Failed to request roots')))
})
