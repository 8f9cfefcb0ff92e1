/**
 * Legacy Streamable HTTP at inject level (seed › Streamable HTTP, 2025-03-26 …
 * 2025-11-25; DIGEST §3d, §4, §6e, A8, A9, A14): sessions, DELETE, MCP-Protocol-Version, batches,
 * GET refusals, responses and notifications, exact ids, and a 2026-07-28-only upstream.
 * Everything that needs a live stream is in test/e2e/legacy-http.test.ts.
 */
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, fixtureUpstreams, legacyHeaders } from '../helpers/app.js'
import { LEGACY, schemaErrors, initializeBody, callBody, injectSession, sessionHeaders, pollUntil } from '../helpers/legacy.js'
import { newSession, newSessionId, sessionUsableBy } from '../../lib/sessions/store.js'

const SESSION_ID = /^[\x21-\x7E]+$/
const BATCH_REVISION = '2025-03-26'
const NO_BATCH = ['2024-11-05', '2025-06-18', '2025-11-25']

const app: FastifyInstance = await build(t)

interface Reply { statusCode: number, headers: Record<string, unknown>, body: string, json: () => any }

async function postMcp (payload: unknown, headers: Record<string, string> = legacyHeaders()): Promise<Reply> {
  return await app.inject({ method: 'POST', url: '/mcp', headers, payload: typeof payload === 'string' ? payload : JSON.stringify(payload) }) as unknown as Reply
}

function ping (id: unknown): Record<string, unknown> {
  return { jsonrpc: '2.0', id, method: 'ping' }
}

/* ----------------------------------------------------------------- sessions */

for (const revision of LEGACY) {
  t.test(`${revision}/sessions/initialize-mints-session-id`, async t => {
    const res = await postMcp(initializeBody(revision))
    t.equal(res.statusCode, 200)
    t.match(res.headers['content-type'], /^application\/json/)
    const sid = res.headers['mcp-session-id']
    t.type(sid, 'string', 'Mcp-Session-Id on the InitializeResult response')
    // DIGEST §3d rule 16: visible ASCII 0x21–0x7E; mcpx mints at least 128 random bits (base64url: 6 bits a character).
    t.match(sid, SESSION_ID)
    t.ok(String(sid).length >= 22, `at least 128 bits of base64url (${String(sid).length} characters)`)
    // 128 random bits (22 base64url characters), a dot, and the 64-bit tag that binds it to its caller.
    t.match(sid, /^[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{11}$/, 'base64url secret and tag')
    const body = res.json()
    t.equal(body.id, 1)
    t.equal(body.result.protocolVersion, revision, 'the proposed revision is echoed')
    t.same(schemaErrors(revision, 'InitializeResult', body.result), [], `InitializeResult valid against ${revision}/schema.json`)
    t.same(schemaErrors(revision, 'JSONRPCResponse', body), [], 'JSONRPCResponse envelope')
    const again = await postMcp(initializeBody(revision))
    t.not(again.headers['mcp-session-id'], sid, 'each initialize mints a new session')
  })

  t.test(`${revision}/sessions/unknown-404`, async t => {
    const res = await postMcp(ping(3), sessionHeaders('no-such-session-0123456789', revision))
    t.equal(res.statusCode, 404)
    t.equal(res.json().error.code, -32_600)
  })

  t.test(`${revision}/sessions/deleted-404`, async t => {
    const { sid } = await injectSession(app, revision)
    t.equal((await postMcp(ping(1), sessionHeaders(sid, revision))).statusCode, 200, 'live before DELETE')
    const del = await app.inject({ method: 'DELETE', url: '/mcp', headers: sessionHeaders(sid, revision) })
    t.equal(del.statusCode, 204)
    const after = await postMcp(ping(2), sessionHeaders(sid, revision))
    t.equal(after.statusCode, 404)
    t.equal(after.json().error.code, -32_600)
  })

  t.test(`${revision}/sessions/expired-404`, async t => {
    const idleMs = 200
    const short = await build(t, { transport: { sessionIdleTimeout: idleMs } })
    const init = await short.inject({ method: 'POST', url: '/mcp', headers: legacyHeaders(), payload: initializeBody(revision) })
    const sid = String(init.headers['mcp-session-id'])
    const live = await short.inject({ method: 'POST', url: '/mcp', headers: sessionHeaders(sid, revision), payload: ping(1) })
    t.equal(live.statusCode, 200, 'live while used')
    const lastUsed = Date.now()
    // Any request naming the session slides its expiry, so wait on the clock (bounded), not on requests.
    await pollUntil('the idle timeout to pass', () => Date.now() - lastUsed > idleMs + 50, 5_000)
    const res = await short.inject({ method: 'POST', url: '/mcp', headers: sessionHeaders(sid, revision), payload: ping(2) })
    t.equal(res.statusCode, 404)
    const get = await short.inject({ method: 'GET', url: '/mcp', headers: { accept: 'text/event-stream', 'mcp-session-id': sid } })
    t.equal(get.statusCode, 404, 'stays gone')
  })

  t.test(`${revision}/sessions/sessionless-served`, async t => {
    const headers = revision === '2024-11-05' ? legacyHeaders() : legacyHeaders({ 'mcp-protocol-version': revision })
    const res = await postMcp({ jsonrpc: '2.0', id: 'list', method: 'tools/list' }, headers)
    t.equal(res.statusCode, 200)
    t.equal(res.headers['mcp-session-id'], undefined, 'nothing minted')
    const body = res.json()
    t.equal(body.id, 'list')
    t.ok(body.result.tools.some((tool: { name: string }) => tool.name === 'echo'))
    const call = await postMcp(callBody(9, 'echo', { text: 'hi' }), headers)
    t.equal(call.statusCode, 200)
    t.same(call.json(), { jsonrpc: '2.0', id: 9, result: { content: [{ type: 'text', text: 'hi' }] } })
    t.same(schemaErrors(revision, 'CallToolResult', call.json().result), [], `CallToolResult valid against ${revision}/schema.json`)
  })

  /* ----------------------------------------------------------------- DELETE */

  t.test(`${revision}/delete/with-session-204`, async t => {
    const { sid } = await injectSession(app, revision)
    const res = await app.inject({ method: 'DELETE', url: '/mcp', headers: sessionHeaders(sid, revision) })
    t.equal(res.statusCode, 204)
    t.equal(res.body, '')
    const again = await app.inject({ method: 'DELETE', url: '/mcp', headers: sessionHeaders(sid, revision) })
    t.equal(again.statusCode, 404, 'a deleted session is unknown')
  })

  t.test(`${revision}/delete/without-session-400`, async t => {
    const res = await app.inject({ method: 'DELETE', url: '/mcp', headers: { 'mcp-protocol-version': revision } })
    t.equal(res.statusCode, 400, 'mcpx allows termination, so not 405')
    t.equal(res.json().error.code, -32_600)
  })

  t.test(`${revision}/delete/unknown-404`, async t => {
    const res = await app.inject({ method: 'DELETE', url: '/mcp', headers: { 'mcp-session-id': 'never-minted-0123456789abc', 'mcp-protocol-version': revision } })
    t.equal(res.statusCode, 404)
  })

  /* ------------------------------------------------------- MCP-Protocol-Version */

  t.test(`${revision}/protocol-version/unsupported-400-32022`, async t => {
    const { sid } = await injectSession(app, revision)
    for (const bad of ['2025-01-01', '2024-10-07', 'banana']) {
      for (const [what, headers] of [['sessionless', legacyHeaders({ 'mcp-protocol-version': bad })], ['in a session', sessionHeaders(sid, bad)]] as const) {
        const res = await postMcp(ping(41), headers)
        t.equal(res.statusCode, 400, `${bad} ${what}: status`)
        const body = res.json()
        t.equal(body.error.code, -32_022, `${bad} ${what}: code`)
        t.equal(body.id, 41, `${bad} ${what}: the request's id`)
        t.same(body.error.data, { supported: [...LEGACY], requested: bad }, `${bad} ${what}: the legacy list`)
      }
    }
    const get = await app.inject({ method: 'GET', url: '/mcp', headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-01-01' } })
    t.equal(get.statusCode, 400, 'GET with an unsupported legacy header')
    t.equal(get.json().error.code, -32_022)
  })

  t.test(`${revision}/protocol-version/session-governs`, async t => {
    // Seed: in a session the negotiated version governs even if the header names another supported one.
    const { sid } = await injectSession(app, revision)
    const other = revision === BATCH_REVISION ? '2025-06-18' : BATCH_REVISION
    const single = await postMcp(ping(5), sessionHeaders(sid, other))
    t.equal(single.statusCode, 200, 'a disagreeing supported header is tolerated')
    t.same(single.json(), { jsonrpc: '2.0', id: 5, result: {} })
    const batch = await postMcp([ping(6), ping(7)], sessionHeaders(sid, other))
    if (revision === BATCH_REVISION) {
      t.equal(batch.statusCode, 200, 'session 2025-03-26 + header 2025-06-18: batch accepted')
      t.same(batch.json(), [{ jsonrpc: '2.0', id: 6, result: {} }, { jsonrpc: '2.0', id: 7, result: {} }])
    } else {
      t.equal(batch.statusCode, 400, `session ${revision} + header 2025-03-26: batch still refused`)
      t.equal(batch.json().error.code, -32_600)
    }
  })
}

t.test('2025-03-26/protocol-version/absent-means-2025-03-26', async t => {
  const res = await postMcp([ping(1), { jsonrpc: '2.0', id: 2, method: 'tools/list' }])
  t.equal(res.statusCode, 200, 'sessionless batch without a header is accepted')
  const body = res.json()
  t.ok(Array.isArray(body))
  t.same(body.map((r: { id: unknown }) => r.id), [1, 2])
  t.same(schemaErrors('2025-03-26', 'JSONRPCBatchResponse', body), [], 'JSONRPCBatchResponse')
})

t.test('2025-03-26/protocol-version/initialize-ignores-default', async t => {
  // DIGEST A14: the "absent means 2025-03-26" default is not applied to initialize itself.
  const res = await postMcp(initializeBody('2025-11-25'))
  t.equal(res.json().result.protocolVersion, '2025-11-25')
})

/* ------------------------------------------------------------------ batches */

t.test('2025-03-26/batch/session-accepted', async t => {
  const { sid } = await injectSession(app, BATCH_REVISION)
  const res = await postMcp([
    ping(1),
    callBody('two', 'echo', { text: 'b' }),
    { jsonrpc: '2.0', method: 'notifications/initialized' }
  ], sessionHeaders(sid, BATCH_REVISION))
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  const body = res.json()
  t.same(body, [
    { jsonrpc: '2.0', id: 1, result: {} },
    { jsonrpc: '2.0', id: 'two', result: { content: [{ type: 'text', text: 'b' }] } }
  ], 'a JSON array, one reply per request, none for the notification')
  t.same(schemaErrors(BATCH_REVISION, 'JSONRPCBatchResponse', body), [])
})

t.test('2025-03-26/batch/sessionless-header-accepted', async t => {
  const res = await postMcp([ping(1), ping(2)], legacyHeaders({ 'mcp-protocol-version': BATCH_REVISION }))
  t.equal(res.statusCode, 200)
  t.same(res.json(), [{ jsonrpc: '2.0', id: 1, result: {} }, { jsonrpc: '2.0', id: 2, result: {} }])
})

for (const revision of NO_BATCH) {
  t.test(`${revision}/batch/refused-400`, async t => {
    const { sid } = await injectSession(app, revision)
    const inSession = await postMcp([ping(1), ping(2)], sessionHeaders(sid, revision))
    t.equal(inSession.statusCode, 400, 'in a session')
    t.equal(inSession.json().error.code, -32_600)
    if (revision !== '2024-11-05') {
      const sessionless = await postMcp([ping(1), ping(2)], legacyHeaders({ 'mcp-protocol-version': revision }))
      t.equal(sessionless.statusCode, 400, 'sessionless with this header')
      t.equal(sessionless.json().error.code, -32_600)
    }
  })
}

t.test('2025-03-26/batch/notifications-only-202', async t => {
  const { sid } = await injectSession(app, BATCH_REVISION)
  const res = await postMcp([
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 99 } }
  ], sessionHeaders(sid, BATCH_REVISION))
  t.equal(res.statusCode, 202)
  t.equal(res.body, '')
  const sessionless = await postMcp([{ jsonrpc: '2.0', method: 'notifications/initialized' }])
  t.equal(sessionless.statusCode, 202)
  t.equal(sessionless.body, '')
})

t.test('2025-03-26/batch/initialize-element-refused', async t => {
  const res = await postMcp([initializeBody(BATCH_REVISION, {}, 'init'), ping(2)])
  t.equal(res.statusCode, 200)
  t.equal(res.headers['mcp-session-id'], undefined, 'no session minted')
  const body = res.json()
  t.equal(body.length, 2)
  t.equal(body[0].id, 'init')
  t.equal(body[0].error.code, -32_600, 'initialize MUST NOT be batched (2025-03-26 lifecycle)')
  t.notOk('result' in body[0])
  t.same(body[1], { jsonrpc: '2.0', id: 2, result: {} })
})

// DIGEST §6h: subscriptions/listen and server/discover exist only in 2026-07-28, a batch only in 2025-03-26,
// so each such member is a legacy request naming a method its revision lacks: -32601, as that element.
// test/e2e/stdio.test.ts holds mcpx serve to the same bytes (2025-03-26/stdio/modern-only-method-in-batch-is-32601).
t.test('2025-03-26/batch/modern-only-method-is-32601', async t => {
  const batch = [
    { jsonrpc: '2.0', id: 'listen', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true } } },
    { jsonrpc: '2.0', id: 'discover', method: 'server/discover', params: {} },
    ping(3)
  ]
  const expected = [
    { jsonrpc: '2.0', id: 'listen', error: { code: -32_601, message: 'Method not found: subscriptions/listen' } },
    { jsonrpc: '2.0', id: 'discover', error: { code: -32_601, message: 'Method not found: server/discover' } },
    { jsonrpc: '2.0', id: 3, result: {} }
  ]
  const sessionless = await postMcp(batch)
  t.equal(sessionless.statusCode, 200, 'sessionless: the batch\'s 200')
  t.same(sessionless.json(), expected)
  const { sid } = await injectSession(app, BATCH_REVISION)
  const inSession = await postMcp(batch, sessionHeaders(sid, BATCH_REVISION))
  t.equal(inSession.statusCode, 200, 'in a 2025-03-26 session')
  t.same(inSession.json(), expected)
})

/* ------------------------------------------------------------ GET refusals */

for (const revision of LEGACY) {
  t.test(`${revision}/get/no-session-405`, async t => {
    const res = await app.inject({ method: 'GET', url: '/mcp', headers: { accept: 'text/event-stream', 'mcp-protocol-version': revision } })
    t.equal(res.statusCode, 405)
    t.equal(res.json().error.code, -32_600)
    t.equal(res.headers.allow, 'GET, POST, DELETE', 'GET is supported on /mcp, with a session (RFC 9110 §15.5.6)')
  })

  t.test(`${revision}/get/modern-header-405`, async t => {
    const { sid } = await injectSession(app, revision)
    const res = await app.inject({ method: 'GET', url: '/mcp', headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2026-07-28' } })
    t.equal(res.statusCode, 405)
    t.equal(res.headers.allow, 'POST', '2026-07-28 serves POST only')
  })

  t.test(`${revision}/get/unknown-session-404`, async t => {
    const res = await app.inject({ method: 'GET', url: '/mcp', headers: { accept: 'text/event-stream', 'mcp-session-id': 'unknown-session-0123456789', 'mcp-protocol-version': revision } })
    t.equal(res.statusCode, 404)
  })

  /* ------------------------------------------- responses and notifications */

  t.test(`${revision}/questions/unmatched-response-400`, async t => {
    const { sid } = await injectSession(app, revision)
    for (const response of [
      { jsonrpc: '2.0', id: 'mcpx-q-nobody-asked', result: {} },
      { jsonrpc: '2.0', id: 17, error: { code: -1, message: 'no' } }
    ]) {
      const res = await postMcp(response, sessionHeaders(sid, revision))
      t.equal(res.statusCode, 400, `response ${JSON.stringify(response.id)} nothing waits for`)
      t.equal(res.json().error.code, -32_600)
    }
    const sessionless = await postMcp({ jsonrpc: '2.0', id: 'x', result: {} })
    t.equal(sessionless.statusCode, 400, 'sessionless too')
  })

  t.test(`${revision}/questions/notification-202`, async t => {
    const { sid } = await injectSession(app, revision)
    for (const method of ['notifications/initialized', 'notifications/roots/list_changed', 'notifications/cancelled', 'notifications/no-such-thing']) {
      const res = await postMcp({ jsonrpc: '2.0', method, ...(method === 'notifications/cancelled' ? { params: { requestId: 'none' } } : {}) }, sessionHeaders(sid, revision))
      t.equal(res.statusCode, 202, method)
      t.equal(res.body, '', `${method}: no body`)
    }
  })

  /* --------------------------------------------------------------- exact ids */

  t.test(`${revision}/ids/exact`, async t => {
    const { sid } = await injectSession(app, revision)
    for (const [id, text] of [[0, '0'], ['0', '"0"'], [-1, '-1'], ['9007199254740993', '9007199254740993']] as const) {
      const raw = `{"jsonrpc":"2.0","id":${text},"method":"ping"}`
      const res = await postMcp(raw, sessionHeaders(sid, revision))
      t.equal(res.statusCode, 200, `id ${text}`)
      t.equal(res.body, `{"jsonrpc":"2.0","id":${text},"result":{}}`, `id ${text} comes back unchanged`)
      if (typeof id !== 'string' || id === '0') t.equal(res.json().id, id)
    }
    const call = await postMcp(`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"echo","arguments":{"text":"big"}}}`, sessionHeaders(sid, revision))
    t.match(call.body, /^\{"jsonrpc":"2\.0","id":9007199254740993,"result":/, 'a big id on a routed call')
    const error = await postMcp('{"jsonrpc":"2.0","id":9007199254740993,"method":"no/such/method"}', sessionHeaders(sid, revision))
    t.match(error.body, /^\{"jsonrpc":"2\.0","id":9007199254740993,"error":\{"code":-32601/, 'a big id on an error')
  })
}

t.test('2025-03-26/ids/exact-in-batch', async t => {
  const res = await postMcp('[{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"},{"jsonrpc":"2.0","id":0,"method":"ping"},{"jsonrpc":"2.0","id":"0","method":"ping"},{"jsonrpc":"2.0","id":-1,"method":"ping"}]')
  t.equal(res.statusCode, 200)
  t.equal(res.body, '[{"jsonrpc":"2.0","id":9007199254740993,"result":{}},{"jsonrpc":"2.0","id":0,"result":{}},{"jsonrpc":"2.0","id":"0","result":{}},{"jsonrpc":"2.0","id":-1,"result":{}}]')
})

/* ----------------------------------------------- a 2026-07-28-only upstream */

t.test('upstreams/eras/modern-only-upstream-serves-legacy-clients', async t => {
  const modern = await build(t, { upstreams: fixtureUpstreams(['--era', 'modern']) })
  const status = modern.upstreams.status()
  t.equal(status[0]?.era, 'modern', 'the upstream speaks 2026-07-28')
  for (const revision of LEGACY) {
    const init = await modern.inject({ method: 'POST', url: '/mcp', headers: legacyHeaders(), payload: initializeBody(revision) })
    t.equal(init.statusCode, 200)
    t.same(schemaErrors(revision, 'InitializeResult', init.json().result), [], `${revision}: InitializeResult`)
    const headers = sessionHeaders(String(init.headers['mcp-session-id']), revision)
    const list = (await modern.inject({ method: 'POST', url: '/mcp', headers, payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' } })).json()
    const call = (await modern.inject({ method: 'POST', url: '/mcp', headers, payload: callBody(2, 'echo', { text: 'legacy' }) })).json()
    const read = (await modern.inject({ method: 'POST', url: '/mcp', headers, payload: { jsonrpc: '2.0', id: 3, method: 'resources/read', params: { uri: 'fixture://static' } } })).json()
    t.ok(list.result.tools.length > 0, `${revision}: tools listed`)
    t.same(call, { jsonrpc: '2.0', id: 2, result: { content: [{ type: 'text', text: 'legacy' }] } }, `${revision}: legacy-shaped call result`)
    t.same(schemaErrors(revision, 'CallToolResult', call.result), [], `${revision}: CallToolResult`)
    t.same(read.result.contents, [{ uri: 'fixture://static', mimeType: 'text/plain', text: 'static content' }], `${revision}: resource read`)
    for (const [what, result] of [['tools/list', list.result], ['tools/call', call.result], ['resources/read', read.result]] as const) {
      for (const key of ['resultType', 'ttlMs', 'cacheScope']) t.notOk(key in result, `${revision}: ${what} has no ${key}`)
      t.notOk(result._meta !== undefined && 'io.modelcontextprotocol/serverInfo' in result._meta, `${revision}: ${what} has no _meta serverInfo`)
    }
  }
})

/* ------------------------------------------------------- sessions and callers */

t.test('auth/bearer/session-bound-to-its-caller', async t => {
  const app = await build(t, { upstreams: fixtureUpstreams(), auth: { bearerTokens: ['token-a', 'token-b'] } })
  const as = (token: string, body: unknown, sid?: string): Promise<{ statusCode: number, headers: Record<string, unknown>, json: () => { id?: unknown, error?: { code: number } } }> =>
    app.inject({ method: 'POST', url: '/mcp', headers: { ...legacyHeaders(), authorization: `Bearer ${token}`, ...(sid !== undefined ? { 'mcp-session-id': sid } : {}) }, payload: JSON.stringify(body) }) as never
  const init = await as('token-a', initializeBody('2025-11-25'))
  const sid = String(init.headers['mcp-session-id'])
  t.equal((await as('token-a', { jsonrpc: '2.0', id: 2, method: 'tools/list' }, sid)).statusCode, 200, 'its caller uses it')
  t.equal((await as('token-b', { jsonrpc: '2.0', id: 3, method: 'tools/list' }, sid)).statusCode, 404, 'another caller with the leaked id: unknown session')
  const del = await app.inject({ method: 'DELETE', url: '/mcp', headers: { authorization: 'Bearer token-b', 'mcp-session-id': sid } })
  t.equal(del.statusCode, 404, 'another caller cannot end it')
  t.equal((await as('token-a', { jsonrpc: '2.0', id: 4, method: 'tools/list' }, sid)).statusCode, 200, 'it lives on for its caller')
})

t.test('auth/bearer/session-binding-memo-keeps-only-a-proved-key', async t => {
  // The memo (Session.boundKey) spares the hash for the caller that proved its key; it never admits another.
  const session = newSession(newSessionId('key-a'), '2025-11-25', {})
  t.notOk(sessionUsableBy(session, 'key-b'), 'another key is refused')
  t.equal(session.boundKey, undefined, 'a refused key is not kept')
  t.ok(sessionUsableBy(session, 'key-a'), 'its own key is admitted')
  t.equal(session.boundKey, 'key-a', 'and kept')
  t.notOk(sessionUsableBy(session, 'key-b'), 'another key is still refused after the memo is set')
  t.notOk(sessionUsableBy(session, undefined), 'no key is refused')
  t.ok(sessionUsableBy(session, 'key-a'), 'its own key again, from the memo')
  const open = newSession(newSessionId(), '2025-11-25', {})
  t.ok(sessionUsableBy(open, undefined), 'a session minted with no key admits no key')
  t.notOk(sessionUsableBy(open, 'key-a'), 'but not a key')
})

t.test('auth/bearer/session-bound-to-its-header-without-auth', async t => {
  // No auth configured (a proxy in front authenticates): the session still binds to the Authorization
  // header it was minted under, hashed (lib/auth/principal headerBindingKey).
  const app = await build(t, { upstreams: fixtureUpstreams() })
  const as = (authorization: string | undefined, body: unknown, sid?: string): Promise<{ statusCode: number, headers: Record<string, unknown> }> =>
    app.inject({ method: 'POST', url: '/mcp', headers: { ...legacyHeaders(), ...(authorization !== undefined ? { authorization } : {}), ...(sid !== undefined ? { 'mcp-session-id': sid } : {}) }, payload: JSON.stringify(body) }) as never
  const init = await as('Bearer proxy-user-a', initializeBody('2025-11-25'))
  const sid = String(init.headers['mcp-session-id'])
  t.equal((await as('Bearer proxy-user-a', { jsonrpc: '2.0', id: 2, method: 'tools/list' }, sid)).statusCode, 200, 'the same header uses it')
  t.equal((await as('Bearer proxy-user-b', { jsonrpc: '2.0', id: 3, method: 'tools/list' }, sid)).statusCode, 404, 'another header with the leaked id: unknown session')
  t.equal((await as(undefined, { jsonrpc: '2.0', id: 4, method: 'tools/list' }, sid)).statusCode, 404, 'no header with the leaked id: unknown session')
  const open = await as(undefined, initializeBody('2025-11-25'))
  const openSid = String(open.headers['mcp-session-id'])
  t.equal((await as(undefined, { jsonrpc: '2.0', id: 5, method: 'tools/list' }, openSid)).statusCode, 200, 'a session minted with no header serves requests with none')
})
