/**
 * Connection timeouts of the daemon (docs/security.md › Limits), against a REAL
 * daemon process with hostile peers on raw sockets: silent connections, a partial head, a
 * trickled body, an idle keep-alive connection. And what must NOT be cut: a long-running
 * tools/call and an open GET stream outlive every one of these bounds.
 *
 * The daemon runs with short bounds (head 1 s, body 2 s, keep-alive 1 s) so the peers are cut in
 * seconds; every wait is bounded generously (the machine is loaded): these are resource bounds,
 * not timing assertions.
 */
import t from 'tap'
import { connect, type Socket } from 'node:net'
import { startDaemon, readSse } from '../helpers/daemon.js'
import { fixtureCommand } from '../helpers/fixture.js'
import { modernHeaders, modernMeta } from '../helpers/app.js'
import { fetchSession } from '../helpers/legacy.js'

const HEADERS_TIMEOUT_MS = 1_000
const BODY_TIMEOUT_MS = 2_000
/** Longer than headersTimeout + bodyTimeout + the sweep interval: what must outlive them runs this long. */
const OUTLIVE_MS = 6_000
/** Generous bound for a peer to be cut (the bounds above are 1-3 s; the machine is loaded). */
const CUT_BOUND_MS = 20_000

// The peers' tests at once, on the one daemon: each waits out its own bound (1-6 s) on its own
// connections. The last two read what all of them left (counters, log lines): unbuffered, tap runs
// each alone once every test before it has ended.
t.jobs = 5

const daemon = await startDaemon(t, {
  transport: { headersTimeout: `${HEADERS_TIMEOUT_MS}ms`, bodyTimeout: `${BODY_TIMEOUT_MS}ms`, keepAliveTimeout: '1s', sseKeepAlive: '500ms' },
  upstreams: { fixture: fixtureCommand() }
})
const port = Number(new URL(daemon.base).port)

/** A raw connection to the daemon: every byte it received, and when it closed. */
interface RawPeer {
  socket: Socket
  received: () => string
  /** Resolves once the daemon closed (or reset) it; rejects after CUT_BOUND_MS. */
  closed: Promise<void>
}

function rawPeer (): RawPeer {
  const socket = connect(port, '127.0.0.1')
  const chunks: Buffer[] = []
  socket.on('data', chunk => chunks.push(chunk))
  socket.on('error', () => {})
  const closed = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the daemon kept the connection open for ${CUT_BOUND_MS} ms`)), CUT_BOUND_MS)
    socket.once('close', () => { clearTimeout(timer); resolve() })
  })
  t.teardown(() => socket.destroy())
  return { socket, received: () => Buffer.concat(chunks).toString('utf8'), closed }
}

/** Status line and JSON body of a raw HTTP/1.1 response. */
function parseRaw (text: string): { statusLine: string, body: unknown } {
  const head = text.indexOf('\r\n\r\n')
  return { statusLine: text.slice(0, text.indexOf('\r\n')), body: head < 0 ? undefined : JSON.parse(text.slice(head + 4)) }
}

const TIMEOUT_BODY = { jsonrpc: '2.0', error: { code: -32_600, message: 'Request Timeout: the request was not received in time' } }

t.test('all/limits/silent-connections-closed-within-headers-timeout', async t => {
  const peers = Array.from({ length: 500 }, rawPeer)
  await Promise.all(peers.map(async peer => await new Promise(resolve => peer.socket.once('connect', resolve))))
  const started = Date.now()
  await Promise.all(peers.map(async peer => await peer.closed))
  t.pass(`all 500 silent connections closed by the daemon, ${Date.now() - started} ms after the last connected (headersTimeout ${HEADERS_TIMEOUT_MS} ms)`)
  t.same(peers.filter(peer => peer.received() !== '').length, 0, 'a connection that sent nothing gets nothing back: it is just closed')
  const res = await fetch(`${daemon.base}/healthz`)
  t.equal(res.status, 200, 'the daemon still serves')
})

t.test('all/limits/partial-headers-408', async t => {
  const peer = rawPeer()
  peer.socket.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n`)
  await peer.closed
  const { statusLine, body } = parseRaw(peer.received())
  t.equal(statusLine, 'HTTP/1.1 408 Request Timeout', 'a head never finished is 408, not 400 "malformed HTTP request"')
  t.same(body, TIMEOUT_BODY, 'with an id-less JSON-RPC error body')
})

t.test('all/limits/trickled-body-408', async t => {
  const peer = rawPeer()
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x'.repeat(40) }, _meta: modernMeta() } })
  const head = Object.entries(modernHeaders('tools/call', 'echo')).map(([name, value]) => `${name}: ${value}\r\n`).join('')
  peer.socket.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${head}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n`)
  // One byte every 200 ms: the whole body would take far longer than CUT_BOUND_MS.
  let sent = 0
  const trickle = setInterval(() => { if (!peer.socket.destroyed && sent < body.length - 1) peer.socket.write(body[sent++]) }, 200)
  t.teardown(() => clearInterval(trickle))
  await peer.closed
  clearInterval(trickle)
  t.ok(sent < body.length - 1, `cut after ${sent} of ${body.length} bytes`)
  const { statusLine, body: reply } = parseRaw(peer.received())
  t.equal(statusLine, 'HTTP/1.1 408 Request Timeout', 'a body trickled past bodyTimeout is 408')
  t.same(reply, TIMEOUT_BODY, 'with an id-less JSON-RPC error body')
})

t.test('all/limits/idle-keep-alive-closed-after-keep-alive-timeout', async t => {
  const peer = rawPeer()
  peer.socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: keep-alive\r\n\r\n`)
  await peer.closed
  t.match(peer.received(), /^HTTP\/1\.1 200 OK\r\n/, 'the request was answered')
  t.notMatch(peer.received(), /408/, 'an idle keep-alive connection is closed without a 408')
})

t.test('all/limits/long-call-and-get-stream-outlive-timeouts', async t => {
  // An open legacy GET stream (keep-alive comments every 500 ms) …
  const sid = await fetchSession(daemon.base, '2025-11-25')
  const getAbort = new AbortController()
  t.teardown(() => getAbort.abort())
  const get = await fetch(`${daemon.base}/mcp`, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' }, signal: getAbort.signal })
  t.equal(get.status, 200, 'the GET stream opens')
  const stream = readSse(get)
  let streamEnded = false
  void stream.ended.then(() => { streamEnded = true })
  // … and a tools/call that runs longer than headersTimeout + bodyTimeout.
  const call = await fetch(`${daemon.base}/mcp`, {
    method: 'POST',
    headers: modernHeaders('tools/call', 'slow'),
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'slow', arguments: { ms: OUTLIVE_MS }, _meta: modernMeta() } })
  })
  t.equal(call.status, 200)
  const text = await call.text()
  t.match(text, new RegExp(`slept ${OUTLIVE_MS}`), `a ${OUTLIVE_MS} ms call gets its result`)
  t.notOk(streamEnded, `the GET stream is still open after ${OUTLIVE_MS} ms`)
  getAbort.abort()
  t.equal(await stream.ended, 'error', 'the stream ends only when the client leaves')
})

t.test('all/limits/connection-timeouts-counted', { buffered: false }, async t => {
  const text = await (await fetch(`${daemon.base}/metrics`)).text()
  const count = (kind: string): number => Number(new RegExp(`^mcpx_connection_timeouts_total\\{kind="${kind}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0)
  t.ok(count('silent') >= 500, `silent connections counted (${count('silent')})`)
  t.ok(count('head') >= 1, `the partial head counted (${count('head')})`)
  t.ok(count('body') >= 1, `the trickled body counted (${count('body')})`)
})

t.test('all/limits/timeouts-leave-no-error-in-the-log', { buffered: false }, async t => {
  const errors = daemon.lines.filter(line => typeof line.level === 'number' && line.level >= 50)
  t.same(errors, [], 'no error or fatal line was logged for the hostile peers')
})
