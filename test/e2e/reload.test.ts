/**
 * Hot reload (docs/operating.md › Reloading the config) on a real daemon (`node dist/cli.js daemon`) and a real
 * `mcpx serve`: SIGHUP, `--watch` and `POST /admin/reload` restart a changed upstream, stop a
 * removed one (its child reaped), start a new one and leave an unchanged one running (same pid, no
 * failed call while a client calls it in a loop); clients get list_changed; an invalid config or an
 * address change is refused with one log line and the running config stays; every reload is
 * counted (mcpx_config_reloads_total) and logged with its summary. A changed upstream is switched
 * make before break (no failed call, no catalogue gap, a call in flight finishes) and kept under its
 * old config when its new one cannot start (docs/operating.md › A changed upstream: make before break).
 */
import t, { type Test } from 'tap'
import { writeFileSync, renameSync } from 'node:fs'
import { callBody, fetchSession, post as legacyPost, sessionHeaders, SseReader } from '../helpers/legacy.js'
import { fixtureCommand } from '../helpers/fixture.js'
import { isAlive, readSse, startDaemon, type DaemonProcess } from '../helpers/daemon.js'
import { modernBody, post } from '../helpers/modern-wire.js'
import { modernHeaders } from '../helpers/app.js'
import { spawnServe } from '../helpers/spawn.js'

interface Ready { upstreams: Array<{ name: string, state: string, pid?: number }> }

async function readyz (daemon: DaemonProcess): Promise<Ready> {
  return await (await fetch(`${daemon.base}/readyz`)).json() as Ready
}

/** Polls /readyz (bounded) until `pred` holds. */
async function until (daemon: DaemonProcess, pred: (r: Ready) => boolean): Promise<Ready> {
  const deadline = Date.now() + 60_000
  for (;;) {
    const r = await readyz(daemon)
    if (pred(r)) return r
    if (Date.now() > deadline) throw new Error(`readyz never matched: ${JSON.stringify(r)}`)
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}

function pidOf (r: Ready, name: string): number | undefined {
  return r.upstreams.find(u => u.name === name)?.pid
}

/** Rewrites the daemon's config file (atomically, as a deploy would: write aside, rename). */
function rewrite (file: string, config: Record<string, unknown>): void {
  writeFileSync(file + '.tmp', JSON.stringify(config))
  renameSync(file + '.tmp', file)
}

/** One modern tools/call; true when it answered a result without isError. */
async function callOk (base: string, id: number, name: string): Promise<boolean> {
  const reply = await post(base, modernBody(id, 'tools/call', { name, arguments: { text: `call ${id}` } }), modernHeaders('tools/call', name))
  return reply.status === 200 && reply.json?.result?.content?.[0]?.text === `call ${id}`
}

/** Calls `a__echo` in tight loops (as many as {@link run} is started) until {@link stop}: how many answered, and the ids of those that failed. */
class CallLoop {
  ok = 0
  readonly failed: number[] = []
  stopped = false
  private id: number
  constructor (private readonly base: string, firstId: number) { this.id = firstId }
  async run (): Promise<void> {
    while (!this.stopped) {
      const n = this.id++
      if (await callOk(this.base, n, 'a__echo')) this.ok++
      else this.failed.push(n)
    }
  }

  stop (): void { this.stopped = true }
}

async function metric (daemon: DaemonProcess, pattern: RegExp): Promise<string | undefined> {
  const text = await (await fetch(`${daemon.base}/metrics`)).text()
  return text.split('\n').find(line => pattern.test(line))
}

t.test('ops/reload/sighup-restarts-changed-stops-removed-starts-new', async t => {
  const a = { ...fixtureCommand(), prefix: 'a' }
  const b = { ...fixtureCommand(), prefix: 'b' }
  const gone = { ...fixtureCommand(), prefix: 'gone' }
  const daemon = await startDaemon(t, { upstreams: { a, b, gone } })
  const before = await until(daemon, r => r.upstreams.every(u => u.state === 'ready'))
  const [pidA, pidB, pidGone] = ['a', 'b', 'gone'].map(name => pidOf(before, name))
  t.ok(pidA !== undefined && pidB !== undefined && pidGone !== undefined, 'three children')

  // A legacy session with its GET stream: list_changed must arrive there.
  const session = await fetchSession(daemon.base, '2025-06-18')
  const get = await fetch(`${daemon.base}/mcp`, { headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' } })
  t.equal(get.status, 200)
  const stream = readSse(get)

  const since = daemon.lines.length
  rewrite(daemon.file, { daemon: { address: daemon.base.slice('http://'.length) }, upstreams: { a, b: { ...b, env: { CHANGED: '1' } }, c: { ...fixtureCommand(), prefix: 'c' } } })
  daemon.child.kill('SIGHUP')
  const line = await daemon.waitForLine(l => typeof l.msg === 'string' && l.msg.startsWith('config reload'), since)
  t.match(line, { level: 30, msg: /^config reloaded: 1 added, 1 removed, 1 restarted, 1 unchanged$/, trigger: 'SIGHUP', added: ['c'], removed: ['gone'], restarted: ['b'], unchanged: 1 })

  const after = await until(daemon, r => r.upstreams.length === 3 && r.upstreams.every(u => u.state === 'ready'))
  t.same(after.upstreams.map(u => u.name), ['a', 'b', 'c'], 'running set follows the config')
  t.equal(pidOf(after, 'a'), pidA, 'unchanged upstream: same child')
  t.ok(pidA !== undefined && isAlive(pidA))
  t.not(pidOf(after, 'b'), pidB, 'changed upstream: a new child')
  t.notOk(isAlive(pidB ?? 0), 'the old child of the changed upstream is gone')
  t.notOk(isAlive(pidGone ?? 0), 'the removed upstream\'s child is reaped')

  const changed = await stream.next() as { method: string }
  t.match(changed.method, /^notifications\/(tools|prompts|resources)\/list_changed$/, 'list_changed on the GET stream')
  t.ok(await callOk(daemon.base, 2, 'c__echo'), 'the new upstream serves')
  t.match(await metric(daemon, /^mcpx_config_reloads_total\{/), /trigger="SIGHUP",outcome="applied"\} 1$/)
  t.notOk(await metric(daemon, /^mcpx_upstream_up\{upstream="gone"\}/), 'the removed upstream leaves the gauge')
})

t.test('ops/reload/unchanged-upstream-zero-failed-calls-under-load', async t => {
  const a = { ...fixtureCommand(), prefix: 'a' }
  const daemon = await startDaemon(t, { upstreams: { a } })
  await until(daemon, r => r.upstreams.every(u => u.state === 'ready'))
  const pidA = pidOf(await readyz(daemon), 'a')
  const address = daemon.base.slice('http://'.length)
  const calls = new CallLoop(daemon.base, 100)
  const loops = [calls.run(), calls.run(), calls.run()]
  // Five reloads while the loops run: add b, change b, add c, remove b and c, re-add b.
  const configs = [
    { b: { ...fixtureCommand(), prefix: 'b' } },
    { b: { ...fixtureCommand(), prefix: 'b', env: { V: '2' } } },
    { b: { ...fixtureCommand(), prefix: 'b', env: { V: '2' } }, c: { ...fixtureCommand(), prefix: 'c' } },
    {},
    { b: { ...fixtureCommand(), prefix: 'b' } }
  ]
  for (const extra of configs) {
    const since = daemon.lines.length
    const okBefore = calls.ok
    rewrite(daemon.file, { daemon: { address }, upstreams: { a, ...extra } })
    daemon.child.kill('SIGHUP')
    await daemon.waitForLine(l => l.msg === 'config reloaded' || (typeof l.msg === 'string' && l.msg.startsWith('config reload')), since)
    // Let some calls through after each reload (bounded by the test's own timeout).
    while (calls.ok < okBefore + 5 && calls.failed.length === 0) await new Promise(resolve => setTimeout(resolve, 20))
  }
  calls.stop()
  await Promise.all(loops)
  t.same(calls.failed, [], 'no call to the unchanged upstream failed')
  t.ok(calls.ok >= 25, `calls went through during the reloads (${calls.ok})`)
  t.equal(pidOf(await readyz(daemon), 'a'), pidA, 'the unchanged upstream kept its child')
  t.match(await metric(daemon, /^mcpx_config_reloads_total\{/), /outcome="applied"\} 5$/)
})

t.test('ops/reload/invalid-or-address-change-refused', async t => {
  const a = fixtureCommand()
  const daemon = await startDaemon(t, { upstreams: { a } })
  await until(daemon, r => r.upstreams.every(u => u.state === 'ready'))
  const pidA = pidOf(await readyz(daemon), 'a')
  const address = daemon.base.slice('http://'.length)

  let since = daemon.lines.length
  writeFileSync(daemon.file, '{"upstreams": {"a": {"command": 5}}}')
  daemon.child.kill('SIGHUP')
  const invalid = await daemon.waitForLine(l => typeof l.msg === 'string' && l.msg.startsWith('config reload'), since)
  t.match(invalid, { level: 50, trigger: 'SIGHUP', msg: /^config reload refused, running config kept: invalid config: upstreams\.a\.command: must be string$/ })
  t.equal(daemon.lines.slice(since).filter(l => l.level === 50).length, 1, 'one error line')

  since = daemon.lines.length
  writeFileSync(daemon.file, 'not json')
  daemon.child.kill('SIGHUP')
  t.match(await daemon.waitForLine(l => typeof l.msg === 'string' && l.msg.startsWith('config reload'), since), { level: 50, msg: /is not JSON/ })

  since = daemon.lines.length
  rewrite(daemon.file, { daemon: { address: '127.0.0.1:1' }, upstreams: { a, b: fixtureCommand() } })
  daemon.child.kill('SIGHUP')
  t.match(await daemon.waitForLine(l => typeof l.msg === 'string' && l.msg.startsWith('config reload'), since),
    { level: 50, msg: `config reload refused, running config kept: daemon.address changed from ${address} to 127.0.0.1:1: restart mcpx to listen elsewhere` })

  const r = await readyz(daemon)
  t.same(r.upstreams.map(u => u.name), ['a'], 'the running config stays')
  t.equal(pidOf(r, 'a'), pidA, 'its upstream untouched')
  t.ok(await callOk(daemon.base, 9, 'echo'), 'and serving')
  t.match(await metric(daemon, /^mcpx_config_reloads_total\{/), /trigger="SIGHUP",outcome="refused"\} 3$/)
})

t.test('ops/reload/admin-endpoint-needs-an-admin-token', async t => {
  const daemon = await startDaemon(t, { admin: { tokens: ['admin-s3cret'] }, upstreams: { a: fixtureCommand() } })
  const url = `${daemon.base}/admin/reload`
  const missing = await fetch(url, { method: 'POST' })
  t.equal(missing.status, 401)
  t.equal(missing.headers.get('www-authenticate'), 'Bearer realm="mcpx-admin"')
  t.match(await missing.json(), { error: { code: -32600, message: 'Unauthorized: an admin token is required' } })
  const wrong = await fetch(url, { method: 'POST', headers: { authorization: 'Bearer nope' } })
  t.equal(wrong.status, 401)
  t.equal(wrong.headers.get('www-authenticate'), 'Bearer realm="mcpx-admin", error="invalid_token"')
  await wrong.arrayBuffer()

  rewrite(daemon.file, { daemon: { address: daemon.base.slice('http://'.length) }, admin: { tokens: ['admin-s3cret'] }, upstreams: { a: fixtureCommand(), b: fixtureCommand() } })
  const ok = await fetch(url, { method: 'POST', headers: { authorization: 'Bearer admin-s3cret' } })
  t.equal(ok.status, 200)
  t.same(await ok.json(), { status: 'applied', added: ['b'], removed: [], restarted: [], unchanged: ['a'], restartToApply: [], kept: [] })

  writeFileSync(daemon.file, '[]')
  const refused = await fetch(url, { method: 'POST', headers: { authorization: 'Bearer admin-s3cret' } })
  t.equal(refused.status, 422)
  t.match(await refused.json(), { status: 'refused', reason: /must be object/ })
  t.notOk(daemon.lines.some(l => JSON.stringify(l).includes('admin-s3cret')), 'the token is never logged')
  await t.test('ops/reload/changed-upstream-make-before-break', async t => { await makeBeforeBreak(t, daemon, 'admin-s3cret') })

  const plain = await startDaemon(t, { upstreams: { a: fixtureCommand() } })
  const none = await fetch(`${plain.base}/admin/reload`, { method: 'POST', headers: { authorization: 'Bearer anything' } })
  t.equal(none.status, 403, 'no admin.tokens: nobody may reload over HTTP')
  t.match(await none.json(), { error: { message: 'Forbidden: no admin.tokens are configured' } })
})

t.test('ops/reload/watch-reloads-when-the-file-changes', async t => {
  const daemon = await startDaemon(t, { upstreams: { a: fixtureCommand() } }, { args: ['--watch'] })
  await until(daemon, r => r.upstreams.every(u => u.state === 'ready'))
  const since = daemon.lines.length
  rewrite(daemon.file, { daemon: { address: daemon.base.slice('http://'.length) }, upstreams: { a: fixtureCommand(), w: fixtureCommand() } })
  t.match(await daemon.waitForLine(l => typeof l.msg === 'string' && l.msg.startsWith('config reload'), since), { trigger: 'watch', added: ['w'] })
  await until(daemon, r => r.upstreams.some(u => u.name === 'w' && u.state === 'ready'))
  t.equal(daemon.lines.slice(since).filter(l => typeof l.msg === 'string' && l.msg.startsWith('config reload')).length, 1, 'one reload for one change (debounced)')
})

t.test('ops/reload/stdio-sighup', async t => {
  const serve = spawnServe(t, { config: { upstreams: { a: { ...fixtureCommand(), prefix: 'a' } } } })
  const init = await serve.request({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'reload', version: '0' } } })
  t.match(init, { result: { protocolVersion: '2025-06-18' } })
  serve.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
  const after = serve.messages.length
  writeFileSync(serve.file, JSON.stringify({ upstreams: { a: { ...fixtureCommand(), prefix: 'a' }, b: { ...fixtureCommand(), prefix: 'b' } } }))
  serve.child.kill('SIGHUP')
  await serve.nextMessage(m => m.method === 'notifications/tools/list_changed', { after })
  const list = await serve.request({ jsonrpc: '2.0', id: 2, method: 'tools/list' })
  const names = (list.result.tools as Array<{ name: string }>).map(tool => tool.name)
  t.ok(names.includes('a__echo') && names.includes('b__echo'), 'the new upstream\'s tools are listed')
  t.match(serve.stderr(), /config reloaded: 1 added, 0 removed, 0 restarted, 1 unchanged/, 'the summary is logged on stderr')
  t.ok(serve.lines.every(line => { try { JSON.parse(line); return true } catch { return false } }), 'stdout carries only MCP')
  serve.end()
  t.match(await serve.exited, { code: 0 })
})

/** The tool names `tools/list` gives a modern client on `path` (`/mcp` or `/mcp/<server>`), or the HTTP status when it is refused. */
async function toolNames (daemon: DaemonProcess, path: string): Promise<string[] | number> {
  const res = await fetch(`${daemon.base}${path}`, { method: 'POST', headers: modernHeaders('tools/list'), body: modernBody(1, 'tools/list') })
  if (res.status !== 200) { await res.text(); return res.status }
  return ((await res.json()) as { result: { tools: Array<{ name: string }> } }).result.tools.map(tool => tool.name).sort()
}

t.test('ops/reload/policy-and-servers-applied-live', async t => {
  const upstream = { ...fixtureCommand(), prefix: '' }
  const config = (servers: Record<string, unknown>, policy?: Record<string, unknown>): Record<string, unknown> => ({
    admin: { tokens: ['admin-s3cret'] }, upstreams: { a: upstream }, servers, ...(policy !== undefined ? { policy } : {})
  })
  const daemon = await startDaemon(t, config({ team: { tools: { allow: ['echo'] } } }))
  const pid = (await until(daemon, r => r.upstreams[0]?.state === 'ready')).upstreams[0].pid
  t.same(await toolNames(daemon, '/mcp/team'), ['echo'])
  t.equal(await toolNames(daemon, '/mcp/ops'), 404, 'no endpoint ops yet')
  const everything = await toolNames(daemon, '/mcp')
  t.ok(Array.isArray(everything) && everything.includes('slow'))

  rewrite(daemon.file, { daemon: { address: daemon.base.slice('http://'.length) }, ...config({ team: { tools: { allow: ['echo', 'slow'] } }, ops: { tools: { allow: ['bump'] } } }, { default: 'allow', rules: [{ deny: { tools: ['slow'] } }] }) })
  const reload = await fetch(`${daemon.base}/admin/reload`, { method: 'POST', headers: { authorization: 'Bearer admin-s3cret' } })
  t.equal(reload.status, 200)
  const body = await reload.json() as { restartToApply: string[], unchanged: string[] }
  t.same(body.restartToApply, [], 'policy and servers are not "restart to apply"')
  t.same(body.unchanged, ['a'], 'the upstream is untouched')
  t.same(await toolNames(daemon, '/mcp/team'), ['echo'], 'team allows slow now, but the new policy denies it to everyone')
  t.same(await toolNames(daemon, '/mcp/ops'), ['bump'], 'the new endpoint is served')
  const after = await toolNames(daemon, '/mcp')
  t.ok(Array.isArray(after) && !after.includes('slow') && after.includes('echo'), 'the policy applies on /mcp too')
  t.equal((await readyz(daemon)).upstreams[0].pid, pid, 'same child')
  await daemon.waitForLine(line => line.msg?.toString().startsWith('config reloaded') === true && Array.isArray(line.restartToApply) && (line.restartToApply as unknown[]).length === 0)
})

const isMethod = (method: string) => (m: Record<string, unknown>): boolean => m.method === method

t.test('ops/reload/open-streams-follow-the-new-view', async t => {
  // A legacy GET stream and a modern subscriptions/listen stream, opened before a reload whose new
  // policy hides the subscribed resource and a tool: from then on neither delivers that resource's
  // updates, and each is offered list_changed for the lists its view lost, not for the prompts.
  const upstream = { ...fixtureCommand(), prefix: '' }
  const config = (policy?: Record<string, unknown>): Record<string, unknown> => ({
    admin: { tokens: ['admin-s3cret'] }, upstreams: { a: upstream }, ...(policy !== undefined ? { policy } : {})
  })
  const daemon = await startDaemon(t, config())
  await until(daemon, r => r.upstreams[0]?.state === 'ready')
  const base = daemon.base
  const abort = new AbortController()
  t.teardown(() => abort.abort())
  const sid = await fetchSession(base, '2025-06-18')
  const legacy = { ...sessionHeaders(sid, '2025-06-18'), accept: 'application/json' }
  const get = new SseReader(await fetch(`${base}/mcp`, { headers: { accept: 'text/event-stream', ...sessionHeaders(sid, '2025-06-18') }, signal: abort.signal }))
  t.same(await (await legacyPost(base, { jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri: 'fixture://counter' } }, legacy)).json(), { jsonrpc: '2.0', id: 1, result: {} })
  const listen = new SseReader(await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: modernHeaders('subscriptions/listen'),
    body: modernBody('l', 'subscriptions/listen', { notifications: { toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true, resourceSubscriptions: ['fixture://counter'] } }),
    signal: abort.signal
  }))
  await listen.message('the acknowledgement', isMethod('notifications/subscriptions/acknowledged'))
  const call = async (id: number, name: string, args: Record<string, unknown> = {}): Promise<any> => await (await legacyPost(base, callBody(id, name, args), legacy)).json()
  await call(2, 'bump')
  const updated = isMethod('notifications/resources/updated')
  await get.message('resources/updated before the reload (GET)', updated)
  await listen.message('resources/updated before the reload (listen)', updated)
  const [getBefore, listenBefore] = [get.messages.length, listen.messages.length]

  rewrite(daemon.file, { daemon: { address: base.slice('http://'.length) }, ...config({ default: 'allow', rules: [{ deny: { tools: ['slow'], resources: ['fixture://counter'] } }] }) })
  const reload = await fetch(`${base}/admin/reload`, { method: 'POST', headers: { authorization: 'Bearer admin-s3cret' } })
  t.equal(reload.status, 200)
  await reload.body?.cancel()
  await call(3, 'bump') // the hidden resource changes
  t.equal((await call(4, 'add_tool', { name: 'marker' })).result.content[0].text, 'added marker') // then a visible tool appears
  // The marker's list_changed is the last of these on each stream: an update of the hidden resource would have come before it.
  const toolsChanged = isMethod('notifications/tools/list_changed')
  await get.until('the marker list_changed (GET)', () => get.messages.slice(getBefore).filter(toolsChanged).length === 2)
  await listen.until('the marker list_changed (listen)', () => listen.messages.slice(listenBefore).filter(toolsChanged).length === 2)
  t.same(get.messages.slice(getBefore).map(m => m.method), ['notifications/tools/list_changed', 'notifications/resources/list_changed', 'notifications/tools/list_changed'],
    'GET: list_changed for tools and resources (the view lost slow and the counter), none for prompts, and no update of the hidden resource')
  t.same(listen.messages.slice(listenBefore).map(m => m.method), ['notifications/tools/list_changed', 'notifications/resources/list_changed', 'notifications/tools/list_changed'],
    'listen: the same')
})

/**
 * A reload that changes an upstream's config (its env) while clients call it: the new instance
 * starts beside the old one and takes over once ready, so no call fails, tools/list always lists
 * its tools, and a call in flight on the old instance at the reload completes with its answer. Then
 * a changed config whose child cannot start: the old instance keeps serving. Run on the daemon of
 * `ops/reload/admin-endpoint-needs-an-admin-token` (upstreams `a` and `b`, admin token `token`).
 */
async function makeBeforeBreak (t: Test, daemon: DaemonProcess, token: string): Promise<void> {
  const a = fixtureCommand()
  const pidBefore = pidOf(await until(daemon, r => r.upstreams.every(u => u.state === 'ready')), 'a')
  const reload = async (upstream: Record<string, unknown>): Promise<{ status: number, body: Record<string, unknown> }> => {
    rewrite(daemon.file, { daemon: { address: daemon.base.slice('http://'.length) }, admin: { tokens: [token] }, upstreams: { a: upstream, b: fixtureCommand() } })
    const res = await fetch(`${daemon.base}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${token}` } })
    return { status: res.status, body: await res.json() as Record<string, unknown> }
  }

  const calls = new CallLoop(daemon.base, 1000)
  let lists = 0
  const lacking: unknown[] = []
  const listing = async (): Promise<void> => {
    while (!calls.stopped) {
      const names = await toolNames(daemon, '/mcp')
      lists++
      if (!Array.isArray(names) || !names.includes('a__echo') || !names.includes('a__slow')) lacking.push(names)
    }
  }
  // Three callers, each calling in a tight loop, and one client listing tools in a tight loop.
  const loops = [calls.run(), calls.run(), calls.run(), listing()]
  const waitFor = async (pred: () => boolean): Promise<void> => { while (!pred() && calls.failed.length === 0) await new Promise(resolve => setTimeout(resolve, 10)) }
  await waitFor(() => calls.ok >= 10)

  // A call in flight on the old instance when the reload starts.
  const since = daemon.lines.length
  const slow = post(daemon.base, modernBody(7, 'tools/call', { name: 'a__slow', arguments: { ms: 400, steps: 2 } }), modernHeaders('tools/call', 'a__slow'))
  await daemon.waitForLine(l => typeof l.stderr === 'string' && l.stderr.startsWith('started slow'), since)
  const switched = await reload({ ...a, env: { V: '2' } })
  t.equal(switched.status, 200)
  t.same(switched.body, { status: 'applied', added: [], removed: [], restarted: ['a'], unchanged: ['b'], restartToApply: [], kept: [] })
  t.match(await slow, { status: 200, json: { result: { content: [{ text: 'slept 400' }] } } }, 'the call in flight on the old instance completed with its answer')
  const okAtSwitch = calls.ok
  await waitFor(() => calls.ok >= okAtSwitch + 10)
  calls.stop()
  await Promise.all(loops)
  t.same(calls.failed, [], `no call failed across the switch (${calls.ok} answered)`)
  t.same(lacking, [], `tools/list never lacked the upstream's tools (${lists} lists)`)
  const pidAfter = pidOf(await readyz(daemon), 'a')
  t.ok(pidAfter !== undefined && pidAfter !== pidBefore, 'a new child took over')
  t.notOk(isAlive(pidBefore ?? 0), 'the old child was stopped once drained')

  await t.test('ops/reload/changed-upstream-that-cannot-start-keeps-the-old', async t => {
    // The new config's child exits at once (an unknown flag value): the old instance keeps serving
    // under its old config, and the reload's answer, its log line and status.json say which and why.
    const since = daemon.lines.length
    const broken = await reload(fixtureCommand('--era', 'bogus'))
    t.equal(broken.status, 200)
    t.match(broken.body, { status: 'applied', restarted: [], unchanged: ['b'], kept: [{ name: 'a', reason: /^its new config did not start: connect failed: .*child exited: code 2/ }] })
    t.match(await daemon.waitForLine(l => typeof l.msg === 'string' && l.msg.startsWith('config reload'), since),
      { level: 40, msg: /^config reloaded: 0 added, 0 removed, 0 restarted, 1 unchanged; a kept its old config \(its new config did not start: /, kept: [{ name: 'a' }] })
    t.ok(await callOk(daemon.base, 2, 'a__echo'), 'the old instance still serves')
    t.equal(pidOf(await readyz(daemon), 'a'), pidAfter, 'same child')
    const status = await (await fetch(`${daemon.base}/status.json`)).json() as { config: { lastReload: unknown } }
    t.match(status.config.lastReload, { outcome: 'applied', kept: [{ name: 'a', reason: /child exited: code 2/ }] })
    // The running config is the old one for it: reloading that again changes nothing.
    t.match((await reload({ ...a, env: { V: '2' } })).body, { restarted: [], unchanged: ['a', 'b'], kept: [] })
  })
}
