/**
 * The status page (docs/operating.md › The status page) on a real daemon (`node dist/cli.js daemon`) with
 * real upstreams: `/status.json` reports each upstream's state, era and revision, pid or redacted
 * URL, restarts, last error, list sizes, calls, errors and latency percentiles, the open sessions and
 * streams, the config's source and the last reload, and names collisions; `/status` is the same
 * data as a self-contained HTML page under a strict CSP; both answer a local client (a loopback peer
 * under a loopback Host), else only an admin token (refusals from lib/protocol/http-status.ts); no
 * secret of the config appears in either. A second host made for the test (a network namespace
 * joined by a veth pair) is refused whatever Host it sends. The real-browser test is status-browser.test.ts.
 */
import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import { execFileSync, spawn } from 'node:child_process'
import { request } from 'node:http'
import { fixtureCommand, startHttpFixture } from '../helpers/fixture.js'
import { legacyHeaders, modernHeaders } from '../helpers/app.js'
import { startDaemon, type DaemonProcess } from '../helpers/daemon.js'
import { modernBody, post } from '../helpers/modern-wire.js'
import { REFUSALS } from '../../lib/protocol/http-status.js'
import { CLIENTS, startAuthServer } from '../helpers/oauth.js'
import type { StatusReport } from '../../lib/ops/status-model.js'

/** A GET with any Host header (fetch cannot set Host): status, headers and body text. */
async function plainGet (url: string, headers: Record<string, string>): Promise<{ status: number, headers: Record<string, string | string[] | undefined>, text: string }> {
  return await new Promise((resolve, reject) => {
    const req = request(url, { headers }, res => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { text += chunk })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }))
    })
    req.on('error', reject)
    req.end()
  })
}

/** A stdio upstream that never comes up: its child writes a line to stderr and exits 3. */
const DOWN = { command: '/bin/sh', args: ['-c', 'echo down-on-purpose >&2; exit 3'] }

async function report (daemon: DaemonProcess, headers: Record<string, string> = {}): Promise<StatusReport> {
  const res = await fetch(`${daemon.base}/status.json`, { headers })
  if (res.status !== 200) throw new Error(`/status.json: ${res.status} ${await res.text()}`)
  return await res.json() as StatusReport
}

/** Polls /status.json (bounded, 30 s) until `pred` holds. */
async function until (daemon: DaemonProcess, pred: (r: StatusReport) => boolean): Promise<StatusReport> {
  const deadline = Date.now() + 30_000
  for (;;) {
    const r = await report(daemon)
    if (pred(r)) return r
    if (Date.now() > deadline) throw new Error(`status never matched: ${JSON.stringify(r)}`)
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}

/** One modern tools/call of `name`; the reply's JSON. */
async function call (daemon: DaemonProcess, id: number, name: string, args: Record<string, unknown>): Promise<{ result?: { isError?: boolean }, error?: unknown }> {
  const reply = await post(daemon.base, modernBody(id, 'tools/call', { name, arguments: args }), modernHeaders('tools/call', name))
  return reply.json as { result?: { isError?: boolean }, error?: unknown }
}

t.test('ops/status/report-names-every-upstream-and-counts-calls', async t => {
  const web = await startHttpFixture(t)
  const daemon = await startDaemon(t, {
    upstreams: {
      local: { ...fixtureCommand(), env: { STATUS_TEST_ENV_SECRET: 'env-s3cret-value' } },
      web: { url: `${web.url}?api_key=query-s3cret-value`, headers: { 'x-api-key': 'header-s3cret-value' } },
      broken: DOWN
    },
    admin: { tokens: ['admin-s3cret-value'] }
  })
  const first = await until(daemon, r => r.upstreams.find(u => u.name === 'local')?.state === 'ready' &&
    r.upstreams.find(u => u.name === 'web')?.state === 'ready' && r.upstreams.find(u => u.name === 'broken')?.lastError !== undefined)
  t.same(first.upstreams.map(u => u.name), ['local', 'web', 'broken'], 'every upstream, in config order')
  const [local, remote, broken] = first.upstreams
  t.match(local, { kind: 'stdio', state: 'ready', era: /^(legacy|modern)$/, revision: /^\d{4}-\d{2}-\d{2}$/, pid: Number, restarts: 0, calls: 0, errors: 0 })
  t.ok(local.tools > 0 && local.prompts > 0 && local.resources > 0, 'the fixture\'s list sizes')
  t.equal(remote.kind, 'http')
  t.equal(remote.url, `${web.url}?***`, 'the URL with its query string redacted')
  t.equal(remote.pid, undefined)
  t.match(broken, { kind: 'stdio', state: 'down', tools: 0 })
  t.match(broken.lastError, /child exited: code 3/, 'the down one says why')
  t.match(first.config.source, /mcpx\.config\.json$/)
  t.equal(first.config.lastReload, undefined)
  t.same({ sessions: first.sessions, streams: first.streams }, { sessions: 0, streams: { get: 0, listen: 0 } })
  // Both are the fixture: tools and prompts are prefixed apart, resource URIs are not (docs/upstreams.md › Names and collisions).
  t.same(first.collisions.filter(c => c.kind === 'resource').map(c => [c.name, c.kept, c.dropped]).sort(), [['fixture://counter', 'local', 'web'], ['fixture://static', 'local', 'web']])
  t.notOk(first.collisions.some(c => c.kind === 'tool'), 'prefixed tool names do not collide')
  t.equal(first.windowSeconds, 300)

  // Calls: two that succeed, one tool error (isError), one unknown tool (never reaches an upstream).
  t.notOk((await call(daemon, 1, 'local__echo', { text: 'a' })).result?.isError)
  t.notOk((await call(daemon, 2, 'local__echo', { text: 'b' })).result?.isError)
  t.equal((await call(daemon, 3, 'local__fail', {})).result?.isError, true, 'a tool error')
  await call(daemon, 4, 'web__echo', { text: 'c' })
  const after = await report(daemon)
  const localAfter = after.upstreams[0]
  t.equal(localAfter.calls, 3)
  t.equal(localAfter.errors, 1, 'the tool error counts as an error')
  t.match(localAfter.window, { seconds: 300, calls: 3, errors: 1, p50Ms: Number, p99Ms: Number })
  t.ok((localAfter.window.p50Ms ?? 0) > 0 && (localAfter.window.p50Ms ?? 0) <= (localAfter.window.p99Ms ?? 0), 'p50 ≤ p99, both positive')
  t.equal(after.upstreams[1].calls, 1, 'the HTTP upstream counted its own call')
  t.equal(after.upstreams[2].calls, 0)

  // A legacy session and its GET stream show up.
  const init = await fetch(`${daemon.base}/mcp`, { method: 'POST', headers: legacyHeaders(), body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } } }) })
  const session = init.headers.get('mcp-session-id') ?? ''
  await init.text()
  const stream = new AbortController()
  const get = await fetch(`${daemon.base}/mcp`, { headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }, signal: stream.signal })
  t.equal(get.status, 200)
  const open = await until(daemon, r => r.streams.get === 1)
  t.equal(open.sessions, 1)
  stream.abort()

  // No secret anywhere in either form.
  const html = await (await fetch(`${daemon.base}/status`)).text()
  const json = JSON.stringify(await report(daemon))
  for (const secret of ['env-s3cret-value', 'query-s3cret-value', 'header-s3cret-value', 'admin-s3cret-value', 'x-api-key', 'STATUS_TEST_ENV_SECRET', 'echo-upstream.js']) {
    t.notOk(html.includes(secret), `the page does not show ${secret}`)
    t.notOk(json.includes(secret), `the JSON does not show ${secret}`)
  }
})

t.test('ops/status/reload-and-collisions-shown', async t => {
  const daemon = await startDaemon(t, { admin: { tokens: ['admin-tok'] }, upstreams: { a: { ...fixtureCommand(), prefix: '' } } })
  await until(daemon, r => r.upstreams[0]?.state === 'ready')
  // A second copy of the fixture with no prefix either: its tools, prompts and resource URIs collide with a's.
  const { writeFileSync } = await import('node:fs')
  writeFileSync(daemon.file, JSON.stringify({ daemon: { address: daemon.base.slice('http://'.length) }, admin: { tokens: ['admin-tok'] }, upstreams: { a: { ...fixtureCommand(), prefix: '' }, b: { ...fixtureCommand(), prefix: '' } } }))
  const reload = await fetch(`${daemon.base}/admin/reload`, { method: 'POST', headers: { authorization: 'Bearer admin-tok' } })
  t.equal(reload.status, 200)
  const r = await until(daemon, r => r.upstreams[1]?.state === 'ready' && r.collisions.length > 0)
  t.match(r.config.lastReload, { trigger: 'admin', outcome: 'applied', at: String })
  t.ok(r.collisions.some(c => c.kind === 'tool' && c.name === 'echo' && c.kept === 'a' && c.dropped === 'b'), 'a tool name collision')
  t.ok(r.collisions.some(c => c.kind === 'resource' && c.kept === 'a' && c.dropped === 'b'), 'a resource URI collision')
  const html = await (await fetch(`${daemon.base}/status`)).text()
  t.match(html, /<table id="collisions">/)
  t.match(html, /applied \(admin\)/)
})

/**
 * A daemon with one fixture upstream and no admin or auth config, shared by the two cases that only
 * read its /status (the loopback 403 for a foreign Host, the page's CSP): one daemon and fixture
 * start fewer. Started on first use, stopped when the file ends.
 */
let plainDaemon: Promise<DaemonProcess> | undefined
async function sharedPlainDaemon (): Promise<DaemonProcess> {
  plainDaemon ??= startDaemon(t, { upstreams: { a: fixtureCommand() } })
  return await plainDaemon
}

/**
 * A daemon with admin.tokens on every interface (0.0.0.0, so a bearer token for /mcp as the
 * safe-bind rule wants), shared by the Host case and the second-host case: one daemon and fixture
 * start fewer. Started on first use, stopped when the file ends.
 */
let adminDaemon: Promise<DaemonProcess> | undefined
async function sharedAdminDaemon (): Promise<DaemonProcess> {
  adminDaemon ??= startDaemon(t, { auth: { bearerTokens: ['mcp-tok'] }, admin: { tokens: ['admin-tok'] }, upstreams: { a: fixtureCommand() } }, { host: '0.0.0.0' })
  return await adminDaemon
}

t.test('ops/status/loopback-host-or-admin-token', async t => {
  const daemon = await sharedAdminDaemon()
  for (const path of ['/status', '/status.json']) {
    const local = await fetch(`${daemon.base}${path}`)
    t.equal(local.status, 200, `${path}: a loopback Host is served`)
    await local.text()
    const foreign = await plainGet(`${daemon.base}${path}`, { host: 'mcpx.example.com' })
    t.equal(foreign.status, REFUSALS.adminTokenMissing.status, `${path}: a foreign Host without a token`)
    t.equal(foreign.headers['www-authenticate'], REFUSALS.adminTokenMissing.wwwAuthenticate)
    t.same(JSON.parse(foreign.text), { jsonrpc: '2.0', error: { code: REFUSALS.adminTokenMissing.code, message: REFUSALS.adminTokenMissing.message } })
    const wrong = await plainGet(`${daemon.base}${path}`, { host: 'mcpx.example.com', authorization: 'Bearer nope' })
    t.equal(wrong.status, 401)
    t.equal(JSON.parse(wrong.text).error.message, REFUSALS.adminTokenInvalid.message)
    const admin = await plainGet(`${daemon.base}${path}`, { host: 'mcpx.example.com', authorization: 'Bearer admin-tok' })
    t.equal(admin.status, 200, `${path}: a foreign Host with an admin token is served`)
  }
  const plain = await sharedPlainDaemon()
  const refused = await plainGet(`${plain.base}/status`, { host: 'mcpx.example.com' })
  t.equal(refused.status, REFUSALS.forbiddenHost.status, 'no admin.tokens: a foreign Host is the loopback 403')
  t.equal(JSON.parse(refused.text).error.message, REFUSALS.forbiddenHost.message)
})

t.test('ops/status/page-self-contained-strict-csp', async t => {
  const daemon = await sharedPlainDaemon()
  await until(daemon, r => r.upstreams[0]?.state === 'ready')
  const res = await fetch(`${daemon.base}/status`)
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'text/html; charset=utf-8')
  t.equal(res.headers.get('x-content-type-options'), 'nosniff')
  t.equal(res.headers.get('cache-control'), 'no-store')
  const csp = res.headers.get('content-security-policy') ?? ''
  t.match(csp, /default-src 'none'/)
  t.notMatch(csp, /unsafe-inline|unsafe-eval|\*/, 'no unsafe-inline, no eval, no wildcard')
  const html = await res.text()
  // Exactly one <style> and one <script>, each allowed by its hash, and nothing loaded from elsewhere.
  const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map(m => m[1])
  const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(m => m[1])
  t.equal(styles.length, 1)
  t.equal(scripts.length, 1)
  const hash = (text: string): string => `'sha256-${createHash('sha256').update(text).digest('base64')}'`
  t.ok(csp.includes(`style-src ${hash(styles[0])}`), 'the style\'s hash is the CSP\'s')
  t.ok(csp.includes(`script-src ${hash(scripts[0])}`), 'the script\'s hash is the CSP\'s')
  t.notMatch(html, /\ssrc=|<link rel="stylesheet"|\sstyle=|\son[a-z]+=/i, 'no external asset, style attribute or inline handler')
  t.notMatch(html, /https?:\/\//, 'no absolute URL at all')
})

// "With admin.tokens, or OAuth with an admin scope" (docs/operating.md › The status page): admin.scopes opens
// /status, /status.json and POST /admin/reload to an OAuth access token (from a real oidc-provider)
// holding them; a valid token without them is 403 insufficient_scope; no token is still the 401.
t.test('ops/status/oauth-admin-scope-opens-remote-status', async t => {
  const as = await startAuthServer(t)
  const resource = 'https://mcpx.example.com/mcp'
  const daemon = await startDaemon(t, { auth: { oauth: { issuer: as.issuer, resource } }, admin: { scopes: ['mcp:admin'] }, upstreams: { a: fixtureCommand() } })
  const admin = await as.clientCredentials(CLIENTS.alice, { resource, scope: 'mcp:admin' })
  const tools = await as.clientCredentials(CLIENTS.bob, { resource, scope: 'mcp:tools' })
  for (const path of ['/status', '/status.json']) {
    const ok = await plainGet(`${daemon.base}${path}`, { host: 'mcpx.example.com', authorization: `Bearer ${admin}` })
    t.equal(ok.status, 200, `${path}: a foreign Host with an OAuth token holding mcp:admin is served`)
    const scoped = await plainGet(`${daemon.base}${path}`, { host: 'mcpx.example.com', authorization: `Bearer ${tools}` })
    t.equal(scoped.status, 403, `${path}: a valid token without mcp:admin is 403`)
    t.match(String(scoped.headers['www-authenticate']), /error="insufficient_scope"/)
    t.match(String(scoped.headers['www-authenticate']), /scope="mcp:admin"/)
    const none = await plainGet(`${daemon.base}${path}`, { host: 'mcpx.example.com' })
    t.equal(none.status, REFUSALS.adminTokenMissing.status, `${path}: no token is still the admin 401`)
    const wrong = await plainGet(`${daemon.base}${path}`, { host: 'mcpx.example.com', authorization: 'Bearer nope' })
    t.equal(JSON.parse(wrong.text).error.message, REFUSALS.adminTokenInvalid.message, `${path}: neither an admin nor an OAuth token`)
  }
  const reload = await fetch(`${daemon.base}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${admin}` } })
  t.equal(reload.status, 200, 'POST /admin/reload with the admin-scoped OAuth token')
  t.match(await reload.json(), { status: 'applied' })
  const refused = await fetch(`${daemon.base}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${tools}` } })
  t.equal(refused.status, 403, 'and without the scope, refused')
  await refused.text()
  const log = JSON.stringify(daemon.lines) + daemon.stderr()
  t.notOk(log.includes(admin) || log.includes(tools), 'no token reaches the log')
})

/** Set to 1 on a machine that cannot make a network namespace (not root, no iproute2): the second-host test is then skipped, saying so. */
const NO_NETNS = process.env.MCPX_TEST_NO_NETNS === '1' ? 'MCPX_TEST_NO_NETNS=1: this machine cannot make a network namespace' : false

/** A second host joined to this one by a veth pair: the address this side has on the link, the client's, and a way to run node there. */
interface SecondHost {
  /** This machine's end of the link (10.213.<n>.1). */
  hostAddress: string
  /** The other host's address (10.213.<n>.2). */
  clientAddress: string
  /** Runs `node -e script` inside the other host with these arguments; resolves with its stdout once it exits 0, rejects otherwise. */
  node: (script: string, args: string[]) => Promise<string>
}

/**
 * Makes a second host for one test: network namespace `mcpx-ops-<pid>`, veth pair `mxo<pid>` (here,
 * 10.213.<pid mod 256>.1/30) and `mxn<pid>` (inside, .2/30). Needs root and iproute2 (`ip`); without
 * them the test fails saying so (MCPX_TEST_NO_NETNS=1 skips it instead). The namespace is deleted
 * at teardown, registered before anything is made, so a failure half-way cleans up too (deleting
 * the namespace deletes both ends of the pair).
 */
function secondHost (t: Test): SecondHost {
  if (process.getuid?.() !== 0) throw new Error('the second-host test needs root to make a network namespace (CI runs as root); set MCPX_TEST_NO_NETNS=1 where it cannot')
  try { execFileSync('ip', ['-V'], { stdio: 'ignore' }) } catch { throw new Error('the second-host test needs iproute2 (`ip`; apt-get install iproute2); set MCPX_TEST_NO_NETNS=1 where it cannot') }
  const ns = `mcpx-ops-${process.pid}`
  const here = `mxo${process.pid}`
  const there = `mxn${process.pid}`
  const net = `10.213.${process.pid % 256}`
  const ip = (...args: string[]): void => {
    try {
      execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] })
    } catch (err) {
      const stderr = String((err as { stderr?: Buffer }).stderr ?? '').trim()
      throw new Error(`ip ${args.join(' ')} failed (${stderr}); the second-host test needs to make a network namespace; set MCPX_TEST_NO_NETNS=1 where this machine cannot`, { cause: err })
    }
  }
  t.teardown(() => { try { ip('netns', 'del', ns) } catch {} })
  ip('netns', 'add', ns)
  ip('link', 'add', here, 'type', 'veth', 'peer', 'name', there)
  // Until the pair's far end moves into the namespace, deleting the namespace would not remove it.
  t.teardown(() => { try { ip('link', 'del', here) } catch {} })
  ip('link', 'set', there, 'netns', ns)
  ip('addr', 'add', `${net}.1/30`, 'dev', here)
  ip('link', 'set', here, 'up')
  ip('-n', ns, 'addr', 'add', `${net}.2/30`, 'dev', there)
  ip('-n', ns, 'link', 'set', there, 'up')
  const node = async (script: string, args: string[]): Promise<string> => await new Promise((resolve, reject) => {
    const child = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
    let out = ''
    let err = ''
    child.stdout.setEncoding('utf8').on('data', (c: string) => { out += c })
    child.stderr.setEncoding('utf8').on('data', (c: string) => { err += c })
    child.on('error', reject)
    child.once('exit', code => { if (code === 0) resolve(out); else reject(new Error(`node in ${ns} exited ${String(code)}: ${err}`)) })
  })
  return { hostAddress: `${net}.1`, clientAddress: `${net}.2`, node }
}

/**
 * The client on the second host: GETs each request of argv[2] (JSON: [{ path, headers }]) from
 * http://argv[1] in turn, then prints [{ status, wwwAuthenticate, body }]. node:http, since fetch
 * cannot set Host.
 */
const CLIENT_SCRIPT = `
const http = require('node:http')
const [base, list] = [process.argv[1], JSON.parse(process.argv[2])]
const one = r => new Promise((resolve, reject) => {
  const req = http.get(base + r.path, { headers: r.headers, agent: false, timeout: 30000 }, res => {
    let body = ''
    res.setEncoding('utf8').on('data', c => { body += c }).on('end', () => resolve({ status: res.statusCode, wwwAuthenticate: res.headers['www-authenticate'], body }))
  })
  req.on('timeout', () => req.destroy(new Error('timed out: ' + r.path)))
  req.on('error', reject)
})
;(async () => { const out = []; for (const r of list) out.push(await one(r)); process.stdout.write(JSON.stringify(out)) })()
  .catch(err => { console.error(err.stack); process.exit(1) })
`

// docs/operating.md › Who may read the operator endpoints, on a real second host: a daemon bound to
// 0.0.0.0 refuses /metrics, /status and /status.json to a client in another network namespace
// whatever loopback name it writes as Host, tells it only ready or not on /readyz, and serves it
// with an admin token; a connection from this machine's own link address is no loopback either.
t.test('ops/access/second-host-judged-by-peer-address', { skip: NO_NETNS }, async t => {
  const link = secondHost(t)
  const daemon = await sharedAdminDaemon()
  const { port } = new URL(daemon.base)
  const missing = REFUSALS.adminTokenMissing
  const requests = [
    { path: '/metrics', headers: { host: `localhost:${port}` } },
    { path: '/status', headers: { host: '127.1' } },
    { path: '/status.json', headers: { host: `[::1]:${port}` } },
    { path: '/metrics', headers: { host: '0x7f.1' } },
    { path: '/status.json', headers: { host: '2130706433' } },
    { path: '/readyz', headers: { host: `127.0.0.1:${port}` } },
    { path: '/metrics', headers: { host: `localhost:${port}`, authorization: 'Bearer admin-tok' } },
    { path: '/status.json', headers: { host: `localhost:${port}`, authorization: 'Bearer admin-tok' } },
    { path: '/healthz', headers: { host: `localhost:${port}` } }
  ]
  const replies = JSON.parse(await link.node(CLIENT_SCRIPT, [`http://${link.hostAddress}:${port}`, JSON.stringify(requests)])) as Array<{ status: number, wwwAuthenticate?: string, body: string }>
  for (const [i, reply] of replies.slice(0, 5).entries()) {
    const what = `${requests[i].path} from ${link.clientAddress}, Host ${requests[i].headers.host}`
    t.equal(reply.status, missing.status, `${what}: refused`)
    t.equal(reply.wwwAuthenticate, missing.wwwAuthenticate, `${what}: the admin challenge`)
    t.equal(reply.body, JSON.stringify({ jsonrpc: '2.0', error: { code: missing.code, message: missing.message } }), `${what}: the table's body`)
  }
  const ready = JSON.parse(replies[5].body) as Record<string, unknown>
  t.same(Object.keys(ready), ['status'], '/readyz from the second host: its status, no upstream names, states or pids')
  t.match(ready.status, /^(ready|not ready)$/)
  t.equal(replies[6].status, 200, '/metrics from the second host with an admin token')
  t.match(replies[6].body, /^# HELP mcpx_/m)
  t.equal(replies[7].status, 200, '/status.json from the second host with an admin token')
  t.equal((JSON.parse(replies[7].body) as StatusReport).upstreams[0]?.name, 'a')
  t.equal(replies[8].status, 200, '/healthz answers anyone')
  // This machine's own address on the link is not loopback either.
  const own = await plainGet(`http://${link.hostAddress}:${port}/metrics`, { host: `localhost:${port}` })
  t.equal(own.status, missing.status, `/metrics from ${link.hostAddress} on this machine: refused`)
  // A loopback client is still served.
  const local = await fetch(`${daemon.base}/metrics`)
  t.equal(local.status, 200, '/metrics from 127.0.0.1: served')
  await local.text()
})
