/**
 * Security (docs/security.md › Security) through the WHOLE app (mcpx registered by `build(t)` / `listen(t)`, the echo fixture as
 * its upstream) and through the real daemon (`node dist/cli.js daemon`): the Origin policy in both
 * eras on every method, CORS, the limits (413, 431, 415, 406, invalid UTF-8, the four caps) and
 * bearer authentication with the non-loopback refusal, and who may read the daemon's operator endpoints
 * (the daemon built in-process, requests injected from chosen peer addresses). The plugin-level tests on a bare Fastify are
 * test/http/origin.test.ts and test/http/auth.test.ts; this file checks that the assembled app
 * keeps those promises. Test names: `origin/<requirement>`, `security/<requirement>`.
 */
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { connect } from 'node:net'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import * as fs from 'node:fs'
import { mkdtempSync, writeFileSync, readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { build, listen, fixtureUpstreams, legacyHeaders, modernHeaders } from '../helpers/app.js'
import { modernBody, openSse } from '../helpers/modern-wire.js'
import { initializeBody, callBody, injectSession, fetchSession, sessionHeaders, fixtureLogPath, fixtureEvents, pollUntil } from '../helpers/legacy.js'
import { startDaemon, freePort, CLI_PATH, WAIT_MS } from '../helpers/daemon.js'
import { buildDaemon } from '../../server.js'
import { loadConfig } from '../../lib/config/load.js'
import { refusal, type RefusalReason } from '../../lib/protocol/http-status.js'

/** The hand-written stdio upstream that records how many calls it holds (test/fixtures/hostile-upstream.ts). */
const HOSTILE_PATH = fileURLToPath(new URL('../fixtures/hostile-upstream.js', import.meta.url))

type Method = 'POST' | 'GET' | 'DELETE' | 'OPTIONS'
type Era = 'legacy' | 'modern'
const METHODS: Method[] = ['POST', 'GET', 'DELETE', 'OPTIONS']
const ERAS: Era[] = ['legacy', 'modern']
const FORBIDDEN = '{"jsonrpc":"2.0","error":{"code":-32600,"message":"Forbidden: Origin not allowed"}}'
const PREFLIGHT_HEADERS = 'mcp-protocol-version, mcp-method, mcp-name, mcp-param-region, mcp-session-id, last-event-id, authorization, content-type'
const REVISION = '2025-06-18'

/**
 * One request of an era, as a browser on `origin` would send it (OPTIONS is a preflight).
 * Legacy: POST initialize, GET/DELETE in session `sid` (without one: the route's 405/400).
 * Modern: POST tools/list with the headers and _meta envelope; GET/DELETE with MCP-Protocol-Version 2026-07-28.
 */
function eraRequest (era: Era, method: Method, origin: string | undefined, sid?: string): InjectOptions {
  const headers: Record<string, string> = {}
  let payload: string | undefined
  if (method === 'POST') {
    if (era === 'legacy') { Object.assign(headers, legacyHeaders()); payload = JSON.stringify(initializeBody(REVISION)) } else { Object.assign(headers, modernHeaders('tools/list')); payload = modernBody(1, 'tools/list') }
  } else if (method === 'OPTIONS') {
    headers['access-control-request-method'] = 'POST'
    headers['access-control-request-headers'] = PREFLIGHT_HEADERS
  } else {
    headers.accept = method === 'GET' ? 'text/event-stream' : 'application/json'
    if (era === 'modern') headers['mcp-protocol-version'] = '2026-07-28'
    else if (sid !== undefined) { headers['mcp-session-id'] = sid; headers['mcp-protocol-version'] = REVISION }
  }
  if (origin !== undefined) headers.origin = origin
  return { method, url: '/mcp', headers, ...(payload !== undefined ? { payload } : {}) }
}

/**
 * Opens GET /mcp on its own connection (node:http, no agent) and resolves at the response head.
 * `close()` destroys the socket: an aborted fetch can leave undici's socket open, and a connection
 * whose stream the server ends at close then idles until Fastify's 72 s keep-alive timeout.
 */
async function openGet (t: Test, base: string, headers: Record<string, string>): Promise<{ res: IncomingMessage, close: () => void }> {
  return await new Promise((resolve, reject) => {
    const req = httpRequest(new URL('/mcp', base), { method: 'GET', headers, agent: false }, res => {
      resolve({ res, close: () => { req.destroy() } })
    })
    t.teardown(() => { req.destroy() })
    req.on('error', reject)
    req.end()
  })
}

/** Asserts the 403 refusal: exact body, JSON, no CORS grant. */
async function expectRefused (t: Test, app: FastifyInstance, era: Era, method: Method, origin: string): Promise<void> {
  const what = `${era} ${method} Origin ${origin}`
  const res = await app.inject(eraRequest(era, method, origin, era === 'legacy' ? 'some-session' : undefined))
  t.equal(res.statusCode, 403, `${what}: 403`)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8', `${what}: JSON`)
  t.equal(res.body, FORBIDDEN, `${what}: the id-less JSON-RPC error`)
  t.equal(res.headers['access-control-allow-origin'], undefined, `${what}: no CORS grant`)
  t.equal(res.headers['access-control-allow-methods'], undefined, `${what}: no preflight grant`)
}

/**
 * Asserts that an allowed origin is served by the routes (not refused) and granted CORS.
 * POST: a real result; GET without a legacy session / modern GET and DELETE: the route's own 405;
 * legacy DELETE of a live session: 204; OPTIONS: a 204 preflight grant.
 */
async function expectServed (t: Test, app: FastifyInstance, era: Era, method: Method, origin: string): Promise<void> {
  const what = `${era} ${method} Origin ${origin}`
  const sid = era === 'legacy' && method === 'DELETE' ? (await injectSession(app, REVISION)).sid : undefined
  const res = await app.inject(eraRequest(era, method, origin, sid))
  const expected = method === 'POST' ? 200 : method === 'OPTIONS' ? 204 : era === 'legacy' && method === 'DELETE' ? 204 : 405
  t.equal(res.statusCode, expected, `${what}: ${expected} (${res.body})`)
  t.equal(res.headers['access-control-allow-origin'], origin, `${what}: CORS grant for the origin`)
  t.match(res.headers.vary, /Origin/, `${what}: Vary: Origin`)
  if (method === 'POST') t.ok(res.json().result !== undefined, `${what}: a result`)
  if (method === 'OPTIONS') {
    t.equal(res.headers['access-control-allow-headers'], PREFLIGHT_HEADERS, `${what}: requested headers reflected`)
    t.match(res.headers['access-control-allow-methods'], /POST/, `${what}: methods granted`)
  } else {
    t.match(res.headers['access-control-expose-headers'], /Mcp-Session-Id/, `${what}: Mcp-Session-Id exposed`)
  }
}

/**
 * One default app (the fixture upstream, default config) on a real socket, shared by the cases that
 * need nothing of their own: they inject or send requests (sessions keep the ones that open sessions
 * apart), none changes the config or the fixture's state, and they run one at a time. Started on
 * first use, closed when the file ends: twelve app and fixture starts fewer.
 */
let shared: ReturnType<typeof listen> | undefined
async function sharedApp (): Promise<Awaited<ReturnType<typeof listen>>> {
  shared ??= listen(t)
  return await shared
}

const REFUSED_ANYWHERE = ['http://evil.example', 'null', 'http://localhost.attacker.example', 'http://127.0.0.1.nip.io', 'https://localhost@evil.example', 'file://', 'http://localhost:3000/path']

t.test('all/origin/refused-403-every-method-both-eras', async t => {
  const { app } = await sharedApp()
  for (const era of ERAS) for (const method of METHODS) for (const origin of REFUSED_ANYWHERE) await expectRefused(t, app, era, method, origin)
})

t.test('all/origin/no-origin-served', async t => {
  const { app } = await sharedApp()
  for (const era of ERAS) {
    for (const method of ['POST', 'GET', 'DELETE'] as const) {
      const res = await app.inject(eraRequest(era, method, undefined))
      t.not(res.statusCode, 403, `${era} ${method} without Origin is not refused`)
      t.equal(res.headers['access-control-allow-origin'], undefined, `${era} ${method}: no CORS headers without Origin`)
    }
  }
})

t.test('all/origin/loopback-served-with-cors', async t => {
  const { app } = await sharedApp()
  const origins = ['http://localhost', 'http://localhost:5173', 'https://127.0.0.1:8443', 'http://[::1]:3000']
  for (const era of ERAS) for (const method of METHODS) for (const origin of origins) await expectServed(t, app, era, method, origin)
})

t.test('all/origin/loopback-legacy-get-stream-served', async t => {
  // The one answer inject cannot hold: a real legacy GET notification stream for an allowed origin.
  const { base } = await sharedApp()
  const sid = await fetchSession(base, REVISION)
  const { res, close } = await openGet(t, base, { origin: 'http://localhost:5173', accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': REVISION })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'text/event-stream')
  t.equal(res.headers['access-control-allow-origin'], 'http://localhost:5173')
  close()
  const refused = await fetch(`${base}/mcp`, { headers: { origin: 'http://evil.example', accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': REVISION } })
  t.equal(refused.status, 403)
  t.equal(await refused.text(), FORBIDDEN)
})

t.test('all/origin/daemon-address-only-when-specific', async t => {
  const specific = await build(t, { daemon: { address: '10.1.2.3:3939' } })
  for (const era of ERAS) {
    for (const method of METHODS) {
      await expectServed(t, specific, era, method, 'http://10.1.2.3:3939')
      await expectServed(t, specific, era, method, 'https://10.1.2.3:3939')
      await expectRefused(t, specific, era, method, 'http://10.1.2.3:3940')
      await expectRefused(t, specific, era, method, 'http://10.1.2.3')
    }
  }
  // Every interface names no origin: neither 0.0.0.0 nor a guess at the machine's address is allowed.
  const wildcard = await build(t, { daemon: { address: '0.0.0.0:3939' } })
  for (const era of ERAS) {
    for (const method of METHODS) {
      await expectRefused(t, wildcard, era, method, 'http://0.0.0.0:3939')
      await expectRefused(t, wildcard, era, method, 'http://10.1.2.3:3939')
    }
  }
})

t.test('all/origin/host-header-is-not-the-daemon-address', async t => {
  // DNS rebinding: the attacker controls Host. A matching Host must not make its Origin acceptable.
  const { app } = await sharedApp()
  for (const era of ERAS) {
    for (const method of METHODS) {
      const request = eraRequest(era, method, 'http://rebind.example:3939')
      const res = await app.inject({ ...request, headers: { ...request.headers as Record<string, string>, host: 'rebind.example:3939' } })
      t.equal(res.statusCode, 403, `${era} ${method}`)
      t.equal(res.body, FORBIDDEN)
    }
  }
})

t.test('all/origin/allowed-origins-exact', async t => {
  const app = await build(t, { transport: { allowedOrigins: ['https://app.example.com', 'http://tools.example.org:8080'] } })
  for (const era of ERAS) {
    for (const method of METHODS) {
      await expectServed(t, app, era, method, 'https://app.example.com')
      await expectServed(t, app, era, method, 'http://tools.example.org:8080')
      for (const origin of ['http://app.example.com', 'https://app.example.com:8443', 'https://sub.app.example.com', 'https://app.example.com.evil.example', 'http://tools.example.org', 'http://tools.example.org:8081']) {
        await expectRefused(t, app, era, method, origin)
      }
    }
  }
})

t.test('all/origin/preflight-reflects-requested-headers', async t => {
  const { app } = await sharedApp()
  const res = await app.inject(eraRequest('modern', 'OPTIONS', 'http://localhost:3000'))
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.equal(res.headers['access-control-allow-origin'], 'http://localhost:3000')
  t.equal(res.headers['access-control-allow-headers'], PREFLIGHT_HEADERS, 'exactly the requested list, Mcp-Param-* included')
  t.equal(res.headers['access-control-allow-methods'], 'GET, POST, DELETE, OPTIONS')
  // The actual response exposes Mcp-Session-Id, so a browser client can read the session it got.
  const init = await app.inject(eraRequest('legacy', 'POST', 'http://localhost:3000'))
  t.equal(init.statusCode, 200)
  t.type(init.headers['mcp-session-id'], 'string')
  t.match(init.headers['access-control-expose-headers'], /(^|, )Mcp-Session-Id(,|$)/)
  const refused = await app.inject(eraRequest('modern', 'OPTIONS', 'http://evil.example'))
  t.equal(refused.statusCode, 403, 'a refused origin\'s preflight is 403')
  t.equal(refused.body, FORBIDDEN)
  t.equal(refused.headers['access-control-allow-headers'], undefined)
})

/** The repository root (this file runs as dist/test/http/security.test.js). */
const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url))

/**
 * Runs one server scenario of `@modelcontextprotocol/conformance` (an npm alias under node_modules)
 * against `url`, as test/conformance/run.ts does (with the fs.globSync preload on Node 20).
 * @returns the checks it wrote
 */
async function conformanceScenario (pkg: string, url: string, scenario: string, extra: string[]): Promise<Array<{ id: string, status: string, errorMessage?: string }>> {
  const out = mkdtempSync(join(tmpdir(), 'mcpx-conformance-'))
  const preload = typeof (fs as unknown as Record<string, unknown>).globSync === 'function' ? [] : ['--import', join(REPO_ROOT, 'test/conformance/globsync-preload.mjs')]
  const child = spawn(process.execPath, [...preload, join(REPO_ROOT, 'node_modules', pkg, 'dist/index.js'), 'server', '--url', url, '--scenario', scenario, ...extra, '-o', out], { cwd: out, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (c: string) => { output += c })
  child.stderr.setEncoding('utf8').on('data', (c: string) => { output += c })
  const timer = setTimeout(() => { if (child.pid !== undefined) process.kill(child.pid, 'SIGKILL') }, WAIT_MS)
  await once(child, 'exit')
  clearTimeout(timer)
  const dir = readdirSync(out).find(entry => entry.startsWith(`server-${scenario}-`))
  if (dir === undefined) throw new Error(`no result written by ${pkg}:\n${output}`)
  return JSON.parse(readFileSync(join(out, dir, 'checks.json'), 'utf8'))
}

t.test('all/origin/conformance-dns-rebinding-protection', async t => {
  // The official scenario against the real daemon: Host and Origin `evil.example.com` → 4xx (403
  // here, from the Origin policy: mcpx never trusts Host), the daemon's own loopback Host/Origin → 2xx.
  const daemon = await startDaemon(t, { upstreams: fixtureUpstreams() })
  const url = `${daemon.base}/mcp`
  const runs: Array<[string, string[]]> = [
    ['conformance-0116', []],
    ['conformance-020a12', ['--spec-version', '2025-11-25']],
    ['conformance-020a12', ['--spec-version', '2026-07-28']]
  ]
  for (const [pkg, extra] of runs) {
    const checks = await conformanceScenario(pkg, url, 'dns-rebinding-protection', extra)
    const label = `${pkg} ${extra.join(' ')}`.trim()
    t.same(checks.map(c => [c.id, c.status, c.errorMessage ?? '']).sort(), [
      ['localhost-host-rebinding-rejected', 'SUCCESS', ''],
      ['localhost-host-valid-accepted', 'SUCCESS', '']
    ], label)
  }
})

/* ------------------------------------------------------------------ limits */

/** Legacy sessionless ping body (any id). */
const ping = (id: number | string): string => JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' })

/** Asserts a JSON-RPC error body: jsonrpc 2.0, the code, and no id unless given. */
function assertJsonRpcError (t: Test, body: string, code: number, id?: number | string): void {
  let json: any
  try { json = JSON.parse(body) } catch { t.fail(`not JSON: ${body}`); return }
  t.equal(json.jsonrpc, '2.0', 'jsonrpc 2.0')
  t.equal(json.error?.code, code, `code ${code}: ${body}`)
  t.type(json.error?.message, 'string')
  if (id === undefined) t.notOk(Object.hasOwn(json, 'id'), 'id-less')
  else t.equal(json.id, id, 'id echoed')
}

t.test('all/http/other-methods-and-paths-json-rpc', async t => {
  // Found by test/e2e/fuzz.test.ts (seed 1835233400): these fell through to Fastify's own
  // not-found and error handlers, whose bodies are not JSON-RPC.
  const { app } = await sharedApp()
  for (const method of ['PUT', 'PATCH'] as const) {
    for (const headers of [legacyHeaders(), { ...legacyHeaders(), 'content-type': '' }, { ...legacyHeaders(), 'content-type': 'text/plain' }, modernHeaders('ping')]) {
      const res = await app.inject({ method, url: '/mcp', headers, payload: ping(1) })
      t.equal(res.statusCode, 405, `${method} /mcp (content-type ${JSON.stringify(headers['content-type'])}): 405`)
      t.equal(res.headers.allow, 'GET, POST, DELETE, OPTIONS')
      assertJsonRpcError(t, res.body, -32_600)
    }
  }
  for (const [method, url] of [['GET', '/mcp/extra'], ['POST', '/mcp/extra'], ['DELETE', '/mcp/a/b']] as const) {
    const res = await app.inject({ method, url, headers: legacyHeaders(), ...(method === 'POST' ? { payload: ping(1) } : {}) })
    t.equal(res.statusCode, 404, `${method} ${url}: 404`)
    assertJsonRpcError(t, res.body, -32_600)
  }
  const refused = await app.inject({ method: 'PUT', url: '/mcp', headers: { ...legacyHeaders(), origin: 'http://evil.example' }, payload: ping(1) })
  t.equal(refused.statusCode, 403, 'the Origin policy still comes first')
  t.equal(refused.body, FORBIDDEN)
})

t.test('all/limits/body-too-large-413', async t => {
  const { app, base } = await listen(t, { transport: { maxBodyBytes: 1024 } })
  const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(2048) } })
  for (const era of ERAS) {
    const headers = era === 'legacy' ? legacyHeaders() : modernHeaders('ping')
    const res = await app.inject({ method: 'POST', url: '/mcp', headers, payload: big })
    t.equal(res.statusCode, 413, `${era}: 413 by Content-Length`)
    t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    assertJsonRpcError(t, res.body, -32_600)
  }
  // Chunked (no Content-Length): the limit is enforced while reading, over a real socket.
  const chunked = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: legacyHeaders(),
    body: new ReadableStream({ start (c) { c.enqueue(new TextEncoder().encode(big)); c.close() } }),
    duplex: 'half'
  } as RequestInit)
  t.equal(chunked.status, 413, 'chunked: 413')
  assertJsonRpcError(t, await chunked.text(), -32_600)
  // Just under the limit is served.
  const small = await app.inject({ method: 'POST', url: '/mcp', headers: legacyHeaders(), payload: ping(2) })
  t.equal(small.statusCode, 200)
})

t.test('all/limits/oversized-headers-431', async t => {
  const { base } = await sharedApp()
  const url = new URL(base)
  const socket = connect(Number(url.port), url.hostname)
  t.teardown(() => socket.destroy())
  await once(socket, 'connect')
  // Node's default --max-http-header-size is 16 KiB; send 32 KiB of headers.
  const filler = Array.from({ length: 32 }, (_, i) => `X-Filler-${i}: ${'a'.repeat(1000)}`).join('\r\n')
  socket.end(`POST /mcp HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\n${filler}\r\nContent-Length: 2\r\n\r\n{}`)
  let text = ''
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => { text += chunk })
  await once(socket, 'close')
  t.match(text, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/, '431 before any route sees the request')
  // Node's parser fails before a URL is known, so no /mcp scope applies: the body is the HTTP
  // server's clientErrorHandler (Fastify's default here), not a JSON-RPC message. Pinned as is.
  const body = text.slice(text.indexOf('\r\n\r\n') + 4)
  t.same(JSON.parse(body), { error: 'Request Header Fields Too Large', message: 'Exceeded maximum allowed HTTP header size', statusCode: 431 }, 'Fastify\'s default client-error body')
})

t.test('all/http/content-type-415', async t => {
  const { app } = await sharedApp()
  for (const era of ERAS) {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx', 'text/json']) {
      const headers = { ...(era === 'legacy' ? legacyHeaders() : modernHeaders('ping')), 'content-type': type }
      const res = await app.inject({ method: 'POST', url: '/mcp', headers, payload: ping(1) })
      t.equal(res.statusCode, 415, `${era} ${type}: 415`)
      assertJsonRpcError(t, res.body, -32_600)
    }
  }
})

t.test('all/http/content-type-json-with-charset-accepted', async t => {
  const { app } = await sharedApp()
  for (const type of ['application/json; charset=utf-8', 'application/json;charset=UTF-8', 'Application/JSON']) {
    const res = await app.inject({ method: 'POST', url: '/mcp', headers: { ...legacyHeaders(), 'content-type': type }, payload: ping(1) })
    t.equal(res.statusCode, 200, `${type}: served`)
    t.same(res.json(), { jsonrpc: '2.0', id: 1, result: {} })
  }
  const modern = await app.inject({ method: 'POST', url: '/mcp', headers: modernHeaders('tools/list', undefined, { 'content-type': 'application/json; charset=utf-8' }), payload: modernBody(2, 'tools/list') })
  t.equal(modern.statusCode, 200, 'modern with charset: served')
})

t.test('all/http/accept-406', async t => {
  const { app } = await sharedApp()
  for (const era of ERAS) {
    const base = era === 'legacy' ? legacyHeaders() : modernHeaders('tools/list')
    const body = era === 'legacy' ? ping(1) : modernBody(1, 'tools/list')
    for (const accept of ['text/html', 'image/png', 'application/xml, text/plain']) {
      const res = await app.inject({ method: 'POST', url: '/mcp', headers: { ...base, accept }, payload: body })
      t.equal(res.statusCode, 406, `${era} POST Accept ${accept}: 406`)
      assertJsonRpcError(t, res.body, -32_600)
    }
    const get = await app.inject({ method: 'GET', url: '/mcp', headers: { accept: 'text/html', ...(era === 'modern' ? { 'mcp-protocol-version': '2026-07-28' } : {}) } })
    t.equal(get.statusCode, 406, `${era} GET Accept text/html: 406`)
    assertJsonRpcError(t, get.body, -32_600)
    // Tolerated: no Accept at all, and */* (docs/security.md › Accept tolerance).
    const { accept: _drop, ...noAccept } = base
    for (const headers of [noAccept, { ...base, accept: '*/*' }, { ...base, accept: 'application/json' }]) {
      const res = await app.inject({ method: 'POST', url: '/mcp', headers, payload: body })
      t.equal(res.statusCode, 200, `${era} POST Accept ${headers.accept ?? '(none)'}: served`)
    }
  }
})

t.test('all/jsonrpc/invalid-utf8-is-32700', async t => {
  const { app, base } = await sharedApp()
  const bodies = [
    Buffer.from([0x7b, 0xff, 0xfe, 0x7d]),
    Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}')]),
    Buffer.from([0xed, 0xa0, 0x80]) // a UTF-8-encoded surrogate
  ]
  for (const era of ERAS) {
    for (const payload of bodies) {
      const res = await app.inject({ method: 'POST', url: '/mcp', headers: era === 'legacy' ? legacyHeaders() : modernHeaders('ping'), payload })
      t.equal(res.statusCode, 400, `${era}: 400`)
      assertJsonRpcError(t, res.body, -32_700)
    }
  }
  const wire = await fetch(`${base}/mcp`, { method: 'POST', headers: legacyHeaders(), body: bodies[1] })
  t.equal(wire.status, 400, 'over a real socket too')
  assertJsonRpcError(t, await wire.text(), -32_700)
  const after = await fetch(`${base}/mcp`, { method: 'POST', headers: legacyHeaders(), body: ping(9) })
  t.same(await after.json(), { jsonrpc: '2.0', id: 9, result: {} }, 'still serving')
})

t.test('all/limits/max-sessions-503', async t => {
  const app = await build(t, { transport: { maxSessions: 2 } })
  const first = await injectSession(app, REVISION)
  await injectSession(app, REVISION)
  const refused = await app.inject({ method: 'POST', url: '/mcp', headers: legacyHeaders(), payload: initializeBody(REVISION, {}, 'third') })
  t.equal(refused.statusCode, 503)
  t.equal(refused.headers['retry-after'], '5')
  t.equal(refused.headers['mcp-session-id'], undefined, 'no session minted')
  assertJsonRpcError(t, refused.body, -32_603, 'third')
  const ended = await app.inject({ method: 'DELETE', url: '/mcp', headers: { 'mcp-session-id': first.sid } })
  t.equal(ended.statusCode, 204)
  await injectSession(app, REVISION) // a freed slot is usable again
})

t.test('all/limits/max-get-streams-503', async t => {
  const { base } = await listen(t, { transport: { maxGetStreams: 1 } })
  const a = await fetchSession(base, REVISION)
  const b = await fetchSession(base, REVISION)
  const getHeaders = (sid: string): Record<string, string> => ({ accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': REVISION })
  const open = await openGet(t, base, getHeaders(a))
  t.equal(open.res.statusCode, 200)
  const capped = await fetch(`${base}/mcp`, { headers: getHeaders(b) })
  t.equal(capped.status, 503)
  t.equal(capped.headers.get('retry-after'), '5')
  assertJsonRpcError(t, await capped.text(), -32_603)
  open.close()
  // The slot frees when the first stream closes.
  const reopened = await pollUntil('the stream slot to free', async () => {
    const next = await openGet(t, base, getHeaders(b))
    if (next.res.statusCode === 200) return next
    next.close()
    return undefined
  })
  t.equal(reopened.res.statusCode, 200)
  reopened.close()
})

t.test('all/limits/max-requests-per-session-429', async t => {
  const log = fixtureLogPath()
  const { base } = await listen(t, { upstreams: fixtureUpstreams([], { FIXTURE_LOG: log }), transport: { maxRequestsPerSession: 1 } })
  const sid = await fetchSession(base, REVISION)
  const slow = fetch(`${base}/mcp`, { method: 'POST', headers: sessionHeaders(sid, REVISION, { accept: 'application/json' }), body: JSON.stringify(callBody(1, 'slow', { ms: 1500, steps: 1 })) })
  await pollUntil('the slow call to start', () => fixtureEvents(log).some(e => e.event === 'started'))
  const second = await fetch(`${base}/mcp`, { method: 'POST', headers: sessionHeaders(sid, REVISION), body: JSON.stringify(callBody('second', 'echo', { text: 'x' })) })
  t.equal(second.status, 429)
  assertJsonRpcError(t, await second.text(), -32_603, 'second')
  const first = await slow
  t.equal(first.status, 200)
  t.match(await first.json(), { id: 1, result: { content: [{ text: 'slept 1500' }] } })
  const third = await fetch(`${base}/mcp`, { method: 'POST', headers: sessionHeaders(sid, REVISION), body: JSON.stringify(callBody(3, 'echo', { text: 'x' })) })
  t.equal(third.status, 200, 'the slot frees when the call ends')
  await third.text()
})

/**
 * One app for the batch bounds, shared by the two tests below (one hostile upstream start): a
 * sessionless batch has at most BATCH_BOUND members in progress, and the scope at most
 * BATCH_SLOTS requests in flight (transport.maxConcurrentRequests). The upstream records each
 * tools/call with how many calls it holds unanswered (`open`); `hold` answers once `release` exists.
 */
const BATCH_BOUND = 4
const BATCH_SLOTS = 5
let batchApp: Promise<{ base: string, log: string, dir: string }> | undefined
async function batchServer (): Promise<{ base: string, log: string, dir: string }> {
  batchApp ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcpx-batch-bound-'))
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
    const log = join(dir, 'fixture.log')
    const { base } = await listen(t, { upstreams: { h: { command: process.execPath, args: [HOSTILE_PATH], env: { FIXTURE_LOG: log } } }, transport: { maxBatchInFlight: BATCH_BOUND, maxConcurrentRequests: BATCH_SLOTS } })
    return { base, log, dir }
  })()
  return await batchApp
}
const holdCall = (id: string | number, release: string): object => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hold', arguments: { tag: String(id), release } } })
/** The hostile upstream's tools/call records, from line `since` of its log on. */
function holdCalls (log: string, since = 0): Array<{ tag?: string, open?: number }> {
  if (!fs.existsSync(log)) return []
  return readFileSync(log, 'utf8').split('\n').filter(l => l !== '').slice(since).map(l => JSON.parse(l) as { event: string, tag?: string, open?: number }).filter(r => r.event === 'call')
}
const logLines = (log: string): number => fs.existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(l => l !== '').length : 0

t.test('limits/batch/members-in-progress-bounded-replies-in-order', async t => {
  // A sessionless 2025-03-26 batch of 40 members: at most transport.maxBatchInFlight (4) in
  // progress at once, so the upstream never holds more than 4; before the bound every member was
  // dispatched at once (open reached 37).
  const { base, log, dir } = await batchServer()
  const since = logLines(log)
  const release = join(dir, 'released-at-once')
  writeFileSync(release, '') // each hold answers at its first 20 ms poll
  const members: object[] = []
  const expected: Array<string | number> = []
  for (let i = 0; i < 40; i++) {
    if (i === 7) members.push({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'x', progress: 1 } }) // no reply
    else if (i === 13) { members.push({ jsonrpc: '2.0', id: 'bad', method: 42 }); expected.push('bad') } // an invalid member: its error, in its place
    else if (i === 21) { members.push({ jsonrpc: '2.0', id: 'p', method: 'ping' }); expected.push('p') }
    else { const id = i % 2 === 0 ? i : `s${i}`; members.push(holdCall(id, release)); expected.push(id) }
  }
  const res = await fetch(`${base}/mcp`, { method: 'POST', headers: legacyHeaders({ accept: 'application/json' }), body: JSON.stringify(members) })
  t.equal(res.status, 200)
  const replies = await res.json() as Array<{ id: unknown, result?: { content?: Array<{ text: string }> }, error?: { code: number } }>
  t.same(replies.map(r => r.id), expected, 'one reply per request member, in batch order, each with its own id')
  t.equal(replies.find(r => r.id === 'bad')?.error?.code, -32_600, 'the invalid member answered -32600 in its place')
  t.same(replies.find(r => r.id === 'p'), { jsonrpc: '2.0', id: 'p', result: {} })
  for (const r of replies.filter(r => r.id !== 'bad' && r.id !== 'p')) t.equal(r.result?.content?.[0]?.text, `released ${String(r.id)}`, `member ${String(r.id)} got its own result`)
  const calls = holdCalls(log, since)
  t.equal(calls.length, 37, 'every tools/call member reached the upstream')
  const most = Math.max(...calls.map(r => r.open ?? 0))
  t.ok(most <= BATCH_BOUND, `at most maxBatchInFlight (${BATCH_BOUND}) members in progress at once: the upstream held ${most} at most`)
})

t.test('limits/batch/too-many-members-refused-whole', async t => {
  // transport.maxBatchMembers (default 1,000): a longer batch is one id-less -32600 before any
  // member runs. Before, a 4 MiB body of [0,0,…] (2 million members) was answered member by
  // member, a 216 MB reply.
  const { base, log, dir } = await batchServer()
  const since = logLines(log)
  const release = join(dir, 'released-at-once')
  writeFileSync(release, '')
  const post = async (body: unknown): Promise<Response> => await fetch(`${base}/mcp`, { method: 'POST', headers: legacyHeaders({ accept: 'application/json' }), body: JSON.stringify(body) })
  for (const [what, batch] of [['1,001 zeros', new Array(1001).fill(0)], ['1,001 calls', Array.from({ length: 1001 }, (_, i) => holdCall(i, release))]] as const) {
    const res = await post(batch)
    t.equal(res.status, 400, `${what}: 400`)
    t.same(await res.json(), { jsonrpc: '2.0', error: { code: -32_600, message: 'Invalid Request: a batch of 1001 members is more than the 1000 allowed' } }, `${what}: one id-less -32600 for the whole batch`)
  }
  t.same(holdCalls(log, since), [], 'no member reached the upstream')
  const full = await post(Array.from({ length: 1000 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' })))
  t.equal(full.status, 200)
  t.equal((await full.json() as unknown[]).length, 1000, 'a batch of exactly 1,000 members is served')
})

t.test('limits/batch/members-count-against-max-concurrent-requests', async t => {
  // transport.maxConcurrentRequests (5) counts requests, not only POSTs: two concurrent batches of
  // four calls that wait hold 2 POST slots, and 3 more members beside their batches' first; the
  // 3 members past the cap are refused as a POST would be (-32603 with their id, in the batch's
  // 200). Before, a batch held one slot whatever it ran: all 8 ran.
  const { base, log, dir } = await batchServer()
  const since = logLines(log)
  const release = join(dir, 'released-later')
  const batch = (prefix: string): object[] => [0, 1, 2, 3].map(i => holdCall(`${prefix}${i}`, release))
  const posts = ['a', 'b'].map(async prefix => await fetch(`${base}/mcp`, { method: 'POST', headers: legacyHeaders({ accept: 'application/json' }), body: JSON.stringify(batch(prefix)) }))
  await pollUntil('the admitted members at the upstream', () => holdCalls(log, since).length >= BATCH_SLOTS)
  writeFileSync(release, '')
  const replies: Array<{ id: string, result?: unknown, error?: { code: number, message: string } }> = []
  for (const res of await Promise.all(posts)) {
    t.equal(res.status, 200, 'each batch: 200 with its array')
    const body = await res.json() as typeof replies
    t.same(body.map(r => r.id), body.map(r => r.id).sort(), 'in batch order')
    t.equal(body.length, 4, 'every member answered')
    replies.push(...body)
  }
  const refused = replies.filter(r => r.error !== undefined)
  t.equal(replies.filter(r => r.result !== undefined).length, BATCH_SLOTS, `${BATCH_SLOTS} members ran: the cap`)
  t.equal(refused.length, 3, 'the 3 past it were refused')
  t.ok(refused.every(r => r.error?.code === -32_603 && /too many requests in flight/.test(r.error.message)), 'as a POST past the cap is (-32603 "Server busy")')
  t.equal(holdCalls(log, since).length, BATCH_SLOTS, 'the refused members never reached the upstream')
  // Every slot came back: five single POSTs at once are served.
  const after = await Promise.all([1, 2, 3, 4, 5].map(async i => await fetch(`${base}/mcp`, { method: 'POST', headers: legacyHeaders({ accept: 'application/json' }), body: JSON.stringify(holdCall(`after${i}`, release)) })))
  t.same(after.map(r => r.status), [200, 200, 200, 200, 200], 'the slots of finished members are free again')
  await Promise.all(after.map(async r => await r.text()))
})

t.test('all/limits/max-concurrent-requests-503', async t => {
  const log = fixtureLogPath()
  const { base } = await listen(t, { upstreams: fixtureUpstreams([], { FIXTURE_LOG: log }), transport: { maxConcurrentRequests: 2 } })
  const started = (): number => fixtureEvents(log).filter(e => e.event === 'started').length
  // Two slow calls hold both slots: one sessionless legacy, one modern.
  const abort = new AbortController()
  t.teardown(() => abort.abort())
  const legacySlow = fetch(`${base}/mcp`, { method: 'POST', headers: legacyHeaders({ accept: 'application/json' }), body: JSON.stringify(callBody(1, 'slow', { ms: 1500, steps: 1 })) })
  const modernSlow = fetch(`${base}/mcp`, { method: 'POST', headers: modernHeaders('tools/call', 'slow', { accept: 'application/json' }), body: modernBody(2, 'tools/call', { name: 'slow', arguments: { ms: 60_000, steps: 1 } }), signal: abort.signal })
  await pollUntil('both slow calls to start', () => started() >= 2)
  for (const [id, era] of [['legacy-3', 'legacy'], [7, 'modern']] as const) {
    const body = era === 'legacy' ? ping(id) : modernBody(id, 'ping')
    const res = await fetch(`${base}/mcp`, { method: 'POST', headers: era === 'legacy' ? legacyHeaders() : modernHeaders('ping'), body })
    t.equal(res.status, 503, `${era}: 503 past the cap`)
    t.equal(res.headers.get('retry-after'), '5')
    assertJsonRpcError(t, await res.text(), -32_603, id)
  }
  const batch = await fetch(`${base}/mcp`, { method: 'POST', headers: legacyHeaders(), body: `[${ping(1)}]` })
  t.equal(batch.status, 503, 'a batch: 503, id-less')
  assertJsonRpcError(t, await batch.text(), -32_603)
  const garbage = await fetch(`${base}/mcp`, { method: 'POST', headers: legacyHeaders(), body: '{"id":' })
  t.equal(garbage.status, 503, 'unreadable body: 503 too (the cap is checked first)')
  assertJsonRpcError(t, await garbage.text(), -32_603)
  // GET and DELETE are not POSTs in flight: they are answered as usual.
  const get = await fetch(`${base}/mcp`, { headers: { accept: 'text/event-stream' } })
  t.equal(get.status, 405)
  await get.text()
  // A client that goes away frees its slot (the modern call is cancelled by the disconnect).
  abort.abort()
  await modernSlow.catch(() => {})
  await pollUntil('the aborted slot to free', async () => {
    const res = await fetch(`${base}/mcp`, { method: 'POST', headers: legacyHeaders(), body: ping('after-abort') })
    await res.text()
    return res.status === 200
  })
  const legacyDone = await legacySlow
  t.equal(legacyDone.status, 200)
  await legacyDone.text()
  // Both slots free again: two concurrent calls are served.
  const both = await Promise.all([1, 2].map(async i => await fetch(`${base}/mcp`, { method: 'POST', headers: legacyHeaders(), body: ping(`free-${i}`) })))
  t.same(both.map(r => r.status), [200, 200])
  await Promise.all(both.map(async r => await r.text()))
})

/* ------------------------------------------------------------------ authentication */

t.test('auth/bearer/daemon-401', async t => {
  const token = 'mcpx-test-token-0123456789abcdef'
  const daemon = await startDaemon(t, { auth: { bearerTokens: [token] }, upstreams: fixtureUpstreams() })
  const send = async (authorization?: string): Promise<Response> => await fetch(`${daemon.base}/mcp`, {
    method: 'POST',
    headers: legacyHeaders(authorization === undefined ? {} : { authorization }),
    body: ping(1)
  })
  const missing = await send()
  t.equal(missing.status, 401, 'no token: 401')
  t.equal(missing.headers.get('www-authenticate'), 'Bearer')
  assertJsonRpcError(t, await missing.text(), -32_600)
  for (const wrong of ['Bearer nope', `Bearer ${token}x`, `Basic ${Buffer.from('a:b').toString('base64')}`, token]) {
    const res = await send(wrong)
    t.equal(res.status, 401, `${wrong.slice(0, 12)}…: 401`)
    t.match(res.headers.get('www-authenticate'), /^Bearer/)
    assertJsonRpcError(t, await res.text(), -32_600)
  }
  const right = await send(`Bearer ${token}`)
  t.equal(right.status, 200, 'the right token: 200')
  t.same(await right.json(), { jsonrpc: '2.0', id: 1, result: {} })
  // A refused Origin is 403 before it is 401; health checks stay outside /mcp.
  const origin = await fetch(`${daemon.base}/mcp`, { method: 'POST', headers: legacyHeaders({ origin: 'http://evil.example' }), body: ping(2) })
  t.equal(origin.status, 403)
  await origin.text()
  t.equal((await fetch(`${daemon.base}/healthz`)).status, 200)
})

/** Starts `node dist/cli.js daemon --config <tmp>` with this exact config; killed at teardown. */
function spawnDaemon (t: Test, config: Record<string, unknown>): { stderr: () => string, stdout: () => string, exited: Promise<number | string>, kill: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-security-'))
  const file = join(dir, 'mcpx.config.json')
  writeFileSync(file, JSON.stringify(config))
  const child = spawn(process.execPath, [CLI_PATH, 'daemon', '--config', file], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  let stdout = ''
  child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c })
  child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c })
  const exited = new Promise<number | string>(resolve => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)))
  const kill = (): void => { if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGKILL') }
  t.teardown(kill)
  return { stderr: () => stderr, stdout: () => stdout, exited, kill }
}

t.test('auth/bind/non-loopback-without-auth-refuses-to-start', async t => {
  const port = await freePort()
  const daemon = spawnDaemon(t, { daemon: { address: `0.0.0.0:${port}` }, upstreams: fixtureUpstreams() })
  const code = await Promise.race([daemon.exited, new Promise<string>(resolve => setTimeout(() => resolve('still running'), WAIT_MS).unref())])
  t.not(code, 0, 'exit code non-zero')
  t.not(code, 'still running', 'it exited')
  t.match(daemon.stderr(), /auth\.allowUnauthenticated/, 'the message names auth.allowUnauthenticated')
  t.match(daemon.stderr(), /auth\.bearerTokens/, 'and auth.bearerTokens')
  t.notMatch(daemon.stdout(), /mcpx daemon ready/, 'never ready')
})

t.test('auth/bind/non-loopback-with-allow-unauthenticated-starts', async t => {
  const port = await freePort()
  const daemon = spawnDaemon(t, { daemon: { address: `0.0.0.0:${port}` }, auth: { allowUnauthenticated: true }, upstreams: fixtureUpstreams() })
  await pollUntil('the daemon to be ready', () => {
    if (/mcpx daemon ready/.test(daemon.stdout())) return true
    if (/refusing/.test(daemon.stderr())) throw new Error(daemon.stderr())
    return false
  }, WAIT_MS)
  const res = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'POST', headers: legacyHeaders(), body: ping(1) })
  t.equal(res.status, 200, 'served (requests go to 127.0.0.1 only)')
  t.same(await res.json(), { jsonrpc: '2.0', id: 1, result: {} })
  daemon.kill()
  await daemon.exited
})

// lib/protocol/jsonrpc MAX_NESTING_DEPTH: a body nested deeper than 128 levels is the client's fault (400
// -32600 with its id), refused at parse time, not sent upstream to fail as -31000.
t.test('all/limits/nesting-too-deep-400', async t => {
  const { app } = await sharedApp()
  const deep = '['.repeat(5000) + ']'.repeat(5000)
  for (const era of ERAS) {
    const payload = era === 'modern'
      ? modernBody(3, 'tools/call', { name: 'echo', arguments: { text: 'x' } }).replace('"text":"x"', `"text":${deep}`)
      : JSON.stringify(callBody(3, 'echo', { text: 'x' })).replace('"text":"x"', `"text":${deep}`)
    const res = await app.inject({ method: 'POST', url: '/mcp', headers: era === 'modern' ? modernHeaders('tools/call', 'echo') : legacyHeaders(), payload })
    t.equal(res.statusCode, 400, era)
    t.same(res.json(), { jsonrpc: '2.0', id: 3, error: { code: -32600, message: 'Invalid Request: nesting deeper than 128 levels' } }, era)
  }
})

// transport.maxGetStreams is "most streams open at once": subscriptions/listen streams count
// against it too, with GET streams (503, Retry-After, the listen request's id; lib/protocol/http-status
// REFUSAL_STATUS.tooManyStreams).
t.test('all/limits/max-streams-counts-listen-503', async t => {
  const { base } = await listen(t, { transport: { maxGetStreams: 2 } })
  const listenBody = (id: string): string => modernBody(id, 'subscriptions/listen', { notifications: { toolsListChanged: true } })
  const streams: Array<{ close: () => void }> = []
  t.teardown(() => { for (const s of streams) s.close() })
  for (const id of ['l1', 'l2']) {
    const open = await openSse(base, listenBody(id), modernHeaders('subscriptions/listen'))
    streams.push(open)
    t.equal(open.status, 200, `${id} open`)
    t.match(await open.reader.next(), { method: 'notifications/subscriptions/acknowledged' }, `${id} acknowledged`)
  }
  for (const id of ['l3', 'l4']) {
    const capped = await fetch(`${base}/mcp`, { method: 'POST', headers: modernHeaders('subscriptions/listen'), body: listenBody(id) })
    t.equal(capped.status, 503, `${id} past the cap`)
    t.equal(capped.headers.get('retry-after'), '5')
    assertJsonRpcError(t, await capped.text(), -32_603, id)
  }
  // GET streams share the cap.
  const sid = await fetchSession(base, REVISION)
  const getHeaders = { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': REVISION }
  const get = await fetch(`${base}/mcp`, { headers: getHeaders })
  t.equal(get.status, 503, 'a GET stream past the shared cap')
  // A closed listen stream frees its slot.
  streams[0].close()
  const reopened = await pollUntil('the listen slot to free', async () => {
    const next = await openGet(t, base, getHeaders)
    if (next.res.statusCode === 200) return next
    next.close()
    return undefined
  })
  t.equal(reopened.res.statusCode, 200)
  reopened.close()
})

/* ------------------------------------------------------------------ operator endpoints */

/** The endpoints only a local client or an admin credential reads (docs/operating.md › Who may read the operator endpoints). */
const OPS_PATHS = ['/metrics', '/status', '/status.json']
/** Host values that all name loopback: none of them opens an operator endpoint to a remote client. */
const LOOPBACK_HOSTS = ['localhost', 'localhost:3939', '127.0.0.1:3939', '127.1', '0x7f.1', '2130706433', '[::1]', '[::1]:3939', '127.0.0.2']
/** A client on another machine (RFC 5737 TEST-NET-3). */
const REMOTE_PEER = '203.0.113.9'

/**
 * The real daemon's Fastify instance (server.ts buildDaemon) on daemon.address 0.0.0.0:3939, with a
 * bearer token for /mcp (the safe-bind rule) and no upstreams, never listening: requests are injected
 * with a chosen peer address. Logs off; closed at teardown.
 */
async function opsDaemon (t: Test, config: Record<string, unknown> = {}): Promise<FastifyInstance> {
  const { daemon, ...rest } = config
  const app = await buildDaemon(loadConfig({ auth: { bearerTokens: ['mcp-token'] }, upstreams: {}, ...rest, daemon: { address: '0.0.0.0:3939', ...(daemon as object) } }), { logLevel: 'silent', logFormat: 'json' })
  t.teardown(async () => { await app.close() })
  return app
}

/** GET `path` on `app` from `peer` with these headers (Host defaults to localhost:3939). */
async function opsGet (app: FastifyInstance, path: string, peer: string, headers: Record<string, string> = {}): Promise<{ statusCode: number, headers: Record<string, unknown>, body: string }> {
  return await app.inject({ method: 'GET', url: path, remoteAddress: peer, headers: { host: 'localhost:3939', ...headers } })
}

/** Asserts `res` is exactly the refusal `reason` of the table: status, WWW-Authenticate and body. */
function expectRefusal (t: Test, res: { statusCode: number, headers: Record<string, unknown>, body: string }, reason: RefusalReason, what: string): void {
  const expected = refusal(reason)
  t.equal(res.statusCode, expected.status, `${what}: ${expected.status} ${reason}`)
  t.equal(res.headers['www-authenticate'], expected.headers['www-authenticate'], `${what}: WWW-Authenticate`)
  t.equal(res.body, expected.body, `${what}: the table's body`)
}

// The peer address decides, not the Host: a client on another machine is refused whatever loopback
// name it writes, on a daemon bound to every interface; /readyz tells it only ready or not;
// a local peer in any spelling is served, and a rebinding Host is still refused to it.
t.test('ops/access/remote-peer-refused-whatever-the-host', async t => {
  const open = await opsDaemon(t)
  const admin = await opsDaemon(t, { admin: { tokens: ['admin-tok'] } })
  for (const path of OPS_PATHS) {
    for (const host of LOOPBACK_HOSTS) {
      expectRefusal(t, await opsGet(open, path, REMOTE_PEER, { host }), 'forbiddenPeer', `${path} Host ${host}, no admin.tokens`)
      expectRefusal(t, await opsGet(admin, path, REMOTE_PEER, { host }), 'adminTokenMissing', `${path} Host ${host}, admin.tokens`)
    }
    t.equal((await opsGet(admin, path, REMOTE_PEER, { authorization: 'Bearer admin-tok' })).statusCode, 200, `${path}: an admin token opens it to a remote client`)
    expectRefusal(t, await opsGet(admin, path, REMOTE_PEER, { authorization: 'Bearer nope' }), 'adminTokenInvalid', `${path}: a wrong token`)
    expectRefusal(t, await opsGet(open, path, REMOTE_PEER, { authorization: 'Bearer mcp-token' }), 'adminTokenInvalid', `${path}: a /mcp token is no admin token`)
  }
  // Readiness answers every client (probes come from the node, not loopback), but only local or admin readers see the upstreams.
  for (const host of LOOPBACK_HOSTS) {
    const bare = await opsGet(open, '/readyz', REMOTE_PEER, { host })
    t.equal(bare.statusCode, 200, `/readyz Host ${host}: the status code for anyone`)
    t.same(JSON.parse(bare.body), { status: 'ready' }, `/readyz Host ${host}: no upstream detail for a remote client`)
  }
  t.same(JSON.parse((await opsGet(admin, '/readyz', REMOTE_PEER, { authorization: 'Bearer admin-tok' })).body), { status: 'ready', failing: [], upstreams: [] }, '/readyz: the detail with an admin token')
  t.equal((await opsGet(open, '/healthz', REMOTE_PEER)).statusCode, 200, '/healthz: liveness for anyone')
  for (const peer of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) {
    for (const path of OPS_PATHS) t.equal((await opsGet(open, path, peer)).statusCode, 200, `${path} from ${peer}: a local client`)
    t.same(JSON.parse((await opsGet(open, '/readyz', peer)).body), { status: 'ready', failing: [], upstreams: [] }, `/readyz from ${peer}: the detail`)
  }
  for (const path of OPS_PATHS) {
    expectRefusal(t, await opsGet(open, path, '127.0.0.1', { host: 'rebind.example:3939' }), 'forbiddenHost', `${path}: a loopback peer under a rebinding Host`)
    expectRefusal(t, await opsGet(admin, path, '127.0.0.1', { host: 'rebind.example:3939' }), 'adminTokenMissing', `${path}: the same with admin.tokens`)
  }
  t.same(JSON.parse((await opsGet(open, '/readyz', '127.0.0.1', { host: 'rebind.example:3939' })).body), { status: 'ready' }, '/readyz under a rebinding Host: no detail')
})

// daemon.trustProxy decides whose address counts: behind a listed proxy, the client the proxy names
// (its X-Forwarded-For, read from the right); a forwarded request from a proxy mcpx was not told to
// trust has no known client and is not local, whatever the proxy's own address.
t.test('ops/access/trust-proxy-judges-the-forwarded-client', async t => {
  const plain = await opsDaemon(t)
  const localProxy = await opsDaemon(t, { daemon: { trustProxy: ['127.0.0.1'] } })
  const remoteProxy = await opsDaemon(t, { daemon: { trustProxy: ['10.0.0.5'] } })
  const cases: Array<[string, FastifyInstance, string, Record<string, string>, 'served' | RefusalReason]> = [
    ['no trustProxy: a local peer, nothing forwarded', plain, '127.0.0.1', {}, 'served'],
    ['no trustProxy: a local proxy forwarding a remote client', plain, '127.0.0.1', { 'x-forwarded-for': REMOTE_PEER }, 'forbiddenPeer'],
    ['no trustProxy: a local proxy forwarding a loopback client', plain, '127.0.0.1', { 'x-forwarded-for': '127.0.0.1' }, 'forbiddenPeer'],
    ['no trustProxy: Forwarded', plain, '127.0.0.1', { forwarded: `for=${REMOTE_PEER}` }, 'forbiddenPeer'],
    ['no trustProxy: X-Real-IP', plain, '127.0.0.1', { 'x-real-ip': REMOTE_PEER }, 'forbiddenPeer'],
    ['no trustProxy: a remote client forging a loopback X-Forwarded-For', plain, REMOTE_PEER, { 'x-forwarded-for': '127.0.0.1' }, 'forbiddenPeer'],
    ['trustProxy 127.0.0.1: the remote client it names', localProxy, '127.0.0.1', { 'x-forwarded-for': REMOTE_PEER }, 'forbiddenPeer'],
    ['trustProxy 127.0.0.1: a loopback address forged on the left', localProxy, '127.0.0.1', { 'x-forwarded-for': `127.0.0.1, ${REMOTE_PEER}` }, 'forbiddenPeer'],
    ['trustProxy 127.0.0.1: a client on the proxy\'s host', localProxy, '127.0.0.1', { 'x-forwarded-for': '127.0.0.1' }, 'served'],
    ['trustProxy 127.0.0.1: a remote peer that is not the proxy', localProxy, '203.0.113.7', { 'x-forwarded-for': '127.0.0.1' }, 'forbiddenPeer'],
    ['trustProxy 127.0.0.1: Forwarded, which trustProxy does not read', localProxy, '127.0.0.1', { forwarded: 'for=127.0.0.1' }, 'forbiddenPeer'],
    ['trustProxy 10.0.0.5: a client on the proxy\'s own host', remoteProxy, '10.0.0.5', { 'x-forwarded-for': '127.0.0.1' }, 'served'],
    ['trustProxy 10.0.0.5: a remote client', remoteProxy, '10.0.0.5', { 'x-forwarded-for': '198.51.100.1' }, 'forbiddenPeer'],
    ['trustProxy 10.0.0.5: the proxy itself', remoteProxy, '10.0.0.5', {}, 'forbiddenPeer'],
    ['trustProxy 10.0.0.5: a loopback peer that is not the proxy, forwarding', remoteProxy, '127.0.0.1', { 'x-forwarded-for': REMOTE_PEER }, 'forbiddenPeer']
  ]
  for (const [what, app, peer, headers, expected] of cases) {
    for (const path of OPS_PATHS) {
      const res = await opsGet(app, path, peer, headers)
      if (expected === 'served') t.equal(res.statusCode, 200, `${path}, ${what}: served`)
      else expectRefusal(t, res, expected, `${path}, ${what}`)
    }
  }
})
