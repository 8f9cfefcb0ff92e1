/**
 * MRTR requestState at the HTTP tier (DIGEST §6f; lib/dispatch/mrtr.ts): the whole app through
 * `fastify.inject`, the fixture as a legacy upstream whose `elicit` tool asks the client a question.
 * mcpx parks that call and answers a 2026-07-28 client an InputRequiredResult whose requestState it
 * sealed; these tests check that the state is refused when tampered, expired, sent by another caller
 * or with another request (-32602, 400), and that a question the client cannot answer is refused
 * (-32021). Each refusal is decided from the state alone, before the parked call is looked up.
 * Each test has its own app (its own upstream): a parked call is never left to the next test.
 *
 * What these tests cannot check through inject: that the parked call survives a refused retry and
 * still resumes. light-my-request's response emits 'close' with writableFinished false even after a
 * complete reply, which routes/mcp/post.ts reads as the client going away, so the first leg's
 * controller aborts and the parked call is cancelled at once (a real socket does not do that).
 * test/e2e/bridge.test.ts checks the same ids on a real listen, resumes included.
 */
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, fixtureUpstreams, modernHeaders, modernMeta } from '../helpers/app.js'

const ELICIT_ANSWER = { action: 'accept', content: { name: 'Ada' } } as const
const LEGACY_UPSTREAM = fixtureUpstreams(['--era', 'legacy'])

interface Reply { status: number, body: { id?: unknown, result?: Record<string, unknown>, error?: { code: number, message: string, data?: unknown } } }

/** A 2026-07-28 tools/call of `name` (default `elicit`) with these extra params, capabilities and bearer token. */
async function call (app: FastifyInstance, id: number, extra: Record<string, unknown> = {}, capabilities: Record<string, unknown> = { elicitation: {} }, token?: string, name = 'elicit'): Promise<Reply> {
  const reply = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: modernHeaders('tools/call', name, { accept: 'application/json', ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}) }),
    payload: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {}, ...extra, _meta: modernMeta(capabilities) } })
  })
  return { status: reply.statusCode, body: reply.json() }
}

/** The first leg: the upstream's question parks the call; returns mcpx's state and the question's key. */
async function parkedQuestion (app: FastifyInstance, token?: string): Promise<{ state: string, key: string }> {
  const first = await call(app, 1, {}, { elicitation: {} }, token)
  const result = first.body.result ?? {}
  if (result.resultType !== 'input_required') throw new Error(`expected input_required, got ${JSON.stringify(first.body)}`)
  const key = Object.keys(result.inputRequests as Record<string, unknown>)[0]
  if (typeof result.requestState !== 'string' || key === undefined) throw new Error('no requestState or inputRequests')
  return { state: result.requestState, key }
}

t.test('bridge/state/tampered-is-refused', async t => {
  const app = await build(t, { upstreams: LEGACY_UPSTREAM })
  const { state, key } = await parkedQuestion(app)
  // Flip the MAC's first character (its last one carries padding bits base64url decoding ignores).
  const at = state.lastIndexOf('.') + 1
  const tampered = state.slice(0, at) + (state[at] === 'A' ? 'B' : 'A') + state.slice(at + 1)
  const reply = await call(app, 2, { inputResponses: { [key]: ELICIT_ANSWER }, requestState: tampered })
  t.equal(reply.status, 400)
  t.equal(reply.body.id, 2)
  t.equal(reply.body.error?.code, -32_602)
  t.match(reply.body.error?.message, /tampered/)
  const forged = await call(app, 3, { inputResponses: { [key]: ELICIT_ANSWER }, requestState: 'v1.e30.AAAA' })
  t.equal(forged.status, 400)
  t.equal(forged.body.error?.code, -32_602, 'a state mcpx never issued is refused')
})

t.test('bridge/state/expired-is-refused', async t => {
  const app = await build(t, { upstreams: LEGACY_UPSTREAM, mrtr: { stateTtl: '50ms' } })
  const { state, key } = await parkedQuestion(app)
  await new Promise(resolve => setTimeout(resolve, 150)) // the state's lifetime (50 ms) is over
  const reply = await call(app, 2, { inputResponses: { [key]: ELICIT_ANSWER }, requestState: state })
  t.equal(reply.status, 400)
  t.equal(reply.body.error?.code, -32_602)
  t.match(reply.body.error?.message, /expired/)
})

t.test('bridge/state/state-of-another-request-is-refused', async t => {
  const app = await build(t, { upstreams: LEGACY_UPSTREAM })
  const { state, key } = await parkedQuestion(app)
  const reply = await call(app, 9, { inputResponses: { [key]: ELICIT_ANSWER }, requestState: state }, { elicitation: {}, sampling: {} }, undefined, 'sample')
  t.equal(reply.status, 400)
  t.equal(reply.body.error?.code, -32_602)
  t.match(reply.body.error?.message, /another request/)
})

t.test('bridge/state/bound-to-the-caller', async t => {
  const app = await build(t, { upstreams: LEGACY_UPSTREAM, auth: { bearerTokens: ['token-a', 'token-b'] } })
  const { state, key } = await parkedQuestion(app, 'token-a')
  const hijack = await call(app, 2, { inputResponses: { [key]: { action: 'accept', content: { name: 'mallory' } } }, requestState: state }, { elicitation: {} }, 'token-b')
  t.equal(hijack.status, 400, 'caller B cannot resume A\'s parked call')
  t.equal(hijack.body.error?.code, -32_602)
  t.match(hijack.body.error?.message, /another caller/)
})

t.test('bridge/capability/undeclared-question-is-refused-upstream-and-named-to-the-client', async t => {
  const app = await build(t, { upstreams: LEGACY_UPSTREAM })
  const reply = await call(app, 11, {}, {})
  t.equal(reply.status, 400)
  t.equal(reply.body.id, 11)
  t.equal(reply.body.error?.code, -32_021)
  t.same(reply.body.error?.data, { requiredCapabilities: { elicitation: {} } })
})
