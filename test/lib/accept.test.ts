/**
 * Unit tests of lib/protocol/accept, the one Accept reader (RFC 9110 §12.5.1; seed › Streamable HTTP:
 * responses are JSON or SSE as Accept allows). No Fastify.
 */
import t from 'tap'
import { readAccept } from '../../lib/protocol/accept.js'

t.test('all/http/accept-q-zero-is-not-acceptable', async t => {
  t.strictSame(readAccept('application/json, text/event-stream;q=0'), { json: true, sse: false, refused: false }, 'no stream for a q=0 event-stream')
  t.strictSame(readAccept('application/json;q=0, text/event-stream'), { json: false, sse: true, refused: false })
  t.strictSame(readAccept('application/json;q=0, text/event-stream;q=0'), { json: false, sse: false, refused: true })
  t.strictSame(readAccept('application/json;q=0, */*'), { json: false, sse: false, refused: false }, 'the most specific range decides for JSON; */* still admits SSE')
  t.strictSame(readAccept('text/event-stream; q=0.000, application/json; Q=0.5'), { json: true, sse: false, refused: false })
})

t.test('all/http/accept-exact-media-types', async t => {
  t.strictSame(readAccept('application/jsonx'), { json: false, sse: false, refused: true }, 'application/jsonx is not application/json')
  t.strictSame(readAccept('application/json-seq, text/event-streams'), { json: false, sse: false, refused: true })
  t.strictSame(readAccept('Application/JSON'), { json: true, sse: false, refused: false }, 'media types compare case-insensitively')
  t.strictSame(readAccept('application/json; charset=utf-8'), { json: true, sse: false, refused: false }, 'parameters other than q are ignored')
  t.strictSame(readAccept('text/event-stream'), { json: false, sse: true, refused: false })
  t.strictSame(readAccept(['text/html', 'application/json']), { json: true, sse: false, refused: false }, 'repeated headers are one list')
  for (const accept of ['text/html', 'image/png', 'application/xml, text/plain', 'json', '*']) t.equal(readAccept(accept).refused, true, accept)
})

t.test('all/http/accept-wildcards', async t => {
  t.strictSame(readAccept('*/*'), { json: true, sse: false, refused: false }, 'a wildcard admits, but never asks for a stream')
  t.strictSame(readAccept('application/*'), { json: true, sse: false, refused: false })
  t.strictSame(readAccept('text/*'), { json: false, sse: false, refused: false }, 'text/* admits text/event-stream (no 406)')
  t.strictSame(readAccept('text/*;q=0, application/xml'), { json: false, sse: false, refused: true })
  t.strictSame(readAccept('*/*;q=0.1, text/event-stream'), { json: true, sse: true, refused: false })
})

t.test('all/http/accept-absent-admits-json', async t => {
  for (const accept of [undefined, '', '  ']) t.strictSame(readAccept(accept), { json: true, sse: false, refused: false }, String(accept))
})
