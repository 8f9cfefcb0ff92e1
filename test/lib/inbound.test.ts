/**
 * Unit tests of lib/protocol/inbound: a /mcp request, or a stdio line, classified once (seed › "Which era a POST
 * belongs to"; seed › stdio, every revision; DIGEST §6a Eras). No Fastify.
 */
import t from 'tap'
import { classifyBodiless, classifyMessage, classifyPost, eraOfInbound, requestIdOf } from '../../lib/protocol/inbound.js'
import { parseBody } from '../../lib/protocol/jsonrpc.js'

const META = 'io.modelcontextprotocol/protocolVersion'
const post = (body: unknown, headers: Record<string, string> = {}): ReturnType<typeof classifyPost> =>
  classifyPost({ headers, parsed: parseBody(Buffer.from(typeof body === 'string' ? body : JSON.stringify(body))) })

t.test('all/era/post-classified-once-with-its-facts', async t => {
  const modern = post({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', _meta: { [META]: '2026-07-28' } } })
  t.match(modern, { kind: 'message', era: 'modern', id: 7, method: 'tools/call', name: 'echo', bodyRevision: '2026-07-28', logMethod: 'tools/call', logRevision: '2026-07-28', item: { kind: 'request' } })
  const init = post({ jsonrpc: '2.0', id: 'i', method: 'initialize', params: { protocolVersion: '2025-06-18' } })
  t.match(init, { kind: 'message', era: 'legacy', id: 'i', logRevision: '2025-06-18', bodyRevision: undefined })
  t.match(post({ jsonrpc: '2.0', id: 1, result: {} }), { kind: 'message', era: 'legacy', id: undefined, logMethod: 'response', item: { kind: 'response' } })
  t.match(post({ jsonrpc: '2.0', method: 'notifications/initialized' }), { kind: 'message', id: undefined, item: { kind: 'notification' } })
  t.match(post({ jsonrpc: '1.0', id: 3, method: 'ping' }), { kind: 'message', id: 3, method: 'ping', item: { kind: 'invalid' } }, 'an invalid message keeps its readable id')
})

t.test('all/era/header-alone-makes-a-post-modern', async t => {
  t.match(post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-protocol-version': '2026-07-28' }), { era: 'modern', headerRevision: '2026-07-28' })
  t.match(post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-protocol-version': '2099-01-01' }), { era: 'modern' }, 'an unserved modern date is still modern (-32022 later)')
  t.match(post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-protocol-version': '2025-06-18' }), { era: 'legacy', headerRevision: '2025-06-18' })
})

t.test('all/era/batches-unreadable-bodies-and-bodiless-requests', async t => {
  const batch = post([{ jsonrpc: '2.0', id: 1, method: 'ping' }, { jsonrpc: '2.0', id: 2, method: 'ping', params: { _meta: { [META]: '2026-07-28' } } }])
  t.match(batch, { kind: 'batch', era: 'modern' }, 'any modern element makes a batch modern')
  t.equal(requestIdOf(batch), undefined)
  const bad = post('{not json')
  t.match(bad, { kind: 'reject', error: { code: -32_700 } })
  t.equal(eraOfInbound(bad), undefined)
  t.match(classifyPost({ headers: {}, parsed: undefined }), { kind: 'reject', error: { code: -32_700, message: 'Parse error: empty body' } })
  t.match(classifyBodiless({ 'mcp-protocol-version': '2026-07-28' }), { kind: 'bodiless', era: 'modern' })
  t.match(classifyBodiless({}), { kind: 'bodiless', era: 'legacy', headerRevision: undefined })
  t.equal(eraOfInbound(null), undefined)
})

t.test('all/era/one-classifier-for-both-faces', async t => {
  const call = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', _meta: { [META]: '2026-07-28' } } }
  // A POST's single message is classifyMessage's InboundMessage, over HTTP.
  t.same(post(call, { 'mcp-protocol-version': '2026-07-28' }), classifyMessage(call, { face: 'http', headerRevision: '2026-07-28' }))
  // stdio gets the same facts (no header).
  t.same(classifyMessage(call, { face: 'stdio' }), { ...classifyMessage(call, { face: 'http' }), headerRevision: undefined })
  const ping = { jsonrpc: '2.0', id: 1, method: 'ping' }
  t.match(classifyMessage(ping, { face: 'stdio' }), { kind: 'message', era: 'legacy', headerRevision: undefined })
  // A modern-only method without _meta: modern on stdio (the envelope check explains what is missing),
  // legacy over HTTP without the header (answered -32601 there).
  for (const method of ['server/discover', 'subscriptions/listen']) {
    const bare = { jsonrpc: '2.0', id: 2, method }
    t.equal(classifyMessage(bare, { face: 'stdio' }).era, 'modern', `${method} on stdio`)
    t.equal(classifyMessage(bare, { face: 'http' }).era, 'legacy', `${method} over HTTP`)
    t.equal(eraOfInbound(post(bare)), 'legacy', `${method} in a POST without the header`)
  }
  t.equal(classifyMessage({ jsonrpc: '2.0', method: 'server/discover' }, { face: 'stdio' }).era, 'legacy', 'only a request is made modern by its method')
})
