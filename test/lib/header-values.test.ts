/**
 * Unit tests of lib/protocol/header-values: allowed header bytes, reading one header from Node's bag, and
 * the =?base64?…?= sentinel both ways (seed › Streamable HTTP, 2026-07-28 › Mirrored headers;
 * DIGEST §6d tables D1, D2, D3; §9 A4, A17). No Fastify.
 */
import t from 'tap'
import {
  decodeHeaderValue, encodeHeaderValue, headerMismatch, isValidHeaderValue, readHeader
} from '../../lib/protocol/header-values.js'

t.test('2026-07-28/headers/allowed-bytes', async t => {
  for (const ok of ['', 'tools/call', 'us west 1', '\tindented', 'a\tb', '!~', ' x ']) {
    t.equal(isValidHeaderValue(ok), true, JSON.stringify(ok))
  }
  for (const bad of ['a\x7fb', 'Région', '日本', 'a\rb', 'a\nb', 'a\r\nb', 'a\x00b', 'a\x1fb', '\x0b']) {
    t.equal(isValidHeaderValue(bad), false, JSON.stringify(bad))
  }
})

t.test('2026-07-28/headers/read-absent-value-trimmed', async t => {
  t.strictSame(readHeader({}, 'mcp-method'), { kind: 'absent' })
  t.strictSame(readHeader({ 'mcp-method': undefined }, 'mcp-method'), { kind: 'absent' })
  t.strictSame(readHeader({ 'mcp-method': 'tools/call' }, 'mcp-method'), { kind: 'value', value: 'tools/call' })
  // D4: "Mcp-Name:  foo " — surrounding SP/HTAB is not part of the value (RFC 9110 §5.5).
  t.strictSame(readHeader({ 'mcp-name': ' \t foo \t' }, 'mcp-name'), { kind: 'value', value: 'foo' })
  t.strictSame(readHeader({ 'mcp-name': 'a b' }, 'mcp-name'), { kind: 'value', value: 'a b' })
  // D2: an empty value is a value, not an absent header.
  t.strictSame(readHeader({ 'mcp-param-name': '' }, 'mcp-param-name'), { kind: 'value', value: '' })
  t.strictSame(readHeader({ 'mcp-param-name': '   ' }, 'mcp-param-name'), { kind: 'value', value: '' })
})

t.test('2026-07-28/headers/read-duplicate', async t => {
  t.strictSame(readHeader({ 'mcp-method': ['tools/call', 'tools/call'] }, 'mcp-method'), { kind: 'duplicate' })
  t.strictSame(readHeader({ 'mcp-method': ['tools/call', 'prompts/get'] }, 'mcp-method'), { kind: 'duplicate' })
  // headersDistinct gives every header as an array: one element is one header.
  t.strictSame(readHeader({ 'mcp-method': ['tools/call'] }, 'mcp-method'), { kind: 'value', value: 'tools/call' })
  t.strictSame(readHeader({ 'mcp-method': [] }, 'mcp-method'), { kind: 'absent' })
})

t.test('2026-07-28/headers/read-invalid-bytes', async t => {
  for (const bad of ['tools/call\x7f', 'Région', 'tools\r/call', 'line1\nline2', '\x00']) {
    t.strictSame(readHeader({ 'mcp-method': bad }, 'mcp-method'), { kind: 'invalid' }, JSON.stringify(bad))
  }
  t.strictSame(readHeader({ 'mcp-method': ['Région'] }, 'mcp-method'), { kind: 'invalid' })
  // Not a string at all (a caller's bag built by hand): refused, not thrown.
  t.strictSame(readHeader({ 'mcp-method': 42 as unknown as string }, 'mcp-method'), { kind: 'invalid' })
})

/** DIGEST table D3, plus the A17 and strictness cases. */
const DECODE_ROWS: Array<[string, { ok: true, value: string } | { ok: false, reason: string }]> = [
  ['=?base64?SGVsbG8=?=', { ok: true, value: 'Hello' }],
  ['=?base64?SGVsbG8?=', { ok: false, reason: 'the =?base64?…?= payload is not strict base64 (standard alphabet, = padding required)' }],
  ['=?base64?SGVs!!!bG8=?=', { ok: false, reason: 'the =?base64?…?= payload is not strict base64 (standard alphabet, = padding required)' }],
  ['SGVsbG8=', { ok: true, value: 'SGVsbG8=' }],
  ['=?base64?SGVsbG8=', { ok: true, value: '=?base64?SGVsbG8=' }],
  ['=?BASE64?SGVsbG8=?=', { ok: true, value: '=?BASE64?SGVsbG8=?=' }],
]

t.test('2026-07-28/headers/base64-d3-table', async t => {
  for (const [raw, expected] of DECODE_ROWS) t.strictSame(decodeHeaderValue(raw), expected, raw)
  // The trap the table guards against: Node's decoder is lenient on both reject rows.
  t.equal(Buffer.from('SGVsbG8', 'base64').toString(), 'Hello')
  t.equal(Buffer.from('SGVs!!!bG8=', 'base64').toString(), 'Hello')
})

t.test('2026-07-28/headers/base64-strict-alphabet-and-padding', async t => {
  const bad = 'the =?base64?…?= payload is not strict base64 (standard alphabet, = padding required)'
  for (const payload of ['SGVsbG8', 'SGVsbG8==', 'SGVs bG8=', 'SGVs\tbG8=', 'SGVsbG8-', 'SGVs_bG8=', '=', 'S===', 'SGVsbG8=SGVs']) {
    t.strictSame(decodeHeaderValue(`=?base64?${payload}?=`), { ok: false, reason: bad }, payload)
  }
  // Non-zero pad bits (RFC 4648 §3.5): '9' ends in 01, so this is not the canonical encoding of "Hello".
  t.equal(Buffer.from('SGVsbG9=', 'base64').toString(), 'Hello')
  t.strictSame(decodeHeaderValue('=?base64?SGVsbG9=?='), { ok: false, reason: bad })
  t.strictSame(decodeHeaderValue('=?base64?YR==?='), { ok: false, reason: bad })
  t.strictSame(decodeHeaderValue('=?base64?YQ==?='), { ok: true, value: 'a' })
  // The standard alphabet's + and / (spec vector).
  t.strictSame(decodeHeaderValue('=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?='), { ok: true, value: '=?base64?literal?=' })
  t.strictSame(decodeHeaderValue('=?base64?fn5+?='), { ok: true, value: '~~~' })
})

t.test('2026-07-28/headers/sentinel-shorter-than-11-is-literal', async t => {
  // A17: "=?base64?=" starts with =?base64? and ends with ?= only because the markers overlap.
  t.strictSame(decodeHeaderValue('=?base64?='), { ok: true, value: '=?base64?=' })
  t.strictSame(decodeHeaderValue('=?base64?'), { ok: true, value: '=?base64?' })
  // Exactly 11 characters: an empty payload, which decodes to the empty string.
  t.strictSame(decodeHeaderValue('=?base64??='), { ok: true, value: '' })
})

t.test('2026-07-28/headers/base64-invalid-utf8-refused', async t => {
  const reason = 'the =?base64?…?= payload does not decode to valid UTF-8'
  t.strictSame(decodeHeaderValue('=?base64?/w==?='), { ok: false, reason }) // 0xFF
  t.strictSame(decodeHeaderValue('=?base64?wCA=?='), { ok: false, reason }) // overlong 0xC0 0x20
  t.strictSame(decodeHeaderValue('=?base64?7aCA?='), { ok: false, reason }) // CESU surrogate 0xED 0xA0 0x80
  // A leading BOM is data: the value must compare equal to a body that starts with U+FEFF.
  t.strictSame(decodeHeaderValue('=?base64?77u/aGk=?='), { ok: true, value: '\ufeffhi' })
})

/** DIGEST table D1 (spec encoding examples) and the string rows of D2 (SEP-2243). */
const ENCODE_ROWS: Array<[string, string]> = [
  ['us-west1', 'us-west1'],
  ['Hello, 世界', '=?base64?SGVsbG8sIOS4lueVjA==?='],
  [' padded ', '=?base64?IHBhZGRlZCA=?='],
  ['line1\nline2', '=?base64?bGluZTEKbGluZTI=?='],
  ['=?base64?literal?=', '=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?='],
  [' us-west1', '=?base64?IHVzLXdlc3Qx?='],
  ['us-west1 ', '=?base64?dXMtd2VzdDEg?='],
  [' us-west1 ', '=?base64?IHVzLXdlc3QxIA==?='],
  ['us west 1', 'us west 1'],
  ['日本語', '=?base64?5pel5pys6Kqe?='],
  ['line1\r\nline2', '=?base64?bGluZTENCmxpbmUy?='],
  ['\tindented', '=?base64?CWluZGVudGVk?='],
  ['', ''],
]

t.test('2026-07-28/headers/encode-d1-d2-tables', async t => {
  for (const [input, expected] of ENCODE_ROWS) {
    t.equal(encodeHeaderValue(input), expected, JSON.stringify(input))
    t.strictSame(decodeHeaderValue(expected), { ok: true, value: input }, `round trip ${JSON.stringify(input)}`)
    t.equal(isValidHeaderValue(expected), true)
  }
})

t.test('2026-07-28/headers/encode-forced-cases', async t => {
  // An inner TAB, DEL and other control characters force encoding (DIGEST §6d ordered rules).
  t.equal(encodeHeaderValue('a\tb'), '=?base64?YQli?=')
  t.equal(encodeHeaderValue('a\x7fb'), '=?base64?YX9i?=')
  t.equal(encodeHeaderValue('trailing\t'), '=?base64?dHJhaWxpbmcJ?=')
  // Sentinel-shaped values are encoded even when too short to be decoded (A17): either form is safe.
  t.equal(encodeHeaderValue('=?base64?='), '=?base64?PT9iYXNlNjQ/PQ==?=')
  t.strictSame(decodeHeaderValue(encodeHeaderValue('=?base64?=')), { ok: true, value: '=?base64?=' })
  // Only one marker: plain.
  t.equal(encodeHeaderValue('=?base64?x'), '=?base64?x')
  t.equal(encodeHeaderValue('x?='), 'x?=')
  t.equal(encodeHeaderValue('file:///path/to/file%20name.txt'), 'file:///path/to/file%20name.txt')
})

t.test('2026-07-28/headers/mismatch-messages', async t => {
  t.strictSame(headerMismatch('Mcp-Method', 'missing'), { code: -32_020, message: 'Header mismatch: Mcp-Method header is missing' })
  t.strictSame(headerMismatch('Mcp-Param-Region', 'missing', 'arguments.region'), {
    code: -32_020, message: 'Header mismatch: Mcp-Param-Region header is missing while the body has a value at arguments.region'
  })
  t.strictSame(headerMismatch('Mcp-Name', 'duplicate'), { code: -32_020, message: 'Header mismatch: Mcp-Name header is sent more than once' })
  t.strictSame(headerMismatch('Mcp-Name', 'invalid'), {
    code: -32_020, message: 'Header mismatch: Mcp-Name header carries bytes a header may not carry (allowed: visible ASCII, space, tab)'
  })
  t.strictSame(headerMismatch('Mcp-Name', 'undecodable', 'why'), { code: -32_020, message: 'Header mismatch: Mcp-Name header: why' })
  t.strictSame(headerMismatch('Mcp-Method', 'mismatch', 'method'), { code: -32_020, message: "Header mismatch: Mcp-Method header does not match the body's method" })
  t.strictSame(headerMismatch('Mcp-Param-X', 'unexpected', 'arguments.x'), {
    code: -32_020, message: 'Header mismatch: Mcp-Param-X header is present but the body has no value at arguments.x'
  })
})
