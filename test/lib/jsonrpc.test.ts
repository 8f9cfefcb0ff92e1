/**
 * Unit tests of lib/protocol/jsonrpc: parseBody (UTF-8, exact ids, the nesting bound), classify and
 * encodeMessage (JSON-RPC 2.0 §4–5; DIGEST §2b, §6e; ids go back exactly as they came). No Fastify.
 */
import t from 'tap'
import {
  parseBody, classify, encodeMessage, errorResponse, successResponse, RawNumberId,
  MAX_NESTING_DEPTH, INVALID_REQUEST, PARSE_ERROR, copyObject, type RequestId
} from '../../lib/protocol/jsonrpc.js'
import { prng, generateBatch, expectedIdValue } from '../helpers/batch-ids.js'

/** A tools/call whose `arguments.deep` nests `levels` arrays (the message itself adds 3 levels). */
function deepCall (idText: string | undefined, levels: number): string {
  const id = idText === undefined ? '' : `"id":${idText},`
  return `{"jsonrpc":"2.0",${id}"method":"tools/call","params":{"name":"echo","arguments":{"deep":${'['.repeat(levels)}${']'.repeat(levels)}}}}`
}

t.test('all/limits/nesting-deeper-than-bound-refused-at-parse', async t => {
  const body = deepCall('7', 5000)
  t.ok(body.length > 10_000, 'a 10 KB body')
  for (const input of [body, new TextEncoder().encode(body)]) {
    const parsed = parseBody(input)
    t.strictSame(parsed, { ok: false, error: { code: INVALID_REQUEST, message: `Invalid Request: nesting deeper than ${MAX_NESTING_DEPTH} levels` }, id: 7 })
  }
  t.equal(MAX_NESTING_DEPTH, 128)
  // The id goes back exactly, whatever its form; none when there is none, or in a batch.
  t.match(parseBody(deepCall('"a"', 5000)), { ok: false, id: 'a' })
  const big = parseBody(deepCall('9007199254740993', 5000))
  t.ok(!big.ok && big.id instanceof RawNumberId && big.id.raw === '9007199254740993', 'a big id keeps its raw text')
  if (!big.ok) t.equal(encodeMessage(errorResponse(big.id, big.error.code, big.error.message)).slice(0, 40), '{"jsonrpc":"2.0","id":9007199254740993,"')
  const idless = parseBody(deepCall(undefined, 5000))
  t.ok(!idless.ok && !('id' in idless), 'no id: an id-less error')
  const batch = parseBody(`[${deepCall('1', 5000)}]`)
  t.ok(!batch.ok && !('id' in batch) && batch.error.code === INVALID_REQUEST, 'a batch: id-less')
  t.match(parseBody(`[${'['.repeat(200)}${']'.repeat(200)}]`), { ok: false, error: { code: INVALID_REQUEST } }, 'a bare deep array')
})

t.test('all/limits/nesting-bound-is-exact', async t => {
  // The message object is level 1, params 2, arguments 3: `levels` arrays under it reach 3 + levels.
  t.match(parseBody(deepCall('1', MAX_NESTING_DEPTH - 3)), { ok: true, batch: false }, 'exactly 128 levels is served')
  t.match(parseBody(deepCall('1', MAX_NESTING_DEPTH - 2)), { ok: false, id: 1, error: { code: INVALID_REQUEST } }, '129 levels is refused')
  // Brackets inside strings (escaped quotes included) are text, not nesting.
  const inString = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"\\"${'['.repeat(5000)}\\\\"}}}`
  t.match(parseBody(inString), { ok: true, batch: false })
  // An ordinary long body (wide, not deep) is served.
  const wide = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"list":[${Array.from({ length: 5000 }, () => '[1,{"a":[2]}]').join(',')}]}}}`
  t.match(parseBody(wide), { ok: true, batch: false })
})

t.test('all/jsonrpc/exact-ids-round-trip', async t => {
  // A number that is not a safe integer (2^53 + 1, or a fraction) keeps its raw text.
  const cases: Array<[string, RequestId | 'raw']> = [['0', 0], ['"0"', '0'], ['-1', -1], ['9007199254740993', 'raw'], ['1.5', 'raw']]
  for (const [idText, expected] of cases) {
    const parsed = parseBody(`{"jsonrpc":"2.0","id":${idText},"method":"ping"}`)
    if (!parsed.ok || parsed.batch) { t.fail(`${idText}: not parsed`); continue }
    const item = classify(parsed.value)
    if (item.kind !== 'request') { t.fail(`${idText}: not a request (${item.kind})`); continue }
    if (expected === 'raw') t.ok(item.message.id instanceof RawNumberId, `${idText}: kept as raw text`)
    else t.equal(item.message.id, expected, `${idText}: id read exactly`)
    t.equal(encodeMessage(successResponse(item.message.id, {})), `{"jsonrpc":"2.0","id":${idText},"result":{}}`, `${idText}: written back verbatim`)
    t.equal(encodeMessage(errorResponse(item.message.id, -32_601, 'x')), `{"jsonrpc":"2.0","id":${idText},"error":{"code":-32601,"message":"x"}}`)
  }
  // In a batch too, each element keeps its own id.
  const batch = parseBody('[{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"},{"jsonrpc":"2.0","id":0,"method":"ping"}]')
  if (!batch.ok || !batch.batch) return t.fail('batch not parsed')
  const replies = batch.value.map(v => { const c = classify(v); return c.kind === 'request' ? successResponse(c.message.id, {}) : t.fail('not a request') })
  t.equal(encodeMessage(replies.filter(r => typeof r === 'object')), '[{"jsonrpc":"2.0","id":9007199254740993,"result":{}},{"jsonrpc":"2.0","id":0,"result":{}}]')
})

t.test('all/jsonrpc/batch-member-keeps-its-own-id', async t => {
  // A member that is neither an object nor an array still takes its index: the unsafe ids of the
  // members after it are not shifted onto their neighbours (the reply of 1.5 carried 7).
  const batch = parseBody('[1,{"jsonrpc":"2.0","id":1.5,"method":"ping"},{"jsonrpc":"2.0","id":7,"method":"ping"}]')
  if (!batch.ok || !batch.batch) return t.fail('batch not parsed')
  t.equal(encodeMessage(batch.value.slice(1).map(v => { const c = classify(v); return successResponse(c.kind === 'request' ? c.message.id : 'wrong', {}) })),
    '[{"jsonrpc":"2.0","id":1.5,"result":{}},{"jsonrpc":"2.0","id":7,"result":{}}]')
  const escaped = parseBody('[null,{"jsonrpc":"2.0","\\u0069d":9007199254740993,"method":"ping"}]')
  if (!escaped.ok || !escaped.batch) return t.fail('batch not parsed')
  t.same((escaped.value[1] as { id: unknown }).id, new RawNumberId('9007199254740993'), 'an escaped "id" key is the id key')
})

t.test('all/jsonrpc/cancelled-request-id-kept-exact', async t => {
  // A cancellation's params.requestId names a request id: a rounded one would name another
  // (9007199254740993 rounds to …992). Only params.requestId of the message itself is kept raw.
  const single = parseBody('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":{"requestId":1.5},"requestId":9007199254740993}}')
  if (!single.ok || single.batch) return t.fail('not parsed')
  const params = (single.value as { params: { requestId: unknown, _meta: { requestId: unknown } } }).params
  t.same(params.requestId, new RawNumberId('9007199254740993'), 'params.requestId kept as its text')
  t.equal(params._meta.requestId, 1.5, 'a requestId deeper down is left as parsed')
  const batch = parseBody('[null,{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9007199254740995}},{"jsonrpc":"2.0","id":1,"method":"ping","params":{"requestId":2}}]')
  if (!batch.ok || !batch.batch) return t.fail('batch not parsed')
  t.same((batch.value[1] as { params: { requestId: unknown } }).params.requestId, new RawNumberId('9007199254740995'), 'in a batch, at its own index')
  t.equal((batch.value[2] as { params: { requestId: unknown } }).params.requestId, 2)
})

t.test('all/jsonrpc/batch-ids-fuzzed', async t => {
  // Seeded: ids of every JSON form after members of every type (test/helpers/batch-ids.ts).
  const rand = prng(0x1d5eed)
  const problems: string[] = []
  let members = 0
  for (let n = 0; n < 5000 && problems.length < 5; n++) {
    const batch = generateBatch(rand)
    const parsed = parseBody(batch.text)
    if (!parsed.ok || !parsed.batch) { problems.push(`not parsed: ${batch.text}`); continue }
    batch.members.forEach((member, i) => {
      members++
      if (member.kind === 'notification' || member.idText === undefined) return
      const got = (parsed.value[i] as { id?: unknown }).id
      const want = expectedIdValue(member.idText)
      const same = typeof want === 'object' ? got instanceof RawNumberId && got.raw === want.raw : got === want
      if (!same) problems.push(`member ${i} of ${batch.text}: id ${JSON.stringify(got)}, want ${member.idText}`)
    })
  }
  t.same(problems, [], 'every member parsed with its own id')
  t.ok(members > 10_000, `${members} members checked`)
})

t.test('all/jsonrpc/invalid-utf8-is-parse-error', async t => {
  for (const bytes of [[0x7b, 0xff, 0x7d], [0x22, 0xc3, 0x28, 0x22], [0xed, 0xa0, 0x80]]) {
    t.strictSame(parseBody(new Uint8Array(bytes)), { ok: false, error: { code: PARSE_ERROR, message: 'Parse error: body is not valid UTF-8' } }, bytes.join(' '))
  }
  t.match(parseBody('{"jsonrpc":'), { ok: false, error: { code: PARSE_ERROR } })
})

t.test('all/jsonrpc/id-null-is-not-a-notification', async t => {
  const parsed = parseBody('{"jsonrpc":"2.0","id":null,"method":"notifications/initialized"}')
  if (!parsed.ok || parsed.batch) return t.fail('not parsed')
  const item = classify(parsed.value)
  t.equal(item.kind, 'invalid', 'DIGEST §2b: an id is never null, and null does not make a notification')
  t.ok(item.kind === 'invalid' && item.id === undefined && item.error.code === INVALID_REQUEST, 'an id-less -32600')
  t.equal(classify({ jsonrpc: '2.0', method: 'notifications/initialized' }).kind, 'notification', 'no id at all is a notification')
})

t.test('all/jsonrpc/copy-object-is-the-spread-it-replaces', async t => {
  // copyObject replaces `{ ...source, ...extra }` on the request path (lib/protocol/jsonrpc.ts): the same
  // own properties, in the same order, with the same bytes once serialised, also for an own `__proto__`.
  const cases: Array<[string, string | undefined]> = [
    ['{"content":[{"type":"text","text":"hi"}],"isError":false}', undefined],
    ['{"b":1,"a":2,"2":"x","1":"y"}', '{"a":3,"c":4}'],
    ['{}', '{"_meta":{"k":1}}'],
    ['{"__proto__":{"polluted":true},"a":1}', undefined],
    ['{"a":1}', '{"__proto__":null,"b":2}']
  ]
  for (const [sourceText, extraText] of cases) {
    const source = JSON.parse(sourceText)
    const extra = extraText === undefined ? undefined : JSON.parse(extraText)
    const copy = copyObject(source, extra)
    const spread = { ...source, ...extra }
    t.equal(JSON.stringify(copy), JSON.stringify(spread), `${sourceText} + ${extraText ?? 'nothing'}: same bytes`)
    t.same(Object.keys(copy), Object.keys(spread), 'same keys in the same order')
    t.equal(Object.getPrototypeOf(copy), Object.prototype, 'a plain object (an own __proto__ stays a property)')
    t.not(copy, source, 'a new object')
  }
  t.same(copyObject(undefined, { a: 1 }), { a: 1 }, 'no source: a copy of extra')
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype untouched')
})
