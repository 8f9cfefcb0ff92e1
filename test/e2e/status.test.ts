/**
 * The status page (docs/operating.md › The status page) on a real daemon (`node dist/cli.js daemon`) with
 * real upstreams: `/status.json` reports each upstream's state, era and revision, pid or redacted
 * URL, restarts, last error, list sizes, calls, errors and latency percentiles, the open sessions and
 * streams, the config's source and the last reload, and names collisions; `/status` is the same
 * data as a self-contained HTML page under a strict CSP; both answer a loopback Host, else only an
 * admin token (refusals from lib/protocol/http-status.ts); no secret of the config appears in either.
 * The real-browser test is status-browser.test.ts.
 */
import t from 'tap'
import { createHash } from 'node:crypto'
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

t.test('ops/status/loopback-host-or-admin-token', async t => {
  const daemon = await startDaemon(t, { admin: { tokens: ['admin-tok'] }, upstreams: { a: fixtureCommand() } })
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
