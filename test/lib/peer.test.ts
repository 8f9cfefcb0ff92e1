/**
 * lib/connection/peer.ts alone: one connection's requests in flight, cancellation, questions and batch
 * rules, with no transport (seed › legacy › Cancellation, Questions to the client, Batches).
 * The transports' wire behaviour is covered by test/e2e/stdio.test.ts and the HTTP suites.
 */
import t from 'tap'
import { Peer, QuestionFailed, batchRefusal, initializedState } from '../../lib/connection/peer.js'
import { parseBody, type JsonRpcRequest } from '../../lib/protocol/jsonrpc.js'

t.test('2025-03-26/cancellation/cancel-aborts-and-marks-the-request', async t => {
  const peer = new Peer({ questionIds: 'sequential', duplicateIds: 'refuse' })
  const entry = peer.track('a')
  t.ok(entry)
  t.equal(peer.cancel('b'), false, 'an unknown id cancels nothing')
  t.equal(peer.cancel({ not: 'an id' }), false, 'a malformed requestId cancels nothing')
  t.equal(peer.cancel('a'), true)
  t.ok(entry?.cancelled)
  t.ok(entry?.controller.signal.aborted)
})

t.test('2025-03-26/cancellation/rounded-big-numeric-id-still-matches', async t => {
  const peer = new Peer({ questionIds: 'sequential', duplicateIds: 'refuse' })
  const parsed = parseBody(Buffer.from('{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}'))
  if (!parsed.ok || parsed.batch) throw new Error('fixture did not parse')
  const id = (parsed.value as JsonRpcRequest).id
  const entry = peer.track(id)
  // The client's notifications/cancelled names the id as a JSON number, which JSON.parse rounds.
  t.equal(peer.cancel(12345678901234567890), true)
  t.ok(entry?.cancelled)
})

t.test('all/connection/duplicate-ids-refused-or-replaced', async t => {
  const strict = new Peer({ questionIds: 'sequential', duplicateIds: 'refuse' })
  t.ok(strict.track(1))
  t.equal(strict.track(1), undefined, 'stdio refuses an id already in flight')
  const lenient = new Peer({ questionIds: 'random', duplicateIds: 'replace' })
  const first = lenient.track(1)
  const second = lenient.track(1)
  t.ok(second)
  if (first === undefined || second === undefined) return
  lenient.untrack(first)
  t.equal(lenient.inFlight, 1, 'the older entry leaves its successor tracked')
  lenient.cancel(1)
  t.ok(second.cancelled)
  t.notOk(first.cancelled)
})

t.test('all/questions/ask-then-answer', async t => {
  const peer = new Peer({ questionIds: 'sequential', duplicateIds: 'refuse' })
  const sent: JsonRpcRequest[] = []
  const settled: string[] = []
  const asked = peer.ask({ method: 'roots/list' }, new AbortController().signal, { send: (q) => { sent.push(q); return true }, settled: (id) => settled.push(id) })
  await new Promise(resolve => setImmediate(resolve))
  t.equal(sent.length, 1)
  t.equal(sent[0].id, 'mcpx-q-1')
  t.equal(peer.answer({ jsonrpc: '2.0', id: 'mcpx-q-2', result: {} }), false, 'no such question')
  t.equal(peer.answer({ jsonrpc: '2.0', id: 'mcpx-q-1', result: { roots: [] } }), true)
  t.same(await asked, { roots: [] })
  t.same(settled, ['mcpx-q-1'])
  t.equal(peer.pendingQuestions, 0)
})

t.test('all/questions/error-answer-cancel-and-end', async t => {
  const peer = new Peer({ questionIds: 'random', duplicateIds: 'replace' })
  const sent: JsonRpcRequest[] = []
  const route = { send: (q: JsonRpcRequest) => { sent.push(q); return true }, withdrawn: (id: string) => withdrawn.push(id) }
  const withdrawn: string[] = []
  const refused = peer.ask({ method: 'sampling/createMessage' }, new AbortController().signal, route)
  await new Promise(resolve => setImmediate(resolve))
  t.match(String(sent[0].id), /^mcpx-q-[A-Za-z0-9_-]{16}$/, '96 random bits')
  peer.answer({ jsonrpc: '2.0', id: sent[0].id as string, error: { code: -1, message: 'user declined' } })
  await t.rejects(refused, { name: 'QuestionFailed', code: -1, message: 'user declined' })

  const controller = new AbortController()
  const cancelled = peer.ask({ method: 'roots/list' }, controller.signal, route)
  await new Promise(resolve => setImmediate(resolve))
  controller.abort()
  await t.rejects(cancelled, { code: -32_800 })
  t.same(withdrawn, [sent[1].id], 'the route is told the question was withdrawn')

  const unsent = peer.ask({ method: 'roots/list' }, new AbortController().signal, { send: () => false })
  await t.rejects(unsent, { code: -32_603, message: /no stream to ask the client on/ })

  const open = peer.ask({ method: 'roots/list' }, new AbortController().signal, route)
  await new Promise(resolve => setImmediate(resolve))
  peer.end('session ended')
  await t.rejects(open, new QuestionFailed(-32_603, 'session ended'))
  await t.rejects(peer.ask({ method: 'roots/list' }, new AbortController().signal, route), { message: 'session ended' }, 'nothing is asked after the end')
})

t.test('all/connection/peers-share-nothing', async t => {
  const a = new Peer({ questionIds: 'sequential', duplicateIds: 'refuse' })
  const b = new Peer({ questionIds: 'sequential', duplicateIds: 'refuse' })
  const asked = a.ask({ method: 'roots/list' }, new AbortController().signal, { send: () => true })
  await new Promise(resolve => setImmediate(resolve))
  t.equal(b.answer({ jsonrpc: '2.0', id: 'mcpx-q-1', result: {} }), false, 'another connection cannot answer it')
  t.equal(a.answer({ jsonrpc: '2.0', id: 'mcpx-q-1', result: {} }), true)
  await asked
})

t.test('2025-03-26/batches/refusals-by-revision', async t => {
  t.equal(batchRefusal([{ jsonrpc: '2.0', method: 'ping', id: 1 }], '2025-03-26'), undefined)
  t.match(batchRefusal([], '2025-03-26'), { error: { code: -32_600, message: /empty batch/ } })
  t.match(batchRefusal([{ jsonrpc: '2.0', method: 'ping', id: 1 }], '2025-06-18'), { error: { code: -32_600, message: /2025-06-18/ } })
  const modern = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } }
  t.match(batchRefusal([modern], '2025-03-26'), { error: { code: -32_600, message: /modern/ } })
  t.notOk(Object.hasOwn(batchRefusal([], '2025-03-26') ?? { id: 0 }, 'id'), 'the refusal is id-less')
})

t.test('all/lifecycle/initialize-settles-revision-and-capabilities', async t => {
  const request: JsonRpcRequest = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: { roots: {} } } }
  t.same(initializedState(request, { jsonrpc: '2.0', id: 1, result: { protocolVersion: '2025-06-18' } }), { revision: '2025-06-18', clientCapabilities: { roots: {} } })
  t.equal(initializedState(request, { jsonrpc: '2.0', id: 1, error: { code: -32_602, message: 'no' } }), undefined)
})
