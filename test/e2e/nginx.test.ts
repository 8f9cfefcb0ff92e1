/**
 * mcpx behind a real reverse proxy (docs/deployment.md › Behind nginx): Debian's nginx runs the SHIPPED docker/nginx.conf
 * (upstream and listen addresses rewritten, nothing else; test/helpers/nginx.ts) in front of a
 * real daemon (`node dist/cli.js daemon`) with the fixture upstream, and the official clients talk
 * to nginx's public address on loopback (127.0.0.2, which mcpx does not count as a loopback
 * Origin). What the proxy could break is what is checked: SSE buffering and keep-alives, client
 * aborts, the mirrored headers, Origin, body limits, every location mcpx serves, the OAuth
 * challenge and metadata under the public URL, and client addresses (daemon.trustProxy).
 *
 * Without nginx these tests are skipped with the install command under `npm test`, and fail under
 * CI (`CI=true`); `.ci/run` installs it.
 */
import t, { type Test } from 'tap'
import { request as httpRequest } from 'node:http'
import { readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { ClientCredentialsProvider as ClientCredentialsV1 } from '@modelcontextprotocol/sdk/client/auth-extensions.js'
import { Client as ClientV2, ClientCredentialsProvider as ClientCredentialsV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client'
import { CONFIG_SCHEMA } from '../../lib/config/schema.js'
import { daemonReady, freePort, startDaemon, type DaemonProcess } from '../helpers/daemon.js'
import { fixtureCommand } from '../helpers/fixture.js'
import { legacyHeaders, modernHeaders, modernMeta } from '../helpers/app.js'
import { fetchSession, fixtureEvents, fixtureLogPath, initializeBody, pollUntil, SseReader, type FixtureEvent } from '../helpers/legacy.js'
import { modernBody, post } from '../helpers/modern-wire.js'
import { CLIENTS, SCOPES, startAuthServer } from '../helpers/oauth.js'
import { NGINX_SKIP, PUBLIC_HOST, SHIPPED_NGINX_CONF, requireNginx, startNginx, type NginxProcess, type AccessLine } from '../helpers/nginx.js'

/** Generous bound for anything that should arrive "promptly" through the proxy, ms. */
const PROMPTLY_MS = 10_000

/** tap's options for every test here: a skip (with the install command) when nginx is missing outside CI. */
// Spread into a fresh object per test ({ ...skip }): tap keeps a test's options object as its own
// (it writes the test's job id into it), so tests running at once must not share one.
const skip = NGINX_SKIP === false ? {} : { skip: NGINX_SKIP }

/** Starts the daemon with `config` (default: one fixture upstream), then nginx in front of it. */
async function behindNginx (t: Test, config: Record<string, unknown> = {}, options: { port?: number } = {}): Promise<{ daemon: DaemonProcess, nginx: NginxProcess }> {
  requireNginx() // before the daemon: under CI a missing nginx fails at once
  const daemon = await startDaemon(t, { upstreams: { fixture: fixtureCommand() }, ...config })
  // Its upstreams ready too (bounded): the daemon serves after 5 s whatever they do, and on a loaded
  // machine a first call could meet a fixture still connecting (-31000).
  await daemonReady(daemon.base)
  const nginx = await startNginx(t, new URL(daemon.base).host, options)
  return { daemon, nginx }
}

/**
 * Three tests at a time: the cases with a daemon and nginx of their own share nothing (own ports,
 * temp prefixes, fixture logs), and most of each is waiting on process starts, streams and
 * nginx's log; the cases on the shared daemon take turns ({@link sharedBehindNginx}).
 */
t.jobs = 3

/** The end of the last shared-daemon case to have begun (teardowns included): the next one's turn. */
let sharedTurn: Promise<void> = Promise.resolve()

/**
 * The default daemon (one fixture upstream, daemon.trustProxy naming nginx as docs/deployment.md ›
 * Client addresses asks) behind nginx, shared by the cases that need nothing of
 * their own config (the v1 and v2 clients, every location), which run one at a time: sessions
 * keep them apart, and each reads nginx's access log from where it began. Started on first use,
 * stopped when the file ends: three daemon, fixture and nginx starts fewer. Call it first in the
 * case: it waits until the case before on the shared daemon has ended, its teardowns included
 * (the turn is released by this case's first teardown, which tap runs last).
 */
let shared: ReturnType<typeof behindNginx> | undefined
async function sharedBehindNginx (test: Test): Promise<{ daemon: DaemonProcess, nginx: NginxProcess, since: number }> {
  requireNginx()
  const previous = sharedTurn
  let release: () => void = () => {}
  sharedTurn = new Promise(resolve => { release = resolve })
  test.teardown(() => { release() })
  await previous
  shared ??= behindNginx(t, { daemon: { trustProxy: ['127.0.0.1'] } })
  const { daemon, nginx } = await shared
  return { daemon, nginx, since: nginx.accessLog().length }
}

/** Resolves with `promise`, or rejects after `ms` naming `what`. */
async function within<T> (promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const bound = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms) })
  try {
    return await Promise.race([promise, bound])
  } finally {
    clearTimeout(timer)
  }
}

function textOf (result: unknown): string {
  const content = (result as { content?: Array<{ type: string, text?: string }> }).content ?? []
  return content.filter(c => c.type === 'text').map(c => c.text ?? '').join('')
}

interface PlainReply { status: number, headers: Record<string, string | string[] | undefined>, text: string }

/** One HTTP request with node:http (no pooling), from `localAddress` when given (a client address of our choosing on 127/8). */
async function plainRequest (url: string, options: { method?: string, headers?: Record<string, string>, body?: string, localAddress?: string } = {}): Promise<PlainReply> {
  return await new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? 'GET', headers: options.headers, agent: false, localAddress: options.localAddress }, res => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { text += chunk })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(options.body)
  })
}

/** Waits (bounded) for nginx's access-log line of `method uri`, the first after line `since`, and returns it. */
async function accessLine (nginx: NginxProcess, method: string, uri: string, since = 0): Promise<AccessLine> {
  return await pollUntil(`nginx access log line for ${method} ${uri}`, () => nginx.accessLog().slice(since).find(l => l.method === method && l.uri === uri))
}

const PING = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' })

/**
 * Sends only the head of a POST /mcp announcing `contentLength` bytes (`Connection: close`) and
 * reads the reply, up to its Content-Length (or until the server closes, without one): what a
 * server says from the Content-Length alone, without the client having to push megabytes into a
 * socket the server is about to close. Not waiting for the close spares nginx's lingering close.
 */
async function announceOnly (base: string, contentLength: number): Promise<{ status: number, text: string }> {
  const url = new URL(base)
  return await new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let settled = false
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.write(`POST /mcp HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${contentLength}\r\nConnection: close\r\n\r\n`)
    })
    const reply = (): { status: number, text: string, complete: boolean } => {
      const raw = Buffer.concat(chunks)
      const split = raw.indexOf('\r\n\r\n')
      const head = raw.subarray(0, split < 0 ? raw.length : split).toString('utf8')
      const body = split < 0 ? Buffer.alloc(0) : raw.subarray(split + 4)
      const length = /^content-length:\s*(\d+)\s*$/im.exec(head)
      return { status: Number(head.split(' ')[1]), text: body.toString('utf8'), complete: split >= 0 && length !== null && body.length >= Number(length[1]) }
    }
    const finish = (): void => {
      if (settled) return
      settled = true
      const { status, text } = reply()
      resolve({ status, text })
      socket.destroy()
    }
    socket.on('data', chunk => { chunks.push(chunk); if (reply().complete) finish() })
    socket.on('error', error => { if (!settled) reject(error) })
    socket.on('close', finish)
  })
}

/* ------------------------------------------------------------------- legacy 2025-11-25 */

t.test('deploy/nginx/legacy-session-call-list-changed-delete', { ...skip }, async t => {
  const { daemon, nginx, since } = await sharedBehindNginx(t)
  const transport = new TransportV1(new URL(`${nginx.base}/mcp`))
  const client = new ClientV1({ name: 'nginx-v1', version: '1.0.0' })
  t.teardown(async () => { await client.close() })
  let onChanged: () => void = () => {}
  const changed = new Promise<void>(resolve => { onChanged = resolve })
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => { onChanged() })
  await client.connect(transport)
  t.equal(transport.protocolVersion, '2025-11-25', 'initialize negotiated 2025-11-25 through the proxy')
  const sid = transport.sessionId
  t.type(sid, 'string', 'Mcp-Session-Id came back through nginx')
  t.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'through nginx' } })), 'through nginx')

  // The client opens its GET stream after notifications/initialized: wait until it is open at mcpx.
  await pollUntil('the client\'s GET stream', async () => {
    const probe = await fetch(`${nginx.base}/mcp`, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': String(sid), 'mcp-protocol-version': '2025-11-25' } })
    await probe.body?.cancel()
    return probe.status === 409
  })
  await client.callTool({ name: 'add_tool', arguments: { name: 'added_behind_nginx' } })
  await within(changed, PROMPTLY_MS, 'notifications/tools/list_changed on the GET stream')
  t.pass('notifications/tools/list_changed arrived on the GET stream')
  t.ok((await client.listTools()).tools.some(tool => tool.name === 'added_behind_nginx'), 'and the new tool is listed')

  await transport.terminateSession()
  t.equal(transport.sessionId, undefined, 'DELETE succeeded')
  const del = await accessLine(nginx, 'DELETE', '/mcp', since)
  t.equal(del.status, 204, 'nginx passed mcpx\'s 204 on')
  t.equal(del.upstreamAddr, new URL(daemon.base).host, 'answered by mcpx')
  const after = await fetch(`${nginx.base}/mcp`, { method: 'POST', headers: legacyHeaders({ 'mcp-session-id': String(sid), 'mcp-protocol-version': '2025-11-25' }), body: PING })
  t.equal(after.status, 404, 'the session is gone')
})

t.test('deploy/nginx/legacy-keep-alive-comments-not-buffered', { ...skip }, async t => {
  // A keep-alive every 200 ms; a buffering proxy would hold these 14-byte comments back for minutes.
  const { nginx } = await behindNginx(t, { transport: { sseKeepAlive: 200 } })
  const sid = await fetchSession(nginx.base, '2025-11-25')
  const abort = new AbortController()
  t.teardown(() => abort.abort())
  const opened = fetch(`${nginx.base}/mcp`, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' }, signal: abort.signal })
  const res = await within(opened, PROMPTLY_MS, 'response head of the GET stream')
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'text/event-stream')
  const stream = new SseReader(res)
  const comments = (): number => stream.raw.match(/^: keep-alive\n\n/gm)?.length ?? 0
  // Each of four comments in a row arrives within 5 s (25 intervals) of the one before, while
  // nothing else is sent on the stream.
  for (let n = 1; n <= 4; n++) await stream.until(`keep-alive comment ${n}`, () => comments() >= n, 5_000)
  t.ok(comments() >= 4, 'four keep-alive comments arrived one by one')
  t.same(stream.messages, [], 'nothing else was sent')
  t.notOk(stream.ended, 'the stream is still open')
})

/* ------------------------------------------------------------------------ 2026-07-28 */

t.test('deploy/nginx/modern-tools-call-mirrored-headers', { ...skip }, async t => {
  const { nginx } = await sharedBehindNginx(t)
  const client = new ClientV2({ name: 'nginx-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
  await client.connect(new TransportV2(new URL(`${nginx.base}/mcp`)))
  t.teardown(async () => { await client.close() })
  t.equal(client.getProtocolEra(), 'modern')
  // `headers` declares x-mcp-header parameters: the client sends MCP-Protocol-Version, Mcp-Method,
  // Mcp-Name and three Mcp-Param-* headers (one Base64-wrapped). mcpx refuses the call (400) if any
  // is missing or differs from the body, so a result means all of them crossed nginx intact.
  const args = { region: 'eu west 1', count: 7, target: { zone: 'Zürich' } }
  const result = await client.callTool({ name: 'headers', arguments: args })
  t.notOk(result.isError, 'served')
  t.same(JSON.parse((result.content as Array<{ text: string }>)[0].text), args)
  t.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'modern via nginx' } })), 'modern via nginx')

  // The control: behind the same proxy, a header that disagrees with the body is still mcpx's 400.
  const body = modernBody(5, 'tools/call', { name: 'headers', arguments: { region: 'eu' } })
  const bad = await post(nginx.base, body, modernHeaders('tools/call', 'headers', { 'mcp-param-region': 'us' }))
  t.equal(bad.status, 400)
  t.match(bad.json, { jsonrpc: '2.0', id: 5, error: { code: -32_020 } }, 'HeaderMismatch with the request id')
  const noName = await post(nginx.base, body, modernHeaders('tools/call', undefined, { 'mcp-param-region': 'eu' }))
  t.equal(noName.status, 400)
  t.match(noName.json, { id: 5, error: { code: -32_020 } }, 'a missing Mcp-Name too')
})

t.test('deploy/nginx/modern-subscriptions-listen', { ...skip }, async t => {
  const { nginx } = await sharedBehindNginx(t)
  const client = new ClientV2({ name: 'nginx-v2-listen', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
  await client.connect(new TransportV2(new URL(`${nginx.base}/mcp`)))
  t.teardown(async () => { await client.close() })
  let onChanged: () => void = () => {}
  const changed = new Promise<void>(resolve => { onChanged = resolve })
  client.setNotificationHandler('notifications/tools/list_changed', () => { onChanged() })
  const subscription = await within(client.listen({ toolsListChanged: true }), PROMPTLY_MS, 'subscriptions/listen acknowledgement')
  t.same(subscription.honoredFilter, { toolsListChanged: true }, 'acknowledged through nginx')
  await client.callTool({ name: 'add_tool', arguments: { name: 'listened_behind_nginx' } })
  await within(changed, PROMPTLY_MS, 'notifications/tools/list_changed on the listen stream')
  t.pass('notifications/tools/list_changed arrived on the listen stream')
  await subscription.close()
  t.equal(await subscription.closed, 'local')
})

/* ------------------------------------------------------------------------- disconnect */

t.test('deploy/nginx/disconnect-cancels-the-upstream-call', { ...skip }, async t => {
  const log = fixtureLogPath()
  // Keep-alive comments far apart: nginx must notice the client left by itself, not on a failed write.
  const { daemon, nginx } = await behindNginx(t, { transport: { sseKeepAlive: '10m' }, upstreams: { fixture: { ...fixtureCommand(), env: { FIXTURE_LOG: log } } } })
  const slowCall = (id: string, meta: Record<string, unknown>): string => modernBody(id, 'tools/call', { name: 'slow', arguments: { ms: 60_000, steps: 600 } }, meta)
  const startedOf = async (n: number): Promise<FixtureEvent> => await pollUntil(`the fixture to start slow call ${n}`, () => fixtureEvents(log).filter(e => e.event === 'started')[n - 1])
  const cancelledFor = async (started: FixtureEvent): Promise<FixtureEvent> =>
    await pollUntil('the fixture to record the cancellation', () => fixtureEvents(log).find(e => e.event === 'cancelled' && e.id === started.id), 15_000)

  // 1. A silent call (no progress token: nothing is written until the result).
  const silent = new AbortController()
  const pending = fetch(`${nginx.base}/mcp`, { method: 'POST', headers: modernHeaders('tools/call', 'slow'), body: slowCall('silent', modernMeta()), signal: silent.signal }).catch(() => 'aborted')
  const first = await startedOf(1)
  silent.abort()
  t.equal(await pending, 'aborted')
  await cancelledFor(first)
  t.pass('the upstream call itself was cancelled')

  // 2. A call that streams progress through nginx while it runs.
  const streaming = new AbortController()
  const res = await within(fetch(`${nginx.base}/mcp`, {
    method: 'POST',
    headers: modernHeaders('tools/call', 'slow'),
    body: slowCall('streaming', modernMeta({}, { progressToken: 'p-nginx' })),
    signal: streaming.signal
  }), PROMPTLY_MS, 'response head of the streaming call')
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'text/event-stream')
  const stream = new SseReader(res)
  const progress = await stream.message('a progress notification', m => m.method === 'notifications/progress', PROMPTLY_MS)
  t.match(progress, { params: { progressToken: 'p-nginx' } }, 'progress streams through nginx while the call runs')
  const second = await startedOf(2)
  streaming.abort()
  await cancelledFor(second)
  t.pass('that upstream call was cancelled too')

  const calls = (): Array<Record<string, unknown>> => daemon.lines.filter(l => l.msg === 'mcp request' && l.rpcMethod === 'tools/call')
  const aborted = await pollUntil('two tools/call log lines', () => calls().length >= 2 && calls())
  t.match(aborted, [{ status: 499, aborted: true }, { status: 499, aborted: true }], 'mcpx saw both clients go away')
})

/* ----------------------------------------------------------------------------- Origin */

t.test('deploy/nginx/origin-refused-until-allowed', { ...skip }, async t => {
  const port = await freePort(PUBLIC_HOST)
  const origin = `http://${PUBLIC_HOST}:${port}`
  const initialize = JSON.stringify(initializeBody('2025-11-25'))

  const before = await behindNginx(t, {}, { port })
  const refused = await fetch(`${before.nginx.base}/mcp`, { method: 'POST', headers: legacyHeaders({ origin }), body: initialize })
  t.equal(refused.status, 403, 'the public origin is not allowed by default')
  t.same(await refused.json(), { jsonrpc: '2.0', error: { code: -32_600, message: 'Forbidden: Origin not allowed' } })
  const noOrigin = await fetch(`${before.nginx.base}/mcp`, { method: 'POST', headers: legacyHeaders(), body: initialize })
  t.equal(noOrigin.status, 200, 'a client without Origin is served')
  await noOrigin.text()
  await before.nginx.stop()

  const after = await behindNginx(t, { transport: { allowedOrigins: [origin] } }, { port })
  const preflight = await fetch(`${after.nginx.base}/mcp`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, mcp-protocol-version' } })
  t.equal(preflight.status, 204, 'the CORS preflight reaches mcpx')
  t.equal(preflight.headers.get('access-control-allow-origin'), origin)
  const accepted = await fetch(`${after.nginx.base}/mcp`, { method: 'POST', headers: legacyHeaders({ origin }), body: initialize })
  t.equal(accepted.status, 200, 'listed in transport.allowedOrigins: accepted')
  t.equal(accepted.headers.get('access-control-allow-origin'), origin)
  t.match(accepted.headers.get('access-control-expose-headers') ?? '', /mcp-session-id/i, 'the browser may read Mcp-Session-Id')
  t.type(accepted.headers.get('mcp-session-id'), 'string')
  await accepted.text()
})

/* ------------------------------------------------------------------------ body limits */

t.test('deploy/nginx/body-limits-agree-json-413', { ...skip }, async t => {
  const maxBodyBytes = CONFIG_SCHEMA.properties.transport.properties.maxBodyBytes.default
  const shipped = /^\s*client_max_body_size\s+(\d+)([kmg]?);/m.exec(readFileSync(SHIPPED_NGINX_CONF, 'utf8'))
  if (shipped === null) throw new Error('docker/nginx.conf sets no client_max_body_size')
  const nginxBytes = Number(shipped[1]) * ({ '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 } as Record<string, number>)[shipped[2]]
  t.equal(nginxBytes, maxBodyBytes, 'client_max_body_size equals transport.maxBodyBytes\'s default')

  // mcpx answers a body it refuses once the rest has arrived (lib/http/drain.ts), waiting at most
  // transport.bodyTimeout for it; announceOnly below sends none, so a short one keeps this case short.
  const { daemon, nginx } = await behindNginx(t, { transport: { bodyTimeout: '5s' } })
  // A ping padded with trailing whitespace (valid JSON) to exactly `size` bytes.
  const padded = (size: number): string => PING + ' '.repeat(size - PING.length)
  const atLimit = await post(nginx.base, padded(maxBodyBytes), legacyHeaders())
  t.equal(atLimit.status, 200, 'a body of exactly the limit passes both')
  t.match(atLimit.json, { id: 1, result: {} })

  // nginx writes a request's log line after the reply: wait for this one's, so the next is told apart.
  const logged = (await accessLine(nginx, 'POST', '/mcp'), nginx.accessLog().length)
  const overNginx = await post(nginx.base, padded(maxBodyBytes + 1), legacyHeaders())
  t.equal(overNginx.status, 413, 'one byte over: 413 through nginx')
  t.same(overNginx.json, { jsonrpc: '2.0', error: { code: -32_600, message: `Request body larger than ${maxBodyBytes} bytes` } }, 'a JSON-RPC error body')
  t.match(overNginx.headers.get('content-type'), /^application\/json/)
  t.equal((await accessLine(nginx, 'POST', '/mcp', logged)).upstreamAddr, '-', 'nginx refused it first, without asking mcpx')
  // mcpx's own answer to the same Content-Length (both refuse on the header, before the body).
  const overDirect = await announceOnly(daemon.base, maxBodyBytes + 1)
  t.equal(overDirect.status, 413, 'mcpx refuses the same size itself')
  t.equal(overNginx.text, overDirect.text, 'nginx\'s body is byte for byte the one mcpx sends')
  t.same(await announceOnly(nginx.base, maxBodyBytes + 1), overDirect, 'announced only: the same 413 from nginx')

  // A chunked body (no Content-Length) is counted as it arrives: refused at the limit too.
  const chunks = [padded(maxBodyBytes).slice(0, maxBodyBytes / 2), padded(maxBodyBytes).slice(maxBodyBytes / 2), ' ']
  const chunked = await fetch(`${nginx.base}/mcp`, {
    method: 'POST',
    headers: legacyHeaders(),
    body: new ReadableStream({ pull (controller) { const next = chunks.shift(); if (next === undefined) controller.close(); else controller.enqueue(new TextEncoder().encode(next)) } }),
    duplex: 'half'
  } as RequestInit)
  t.equal(chunked.status, 413, 'a chunked body over the limit: 413')
  t.equal(await chunked.text(), overDirect.text)

  // Lower mcpx's limit below nginx's: then mcpx refuses first, and its 413 passes through unchanged.
  const lower = await behindNginx(t, { transport: { maxBodyBytes: 1024 } })
  const refusedByMcpx = await post(lower.nginx.base, padded(2048), legacyHeaders())
  t.equal(refusedByMcpx.status, 413)
  t.same(refusedByMcpx.json, { jsonrpc: '2.0', error: { code: -32_600, message: 'Request body larger than 1024 bytes' } })
  t.equal((await accessLine(lower.nginx, 'POST', '/mcp')).upstreamAddr, new URL(lower.daemon.base).host, 'this one was mcpx\'s answer')
})

/* -------------------------------------------------------------------------- locations */

t.test('deploy/nginx/every-location-reaches-mcpx', { ...skip }, async t => {
  const { daemon, nginx, since } = await sharedBehindNginx(t)
  const mcpxAddr = new URL(daemon.base).host

  // Proxied to mcpx, whatever mcpx answers (here, without auth.oauth, the metadata is its 404; with
  // it, see oauth-metadata-challenge-and-sdk-flow; /status is the page, for a client on nginx's host):
  // nginx's access log names mcpx as the upstream that answered, and nginx passed its status on.
  const proxied: Array<[string, string]> = [
    ['POST', '/mcp/no-such-server'],
    ['GET', '/.well-known/oauth-protected-resource'],
    ['GET', '/.well-known/oauth-protected-resource/mcp'],
    ['GET', '/.well-known/oauth-protected-resource/mcp/support'],
    ['GET', '/status'],
    ['GET', '/status.json']
  ]
  const replies = new Map<string, PlainReply>()
  for (const [method, path] of proxied) {
    const res = await plainRequest(`${nginx.base}${path}`, { method, headers: method === 'POST' ? legacyHeaders() : {}, ...(method === 'POST' ? { body: PING } : {}), localAddress: '127.0.0.1' })
    replies.set(path, res)
    const line = await accessLine(nginx, method, path, since)
    t.equal(line.upstreamAddr, mcpxAddr, `${method} ${path} is proxied to mcpx`)
    t.equal(String(line.status), line.upstreamStatus, `${method} ${path}: nginx passed mcpx's ${res.status} on`)
  }
  // A client on nginx's host reads the status page: with trustProxy, mcpx judges the address nginx saw (127.0.0.1).
  for (const path of ['/status', '/status.json']) t.equal(replies.get(path)?.status, 200, `${path}: served to a client on nginx's host`)
  // An unknown /mcp/<name> is mcpx's JSON-RPC 404, not nginx's page.
  const curated = replies.get('/mcp/no-such-server')
  t.equal(curated?.status, 404)
  t.match(JSON.parse(curated?.text ?? 'null'), { jsonrpc: '2.0', error: { code: Number } })

  // /status and /status.json: only clients on nginx's own host (127.0.0.1 here) get through.
  for (const path of ['/status', '/status.json']) {
    const outside = await plainRequest(`${nginx.base}${path}`, { localAddress: '127.0.0.3' })
    t.equal(outside.status, 403, `${path} from another address: refused by nginx`)
  }
  t.equal(nginx.accessLog().slice(since).filter(l => l.uri.startsWith('/status') && l.upstreamAddr !== '-').length, 2, 'the refused ones never reached mcpx')

  // Liveness and readiness for the load balancer.
  const health = await fetch(`${nginx.base}/healthz`)
  t.equal(health.status, 200)
  t.same(await health.json(), { status: 'ok' })
  const ready = await fetch(`${nginx.base}/readyz`)
  t.equal(ready.status, 200)
  t.match(await ready.json(), { status: 'ready', upstreams: [{ name: 'fixture', state: 'ready' }] })
  // nginx passes the client's Host on: under a public name mcpx answers readiness only, no upstream detail.
  const rebound = await plainRequest(`${nginx.base}/readyz`, { headers: { host: 'mcp.example.com' } })
  t.equal(rebound.status, 200, 'a public Host still learns readiness')
  t.same(JSON.parse(rebound.text), { status: 'ready' }, 'and nothing else')

  // Not served through the proxy.
  for (const path of ['/metrics', '/', '/index.html']) {
    const res = await fetch(`${nginx.base}${path}`)
    t.equal(res.status, 404, `${path}: 404`)
    await res.text()
    t.equal((await accessLine(nginx, 'GET', path, since)).upstreamAddr, '-', `${path} never reaches mcpx`)
  }
})

/* ------------------------------------------------------------------------------ OAuth */

t.test('deploy/nginx/oauth-metadata-challenge-and-sdk-flow', { ...skip }, async t => {
  // mcpx's auth.oauth.resource is the proxy's public URL (config, never guessed from Host).
  const as = await startAuthServer(t)
  const port = await freePort(PUBLIC_HOST)
  const resource = `http://${PUBLIC_HOST}:${port}/mcp`
  const prm = `http://${PUBLIC_HOST}:${port}/.well-known/oauth-protected-resource/mcp`
  const { nginx } = await behindNginx(t, { auth: { oauth: { issuer: as.issuer, resource, requiredScopes: ['mcp:tools'], scopesSupported: SCOPES } } }, { port })

  // The challenge comes back through nginx, pointing at the metadata under the public origin.
  const challenged = await fetch(`${nginx.base}/mcp`, { method: 'POST', headers: legacyHeaders(), body: JSON.stringify(initializeBody('2025-11-25')) })
  t.equal(challenged.status, 401)
  t.equal(challenged.headers.get('www-authenticate'), `Bearer resource_metadata="${prm}", scope="mcp:tools"`)
  t.match(await challenged.json(), { jsonrpc: '2.0', error: { code: -32_600 } })
  for (const url of [`${nginx.base}/.well-known/oauth-protected-resource`, prm]) {
    const res = await fetch(url)
    t.equal(res.status, 200, `${url}: through nginx, no token`)
    t.match(await res.json(), { resource, authorization_servers: [as.issuer], scopes_supported: SCOPES, bearer_methods_supported: ['header'] }, 'the public resource URL')
  }

  // The official clients follow the 401 to the metadata and the authorization server and come
  // back with a token whose audience is the proxy's public URL (RFC 8707 resource).
  const credentials = { clientId: CLIENTS.alice.clientId, clientSecret: CLIENTS.alice.clientSecret, scope: 'mcp:tools', expectedIssuer: as.issuer }
  const v1 = new ClientV1({ name: 'nginx-oauth-v1', version: '1.0.0' })
  t.teardown(async () => { await v1.close() })
  await v1.connect(new TransportV1(new URL(resource), { authProvider: new ClientCredentialsV1(credentials) }))
  t.equal(textOf(await v1.callTool({ name: 'echo', arguments: { text: 'v1 with a token' } })), 'v1 with a token')
  const v2 = new ClientV2({ name: 'nginx-oauth-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
  t.teardown(async () => { await v2.close() })
  await v2.connect(new TransportV2(new URL(resource), { authProvider: new ClientCredentialsV2(credentials) }))
  t.equal(textOf(await v2.callTool({ name: 'echo', arguments: { text: 'v2 with a token' } })), 'v2 with a token')
})

/* ------------------------------------------------------------------- client addresses */

t.test('deploy/nginx/trust-proxy-logs-the-client-address', { ...skip }, async t => {
  // The client connects from 127.0.0.3; nginx reaches mcpx from 127.0.0.1 and appends 127.0.0.3 to
  // X-Forwarded-For, after whatever the client wrote there itself (a forged 203.0.113.7).
  const client = '127.0.0.3'
  const forged = { 'x-forwarded-for': '203.0.113.7' }
  const remoteOf = async (daemon: DaemonProcess, base: string): Promise<unknown> => {
    const since = daemon.lines.length
    const res = await plainRequest(`${base}/mcp`, { method: 'POST', headers: legacyHeaders(forged), body: PING, localAddress: client })
    t.equal(res.status, 200)
    return (await daemon.waitForLine(l => l.msg === 'mcp request', since)).remoteAddress
  }

  const trusting = await behindNginx(t, { daemon: { trustProxy: ['127.0.0.1'] } })
  t.equal(await remoteOf(trusting.daemon, trusting.nginx.base), client, 'trustProxy: the client nginx saw, not nginx and not the forged address')
  t.equal(await remoteOf(trusting.daemon, trusting.daemon.base), client, 'a client that is not a listed proxy: its X-Forwarded-For is ignored')

  const plain = await behindNginx(t)
  t.equal(await remoteOf(plain.daemon, plain.nginx.base), '127.0.0.1', 'off by default: the proxy\'s address')
  // Without trustProxy the client behind nginx is unknown, though nginx connects from loopback: no
  // operator detail (docs/operating.md › Who may read the operator endpoints).
  const ready = await plainRequest(`${plain.nginx.base}/readyz`)
  t.same(JSON.parse(ready.text), { status: 'ready' }, 'no trustProxy: /readyz through nginx tells readiness only')
  const status = await plainRequest(`${plain.nginx.base}/status.json`, { localAddress: '127.0.0.1' })
  t.equal(status.status, 403, 'no trustProxy: /status.json through nginx is mcpx\'s 403')
})
