/**
 * The 2026-07-28 Streamable HTTP face over real HTTP (one mcpx on 127.0.0.1:0, the echo fixture
 * as its only upstream): seed › "Which era a POST belongs to" and "Streamable HTTP, 2026-07-28",
 * every bullet; DIGEST §6c, §6d (tables D3, D4, D6), §6f. Test names are
 * `2026-07-28/<area>/<requirement>` (the era decision: `era/<requirement>`). Errors are checked
 * for exact status, code and id, with ids of several types (0, "abc", -1, 9007199254740993 —
 * the last checked in the raw reply text, since JSON.parse cannot hold it).
 */
import t, { type Test } from 'tap'
import { listen, modernHeaders, modernMeta, legacyHeaders } from '../helpers/app.js'
import { modernBody, idText, post, rawPost, schemaErrors, SseReader, type TestId } from '../helpers/modern-wire.js'

const { base } = await listen(t, { transport: { sseKeepAlive: 50 } })

const HEADER_MISMATCH = -32_020
const IDS: TestId[] = [0, 'abc', -1, 'big']

/** Asserts a JSON-RPC error reply: exact status, code, and id (or no id at all). */
function assertError (t: Test, reply: { status: number, text: string, json: any }, status: number, code: number, id: TestId | undefined): void {
  t.equal(reply.status, status, 'status')
  t.equal(reply.json?.jsonrpc, '2.0')
  t.equal(reply.json?.error?.code, code, 'code: ' + reply.text)
  if (id === undefined) t.notOk(Object.hasOwn(reply.json ?? {}, 'id'), 'id-less error')
  else t.ok(reply.text.includes(idText(id)), `id ${idText(id)} echoed in ${reply.text}`)
}

const toolCall = (id: TestId | undefined, name: string, args: Record<string, unknown> = {}, meta?: Record<string, unknown> | null): string =>
  modernBody(id, 'tools/call', { name, arguments: args }, meta)

/* ------------------------------------------------------------------ era */

t.test('all/era/body-meta-is-modern', async t => {
  // _meta alone makes it modern: without headers it is refused by the modern header rules (a
  // legacy POST would have been served 200).
  const refused = await post(base, modernBody(0, 'tools/list'), legacyHeaders())
  assertError(t, refused, 400, HEADER_MISMATCH, 0)
  const served = await post(base, modernBody(1, 'tools/list'), modernHeaders('tools/list'))
  t.equal(served.status, 200)
  t.equal(served.json.result.resultType, 'complete')
})

t.test('all/era/modern-header-without-meta-refused', async t => {
  // Seed: a modern header on a body without the _meta field is the disagreement the header rules
  // catch, "refused as that": -32020. The seed wins over conformance 0.2.0-alpha.12, whose
  // sep-2575-request-meta-invalid-missing-meta probe sends this very body and wants -32602.
  for (const id of IDS) {
    const reply = await post(base, modernBody(id, 'tools/list', {}, null), modernHeaders('tools/list'))
    assertError(t, reply, 400, HEADER_MISMATCH, id)
    t.notOk(reply.json?.result, 'not served as legacy')
  }
})

t.test('all/era/unimplemented-modern-date-is-32022', async t => {
  for (const id of IDS) {
    const reply = await post(base, modernBody(id, 'tools/list'), modernHeaders('tools/list', undefined, { 'mcp-protocol-version': '2027-01-01' }))
    assertError(t, reply, 400, -32_022, id)
    t.ok(Array.isArray(reply.json.error.data?.supported) && reply.json.error.data.supported.includes('2026-07-28'), 'data.supported lists 2026-07-28')
    t.equal(reply.json.error.data?.requested, '2027-01-01')
  }
  // The same date in the body alone (no header) is modern too, and -32022.
  const bodyOnly = await post(base, modernBody('x', 'tools/list', {}, modernMeta({}, { 'io.modelcontextprotocol/protocolVersion': '2027-01-01' })), legacyHeaders())
  assertError(t, bodyOnly, 400, -32_022, 'x')
  t.equal(bodyOnly.json.error.data?.requested, '2027-01-01')
})

t.test('all/era/no-header-no-meta-is-legacy', async t => {
  const reply = await post(base, JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' }), legacyHeaders())
  t.equal(reply.status, 200)
  t.ok(Array.isArray(reply.json.result.tools), 'served')
  t.notOk(Object.hasOwn(reply.json.result, 'resultType'), 'legacy-shaped: no resultType')
  t.notOk(Object.hasOwn(reply.json.result, 'ttlMs'), 'legacy-shaped: no ttlMs')
})

/* ------------------------------------------------------------------ mirrored headers */

t.test('2026-07-28/headers/protocol-version-missing', async t => {
  for (const id of IDS) {
    const headers = modernHeaders('tools/list')
    delete headers['mcp-protocol-version']
    assertError(t, await post(base, modernBody(id, 'tools/list'), headers), 400, HEADER_MISMATCH, id)
  }
})

t.test('2026-07-28/headers/mcp-method-missing', async t => {
  for (const id of IDS) {
    const headers = modernHeaders('tools/list')
    delete headers['mcp-method']
    assertError(t, await post(base, modernBody(id, 'tools/list'), headers), 400, HEADER_MISMATCH, id)
  }
})

t.test('2026-07-28/headers/mcp-name-missing', async t => {
  const cases: Array<[string, Record<string, unknown>]> = [
    ['tools/call', { name: 'echo', arguments: { text: 'x' } }],
    ['prompts/get', { name: 'greet', arguments: { name: 'x' } }],
    ['resources/read', { uri: 'fixture://static' }]
  ]
  for (const [method, params] of cases) {
    for (const id of IDS) {
      assertError(t, await post(base, modernBody(id, method, params), modernHeaders(method)), 400, HEADER_MISMATCH, id)
    }
  }
  // Mcp-Name is required on those three only: tools/list without it is served.
  t.equal((await post(base, modernBody(1, 'tools/list'), modernHeaders('tools/list'))).status, 200)
})

t.test('2026-07-28/headers/protocol-version-mismatch', async t => {
  const body = modernBody(-1, 'tools/list', {}, modernMeta({}, { 'io.modelcontextprotocol/protocolVersion': '2025-11-25' }))
  assertError(t, await post(base, body, modernHeaders('tools/list')), 400, HEADER_MISMATCH, -1)
  // The other way round: a legacy revision in the header beside a modern body is the same disagreement, not -32022.
  assertError(t, await post(base, modernBody(7, 'tools/list'), modernHeaders('tools/list', undefined, { 'mcp-protocol-version': '2025-11-25' })), 400, HEADER_MISMATCH, 7)
})

t.test('2026-07-28/headers/mcp-method-mismatch', async t => {
  assertError(t, await post(base, modernBody('abc', 'tools/list'), modernHeaders('prompts/list')), 400, HEADER_MISMATCH, 'abc')
})

t.test('2026-07-28/headers/mcp-name-mismatch', async t => {
  assertError(t, await post(base, toolCall('big', 'echo', { text: 'x' }), modernHeaders('tools/call', 'fail')), 400, HEADER_MISMATCH, 'big')
  assertError(t, await post(base, modernBody(0, 'resources/read', { uri: 'fixture://static' }), modernHeaders('resources/read', 'fixture://counter')), 400, HEADER_MISMATCH, 0)
})

t.test('2026-07-28/headers/invalid-bytes', async t => {
  // obs-text (0x80) passes Node's parser, so mcpx itself must refuse it; sent over a bare socket.
  const body = toolCall('big', 'echo', { text: 'x' })
  const cases = [
    ['MCP-Protocol-Version: 2026-07-28', 'Mcp-Method: tools/call', 'Mcp-Name: ech\x80o'],
    ['MCP-Protocol-Version: 2026-07-28', 'Mcp-Method: tools/call\x80', 'Mcp-Name: echo'],
    ['MCP-Protocol-Version: 2026-07-28\xff', 'Mcp-Method: tools/call', 'Mcp-Name: echo']
  ]
  for (const lines of cases) {
    const reply = await rawPost(base, lines, body)
    assertError(t, reply, 400, HEADER_MISMATCH, 'big')
  }
  // The same request with clean bytes is served: the refusal was the byte.
  const clean = await rawPost(base, ['MCP-Protocol-Version: 2026-07-28', 'Mcp-Method: tools/call', 'Mcp-Name: echo'], body)
  t.equal(clean.status, 200, clean.text)
})

t.test('2026-07-28/headers/mcp-name-base64-valid', async t => {
  // "echo" → ZWNobw== (padding required: the strict case that must still decode).
  const reply = await post(base, toolCall(7, 'echo', { text: 'via sentinel' }), modernHeaders('tools/call', '=?base64?ZWNobw==?='))
  t.equal(reply.status, 200, reply.text)
  t.equal(reply.json.result.content[0].text, 'via sentinel')
})

t.test('2026-07-28/headers/mcp-name-base64-missing-padding', async t => {
  // Node's Buffer.from would decode this to "echo"; the strict rule refuses it (DIGEST D3).
  assertError(t, await post(base, toolCall(0, 'echo', { text: 'x' }), modernHeaders('tools/call', '=?base64?ZWNobw?=')), 400, HEADER_MISMATCH, 0)
})

t.test('2026-07-28/headers/mcp-name-base64-bad-chars', async t => {
  assertError(t, await post(base, toolCall('abc', 'echo', { text: 'x' }), modernHeaders('tools/call', '=?base64?ZW!!Nobw==?=')), 400, HEADER_MISMATCH, 'abc')
})

t.test('2026-07-28/headers/names-case-insensitive', async t => {
  const body = toolCall(-1, 'echo', { text: 'cased' })
  const reply = await rawPost(base, ['MCP-PROTOCOL-VERSION: 2026-07-28', 'mcp-method: tools/call', 'MCP-NAME: echo'], body)
  t.equal(reply.status, 200, reply.text)
  t.ok(reply.text.includes('"id":-1'))
})

t.test('2026-07-28/headers/values-case-sensitive', async t => {
  assertError(t, await post(base, toolCall(-1, 'echo', { text: 'x' }), modernHeaders('TOOLS/CALL', 'echo')), 400, HEADER_MISMATCH, -1)
  assertError(t, await post(base, toolCall(0, 'echo', { text: 'x' }), modernHeaders('tools/call', 'ECHO')), 400, HEADER_MISMATCH, 0)
})

t.test('2026-07-28/headers/surrounding-whitespace-trimmed', async t => {
  const reply = await rawPost(base, ['MCP-Protocol-Version:  2026-07-28 ', 'Mcp-Method: \ttools/call\t', 'Mcp-Name:   echo  '], toolCall('abc', 'echo', { text: 'trimmed' }))
  t.equal(reply.status, 200, reply.text)
  t.equal(reply.json.result.content[0].text, 'trimmed')
})

t.test('2026-07-28/headers/notification-needs-no-headers', async t => {
  const body = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized', params: { _meta: modernMeta() } })
  const reply = await post(base, body, legacyHeaders())
  t.equal(reply.status, 202)
  t.equal(reply.text, '')
})

t.test('2026-07-28/headers/notification-headers-must-agree', async t => {
  const body = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized', params: { _meta: modernMeta() } })
  const reply = await post(base, body, modernHeaders('notifications/cancelled'))
  assertError(t, reply, 400, HEADER_MISMATCH, undefined)
  // Agreeing headers: accepted.
  const agreeing = await post(base, body, modernHeaders('notifications/initialized'))
  t.equal(agreeing.status, 202)
  t.equal(agreeing.text, '')
})

/* ------------------------------------------------------------------ Mcp-Param-* */

const HEADERS_ARGS = { region: 'eu-west1', count: 42, target: { zone: 'b' } }
const PARAM_HEADERS = { 'mcp-param-region': 'eu-west1', 'mcp-param-count': '42', 'mcp-param-zone': 'b' }

t.test('2026-07-28/param-headers/matching-is-served', async t => {
  const reply = await post(base, toolCall(1, 'headers', HEADERS_ARGS), modernHeaders('tools/call', 'headers', PARAM_HEADERS))
  t.equal(reply.status, 200, reply.text)
  t.same(JSON.parse(reply.json.result.content[0].text), HEADERS_ARGS)
})

t.test('2026-07-28/param-headers/missing-while-body-has-value', async t => {
  for (const [i, header] of Object.keys(PARAM_HEADERS).entries()) {
    const headers: Record<string, string> = { ...PARAM_HEADERS }
    delete headers[header]
    const id = IDS[i]
    assertError(t, await post(base, toolCall(id, 'headers', HEADERS_ARGS), modernHeaders('tools/call', 'headers', headers)), 400, HEADER_MISMATCH, id)
  }
})

t.test('2026-07-28/param-headers/present-while-body-has-none', async t => {
  assertError(t, await post(base, toolCall(0, 'headers', { count: 1 }), modernHeaders('tools/call', 'headers', { 'mcp-param-count': '1', 'mcp-param-region': 'eu' })), 400, HEADER_MISMATCH, 0)
  // null is "no value" too (DIGEST D6).
  assertError(t, await post(base, toolCall('abc', 'headers', { region: null }), modernHeaders('tools/call', 'headers', { 'mcp-param-region': 'null' })), 400, HEADER_MISMATCH, 'abc')
  // ...and with no header for the null value, it is served.
  t.equal((await post(base, toolCall(2, 'headers', { region: null }), modernHeaders('tools/call', 'headers'))).status, 200)
})

t.test('2026-07-28/param-headers/mismatch', async t => {
  assertError(t, await post(base, toolCall(-1, 'headers', HEADERS_ARGS), modernHeaders('tools/call', 'headers', { ...PARAM_HEADERS, 'mcp-param-region': 'us-east1' })), 400, HEADER_MISMATCH, -1)
  // Values are case-sensitive.
  assertError(t, await post(base, toolCall('big', 'headers', HEADERS_ARGS), modernHeaders('tools/call', 'headers', { ...PARAM_HEADERS, 'mcp-param-region': 'EU-WEST1' })), 400, HEADER_MISMATCH, 'big')
})

t.test('2026-07-28/param-headers/integers-compare-numerically', async t => {
  const served = await post(base, toolCall(3, 'headers', { count: 42 }), modernHeaders('tools/call', 'headers', { 'mcp-param-count': '42.0' }))
  t.equal(served.status, 200, served.text)
  assertError(t, await post(base, toolCall(0, 'headers', { count: 42 }), modernHeaders('tools/call', 'headers', { 'mcp-param-count': '43' })), 400, HEADER_MISMATCH, 0)
  assertError(t, await post(base, toolCall(1, 'headers', { count: 42 }), modernHeaders('tools/call', 'headers', { 'mcp-param-count': '42abc' })), 400, HEADER_MISMATCH, 1)
})

t.test('2026-07-28/param-headers/nested-property-checked', async t => {
  assertError(t, await post(base, toolCall('abc', 'headers', { target: { zone: 'b' } }), modernHeaders('tools/call', 'headers')), 400, HEADER_MISMATCH, 'abc')
  assertError(t, await post(base, toolCall(0, 'headers', { target: { zone: 'b' } }), modernHeaders('tools/call', 'headers', { 'mcp-param-zone': 'c' })), 400, HEADER_MISMATCH, 0)
  const served = await post(base, toolCall(4, 'headers', { target: { zone: 'b' } }), modernHeaders('tools/call', 'headers', { 'mcp-param-zone': 'b' }))
  t.equal(served.status, 200, served.text)
})

t.test('2026-07-28/param-headers/base64-value-decoded', async t => {
  // " eu-west" needs the sentinel (leading space); its 8 bytes encode with one `=` of padding,
  // which the strict rule requires.
  const value = ' eu-west'
  const encoded = '=?base64?' + Buffer.from(value).toString('base64') + '?='
  t.ok(encoded.endsWith('=?='), 'the encoding is padded')
  const served = await post(base, toolCall(5, 'headers', { region: value }), modernHeaders('tools/call', 'headers', { 'mcp-param-region': encoded }))
  t.equal(served.status, 200, served.text)
  assertError(t, await post(base, toolCall(-1, 'headers', { region: value }), modernHeaders('tools/call', 'headers', { 'mcp-param-region': encoded.replace('=?=', '?=') })), 400, HEADER_MISMATCH, -1)
})

t.test('2026-07-28/param-headers/invalid-bytes', async t => {
  const reply = await rawPost(base, ['MCP-Protocol-Version: 2026-07-28', 'Mcp-Method: tools/call', 'Mcp-Name: headers', 'Mcp-Param-Region: eu\x80'], toolCall(0, 'headers', { region: 'eu\u0080' }))
  assertError(t, reply, 400, HEADER_MISMATCH, 0)
})

/* ------------------------------------------------------------------ status */

t.test('2026-07-28/status/unknown-method-404', async t => {
  for (const id of IDS) assertError(t, await post(base, modernBody(id, 'nope/never'), modernHeaders('nope/never')), 404, -32_601, id)
})

t.test('2026-07-28/status/invalid-params-400', async t => {
  // Unknown tool (a handler's -32602) and a missing _meta field (the envelope's -32602): both 400.
  for (const id of IDS) assertError(t, await post(base, toolCall(id, 'no_such_tool'), modernHeaders('tools/call', 'no_such_tool')), 400, -32_602, id)
  const meta = modernMeta()
  delete meta['io.modelcontextprotocol/clientCapabilities']
  assertError(t, await post(base, modernBody('abc', 'tools/list', {}, meta), modernHeaders('tools/list')), 400, -32_602, 'abc')
  // A cursor mcpx never issued.
  assertError(t, await post(base, modernBody(0, 'tools/list', { cursor: 'bogus' }), modernHeaders('tools/list')), 400, -32_602, 0)
})

t.test('2026-07-28/status/tool-error-is-200', async t => {
  const reply = await post(base, toolCall(0, 'fail'), modernHeaders('tools/call', 'fail'))
  t.equal(reply.status, 200)
  t.equal(reply.json.result.isError, true)
  t.equal(reply.json.result.resultType, 'complete')
})

/* ------------------------------------------------------------------ no sessions */

t.test('2026-07-28/sessions/unknown-session-ignored', async t => {
  const reply = await post(base, modernBody('abc', 'tools/list'), modernHeaders('tools/list', undefined, { 'mcp-session-id': 'no-such-session' }))
  t.equal(reply.status, 200, reply.text)
  t.equal(reply.headers.get('mcp-session-id'), null, 'not echoed')
})

t.test('2026-07-28/sessions/known-legacy-session-not-bound', async t => {
  // A real legacy session, then a modern request naming it: served statelessly as modern, not
  // under the session's negotiated revision, and the id is not echoed.
  const init = await post(base, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '0' } } }), legacyHeaders())
  const session = init.headers.get('mcp-session-id')
  t.ok(session, 'a legacy session was minted')
  const reply = await post(base, modernBody(-1, 'tools/list'), modernHeaders('tools/list', undefined, { 'mcp-session-id': session! }))
  t.equal(reply.status, 200, reply.text)
  t.equal(reply.json.result.resultType, 'complete', 'modern-shaped, not the session\'s 2025-06-18 shape')
  t.equal(reply.headers.get('mcp-session-id'), null, 'not echoed')
  // And a modern refusal under that session is still the modern one (-32020 with the id), not a legacy answer.
  const refused = await post(base, modernBody(0, 'tools/list'), { ...modernHeaders('prompts/list'), 'mcp-session-id': session! })
  assertError(t, refused, 400, HEADER_MISMATCH, 0)
})

t.test('2026-07-28/sessions/none-minted', async t => {
  for (const method of ['server/discover', 'tools/list', 'prompts/list', 'resources/list']) {
    const reply = await post(base, modernBody(1, method), modernHeaders(method))
    t.equal(reply.status, 200, method)
    t.equal(reply.headers.get('mcp-session-id'), null, `${method}: no Mcp-Session-Id`)
  }
  const call = await post(base, toolCall(2, 'echo', { text: 'x' }), modernHeaders('tools/call', 'echo'))
  t.equal(call.headers.get('mcp-session-id'), null, 'tools/call: no Mcp-Session-Id')
})

t.test('2026-07-28/sessions/last-event-id-ignored', async t => {
  const reply = await post(base, modernBody(0, 'tools/list'), modernHeaders('tools/list', undefined, { 'last-event-id': '42' }))
  t.equal(reply.status, 200)
  t.ok(Array.isArray(reply.json.result.tools))
})

t.test('2026-07-28/sessions/sse-events-carry-no-ids', async t => {
  const body = toolCall(9, 'slow', { ms: 200, steps: 2 }, modernMeta({}, { progressToken: 'no-ids' }))
  const reply = await post(base, body, modernHeaders('tools/call', 'slow', { accept: 'text/event-stream, application/json' }))
  t.equal(reply.headers.get('content-type'), 'text/event-stream')
  t.ok(reply.text.includes('data:'), 'has events')
  t.notOk(/^id:/m.test(reply.text), 'no id: lines')
})

/* ------------------------------------------------------------------ batches, notifications */

t.test('2026-07-28/batches/array-body-400', async t => {
  const body = '[' + modernBody(1, 'tools/list') + ',' + modernBody(2, 'prompts/list') + ']'
  const reply = await post(base, body, modernHeaders('tools/list'))
  assertError(t, reply, 400, -32_600, undefined)
})

t.test('2026-07-28/notifications/accepted-202-empty', async t => {
  const body = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized', params: { _meta: modernMeta() } })
  const reply = await post(base, body, modernHeaders('notifications/initialized'))
  t.equal(reply.status, 202)
  t.equal(reply.text, '')
})

t.test('2026-07-28/notifications/unknown-method-202', async t => {
  const body = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/never/heard/of', params: { _meta: modernMeta() } })
  const reply = await post(base, body, modernHeaders('notifications/never/heard/of'))
  t.equal(reply.status, 202)
  t.equal(reply.text, '')
})

t.test('2026-07-28/notifications/not-accepted-400-id-less', async t => {
  // params that are not an object: not a notification mcpx can accept.
  const reply = await post(base, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized', params: 'x' }), modernHeaders('notifications/initialized'))
  assertError(t, reply, 400, -32_600, undefined)
})

/* ------------------------------------------------------------------ envelope */

t.test('2026-07-28/envelope/missing-protocol-version-32602', async t => {
  // _meta present without its protocolVersion: a missing required _meta field (DIGEST §6a), 400.
  for (const id of IDS) {
    const meta = modernMeta()
    delete meta['io.modelcontextprotocol/protocolVersion']
    assertError(t, await post(base, modernBody(id, 'tools/list', {}, meta), modernHeaders('tools/list')), 400, -32_602, id)
  }
})

t.test('2026-07-28/envelope/missing-client-capabilities-32602', async t => {
  for (const id of IDS) {
    const meta = modernMeta()
    delete meta['io.modelcontextprotocol/clientCapabilities']
    assertError(t, await post(base, modernBody(id, 'server/discover', {}, meta), modernHeaders('server/discover')), 400, -32_602, id)
  }
})

t.test('2026-07-28/envelope/legacy-methods-404', async t => {
  for (const method of ['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe']) {
    for (const id of [0, 'abc']) {
      const params = method === 'logging/setLevel' ? { level: 'info' } : method.startsWith('resources/') ? { uri: 'fixture://counter' } : {}
      assertError(t, await post(base, modernBody(id, method, params), modernHeaders(method)), 404, -32_601, id)
    }
  }
})

t.test('2026-07-28/envelope/result-shaping', async t => {
  const cacheable = ['server/discover', 'tools/list', 'prompts/list', 'resources/list', 'resources/templates/list']
  for (const method of cacheable) {
    const reply = await post(base, modernBody(1, method), modernHeaders(method))
    t.equal(reply.status, 200, method)
    const result = reply.json.result
    t.equal(result.resultType, 'complete', `${method} resultType`)
    t.ok(Number.isInteger(result.ttlMs) && result.ttlMs >= 0, `${method} ttlMs`)
    t.ok(result.cacheScope === 'public' || result.cacheScope === 'private', `${method} cacheScope`)
    t.same(result._meta?.['io.modelcontextprotocol/serverInfo']?.name, 'mcpx', `${method} serverInfo`)
  }
  const read = await post(base, modernBody(2, 'resources/read', { uri: 'fixture://static' }), modernHeaders('resources/read', 'fixture://static'))
  t.equal(read.json.result.resultType, 'complete')
  t.ok(Number.isInteger(read.json.result.ttlMs), 'resources/read ttlMs')
  t.ok(['public', 'private'].includes(read.json.result.cacheScope), 'resources/read cacheScope')
  t.equal(read.json.result._meta?.['io.modelcontextprotocol/serverInfo']?.name, 'mcpx')
  t.equal(schemaErrors('ReadResourceResult', read.json.result), '')
  const prompt = await post(base, modernBody(3, 'prompts/get', { name: 'greet', arguments: { name: 'Ada' } }), modernHeaders('prompts/get', 'greet'))
  t.equal(prompt.json.result.resultType, 'complete')
  t.notOk(Object.hasOwn(prompt.json.result, 'ttlMs'), 'prompts/get is not cacheable')
  t.equal(prompt.json.result._meta?.['io.modelcontextprotocol/serverInfo']?.name, 'mcpx')
  t.equal(schemaErrors('GetPromptResult', prompt.json.result), '')
})

t.test('2026-07-28/envelope/results-match-schema', async t => {
  const discover = await post(base, modernBody(1, 'server/discover'), modernHeaders('server/discover'))
  t.equal(schemaErrors('DiscoverResult', discover.json.result), '', 'DiscoverResult')
  t.equal(schemaErrors('DiscoverResultResponse', discover.json), '', 'DiscoverResultResponse')
  const list = await post(base, modernBody(2, 'tools/list'), modernHeaders('tools/list'))
  t.equal(schemaErrors('ListToolsResult', list.json.result), '', 'ListToolsResult')
  const call = await post(base, toolCall(3, 'echo', { text: 'schema' }), modernHeaders('tools/call', 'echo'))
  t.equal(schemaErrors('CallToolResult', call.json.result), '', 'CallToolResult')
  t.equal(schemaErrors('CallToolResultResponse', call.json), '', 'CallToolResultResponse')
  // The oracle can fail: a result without resultType is not a 2026-07-28 result.
  const { resultType: _omit, ...withoutType } = call.json.result
  t.not(schemaErrors('CallToolResult', withoutType), '', 'the oracle refuses a result without resultType')
})

t.test('2026-07-28/envelope/missing-client-capability-32021', async t => {
  // The fixture's elicit tool needs the client's elicitation capability; this request declares none.
  // mcpx must not hang and must not ask: -32021 with data.requiredCapabilities naming elicitation.
  for (const id of [0, 'abc']) {
    const reply = await post(base, toolCall(id, 'elicit'), modernHeaders('tools/call', 'elicit'))
    assertError(t, reply, 400, -32_021, id)
    t.ok(typeof reply.json.error.data?.requiredCapabilities?.elicitation === 'object', 'requiredCapabilities.elicitation: ' + reply.text)
  }
})

/* ------------------------------------------------------------------ server/discover */

t.test('2026-07-28/discover/versions-and-capabilities', async t => {
  const reply = await post(base, modernBody('abc', 'server/discover'), modernHeaders('server/discover'))
  t.equal(reply.status, 200)
  t.same([...reply.json.result.supportedVersions].sort(), ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28'])
  const caps = reply.json.result.capabilities
  t.same(caps.tools, { listChanged: true })
  t.same(caps.prompts, { listChanged: true })
  t.same(caps.resources, { subscribe: true, listChanged: true })
  t.ok(typeof caps.completions === 'object', 'the fixture\'s completions capability is merged in')
})

/* ------------------------------------------------------------------ responses */

t.test('2026-07-28/responses/json-when-only-json-accepted', async t => {
  const body = toolCall(1, 'slow', { ms: 100, steps: 2 }, modernMeta({}, { progressToken: 'json-only' }))
  const reply = await post(base, body, modernHeaders('tools/call', 'slow', { accept: 'application/json' }))
  t.equal(reply.status, 200)
  t.match(reply.headers.get('content-type'), /^application\/json/)
  t.equal(reply.json.result.content[0].text, 'slept 100')
})

t.test('2026-07-28/responses/sse-when-only-sse-accepted', async t => {
  const reply = await post(base, modernBody('abc', 'tools/list'), modernHeaders('tools/list', undefined, { accept: 'text/event-stream' }))
  t.equal(reply.status, 200)
  t.equal(reply.headers.get('content-type'), 'text/event-stream')
  t.equal(reply.headers.get('x-accel-buffering'), 'no')
  const events = reply.text.split('\n').filter(l => l.startsWith('data:'))
  t.equal(events.length, 1)
  t.equal(JSON.parse(events[0].slice(5)).id, 'abc')
})

t.test('2026-07-28/responses/sse-own-progress-only-and-keep-alive', async t => {
  const start = async (token: string, id: number): Promise<SseReader> => {
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: modernHeaders('tools/call', 'slow'),
      body: toolCall(id, 'slow', { ms: 400, steps: 4 }, modernMeta({}, { progressToken: token }))
    })
    t.equal(res.status, 200)
    t.equal(res.headers.get('content-type'), 'text/event-stream')
    t.equal(res.headers.get('x-accel-buffering'), 'no')
    t.equal(res.headers.get('mcp-session-id'), null)
    return new SseReader(res.body!)
  }
  const [a, b] = await Promise.all([start('tok-a', 11), start('tok-b', 12)])
  await Promise.all([a.done, b.done])
  for (const [reader, mine, other, id] of [[a, 'tok-a', 'tok-b', 11], [b, 'tok-b', 'tok-a', 12]] as const) {
    const progress = reader.messages.filter(m => m.method === 'notifications/progress')
    t.ok(progress.length >= 1, 'progress events arrived')
    t.ok(progress.every(p => p.params.progressToken === mine), `${mine}: only its own progress`)
    t.notOk(reader.raw.includes(other), `${mine}: nothing of ${other}`)
    const last = reader.messages[reader.messages.length - 1]
    t.equal(last.id, id)
    t.equal(last.result.resultType, 'complete')
    t.ok(/^: /m.test(reader.raw) || /^:/m.test(reader.raw), 'a `:` keep-alive comment (sseKeepAlive 50 ms)')
    t.notOk(/^id:/m.test(reader.raw), 'no event ids')
  }
})
