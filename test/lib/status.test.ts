/**
 * Unit tests of lib/protocol/http-status: the era status functions and the refusal table, the one place a
 * status, a Retry-After or an Allow is chosen (STYLE › Errors and status). No Fastify.
 */
import t from 'tap'
import { REFUSALS, deleteStatus, eraRefusal, frameworkRefusal, getStatus, legacyStatus, modernStatus, refusal, reloadStatus, type RefusalReason } from '../../lib/protocol/http-status.js'
import { errorResponse } from '../../lib/protocol/jsonrpc.js'
import { unsupportedLegacyVersion, unsupportedVersion } from '../../lib/protocol/revisions.js'

t.test('all/status/refusal-is-an-id-less-json-rpc-error-unless-given-an-id', async t => {
  const idless = refusal('unknownSession')
  t.equal(idless.status, 404)
  t.strictSame(JSON.parse(idless.body), { jsonrpc: '2.0', error: { code: -32_600, message: REFUSALS.unknownSession.message } })
  const withId = refusal('tooManyConcurrentRequests', 'r-1')
  t.equal(JSON.parse(withId.body).id, 'r-1')
  t.strictSame(withId.message, JSON.parse(withId.body), 'the object and the body say the same')
})

t.test('all/status/temporary-refusals-carry-retry-after', async t => {
  for (const reason of Object.keys(REFUSALS) as RefusalReason[]) {
    const { status, headers } = refusal(reason)
    if (status === 503) t.match(headers['retry-after'], /^\d+$/, `${reason}: 503 says when to retry`)
    else t.equal(headers['retry-after'], undefined, `${reason}: no Retry-After`)
    if (status === 405) t.ok(headers.allow, `${reason}: 405 names the methods (RFC 9110 §15.5.6)`)
    else t.equal(headers.allow, undefined, `${reason}: no Allow`)
  }
  t.equal(refusal('storeUnavailable').headers['retry-after'], '1')
  t.equal(refusal('tooManyStreams').headers['retry-after'], '5')
})

t.test('2025-03-26/sessions/get-and-delete-statuses-come-from-the-table', async t => {
  t.same(['open', 'no-session', 'modern', 'unknown', 'busy', 'capped'].map(o => getStatus(o as Parameters<typeof getStatus>[0])), [200, 405, 405, 404, 409, 503])
  t.same(['ended', 'no-header', 'unknown', 'modern'].map(o => deleteStatus(o as Parameters<typeof deleteStatus>[0])), [204, 400, 404, 405])
  t.equal(refusal('getModern').headers.allow, 'POST')
  t.equal(refusal('getWithoutSession').headers.allow, 'GET, POST, DELETE')
  t.equal(refusal('methodNotAllowed').headers.allow, 'GET, POST, DELETE, OPTIONS')
})

t.test('all/status/framework-errors-keep-their-status', async t => {
  const large = frameworkRefusal({ code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413, message: 'x' }, 1024)
  t.equal(large.status, 413)
  t.equal(large.message.error.message, 'Request body larger than 1024 bytes')
  t.equal(frameworkRefusal({ code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', statusCode: 415, message: 'x' }, 1).status, 415)
  const empty = frameworkRefusal({ code: 'FST_ERR_CTP_EMPTY_JSON_BODY', statusCode: 400, message: 'Body cannot be empty' }, 1)
  t.strictSame([empty.status, empty.message.error.code, empty.message.error.message], [400, -32_700, 'Parse error: Body cannot be empty'])
  const other = frameworkRefusal({ code: 'FST_ERR_SOMETHING', statusCode: 414, message: 'URI Too Long' }, 1)
  t.strictSame([other.status, other.message.error.code, other.message.error.message], [414, -32_600, 'URI Too Long'])
  const crash = frameworkRefusal({ message: 'secret detail' }, 1)
  t.strictSame([crash.status, crash.message.error.code, crash.message.error.message], [500, -32_603, 'Internal error'], 'a crash never echoes its message')
})

t.test('all/status/era-status-functions', async t => {
  t.equal(modernStatus(undefined), 200)
  t.equal(modernStatus({ code: -32_601, message: '' }), 404)
  t.equal(modernStatus({ code: -32_022, message: '' }), 400)
  t.equal(legacyStatus({ code: -32_601, message: '' }), 200)
  t.equal(legacyStatus({ code: -32_022, message: '' }), 400)
})

t.test('isolation/status/instance-cap-is-a-marked-refusal', async t => {
  const capped = refusal('instancesExhausted', 9, { message: 'upstream fx: all 2 isolated instances are in use (maxInstances); retry later' })
  t.equal(capped.status, 503)
  t.equal(capped.headers['retry-after'], '5')
  t.strictSame(capped.message, { jsonrpc: '2.0', id: 9, error: { code: -31_001, message: 'upstream fx: all 2 isolated instances are in use (maxInstances); retry later' } })
  // By the mark alone: an upstream's own -31001 (say, another mcpx behind this one) keeps the era's status.
  t.equal(modernStatus({ code: -31_001, message: '' }), 200)
  t.equal(legacyStatus({ code: -31_001, message: '' }), 200)
})

t.test('all/status/every-refusal-written-from-the-table', async t => {
  // The checks before dispatch: the error itself as the body, its era's status, no extra header.
  const header = eraRefusal('modern', errorResponse(7, -32_020, 'Header mismatch'))
  t.same(header, { status: 400, headers: {}, body: '{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch"}}', message: errorResponse(7, -32_020, 'Header mismatch') })
  t.equal(eraRefusal('modern', unsupportedVersion(1, '2099-01-01')).status, 400)
  t.equal(eraRefusal('modern', errorResponse(undefined, -32_600, 'no batches')).status, 400)
  t.equal(eraRefusal('legacy', unsupportedLegacyVersion(undefined, '2099-01-01')).status, legacyStatus({ code: -32_022, message: '' }))
  // An auth challenge with its parameters replaces the row's; status and body stay the row's.
  const challenged = refusal('unauthorizedMissing', undefined, { wwwAuthenticate: 'Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource"' })
  t.equal(challenged.status, 401)
  t.same(challenged.headers, { 'www-authenticate': 'Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource"' })
  t.equal(challenged.body, refusal('unauthorizedMissing').body)
  // POST /admin/reload: applied 200, refused 422.
  t.equal(reloadStatus(true), 200)
  t.equal(reloadStatus(false), 422)
})
