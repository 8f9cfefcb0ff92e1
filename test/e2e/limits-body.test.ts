/**
 * A body over transport.maxBodyBytes on a REAL daemon under load: each
 * 8 MiB `tools/call` on a live legacy session is answered 413 with an id-less JSON-RPC error and
 * `Connection: close`, and the client reads that answer: no EPIPE, no reset, even though the daemon
 * answers before the client has finished sending.
 */
import t from 'tap'
import { request, Agent } from 'node:http'
import { startDaemon } from '../helpers/daemon.js'
import { fixtureCommand } from '../helpers/fixture.js'
import { fetchSession } from '../helpers/legacy.js'

/** The body sent: 8 MiB, twice the default limit (4 MiB). */
const BODY_BYTES = 8 * 1024 * 1024
const POSTS = 200
/** POSTs in flight at once. */
const CONCURRENCY = 8

const daemon = await startDaemon(t, { upstreams: { fixture: fixtureCommand() } })
const url = new URL('/mcp', daemon.base)

/** One valid JSON-RPC tools/call padded to BODY_BYTES with an argument. */
function oversizedBody (): Buffer {
  const head = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"'
  const tail = '"}}}'
  return Buffer.from(head + 'x'.repeat(BODY_BYTES - head.length - tail.length) + tail)
}

interface Outcome { status?: number, connection?: string, body: string, error?: string }

/**
 * POSTs `body` (Content-Length, written in 64 KiB chunks as a client would) and reads the answer.
 * Any error on the request or the response (EPIPE, ECONNRESET…) is the outcome's `error`.
 */
async function postOversized (sid: string, body: Buffer, agent: Agent): Promise<Outcome> {
  return await new Promise(resolve => {
    const outcome: Outcome = { body: '' }
    let settled = false
    const settle = (): void => { if (!settled) { settled = true; resolve(outcome) } }
    const req = request(url, {
      method: 'POST',
      agent,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sid,
        'mcp-protocol-version': '2025-06-18',
        'content-length': String(body.length)
      }
    })
    req.on('error', error => { outcome.error ??= `${(error as NodeJS.ErrnoException).code ?? error.message}`; settle() })
    req.on('response', res => {
      outcome.status = res.statusCode
      outcome.connection = res.headers.connection
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { outcome.body += chunk })
      res.on('error', error => { outcome.error ??= `response: ${(error as NodeJS.ErrnoException).code ?? error.message}`; settle() })
      res.on('end', settle)
    })
    let offset = 0
    const CHUNK = 64 * 1024
    const write = (): void => {
      while (offset < body.length) {
        const next = body.subarray(offset, offset + CHUNK)
        offset += CHUNK
        if (!req.write(next)) { req.once('drain', write); return }
      }
      req.end()
    }
    write()
  })
}

t.test('limits/body/oversized-413-under-load', async t => {
  const sid = await fetchSession(daemon.base, '2025-06-18')
  const body = oversizedBody()
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY })
  t.teardown(() => agent.destroy())
  const outcomes: Outcome[] = []
  let next = 0
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < POSTS) {
      next++
      outcomes.push(await postOversized(sid, body, agent))
    }
  }))
  const failed = outcomes.filter(o => o.error !== undefined || o.status !== 413)
  t.same(failed.slice(0, 5), [], `every one of ${POSTS} oversized POSTs read as 413 (${failed.length} did not)`)
  const expected = { jsonrpc: '2.0', error: { code: -32_600, message: `Request body larger than ${4 * 1024 * 1024} bytes` } }
  t.same(outcomes.filter(o => o.status === 413 && JSON.stringify(JSON.parse(o.body)) !== JSON.stringify(expected)).length, 0, 'each with the id-less JSON-RPC error naming the limit')
  t.equal(outcomes.filter(o => o.connection?.toLowerCase() !== 'close').length, 0, 'each with Connection: close')
  // The session still works after the load.
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'echo', arguments: { text: 'still here' } } })
  })
  t.equal(res.status, 200, 'the session still serves a normal call')
})
