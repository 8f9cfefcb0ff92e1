/**
 * Unit tests of lib/protocol/param-headers: the x-mcp-header scan, the server-side Mcp-Param-* check and the
 * client-side builders (seed › Streamable HTTP, 2026-07-28 › Mcp-Param-* headers; DIGEST §6d tables
 * D1, D2, D3, D4, D5, D6; §9 A4, A5, A6, A17, A18). No Fastify.
 */
import t from 'tap'
import type { HeaderBag } from '../../lib/protocol/header-values.js'
import { checkParamHeaders, scanParamHeaders } from '../../lib/protocol/param-headers.js'
import { buildModernHeaders, buildParamHeaders } from '../helpers/param-headers.js'
import { checkModernHeaders } from '../../lib/protocol/modern-headers.js'

const PREFIX = 'Header mismatch: '
const BAD_BASE64 = 'the =?base64?…?= payload is not strict base64 (standard alphabet, = padding required)'
const INVALID_BYTES = 'header carries bytes a header may not carry (allowed: visible ASCII, space, tab)'

function mismatch (message: string): { code: number, message: string } {
  return { code: -32_020, message: PREFIX + message }
}

/** Headers as the client would send them, handed over the way Node does: names lowercased. */
function asNode (headers: Record<string, string>): HeaderBag {
  const out: HeaderBag = {}
  for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = value
  return out
}

/** A schema with one annotated property `name` of `type`. */
function one (header: string, type = 'string', name = 'value'): Record<string, unknown> {
  return { type: 'object', properties: { [name]: { type, 'x-mcp-header': header } } }
}

const REGION = one('Region', 'string', 'region')
const NESTED = {
  type: 'object',
  properties: {
    target: {
      type: 'object',
      properties: { zone: { type: 'string', 'x-mcp-header': 'Zone' }, count: { type: 'integer', 'x-mcp-header': 'Count' } },
    },
    dryRun: { type: 'boolean', 'x-mcp-header': 'DryRun' },
  },
}

// ── scan: DIGEST table D5 and the reachability rules ────────────────────────────────────────

t.test('2026-07-28/param-headers/d5-duplicate-annotation', async t => {
  const schema = { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'Region' }, b: { type: 'string', 'x-mcp-header': 'Region' } } }
  t.strictSame(scanParamHeaders(schema), {
    ok: false, reason: 'x-mcp-header "Region" at #/properties/b repeats the one at #/properties/a (names are case-insensitive)',
  })
})

t.test('2026-07-28/param-headers/d5-duplicate-case-insensitive', async t => {
  const schema = { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'Region' }, b: { type: 'string', 'x-mcp-header': 'REGION' } } }
  t.strictSame(scanParamHeaders(schema), {
    ok: false, reason: 'x-mcp-header "REGION" at #/properties/b repeats the one at #/properties/a (names are case-insensitive)',
  })
})

t.test('2026-07-28/param-headers/d5-method-allowed', async t => {
  t.strictSame(scanParamHeaders(one('Method')), { ok: true, params: [{ header: 'Method', path: ['value'], type: 'string' }] })
  t.strictSame(buildParamHeaders(one('Method'), { value: 'tools/call' }), { 'Mcp-Param-Method': 'tools/call' })
})

t.test('2026-07-28/param-headers/d5-empty-or-not-a-token', async t => {
  for (const header of ['', 'My Region', 'Region:Primary', 'Région', 'Region\t1', 'Region\n', '(x)', 'a/b', 'a@b']) {
    t.strictSame(scanParamHeaders(one(header)), {
      ok: false, reason: `x-mcp-header ${JSON.stringify(header)} at #/properties/value is not a non-empty RFC 9110 token`,
    }, JSON.stringify(header))
  }
  t.strictSame(scanParamHeaders({ properties: { v: { type: 'string', 'x-mcp-header': 7 } } }), {
    ok: false, reason: 'x-mcp-header at #/properties/v must be a string',
  })
  // Every tchar is allowed.
  t.equal(scanParamHeaders(one("!#$%&'*+-.^_`|~09AZaz")).ok, true)
})

t.test('2026-07-28/param-headers/d5-type-not-allowed', async t => {
  const reason = (got: string): string =>
    `x-mcp-header "X" at #/properties/value annotates a property whose type must be "string", "integer" or "boolean" (got ${got})`
  for (const type of ['array', 'object', 'null']) t.strictSame(scanParamHeaders(one('X', type)), { ok: false, reason: reason(`"${type}"`) }, type)
  // A5: number is forbidden even though SEP-2243's table shows 3.14159.
  t.strictSame(scanParamHeaders(one('X', 'number')), { ok: false, reason: reason('"number"') })
  // A5: a type union (or any type array), and no type at all (enum/const only), are refused.
  t.strictSame(scanParamHeaders({ properties: { value: { type: ['string', 'null'], 'x-mcp-header': 'X' } } }), { ok: false, reason: reason('a type array') })
  t.strictSame(scanParamHeaders({ properties: { value: { type: ['string'], 'x-mcp-header': 'X' } } }), { ok: false, reason: reason('a type array') })
  t.strictSame(scanParamHeaders({ properties: { value: { enum: ['a', 'b'], 'x-mcp-header': 'X' } } }), { ok: false, reason: reason('no type') })
  for (const type of ['string', 'integer', 'boolean']) t.equal(scanParamHeaders(one('X', type)).ok, true, type)
})

t.test('2026-07-28/param-headers/d5-nested-through-properties-allowed', async t => {
  // A6: the final spec allows nesting through `properties` only (SEP-2243's "inside object" row is superseded).
  t.strictSame(scanParamHeaders(NESTED), {
    ok: true,
    params: [
      { header: 'Zone', path: ['target', 'zone'], type: 'string' },
      { header: 'Count', path: ['target', 'count'], type: 'integer' },
      { header: 'DryRun', path: ['dryRun'], type: 'boolean' },
    ],
  })
})

t.test('2026-07-28/param-headers/annotation-outside-properties-invalidates', async t => {
  const leaf = { type: 'string', 'x-mcp-header': 'X' }
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ ...leaf }, '#'],
    [{ type: 'object', properties: { a: { type: 'array', items: leaf } } }, '#/properties/a/items'],
    [{ type: 'object', properties: { a: { type: 'array', prefixItems: [leaf] } } }, '#/properties/a/prefixItems/0'],
    [{ type: 'object', properties: { a: { anyOf: [leaf, { type: 'integer' }] } } }, '#/properties/a/anyOf/0'],
    [{ type: 'object', properties: { a: { oneOf: [{ type: 'integer' }, leaf] } } }, '#/properties/a/oneOf/1'],
    [{ type: 'object', allOf: [{ properties: { a: leaf } }] }, '#/allOf/0/properties/a'],
    [{ type: 'object', properties: { a: { not: leaf } } }, '#/properties/a/not'],
    [{ type: 'object', if: { properties: { a: leaf } } }, '#/if/properties/a'],
    [{ type: 'object', then: { properties: { a: leaf } } }, '#/then/properties/a'],
    [{ type: 'object', else: { properties: { a: leaf } } }, '#/else/properties/a'],
    [{ type: 'object', properties: { a: { $ref: '#/$defs/A' } }, $defs: { A: leaf } }, '#/$defs/A'],
    [{ type: 'object', definitions: { A: leaf } }, '#/definitions/A'],
    [{ type: 'object', additionalProperties: leaf }, '#/additionalProperties'],
    [{ type: 'object', patternProperties: { '^a': leaf } }, '#/patternProperties/^a'],
    [{ type: 'object', dependentSchemas: { a: { properties: { b: leaf } } } }, '#/dependentSchemas/a/properties/b'],
    [{ type: 'object', properties: { 'a/b~c': { type: 'array', contains: leaf } } }, '#/properties/a~1b~0c/contains'],
  ]
  for (const [schema, pointer] of cases) {
    t.strictSame(scanParamHeaders(schema), {
      ok: false, reason: `x-mcp-header at ${pointer} is not on a property reachable from the root through properties only`,
    }, pointer)
  }
})

t.test('2026-07-28/param-headers/annotation-lookalikes-ignored', async t => {
  // Data keywords hold values, not schemas; a property or a $defs entry *named* x-mcp-header is a name.
  const schema = {
    type: 'object',
    properties: {
      'x-mcp-header': { type: 'string' },
      a: { type: 'string', default: { 'x-mcp-header': 'D' }, examples: [{ 'x-mcp-header': 'E' }], const: { 'x-mcp-header': 'C' } },
      b: { enum: [{ 'x-mcp-header': 'N' }] },
    },
    $defs: { 'x-mcp-header': { type: 'string' } },
    required: ['a'],
  }
  t.strictSame(scanParamHeaders(schema), { ok: true, params: [] })
})

t.test('2026-07-28/param-headers/scan-edge-shapes', async t => {
  for (const schema of [undefined, null, true, false, 42, 'x']) t.strictSame(scanParamHeaders(schema), { ok: true, params: [] }, String(schema))
  t.strictSame(scanParamHeaders({ type: 'object' }), { ok: true, params: [] })
  const cyclic: Record<string, unknown> = { type: 'object' }
  cyclic.properties = { self: cyclic }
  t.strictSame(scanParamHeaders(cyclic), { ok: false, reason: 'inputSchema contains a cycle at #/properties/self' })
  // A subschema shared by two positions is not a cycle; two reachable copies of one annotation clash.
  const shared = { type: 'string', 'x-mcp-header': 'S' }
  t.strictSame(scanParamHeaders({ properties: { a: shared, b: shared } }), {
    ok: false, reason: 'x-mcp-header "S" at #/properties/b repeats the one at #/properties/a (names are case-insensitive)',
  })
  let deep: Record<string, unknown> = { type: 'string' }
  for (let i = 0; i < 200; i++) deep = { properties: { d: deep } }
  t.equal(scanParamHeaders(deep).ok, false)
  const throwing = { get properties (): unknown { throw new Error('boom') } }
  t.strictSame(scanParamHeaders(throwing), { ok: false, reason: 'inputSchema could not be read' })
})

t.test('2026-07-28/param-headers/scan-cached-per-schema', async t => {
  const first = scanParamHeaders(NESTED)
  t.equal(scanParamHeaders(NESTED), first, 'same result object for the same schema object')
  t.not(scanParamHeaders(structuredClone(NESTED)), first, 'a new schema object is scanned afresh')
  t.ok(Object.isFrozen(first) && first.ok && Object.isFrozen(first.params) && Object.isFrozen(first.params[0].path), 'the shared result is frozen')
})

// ── server side: DIGEST tables D3, D4, D6 and the comparison rules ─────────────────────────

t.test('2026-07-28/param-headers/d4-param-missing', async t => {
  t.strictSame(checkParamHeaders({}, REGION, { region: 'us-west1' }),
    mismatch('Mcp-Param-Region header is missing while the body has a value at arguments.region'))
})

t.test('2026-07-28/param-headers/d6-value-present-checked', async t => {
  t.equal(checkParamHeaders({ 'mcp-param-region': 'us-west1' }, REGION, { region: 'us-west1' }), undefined)
  t.strictSame(checkParamHeaders({ 'mcp-param-region': 'us-east1' }, REGION, { region: 'us-west1' }),
    mismatch("Mcp-Param-Region header does not match the body's arguments.region"))
  // Values are case-sensitive.
  t.strictSame(checkParamHeaders({ 'mcp-param-region': 'US-WEST1' }, REGION, { region: 'us-west1' }),
    mismatch("Mcp-Param-Region header does not match the body's arguments.region"))
  t.strictSame(buildParamHeaders(REGION, { region: 'us-west1' }), { 'Mcp-Param-Region': 'us-west1' })
})

t.test('2026-07-28/param-headers/d6-null-not-expected', async t => {
  t.equal(checkParamHeaders({}, REGION, { region: null }), undefined)
  t.strictSame(buildParamHeaders(REGION, { region: null }), {})
})

t.test('2026-07-28/param-headers/d6-absent-not-expected', async t => {
  t.equal(checkParamHeaders({}, REGION, {}), undefined)
  t.equal(checkParamHeaders({}, REGION, undefined), undefined)
  t.equal(checkParamHeaders({}, NESTED, { target: 'not-an-object' }), undefined)
  t.strictSame(buildParamHeaders(REGION, {}), {})
  t.strictSame(buildParamHeaders(REGION, undefined), {})
})

t.test('2026-07-28/param-headers/d6-header-omitted-value-present', async t => {
  t.strictSame(checkParamHeaders({ 'mcp-param-other': 'x' }, REGION, { region: 'us-west1' }),
    mismatch('Mcp-Param-Region header is missing while the body has a value at arguments.region'))
})

t.test('2026-07-28/param-headers/present-while-body-has-none', async t => {
  // The seed refuses a header whose body value is absent or null (A4 otherwise leaves this open).
  const expected = mismatch('Mcp-Param-Region header is present but the body has no value at arguments.region')
  t.strictSame(checkParamHeaders({ 'mcp-param-region': 'us-west1' }, REGION, {}), expected)
  t.strictSame(checkParamHeaders({ 'mcp-param-region': 'us-west1' }, REGION, { region: null }), expected)
  t.strictSame(checkParamHeaders({ 'mcp-param-region': '' }, REGION, undefined), expected)
})

t.test('2026-07-28/param-headers/d3-base64-server-side', async t => {
  const schema = one('Text')
  t.equal(checkParamHeaders({ 'mcp-param-text': '=?base64?SGVsbG8=?=' }, schema, { value: 'Hello' }), undefined)
  for (const value of ['=?base64?SGVsbG8?=', '=?base64?SGVs!!!bG8=?=']) {
    t.strictSame(checkParamHeaders({ 'mcp-param-text': value }, schema, { value: 'Hello' }), mismatch('Mcp-Param-Text header: ' + BAD_BASE64), value)
  }
  // No prefix, no suffix, uppercase marker: literal, so they equal only the literal body value.
  for (const value of ['SGVsbG8=', '=?base64?SGVsbG8=', '=?BASE64?SGVsbG8=?=']) {
    t.strictSame(checkParamHeaders({ 'mcp-param-text': value }, schema, { value: 'Hello' }),
      mismatch("Mcp-Param-Text header does not match the body's arguments.value"), value)
    t.equal(checkParamHeaders({ 'mcp-param-text': value }, schema, { value }), undefined, value)
  }
})

t.test('2026-07-28/param-headers/base64-invalid-utf8', async t => {
  t.strictSame(checkParamHeaders({ 'mcp-param-text': '=?base64?/w==?=' }, one('Text'), { value: '\ufffd' }),
    mismatch('Mcp-Param-Text header: the =?base64?…?= payload does not decode to valid UTF-8'))
})

t.test('2026-07-28/param-headers/short-sentinel-literal', async t => {
  // A17: "=?base64?=" (10 chars) is the literal string.
  t.equal(checkParamHeaders({ 'mcp-param-text': '=?base64?=' }, one('Text'), { value: '=?base64?=' }), undefined)
})

t.test('2026-07-28/param-headers/invalid-bytes', async t => {
  for (const value of ['us-west1\x7f', 'Région', 'us\rwest', 'a\nb']) {
    t.strictSame(checkParamHeaders({ 'mcp-param-region': value }, REGION, { region: value }), mismatch(`Mcp-Param-Region ${INVALID_BYTES}`), JSON.stringify(value))
  }
  // Refused even when the body has no value: a recognised Mcp-Param-* with invalid characters MUST be rejected.
  t.strictSame(checkParamHeaders({ 'mcp-param-region': 'Région' }, REGION, {}), mismatch(`Mcp-Param-Region ${INVALID_BYTES}`))
})

t.test('2026-07-28/param-headers/duplicate-header', async t => {
  t.strictSame(checkParamHeaders({ 'mcp-param-region': ['us-west1', 'us-west1'] }, REGION, { region: 'us-west1' }),
    mismatch('Mcp-Param-Region header is sent more than once'))
})

t.test('2026-07-28/param-headers/unknown-param-headers-ignored', async t => {
  t.equal(checkParamHeaders({ 'mcp-param-region': 'us-west1', 'mcp-param-unknown': 'Région\x7f', 'mcp-param-__proto__': 'x' }, REGION, { region: 'us-west1' }), undefined)
  t.equal(checkParamHeaders({ 'mcp-param-anything': 'x' }, { type: 'object' }, {}), undefined)
})

t.test('2026-07-28/param-headers/nested-annotation-checked', async t => {
  const args = { target: { zone: 'eu-1', count: 3 }, dryRun: false }
  const headers = { 'mcp-param-zone': 'eu-1', 'mcp-param-count': '3', 'mcp-param-dryrun': 'false' }
  t.equal(checkParamHeaders(headers, NESTED, args), undefined)
  t.strictSame(checkParamHeaders({ ...headers, 'mcp-param-zone': 'eu-2' }, NESTED, args),
    mismatch("Mcp-Param-Zone header does not match the body's arguments.target.zone"))
  t.strictSame(checkParamHeaders({ 'mcp-param-count': '3', 'mcp-param-dryrun': 'false' }, NESTED, args),
    mismatch('Mcp-Param-Zone header is missing while the body has a value at arguments.target.zone'))
  t.strictSame(buildParamHeaders(NESTED, args), { 'Mcp-Param-Zone': 'eu-1', 'Mcp-Param-Count': '3', 'Mcp-Param-DryRun': 'false' })
})

t.test('2026-07-28/param-headers/integer-numeric-compare', async t => {
  const schema = one('Count', 'integer')
  for (const header of ['42', '42.0', '+42', '4.2e1', '42.000', '042', ' 42 ']) {
    t.equal(checkParamHeaders({ 'mcp-param-count': header }, schema, { value: 42 }), undefined, header)
  }
  t.equal(checkParamHeaders({ 'mcp-param-count': '-7' }, schema, { value: -7 }), undefined)
  t.equal(checkParamHeaders({ 'mcp-param-count': '=?base64?NDI=?=' }, schema, { value: 42 }), undefined, 'decoded before interpreted')
  const expected = mismatch("Mcp-Param-Count header does not match the body's arguments.value")
  for (const header of ['42abc', '43', '0x2A', '', '4 2', 'Infinity', '1e', 'NaN', '-']) {
    t.strictSame(checkParamHeaders({ 'mcp-param-count': header }, schema, { value: 42 }), expected, JSON.stringify(header))
  }
  // A body value of the wrong JSON type never agrees.
  t.strictSame(checkParamHeaders({ 'mcp-param-count': '42' }, schema, { value: '42' }), expected)
})

t.test('2026-07-28/param-headers/boolean-exact', async t => {
  const schema = one('Flag', 'boolean')
  t.equal(checkParamHeaders({ 'mcp-param-flag': 'true' }, schema, { value: true }), undefined)
  t.equal(checkParamHeaders({ 'mcp-param-flag': 'false' }, schema, { value: false }), undefined)
  const expected = mismatch("Mcp-Param-Flag header does not match the body's arguments.value")
  // A18 leaves `True` open (clients must send lowercase; nothing says a server must refuse).
  // mcpx is strict: only exactly `true`/`false` agree.
  for (const header of ['True', 'TRUE', '1', 'yes', 'false']) {
    t.strictSame(checkParamHeaders({ 'mcp-param-flag': header }, schema, { value: true }), expected, header)
  }
  t.strictSame(checkParamHeaders({ 'mcp-param-flag': 'true' }, schema, { value: 'true' }), expected, 'string body for a boolean')
})

t.test('2026-07-28/param-headers/invalid-schema-not-checked', async t => {
  // The tool should never have been listed; the check and the builder both stand aside.
  const invalid = { type: 'object', properties: { a: { type: 'number', 'x-mcp-header': 'A' } } }
  t.equal(checkParamHeaders({}, invalid, { a: 1.5 }), undefined)
  t.strictSame(buildParamHeaders(invalid, { a: 1.5 }), {})
})

// ── client side: DIGEST tables D1 and D2 through the builders ──────────────────────────────

t.test('2026-07-28/param-headers/d1-spec-encoding-examples', async t => {
  const rows: Array<[string, string, string]> = [
    ['Region', 'us-west1', 'us-west1'],
    ['Greeting', 'Hello, 世界', '=?base64?SGVsbG8sIOS4lueVjA==?='],
    ['Text', ' padded ', '=?base64?IHBhZGRlZCA=?='],
    ['Text', 'line1\nline2', '=?base64?bGluZTEKbGluZTI=?='],
    ['Val', '=?base64?literal?=', '=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?='],
  ]
  for (const [header, value, expected] of rows) {
    const schema = one(header)
    const built = buildParamHeaders(schema, { value })
    t.strictSame(built, { [`Mcp-Param-${header}`]: expected }, JSON.stringify(value))
    t.equal(checkParamHeaders(asNode(built), schema, { value }), undefined, `server accepts ${JSON.stringify(value)}`)
  }
})

t.test('2026-07-28/param-headers/d2-sep-conformance-encoding', async t => {
  // The `3.14159` → `Mcp-Param-Value: 3.14159` row is left out on purpose: number-typed params are
  // not allowed (DIGEST §6d; A5), so a tool annotating a number is dropped and no header is sent.
  // See d5-type-not-allowed and invalid-schema-not-checked.
  const rows: Array<[string, string, unknown, string]> = [
    ['Region', 'string', 'us-west1', 'us-west1'],
    ['Region', 'string', ' us-west1', '=?base64?IHVzLXdlc3Qx?='],
    ['Region', 'string', 'us-west1 ', '=?base64?dXMtd2VzdDEg?='],
    ['Region', 'string', ' us-west1 ', '=?base64?IHVzLXdlc3QxIA==?='],
    ['Region', 'string', 'us west 1', 'us west 1'],
    ['Flag', 'boolean', true, 'true'],
    ['Flag', 'boolean', false, 'false'],
    ['Count', 'integer', 42, '42'],
    ['Count', 'integer', -7, '-7'],
    ['Text', 'string', '日本語', '=?base64?5pel5pys6Kqe?='],
    ['Text', 'string', 'line1\nline2', '=?base64?bGluZTEKbGluZTI=?='],
    ['Text', 'string', 'line1\r\nline2', '=?base64?bGluZTENCmxpbmUy?='],
    ['Text', 'string', '\tindented', '=?base64?CWluZGVudGVk?='],
    ['Name', 'string', '', ''],
  ]
  for (const [header, type, value, expected] of rows) {
    const schema = one(header, type)
    const built = buildParamHeaders(schema, { value })
    t.strictSame(built, { [`Mcp-Param-${header}`]: expected }, JSON.stringify(value))
    t.equal(checkParamHeaders(asNode(built), schema, { value }), undefined, `server accepts ${JSON.stringify(value)}`)
  }
})

t.test('2026-07-28/param-headers/build-modern-headers', async t => {
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} }
  const call = { method: 'tools/call', params: { name: 'deploy', arguments: { target: { zone: 'zürich', count: 2 }, dryRun: true }, _meta: meta } }
  const headers = buildModernHeaders(call, NESTED)
  t.strictSame(headers, {
    'MCP-Protocol-Version': '2026-07-28',
    'Mcp-Method': 'tools/call',
    'Mcp-Name': 'deploy',
    'Mcp-Param-Zone': '=?base64?esO8cmljaA==?=',
    'Mcp-Param-Count': '2',
    'Mcp-Param-DryRun': 'true',
  })
  // What the client builds, the server accepts.
  t.equal(checkModernHeaders(asNode(headers), call, 'request'), undefined)
  t.equal(checkParamHeaders(asNode(headers), NESTED, call.params.arguments), undefined)
  // Without a schema: no Mcp-Param-* (SEP-2243).
  t.strictSame(buildModernHeaders(call), { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'deploy' })

  const read = { method: 'resources/read', params: { uri: 'file:///tmp/é.txt', _meta: meta } }
  t.strictSame(buildModernHeaders(read), { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'resources/read', 'Mcp-Name': '=?base64?ZmlsZTovLy90bXAvw6kudHh0?=' })
  t.equal(checkModernHeaders(asNode(buildModernHeaders(read)), read, 'request'), undefined)

  t.strictSame(buildModernHeaders({ method: 'tools/list', params: { _meta: meta } }, NESTED), { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/list' })
  // A notification names no version in its body: the newest modern revision is sent.
  const note = { method: 'notifications/cancelled', params: { requestId: 1 } }
  t.strictSame(buildModernHeaders(note), { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'notifications/cancelled' })
  t.equal(checkModernHeaders(asNode(buildModernHeaders(note)), note, 'notification'), undefined)
})

t.test('2026-07-28/param-headers/build-type-mismatched-arguments', async t => {
  // Schema-invalid arguments are still sent (value-driven), so a server refuses them as a mismatch.
  t.strictSame(buildParamHeaders(one('Count', 'integer'), { value: '42' }), { 'Mcp-Param-Count': '42' })
  t.strictSame(buildParamHeaders(one('Text'), { value: { a: 1 } }), { 'Mcp-Param-Text': '{"a":1}' })
  t.strictSame(checkParamHeaders({ 'mcp-param-count': '42' }, one('Count', 'integer'), { value: '42' }),
    mismatch("Mcp-Param-Count header does not match the body's arguments.value"))
})
