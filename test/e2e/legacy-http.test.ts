/**
 * Legacy Streamable HTTP over real sockets (seed › Streamable HTTP, 2025-03-26 …
 * 2025-11-25; DIGEST §3d, §6g): the GET notification stream (409, keep-alive, DELETE,
 * list_changed, resources/updated, no redelivery), cancellation observed at the fixture,
 * questions relayed to the client, isolation between sessions, concurrent batch elements, and
 * the official v1 client (`@modelcontextprotocol/sdk` 1.x) at 2025-11-25, 2025-03-26, 2024-11-05.
 */
import t, { type Test } from 'tap'
import { once } from 'node:events'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ToolListChangedNotificationSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import type { TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js'
import { listen, fixtureUpstreams, legacyHeaders, sseMessages } from '../helpers/app.js'
import { prng, generateBatch, replyIdTexts, expectedReplies } from '../helpers/batch-ids.js'
import {
  LEGACY, schemaErrors, callBody, post, fetchSession, sessionHeaders, pollUntil, fixtureLogPath, fixtureEvents, SseReader
} from '../helpers/legacy.js'

/** Short keep-alive, so the `:` comment is observable quickly. */
const KEEP_ALIVE_MS = 50

async function server (t: Test, options: { log?: string, flags?: string[] } = {}): Promise<Awaited<ReturnType<typeof listen>>> {
  return await listen(t, {
    upstreams: fixtureUpstreams(options.flags ?? [], options.log !== undefined ? { FIXTURE_LOG: options.log } : undefined),
    transport: { sseKeepAlive: KEEP_ALIVE_MS }
  })
}

/**
 * One app per revision and fixture flags, shared by the cases that need nothing of their own (no
 * fixture log, no other config): sessions keep those cases apart, as they keep clients apart in
 * production, and the cases run one at a time. Booted on first use, closed when the file ends.
 * Each boot spawns a fixture; sharing saves ~40 of them (this file was the suite's longest).
 */
const shared = new Map<string, ReturnType<typeof listen>>()
async function sharedServer (revision: string, flags: string[] = []): Promise<Awaited<ReturnType<typeof listen>>> {
  const key = `${revision} ${flags.join(' ')}`
  let app = shared.get(key)
  if (app === undefined) {
    app = server(t, { flags })
    shared.set(key, app)
  }
  return await app
}

/**
 * One app per revision whose fixture records to a log (FIXTURE_LOG), shared by the cases that watch
 * that log: each case reads only the records written since it began (`events()`), and each ends
 * only once its own calls have (cancelled, or answered), so no record of one case lands in the
 * next. Sharing saves a fixture start per case.
 */
const logged = new Map<string, Promise<{ base: string, log: string }>>()
async function loggedServer (revision: string): Promise<{ base: string, events: () => ReturnType<typeof fixtureEvents> }> {
  let app = logged.get(revision)
  if (app === undefined) {
    const log = fixtureLogPath()
    app = server(t, { log }).then(({ base }) => ({ base, log }))
    logged.set(revision, app)
  }
  const { base, log } = await app
  const from = fixtureEvents(log).length
  return { base, events: () => fixtureEvents(log).slice(from) }
}

/** Opens the session's GET stream; aborted at teardown. */
async function openGet (t: Test, base: string, sid: string, revision: string): Promise<SseReader> {
  const abort = new AbortController()
  t.teardown(() => abort.abort())
  const res = await fetch(`${base}/mcp`, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': revision }, signal: abort.signal })
  if (res.status !== 200) throw new Error(`GET failed: ${res.status} ${await res.text()}`)
  return new SseReader(res)
}

/** Sends a request in a session and returns its reply body as JSON (error when it streamed). */
async function call (base: string, sid: string, revision: string, body: unknown): Promise<any> {
  const res = await post(base, body, sessionHeaders(sid, revision))
  const text = await res.text()
  if (res.headers.get('content-type')?.startsWith('text/event-stream') === true) {
    const messages = text.split('\n\n').map(b => b.split('\n').filter(l => l.startsWith('data:')).map(l => l.slice(5).trim()).join('')).filter(d => d !== '').map(d => JSON.parse(d))
    return messages[messages.length - 1]
  }
  return JSON.parse(text)
}

const isMethod = (method: string) => (m: Record<string, unknown>) => m.method === method

/**
 * MCPX_TEST_REVISIONS (comma-separated revisions; `npm run test:quick` sets it from test/tiers.ts)
 * keeps only those revisions' tests; unset or empty, every revision runs (`npm test`).
 */
const ONLY_REVISIONS = (process.env.MCPX_TEST_REVISIONS ?? '').split(',').map(r => r.trim()).filter(r => r !== '')
const selected = (revision: string): boolean => ONLY_REVISIONS.length === 0 || ONLY_REVISIONS.includes(revision)

for (const revision of LEGACY) {
  if (!selected(revision)) continue
  /* ------------------------------------------------------------- GET stream */

  t.test(`${revision}/get/opens-stream-keep-alive-409`, async t => {
    const { base } = await sharedServer(revision)
    const sid = await fetchSession(base, revision)
    const stream = await openGet(t, base, sid, revision)
    t.equal(stream.response.status, 200)
    t.equal(stream.response.headers.get('content-type'), 'text/event-stream')
    t.equal(stream.response.headers.get('x-accel-buffering'), 'no')
    await stream.until('a keep-alive comment', () => /(^|\n): ?[^\n]*\n\n/.test(stream.raw))
    t.match(stream.raw, /^: /m, 'a `:` comment on the wire')
    const abortSecond = new AbortController()
    t.teardown(() => abortSecond.abort())
    const second = await fetch(`${base}/mcp`, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': revision }, signal: abortSecond.signal })
    t.equal(second.status, 409, 'one GET stream per session')
    if (second.status === 409) t.equal(((await second.json()) as any).error.code, -32_600)
    t.notOk(stream.ended, 'the first stream is still open')
  })

  t.test(`${revision}/get/closes-on-delete`, async t => {
    const { base } = await sharedServer(revision)
    const sid = await fetchSession(base, revision)
    const stream = await openGet(t, base, sid, revision)
    const del = await fetch(`${base}/mcp`, { method: 'DELETE', headers: { 'mcp-session-id': sid, 'mcp-protocol-version': revision } })
    t.equal(del.status, 204)
    await stream.end()
    t.ok(stream.ended, 'the GET stream closed')
    const after = await fetch(`${base}/mcp`, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sid } })
    t.equal(after.status, 404, 'and the session is gone')
  })

  t.test(`${revision}/get/tools-list-changed`, async t => {
    const { base } = await sharedServer(revision)
    const sid = await fetchSession(base, revision)
    const stream = await openGet(t, base, sid, revision)
    const added = await call(base, sid, revision, callBody(1, 'add_tool', { name: 'fresh_tool' }))
    t.same(added.result.content, [{ type: 'text', text: 'added fresh_tool' }])
    const notification = await stream.message('tools/list_changed', isMethod('notifications/tools/list_changed'))
    t.same(notification, { jsonrpc: '2.0', method: 'notifications/tools/list_changed' })
    const list = await call(base, sid, revision, { jsonrpc: '2.0', id: 2, method: 'tools/list' })
    t.ok(list.result.tools.some((tool: { name: string }) => tool.name === 'fresh_tool'), 'the new tool is listed')
  })

  t.test(`${revision}/get/resources-updated`, async t => {
    const { base } = await sharedServer(revision)
    const sid = await fetchSession(base, revision)
    const stream = await openGet(t, base, sid, revision)
    const sub = await call(base, sid, revision, { jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri: 'fixture://counter' } })
    t.same(sub, { jsonrpc: '2.0', id: 1, result: {} })
    await call(base, sid, revision, callBody(2, 'bump'))
    const updated = await stream.message('resources/updated', isMethod('notifications/resources/updated'))
    t.same(updated, { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'fixture://counter' } })
  })

  t.test(`${revision}/get/subscription-before-stream-delivers`, async t => {
    const { base } = await sharedServer(revision)
    const sid = await fetchSession(base, revision)
    const sub = await call(base, sid, revision, { jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri: 'fixture://counter' } })
    t.same(sub, { jsonrpc: '2.0', id: 1, result: {} })
    const stream = await openGet(t, base, sid, revision)
    await call(base, sid, revision, callBody(2, 'bump'))
    const updated = await stream.message('resources/updated', isMethod('notifications/resources/updated'))
    t.same(updated.params, { uri: 'fixture://counter' })
  })

  t.test(`${revision}/get/no-stream-dropped`, async t => {
    const { base, app } = await sharedServer(revision)
    const sid = await fetchSession(base, revision)
    await call(base, sid, revision, { jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri: 'fixture://counter' } })
    // With no GET stream open, a tools/list_changed happens (wait for mcpx itself to have seen it).
    const changed = once(app.upstreams, 'list_changed')
    await call(base, sid, revision, callBody(2, 'add_tool', { name: 'unseen_tool' }))
    t.same(await changed, ['tools'], 'mcpx saw the change')
    const stream = await openGet(t, base, sid, revision)
    await call(base, sid, revision, callBody(3, 'bump'))
    await stream.message('resources/updated', isMethod('notifications/resources/updated'))
    t.same(stream.messages.map(m => m.method), ['notifications/resources/updated'], 'the earlier list_changed was not redelivered')
  })

  /* ----------------------------------------------------------- cancellation */

  t.test(`${revision}/cancel/notification-cancels-and-withholds`, async t => {
    const { base, events } = await loggedServer(revision)
    const sid = await fetchSession(base, revision)
    const pending = post(base, callBody(7, 'slow', { ms: 60_000, steps: 600 }), sessionHeaders(sid, revision))
    await pollUntil('the fixture to start slow', () => events().some(e => e.event === 'started'))
    const cancel = await post(base, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'test' } }, sessionHeaders(sid, revision))
    t.equal(cancel.status, 202)
    await pollUntil('the fixture to record the cancellation', () => events().some(e => e.event === 'cancelled'))
    const res = await pending
    t.equal(res.status, 200)
    t.equal(res.headers.get('content-type'), 'text/event-stream', 'the POST ends as an event stream')
    const body = await res.text()
    t.notMatch(body, /data:/, 'with nothing on it')
    t.same(events().map(e => e.event), ['started', 'cancelled'])
  })

  t.test(`${revision}/cancel/disconnect-in-session-not-cancel`, async t => {
    const { base, events } = await loggedServer(revision)
    const sid = await fetchSession(base, revision)
    const abort = new AbortController()
    const pending = post(base, callBody(8, 'slow', { ms: 1_500, steps: 3 }), sessionHeaders(sid, revision), abort.signal).catch(() => 'aborted')
    await pollUntil('the fixture to start slow', () => events().some(e => e.event === 'started'))
    abort.abort()
    t.equal(await pending, 'aborted', 'the client dropped the connection')
    // Seed › Cancellation: in a session a dropped connection is not a cancellation. A later call that
    // sleeps longer than the dropped one's remainder has finished only after the dropped one did.
    const done = await call(base, sid, revision, callBody(9, 'slow', { ms: 1_600, steps: 2 }))
    t.same(done.result.content, [{ type: 'text', text: 'slept 1600' }], 'a later call completes')
    t.same(events().map(e => e.event), ['started', 'started'], 'no cancellation was recorded for the dropped call')
  })

  t.test(`${revision}/cancel/sessionless-disconnect-cancels`, async t => {
    const { base, events } = await loggedServer(revision)
    const headers = revision === '2024-11-05' ? legacyHeaders() : legacyHeaders({ 'mcp-protocol-version': revision })
    const abort = new AbortController()
    const pending = post(base, callBody(9, 'slow', { ms: 60_000, steps: 600 }), headers, abort.signal).catch(() => 'aborted')
    await pollUntil('the fixture to start slow', () => events().some(e => e.event === 'started'))
    abort.abort()
    t.equal(await pending, 'aborted')
    await pollUntil('the fixture to record the cancellation', () => events().some(e => e.event === 'cancelled'))
    t.same(events().map(e => e.event), ['started', 'cancelled'])
  })

  /* -------------------------------------------------------------- questions */

  for (const era of ['legacy', 'dual'] as const) {
    t.test(`${revision}/questions/elicitation-relayed-${era}-upstream`, async t => {
      const { base } = await sharedServer(revision, ['--era', era])
      const sid = await fetchSession(base, revision, { elicitation: {} })
      const res = await post(base, callBody(11, 'elicit'), sessionHeaders(sid, revision))
      t.equal(res.status, 200)
      t.equal(res.headers.get('content-type'), 'text/event-stream', 'the call streams to carry the question')
      const stream = new SseReader(res)
      const question = await stream.message('elicitation/create', isMethod('elicitation/create'))
      t.type(question.id, 'string', 'an id mcpx minted')
      t.not(question.id, 11)
      t.match(question.params, { message: 'Who are you?' })
      // elicitation/create exists from 2025-06-18; 2025-11-25's ElicitRequest includes the JSON-RPC envelope.
      if (revision === '2025-06-18') t.same(schemaErrors(revision, 'ElicitRequest', { method: question.method, params: question.params }), [], 'ElicitRequest')
      if (revision === '2025-11-25') t.same(schemaErrors(revision, 'ElicitRequest', question), [], 'ElicitRequest')
      const answer = await post(base, { jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { name: 'Ada' } } }, sessionHeaders(sid, revision))
      t.equal(answer.status, 202)
      t.equal(await answer.text(), '')
      const reply = await stream.message('the call result', m => m.id === 11)
      t.match(reply, { jsonrpc: '2.0', id: 11, result: { content: [{ type: 'text' }] } })
      t.match((reply as any).result.content[0].text, /Ada/, 'the tool result contains the answer')
      t.same(schemaErrors(revision, 'CallToolResult', (reply as any).result), [], 'CallToolResult')
      await stream.end()
    })
  }

  t.test(`${revision}/questions/no-capability-no-hang`, async t => {
    const { base } = await sharedServer(revision, ['--era', 'legacy'])
    const sid = await fetchSession(base, revision, {})
    const res = await post(base, callBody(12, 'elicit'), sessionHeaders(sid, revision), AbortSignal.timeout(10_000))
    const text = await res.text()
    const messages = res.headers.get('content-type') === 'text/event-stream' ? sseMessages(text) as any[] : [JSON.parse(text)]
    t.same(messages.filter(m => m.method !== undefined).map(m => m.method), [], 'nothing was asked of a client that declared no elicitation')
    t.equal(messages.length, 1, 'one reply')
    const reply = messages[0]
    t.equal(reply.id, 12)
    t.ok(reply.error !== undefined || reply.result?.isError === true, `the call ends in an error: ${text}`)
  })

  t.test(`${revision}/questions/on-get-stream-when-json-only`, async t => {
    // Server→client questions: on the request's SSE stream, or on the GET stream if none.
    const { base } = await sharedServer(revision, ['--era', 'legacy'])
    const sid = await fetchSession(base, revision, { elicitation: {} })
    const stream = await openGet(t, base, sid, revision)
    const pending = post(base, callBody(13, 'elicit'), { ...sessionHeaders(sid, revision), accept: 'application/json' })
    const question = await stream.message('elicitation/create on the GET stream', isMethod('elicitation/create'))
    t.type(question.id, 'string')
    const answer = await post(base, { jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { name: 'Grace' } } }, sessionHeaders(sid, revision))
    t.equal(answer.status, 202)
    const res = await pending
    t.equal(res.headers.get('content-type')?.startsWith('application/json'), true, 'the call is answered as JSON')
    const reply = await res.json() as any
    t.equal(reply.id, 13)
    t.match(reply.result.content[0].text, /Grace/)
  })

  /* -------------------------------------------------------------- isolation */

  t.test(`${revision}/isolation/cannot-answer-another-sessions-question`, async t => {
    const { base } = await sharedServer(revision, ['--era', 'legacy'])
    const a = await fetchSession(base, revision, { elicitation: {} })
    const b = await fetchSession(base, revision, { elicitation: {} })
    const stream = new SseReader(await post(base, callBody(21, 'elicit'), sessionHeaders(a, revision)))
    const question = await stream.message('elicitation/create', isMethod('elicitation/create'))
    const stolen = await post(base, { jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { name: 'Mallory' } } }, sessionHeaders(b, revision))
    t.equal(stolen.status, 400, "B cannot answer A's question")
    t.equal(((await stolen.json()) as any).error.code, -32_600)
    const sessionless = await post(base, { jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { name: 'Mallory' } } })
    t.equal(sessionless.status, 400, 'nor can a sessionless POST')
    t.notOk(stream.messages.some(m => m.id === 21), "A's question is still pending")
    const answer = await post(base, { jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { name: 'Ada' } } }, sessionHeaders(a, revision))
    t.equal(answer.status, 202, 'A answers its own question')
    const reply = await stream.message('the call result', m => m.id === 21)
    t.match((reply as any).result.content[0].text, /Ada/)
    t.notMatch((reply as any).result.content[0].text, /Mallory/)
  })

  t.test(`${revision}/isolation/cannot-cancel-another-sessions-request`, async t => {
    const { base, events } = await loggedServer(revision)
    const a = await fetchSession(base, revision)
    const b = await fetchSession(base, revision)
    const pending = call(base, a, revision, callBody(31, 'slow', { ms: 1_500, steps: 3 }))
    await pollUntil('the fixture to start slow', () => events().some(e => e.event === 'started'))
    const cancel = await post(base, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 31 } }, sessionHeaders(b, revision))
    t.equal(cancel.status, 202, 'the notification is accepted (and ignored)')
    const reply = await pending
    t.same(reply, { jsonrpc: '2.0', id: 31, result: { content: [{ type: 'text', text: 'slept 1500' }] } }, "A's call completed")
    t.same(events().map(e => e.event), ['started'], 'the fixture recorded no cancellation')
  })

  t.test(`${revision}/isolation/never-sees-another-sessions-notifications`, async t => {
    const { base } = await sharedServer(revision)
    const a = await fetchSession(base, revision)
    const b = await fetchSession(base, revision)
    const streamA = await openGet(t, base, a, revision)
    const streamB = await openGet(t, base, b, revision)
    await call(base, a, revision, { jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri: 'fixture://counter' } })
    await call(base, a, revision, callBody(2, 'bump'))
    await streamA.message('resources/updated on A', isMethod('notifications/resources/updated'))
    // Then something both get: if B were to see A's update, it would have come first.
    await call(base, b, revision, callBody(3, 'add_tool', { name: 'for_both' }))
    await streamB.message('tools/list_changed on B', isMethod('notifications/tools/list_changed'))
    t.same(streamB.messages.map(m => m.method), ['notifications/tools/list_changed'], "B never saw A's resources/updated")
    // Progress of A's call goes on A's POST stream only.
    const res = await post(base, { ...callBody(4, 'slow', { ms: 200, steps: 2 }), params: { name: 'slow', arguments: { ms: 200, steps: 2 }, _meta: { progressToken: 'p' } } }, sessionHeaders(a, revision))
    const body = await res.text()
    t.match(body, /notifications\/progress/, "A's progress on A's call stream")
    await streamA.message('tools/list_changed on A', isMethod('notifications/tools/list_changed'))
    t.notOk(streamB.messages.some(m => m.method === 'notifications/progress'), "B never saw A's progress")
  })
}

/* ------------------------------------------------------------------ batches */

if (selected('2025-03-26')) {
  t.test('2025-03-26/batch/elements-run-concurrently', async t => {
    const { base, events } = await loggedServer('2025-03-26')
    const sid = await fetchSession(base, '2025-03-26')
    // Each call would take a minute: both starting proves they were not run one after the other.
    const pending = post(base, [callBody('a', 'slow', { ms: 60_000, steps: 600 }), callBody('b', 'slow', { ms: 60_000, steps: 600 })], sessionHeaders(sid, '2025-03-26'))
    await pollUntil('both batch elements to start', () => events().filter(e => e.event === 'started').length === 2)
    t.same(events().map(e => e.event), ['started', 'started'], 'both started, neither finished')
    for (const id of ['a', 'b']) {
      const cancel = await post(base, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } }, sessionHeaders(sid, '2025-03-26'))
      t.equal(cancel.status, 202)
    }
    const res = await pending
    t.equal(res.headers.get('content-type'), 'text/event-stream', 'a batch whose requests were all cancelled ends as an empty event stream')
    t.notMatch(await res.text(), /data:/)
    await pollUntil('both cancellations', () => events().filter(e => e.event === 'cancelled').length === 2)
  })

  t.test('2025-03-26/batch/each-reply-carries-its-members-id', async t => {
    // Seeded batches (test/helpers/batch-ids.ts): ids of every JSON form after members of every
    // type, in a session and without one; the reply ids are read from the bytes.
    const { base } = await sharedServer('2025-03-26')
    const sid = await fetchSession(base, '2025-03-26')
    const rand = prng(0xba7c4)
    const problems: string[] = []
    for (let n = 0; n < 300 && problems.length < 3; n++) {
      const batch = generateBatch(rand)
      const headers = n % 2 === 0 ? legacyHeaders() : sessionHeaders(sid, '2025-03-26')
      const res = await fetch(`${base}/mcp`, { method: 'POST', headers, body: batch.text })
      const body = await res.text()
      const got = replyIdTexts(body)
      const want = expectedReplies(batch)
      const nulls = got.ids.filter(id => id === 'null').length
      const ids = got.ids.filter(id => id !== 'null').sort()
      if (res.status !== 200 || JSON.stringify(ids) !== JSON.stringify(want.ids) || nulls + got.idless !== want.idless) {
        problems.push(`${batch.text}\n→ ${res.status} ${body}\nwant ids ${want.ids.join(' ')} and ${want.idless} without one`)
      }
    }
    t.same(problems, [], 'each request answered once, with its own id')
  })

  t.test('2025-03-26/batch/streamed-replies-as-separate-events', async t => {
    const { base } = await sharedServer('2025-03-26')
    const sid = await fetchSession(base, '2025-03-26')
    const res = await post(base, [
      { jsonrpc: '2.0', id: 'slow', method: 'tools/call', params: { name: 'slow', arguments: { ms: 100, steps: 2 }, _meta: { progressToken: 'tok' } } },
      { jsonrpc: '2.0', id: 'ping', method: 'ping' }
    ], sessionHeaders(sid, '2025-03-26'))
    t.equal(res.status, 200)
    t.equal(res.headers.get('content-type'), 'text/event-stream', 'progress made the batch stream')
    const messages = sseMessages(await res.text()) as any[]
    t.ok(messages.every(m => !Array.isArray(m)), 'one message an event')
    t.same(messages.filter(m => m.id !== undefined).map(m => m.id).sort(), ['ping', 'slow'], 'each element answered once')
    t.ok(messages.some(m => m.method === 'notifications/progress' && m.params.progressToken === 'tok'), 'progress with the client token')
  })

  t.test('2025-03-26/batch/answers-delivered-in-a-batch', async t => {
    const { base } = await sharedServer('2025-03-26', ['--era', 'legacy'])
    const sid = await fetchSession(base, '2025-03-26', { elicitation: {} })
    const stream = new SseReader(await post(base, callBody(1, 'elicit'), sessionHeaders(sid, '2025-03-26')))
    const question = await stream.message('elicitation/create', isMethod('elicitation/create'))
    const res = await post(base, [
      { jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { name: 'Batched' } } },
      { jsonrpc: '2.0', method: 'notifications/initialized' }
    ], sessionHeaders(sid, '2025-03-26'))
    t.equal(res.status, 202, 'a batch of responses and notifications is 202')
    const reply = await stream.message('the call result', m => m.id === 1)
    t.match((reply as any).result.content[0].text, /Batched/)
  })
}

/* ------------------------------------------------------ the official v1 client */

/** The v1 transport, offering `revision` in initialize instead of the SDK's LATEST_PROTOCOL_VERSION. */
class OfferingTransport extends StreamableHTTPClientTransport {
  constructor (url: URL, private readonly revision: string) { super(url) }
  override async send (message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if ('method' in message && message.method === 'initialize' && message.params !== undefined) {
      message = { ...message, params: { ...message.params, protocolVersion: this.revision } } as JSONRPCMessage
    }
    await super.send(message, options)
  }
}

for (const revision of ['2025-11-25', '2025-03-26', '2024-11-05']) {
  if (!selected(revision)) continue
  t.test(`${revision}/sdk-v1/connect-list-call-notify-terminate`, async t => {
    const { base } = await sharedServer(revision)
    const transport = revision === '2025-11-25' ? new StreamableHTTPClientTransport(new URL(`${base}/mcp`)) : new OfferingTransport(new URL(`${base}/mcp`), revision)
    const client = new Client({ name: 'sdk-v1', version: '1.0.0' })
    t.teardown(() => client.close())
    let changed = 0
    let resolveChanged: () => void = () => {}
    const listChanged = new Promise<void>(resolve => { resolveChanged = resolve })
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => { changed++; resolveChanged() })
    await client.connect(transport)
    t.equal(transport.protocolVersion, revision, `negotiated ${revision}`)
    t.type(transport.sessionId, 'string', 'a session')
    const tools = await client.listTools()
    t.ok(tools.tools.some(tool => tool.name === 'echo'))
    const result = await client.callTool({ name: 'echo', arguments: { text: `v1 at ${revision}` } })
    t.same(result.content, [{ type: 'text', text: `v1 at ${revision}` }])
    t.same(schemaErrors(revision, 'CallToolResult', result), [], 'CallToolResult')
    // The client opens its GET stream after notifications/initialized; wait for the change to arrive on it.
    await pollUntil('the client GET stream', async () => {
      const probe = await fetch(`${base}/mcp`, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': String(transport.sessionId) } })
      await probe.body?.cancel()
      return probe.status === 409
    })
    await client.callTool({ name: 'add_tool', arguments: { name: `v1_${revision.replaceAll('-', '_')}` } })
    await Promise.race([listChanged, new Promise((_resolve, reject) => setTimeout(() => reject(new Error('no tools/list_changed within 10 s')), 10_000))])
    t.ok(changed >= 1, 'tools/list_changed arrived on the GET stream')
    const sid = String(transport.sessionId)
    await transport.terminateSession()
    t.equal(transport.sessionId, undefined, 'terminated')
    const after = await post(base, { jsonrpc: '2.0', id: 1, method: 'ping' }, sessionHeaders(sid, revision))
    t.equal(after.status, 404, 'DELETE ended the session')
  })
}
