/**
 * Unit tests of lib/protocol/modern-headers: MCP-Protocol-Version, Mcp-Method and Mcp-Name against the body
 * (seed › Streamable HTTP, 2026-07-28 › Mirrored headers; DIGEST §6d table D4; §9 A2, A3, A4, A17).
 * No Fastify: headers are given as Node's bag (lowercase names, arrays for repeats).
 */
import t from 'tap'
import type { HeaderBag } from '../../lib/protocol/header-values.js'
import { bodyProtocolVersion, checkModernHeaders, nameFieldOf, type MirroredMessage } from '../../lib/protocol/modern-headers.js'

const REVISION = '2026-07-28'
const META = { 'io.modelcontextprotocol/protocolVersion': REVISION, 'io.modelcontextprotocol/clientCapabilities': {} }
const PREFIX = 'Header mismatch: '
const INVALID_BYTES = 'header carries bytes a header may not carry (allowed: visible ASCII, space, tab)'

/** Headers as Node hands them over: names lowercased whatever the client sent, repeats as arrays. */
function bag (pairs: Array<[string, string]>): HeaderBag {
  const out: HeaderBag = {}
  for (const [name, value] of pairs) {
    const key = name.toLowerCase()
    const prior = out[key]
    out[key] = prior === undefined ? value : ([] as string[]).concat(prior, value)
  }
  return out
}

function request (method: string, params: Record<string, unknown> = {}): MirroredMessage {
  return { method, params: { ...params, _meta: META } }
}

function mismatch (message: string): { code: number, message: string } {
  return { code: -32_020, message: PREFIX + message }
}

t.test('2026-07-28/headers/d4-header-name-case-insensitive', async t => {
  const body = request('tools/list')
  t.equal(checkModernHeaders(bag([['mcp-protocol-version', REVISION], ['mcp-method', 'tools/list']]), body, 'request'), undefined)
  t.equal(checkModernHeaders(bag([['MCP-PROTOCOL-VERSION', REVISION], ['MCP-METHOD', 'tools/list']]), body, 'request'), undefined)
  t.equal(checkModernHeaders(bag([['Mcp-Protocol-Version', REVISION], ['Mcp-Method', 'tools/list']]), body, 'request'), undefined)
})

t.test('2026-07-28/headers/d4-method-value-case-sensitive', async t => {
  const headers = bag([['MCP-Protocol-Version', REVISION], ['Mcp-Method', 'TOOLS/CALL'], ['Mcp-Name', 'foo']])
  t.strictSame(checkModernHeaders(headers, request('tools/call', { name: 'foo' }), 'request'),
    mismatch("Mcp-Method header does not match the body's method"))
})

t.test('2026-07-28/headers/d4-method-differs-from-body', async t => {
  const headers = bag([['MCP-Protocol-Version', REVISION], ['Mcp-Method', 'tools/call'], ['Mcp-Name', 'foo']])
  t.strictSame(checkModernHeaders(headers, request('prompts/get', { name: 'foo' }), 'request'),
    mismatch("Mcp-Method header does not match the body's method"))
})

t.test('2026-07-28/headers/d4-name-differs-from-body', async t => {
  const headers = bag([['MCP-Protocol-Version', REVISION], ['Mcp-Method', 'tools/call'], ['Mcp-Name', 'foo']])
  t.strictSame(checkModernHeaders(headers, request('tools/call', { name: 'bar' }), 'request'),
    mismatch("Mcp-Name header does not match the body's params.name"))
  // Values are case-sensitive for Mcp-Name too.
  t.strictSame(checkModernHeaders(headers, request('tools/call', { name: 'FOO' }), 'request'),
    mismatch("Mcp-Name header does not match the body's params.name"))
})

t.test('2026-07-28/headers/d4-method-missing', async t => {
  const headers = bag([['MCP-Protocol-Version', REVISION], ['Mcp-Name', 'foo']])
  t.strictSame(checkModernHeaders(headers, request('tools/call', { name: 'foo' }), 'request'), mismatch('Mcp-Method header is missing'))
})

t.test('2026-07-28/headers/d4-name-surrounding-whitespace-trimmed', async t => {
  const headers = bag([['MCP-Protocol-Version', ' 2026-07-28\t'], ['Mcp-Method', '\ttools/call '], ['Mcp-Name', '  foo ']])
  t.equal(checkModernHeaders(headers, request('tools/call', { name: 'foo' }), 'request'), undefined)
})

t.test('2026-07-28/headers/d4-name-missing', async t => {
  for (const [method, field] of [['tools/call', 'name'], ['prompts/get', 'name'], ['resources/read', 'uri']] as const) {
    const headers = bag([['MCP-Protocol-Version', REVISION], ['Mcp-Method', method]])
    t.strictSame(checkModernHeaders(headers, request(method, { [field]: 'foo' }), 'request'), mismatch('Mcp-Name header is missing'), method)
  }
})

t.test('2026-07-28/headers/d4-plain-names-and-uris-accepted', async t => {
  for (const [method, field, value] of [
    ['tools/call', 'name', 'my-tool-name'],
    ['tools/call', 'name', 'my_tool_name'],
    ['prompts/get', 'name', 'my-prompt'],
    ['resources/read', 'uri', 'file:///path/to/file%20name.txt'],
    ['resources/read', 'uri', 'https://example.com/resource?id=123'],
  ] as const) {
    const headers = bag([['MCP-Protocol-Version', REVISION], ['Mcp-Method', method], ['Mcp-Name', value]])
    t.equal(checkModernHeaders(headers, request(method, { [field]: value }), 'request'), undefined, `${method} ${value}`)
  }
})

t.test('2026-07-28/headers/name-sentinel-decoded', async t => {
  // A non-ASCII URI must travel encoded; it is decoded before the comparison.
  const uri = 'file:///tmp/日本語.txt'
  const encoded = '=?base64?' + Buffer.from(uri).toString('base64') + '?='
  const headers = bag([['MCP-Protocol-Version', REVISION], ['Mcp-Method', 'resources/read'], ['Mcp-Name', encoded]])
  t.equal(checkModernHeaders(headers, request('resources/read', { uri }), 'request'), undefined)
  t.strictSame(checkModernHeaders(headers, request('resources/read', { uri: encoded }), 'request'),
    mismatch("Mcp-Name header does not match the body's params.uri"))
  // D3 row 1 through Mcp-Name: decodes to "Hello".
  const hello = bag([['MCP-Protocol-Version', REVISION], ['Mcp-Method', 'tools/call'], ['Mcp-Name', '=?base64?SGVsbG8=?=']])
  t.equal(checkModernHeaders(hello, request('tools/call', { name: 'Hello' }), 'request'), undefined)
})

t.test('2026-07-28/headers/name-bad-base64', async t => {
  const reason = 'the =?base64?…?= payload is not strict base64 (standard alphabet, = padding required)'
  for (const value of ['=?base64?SGVsbG8?=', '=?base64?SGVs!!!bG8=?=']) {
    const headers = bag([['MCP-Protocol-Version', REVISION], ['Mcp-Method', 'tools/call'], ['Mcp-Name', value]])
    t.strictSame(checkModernHeaders(headers, request('tools/call', { name: 'Hello' }), 'request'), mismatch('Mcp-Name header: ' + reason), value)
  }
})

t.test('2026-07-28/headers/name-base64-invalid-utf8', async t => {
  const headers = bag([['MCP-Protocol-Version', REVISION], ['Mcp-Method', 'tools/call'], ['Mcp-Name', '=?base64?/w==?=']])
  t.strictSame(checkModernHeaders(headers, request('tools/call', { name: '\ufffd' }), 'request'),
    mismatch('Mcp-Name header: the =?base64?…?= payload does not decode to valid UTF-8'))
})

t.test('2026-07-28/headers/name-short-sentinel-literal', async t => {
  // A17: "=?base64?=" is 10 characters, so it is the literal name, not an (empty) encoded one.
  const headers = bag([['MCP-Protocol-Version', REVISION], ['Mcp-Method', 'tools/call'], ['Mcp-Name', '=?base64?=']])
  t.equal(checkModernHeaders(headers, request('tools/call', { name: '=?base64?=' }), 'request'), undefined)
  t.strictSame(checkModernHeaders(headers, request('tools/call', { name: '' }), 'request'),
    mismatch("Mcp-Name header does not match the body's params.name"))
  // Uppercase markers (D3): literal too.
  const upper = bag([['MCP-Protocol-Version', REVISION], ['Mcp-Method', 'tools/call'], ['Mcp-Name', '=?BASE64?SGVsbG8=?=']])
  t.equal(checkModernHeaders(upper, request('tools/call', { name: '=?BASE64?SGVsbG8=?=' }), 'request'), undefined)
})

t.test('2026-07-28/headers/method-and-version-compared-literally', async t => {
  // Only Mcp-Name (and Mcp-Param-*) may use the sentinel; an encoded Mcp-Method is not decoded.
  const encoded = '=?base64?' + Buffer.from('tools/list').toString('base64') + '?='
  t.strictSame(checkModernHeaders(bag([['MCP-Protocol-Version', REVISION], ['Mcp-Method', encoded]]), request('tools/list'), 'request'),
    mismatch("Mcp-Method header does not match the body's method"))
})

t.test('2026-07-28/headers/protocol-version-missing', async t => {
  t.strictSame(checkModernHeaders(bag([['Mcp-Method', 'tools/list']]), request('tools/list'), 'request'),
    mismatch('MCP-Protocol-Version header is missing'))
})

t.test('2026-07-28/headers/protocol-version-differs-from-meta', async t => {
  const expected = mismatch('MCP-Protocol-Version header does not match the body\'s params._meta["io.modelcontextprotocol/protocolVersion"]')
  t.strictSame(checkModernHeaders(bag([['MCP-Protocol-Version', '2026-08-01'], ['Mcp-Method', 'tools/list']]), request('tools/list'), 'request'), expected)
  // A2 settled by the seed: a modern header on a body with no _meta protocolVersion is a disagreement (-32020).
  const headers = bag([['MCP-Protocol-Version', REVISION], ['Mcp-Method', 'tools/list']])
  t.strictSame(checkModernHeaders(headers, { method: 'tools/list', params: {} }, 'request'), expected)
  t.strictSame(checkModernHeaders(headers, { method: 'tools/list' }, 'request'), expected)
  t.strictSame(checkModernHeaders(headers, { method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': 20260728 } } }, 'request'), expected)
})

t.test('2026-07-28/headers/invalid-bytes', async t => {
  const cases: Array<[string, string]> = [
    ['mcp-protocol-version', '2026-07-28\x7f'],
    ['mcp-method', 'tools/cäll'],
    ['mcp-name', 'foo\rbar'],
    ['mcp-name', 'foo\x7f'],
    ['mcp-name', 'Région'],
  ]
  const names: Record<string, string> = { 'mcp-protocol-version': 'MCP-Protocol-Version', 'mcp-method': 'Mcp-Method', 'mcp-name': 'Mcp-Name' }
  for (const [name, value] of cases) {
    const headers: HeaderBag = { 'mcp-protocol-version': REVISION, 'mcp-method': 'tools/call', 'mcp-name': 'foo', [name]: value }
    t.strictSame(checkModernHeaders(headers, request('tools/call', { name: 'foo' }), 'request'), mismatch(`${names[name]} ${INVALID_BYTES}`), JSON.stringify(value))
  }
})

t.test('2026-07-28/headers/duplicate-header', async t => {
  const good: Array<[string, string]> = [['MCP-Protocol-Version', REVISION], ['Mcp-Method', 'tools/call'], ['Mcp-Name', 'foo']]
  for (const [name, value] of good) {
    const headers = bag([...good, [name, value]])
    t.strictSame(checkModernHeaders(headers, request('tools/call', { name: 'foo' }), 'request'), mismatch(`${name} header is sent more than once`), name)
  }
})

t.test('2026-07-28/headers/name-ignored-where-not-mirrored', async t => {
  // A4: Mcp-Name on a method that does not mirror a name is not checked.
  const headers = bag([['MCP-Protocol-Version', REVISION], ['Mcp-Method', 'tools/list'], ['Mcp-Name', 'anything']])
  t.equal(checkModernHeaders(headers, request('tools/list'), 'request'), undefined)
  t.equal(nameFieldOf('tools/call'), 'name')
  t.equal(nameFieldOf('prompts/get'), 'name')
  t.equal(nameFieldOf('resources/read'), 'uri')
  t.equal(nameFieldOf('tasks/get'), 'taskId', 'tasks/get, tasks/update, tasks/cancel mirror taskId (SEP-2663)')
  t.equal(nameFieldOf('tasks/update'), 'taskId')
  t.equal(nameFieldOf('tasks/cancel'), 'taskId')
  t.equal(nameFieldOf('tasks/list'), undefined)
  t.equal(nameFieldOf('tools/list'), undefined)
  t.equal(nameFieldOf('__proto__'), undefined)
  t.equal(nameFieldOf('constructor'), undefined)
})

t.test('2026-07-28/headers/body-name-not-a-string', async t => {
  const headers = bag([['MCP-Protocol-Version', REVISION], ['Mcp-Method', 'tools/call'], ['Mcp-Name', '42']])
  t.strictSame(checkModernHeaders(headers, request('tools/call', { name: 42 }), 'request'),
    mismatch("Mcp-Name header does not match the body's params.name"))
  t.strictSame(checkModernHeaders(headers, request('tools/call'), 'request'),
    mismatch("Mcp-Name header does not match the body's params.name"))
})

t.test('2026-07-28/headers/notification-no-headers-ok', async t => {
  t.equal(checkModernHeaders({}, { method: 'notifications/initialized' }, 'notification'), undefined)
  t.equal(checkModernHeaders({}, { method: 'notifications/cancelled', params: { requestId: 1 } }, 'notification'), undefined)
})

t.test('2026-07-28/headers/notification-method-disagrees', async t => {
  t.strictSame(checkModernHeaders(bag([['Mcp-Method', 'notifications/progress']]), { method: 'notifications/cancelled' }, 'notification'),
    mismatch("Mcp-Method header does not match the body's method"))
  t.equal(checkModernHeaders(bag([['Mcp-Method', 'notifications/cancelled']]), { method: 'notifications/cancelled' }, 'notification'), undefined)
  t.strictSame(checkModernHeaders(bag([['Mcp-Method', 'notifications/cancelled\x7f']]), { method: 'notifications/cancelled' }, 'notification'),
    mismatch(`Mcp-Method ${INVALID_BYTES}`))
})

t.test('2026-07-28/headers/notification-protocol-version', async t => {
  // No _meta protocolVersion in the body: any (well-formed) header is accepted, there is nothing to disagree with.
  t.equal(checkModernHeaders(bag([['MCP-Protocol-Version', REVISION]]), { method: 'notifications/initialized' }, 'notification'), undefined)
  // The body has one: the header must agree.
  const body = { method: 'notifications/initialized', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': REVISION } } }
  t.equal(checkModernHeaders(bag([['MCP-Protocol-Version', REVISION]]), body, 'notification'), undefined)
  t.strictSame(checkModernHeaders(bag([['MCP-Protocol-Version', '2025-11-25']]), body, 'notification'),
    mismatch('MCP-Protocol-Version header does not match the body\'s params._meta["io.modelcontextprotocol/protocolVersion"]'))
  t.strictSame(checkModernHeaders(bag([['MCP-Protocol-Version', REVISION], ['MCP-Protocol-Version', REVISION]]), body, 'notification'),
    mismatch('MCP-Protocol-Version header is sent more than once'))
  // Mcp-Name mirrors nothing on a notification.
  t.equal(checkModernHeaders(bag([['Mcp-Name', 'x']]), body, 'notification'), undefined)
})

t.test('2026-07-28/headers/never-throws-on-malformed-body', async t => {
  const headers = bag([['MCP-Protocol-Version', REVISION], ['Mcp-Method', 'tools/call'], ['Mcp-Name', 'foo']])
  const expected = mismatch('MCP-Protocol-Version header does not match the body\'s params._meta["io.modelcontextprotocol/protocolVersion"]')
  for (const params of [null, [], 'x', { _meta: null }, { _meta: [] }, { _meta: 'x' }]) {
    t.strictSame(checkModernHeaders(headers, { method: 'tools/call', params: params as Record<string, unknown> }, 'request'), expected, JSON.stringify(params))
  }
  t.equal(bodyProtocolVersion(undefined), undefined)
  t.equal(bodyProtocolVersion({ _meta: META }), REVISION)
})
