/**
 * The Accept header on a real /mcp (lib/protocol/accept.ts; seed › Streamable HTTP: responses are JSON or
 * SSE as Accept allows): q=0 is "not acceptable", and media types match exactly or by wildcard.
 */
import t from 'tap'
import { listen, modernHeaders, modernMeta, legacyHeaders } from '../helpers/app.js'
import { modernBody, post } from '../helpers/modern-wire.js'

const { base } = await listen(t)

/** A modern tools/call of the fixture's `slow` tool, which sends progress before its result. */
const slowCall = (id: number): string => modernBody(id, 'tools/call', { name: 'slow', arguments: { ms: 100, steps: 2 } }, modernMeta({}, { progressToken: `p${id}` }))

t.test('2026-07-28/http/accept-sse-q-zero-gets-json', async t => {
  const reply = await post(base, slowCall(1), modernHeaders('tools/call', 'slow', { accept: 'application/json, text/event-stream;q=0' }))
  t.equal(reply.status, 200)
  t.match(reply.headers.get('content-type'), /^application\/json/, 'one JSON body, no event stream')
  t.equal((reply.json as { id: number }).id, 1)
  const streamed = await post(base, slowCall(2), modernHeaders('tools/call', 'slow', { accept: 'application/json, text/event-stream' }))
  t.equal(streamed.headers.get('content-type'), 'text/event-stream', 'the same call with SSE acceptable streams its progress')
})

t.test('all/http/accept-jsonx-is-not-json', async t => {
  const modern = await post(base, modernBody(1, 'tools/list'), modernHeaders('tools/list', undefined, { accept: 'application/jsonx' }))
  t.equal(modern.status, 406)
  t.equal((modern.json as { error: { code: number } }).error.code, -32_600)
  const legacy = await post(base, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }), legacyHeaders({ accept: 'application/jsonx' }))
  t.equal(legacy.status, 406)
})

t.test('all/http/accept-nothing-acceptable-is-406', async t => {
  const refused = await post(base, modernBody(1, 'tools/list'), modernHeaders('tools/list', undefined, { accept: 'application/json;q=0, text/event-stream;q=0' }))
  t.equal(refused.status, 406)
  const served = await post(base, modernBody(2, 'tools/list'), modernHeaders('tools/list', undefined, { accept: 'text/*' }))
  t.equal(served.status, 200, 'text/* admits text/event-stream: no 406')
})
