/**
 * Server-to-client questions across eras (the MRTR bridge, lib/dispatch/mrtr.ts; DIGEST §6f MRTR), through a real listening
 * mcpx and real fixture children, with the official clients on the client side: v1
 * (`@modelcontextprotocol/sdk`) for legacy, v2 (`@modelcontextprotocol/client`) for 2026-07-28.
 *
 * - legacy upstream, modern client: the upstream's question parks its call; the client gets an
 *   InputRequiredResult whose requestState mcpx sealed; the retry answers the parked question;
 * - modern upstream, legacy client: the upstream's input_required becomes real questions on the
 *   client's stream, and mcpx retries upstream; the client sees one ordinary call;
 * - same era: modern passes through (state wrapped), legacy forwards with id mapping;
 * - the state: tampered, expired and replayed are refused (-32602, 400); a parked call that is
 *   never resumed is cancelled after mrtr.parkTimeout.
 */
import t from 'tap'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ElicitRequestSchema, CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client'
import { listen, fixtureUpstreams, modernHeaders, modernMeta, type Teardown } from '../helpers/app.js'

type Era = 'legacy' | 'modern'

const ELICIT_ANSWER = { action: 'accept', content: { name: 'Ada' } } as const
const SAMPLE_ANSWER = { role: 'assistant', content: { type: 'text', text: 'hi from the model' }, model: 'test-model' } as const

function textOf (result: unknown): string {
  const content = (result as { content?: Array<{ type: string, text?: string }> }).content ?? []
  return content.filter(c => c.type === 'text').map(c => c.text ?? '').join('')
}

async function modernClient (t: Teardown, base: string): Promise<ClientV2> {
  const client = new ClientV2({ name: 'bridge-v2', version: '1.0.0' }, {
    versionNegotiation: { mode: { pin: '2026-07-28' } },
    capabilities: { elicitation: {}, sampling: {} }
  })
  client.setRequestHandler('elicitation/create', async () => ({ ...ELICIT_ANSWER }))
  client.setRequestHandler('sampling/createMessage', async () => ({ ...SAMPLE_ANSWER, content: { ...SAMPLE_ANSWER.content } }))
  await client.connect(new TransportV2(new URL(`${base}/mcp`)))
  t.teardown(async () => { await client.close() })
  return client
}

async function legacyClient (t: Teardown, base: string): Promise<ClientV1> {
  const client = new ClientV1({ name: 'bridge-v1', version: '1.0.0' }, { capabilities: { elicitation: {}, sampling: {} } })
  client.setRequestHandler(ElicitRequestSchema, async () => ({ ...ELICIT_ANSWER }))
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({ ...SAMPLE_ANSWER, content: { ...SAMPLE_ANSWER.content } }))
  await client.connect(new TransportV1(new URL(`${base}/mcp`)))
  t.teardown(async () => { await client.close() })
  return client
}

const CASES: Array<{ client: Era, upstream: Era }> = [
  { client: 'modern', upstream: 'legacy' },
  { client: 'legacy', upstream: 'modern' },
  { client: 'modern', upstream: 'modern' },
  { client: 'legacy', upstream: 'legacy' }
]

for (const { client: clientEra, upstream } of CASES) {
  t.test(`bridge/questions/${upstream}-upstream-${clientEra}-client-elicitation-and-sampling`, async t => {
    const { base } = await listen(t, { upstreams: fixtureUpstreams(['--era', upstream]) })
    const client = clientEra === 'modern' ? await modernClient(t, base) : await legacyClient(t, base)
    const elicited = textOf(await client.callTool({ name: 'elicit', arguments: {} }))
    t.same(JSON.parse(elicited), ELICIT_ANSWER, 'the elicitation answer reached the upstream tool')
    const sampled = textOf(await client.callTool({ name: 'sample', arguments: {} }))
    t.equal(sampled, SAMPLE_ANSWER.content.text, 'the sampling answer reached the upstream tool')
  })
}

/* ---------------------------------------------------------------- the requestState, on the wire */

interface Reply { status: number, body: { id?: unknown, result?: Record<string, unknown>, error?: { code: number, message: string } } }

async function callElicit (base: string, id: number, extra: Record<string, unknown> = {}, capabilities: Record<string, unknown> = { elicitation: {} }, token?: string): Promise<Reply> {
  const response = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: modernHeaders('tools/call', 'elicit', { accept: 'application/json', ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}) }),
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'elicit', arguments: {}, ...extra, _meta: modernMeta(capabilities) } })
  })
  return { status: response.status, body: await response.json() as Reply['body'] }
}

async function parkedQuestion (t: Teardown, base: string): Promise<{ state: string, key: string }> {
  const first = await callElicit(base, 1)
  const result = first.body.result ?? {}
  if (result.resultType !== 'input_required') throw new Error(`expected input_required, got ${JSON.stringify(first.body)}`)
  const key = Object.keys(result.inputRequests as Record<string, unknown>)[0]
  if (typeof result.requestState !== 'string' || key === undefined) throw new Error('no requestState or inputRequests')
  void t
  return { state: result.requestState, key }
}

t.test('bridge/state/input-required-result-is-well-formed', async t => {
  const { base } = await listen(t, { upstreams: fixtureUpstreams(['--era', 'legacy']) })
  const first = await callElicit(base, 7)
  t.equal(first.status, 200)
  t.equal(first.body.id, 7)
  const result = first.body.result ?? {}
  t.equal(result.resultType, 'input_required')
  t.match(result.inputRequests, { q1: { method: 'elicitation/create', params: { message: 'Who are you?' } } })
  t.type(result.requestState, 'string')
  t.notOk('ttlMs' in result, 'an input_required result carries no ttlMs')
  const retry = await callElicit(base, 8, { inputResponses: { q1: ELICIT_ANSWER }, requestState: result.requestState })
  t.equal(retry.status, 200)
  t.equal(retry.body.result?.resultType, 'complete')
  t.same(JSON.parse(textOf(retry.body.result)), ELICIT_ANSWER)
})

t.test('bridge/state/tampered-is-refused', async t => {
  const { base } = await listen(t, { upstreams: fixtureUpstreams(['--era', 'legacy']) })
  const { state, key } = await parkedQuestion(t, base)
  // Flip the MAC's first character: its last one carries padding bits that base64url decoding
  // ignores ('A' → 'B' there left the MAC unchanged about one run in sixteen).
  const at = state.lastIndexOf('.') + 1
  const tampered = state.slice(0, at) + (state[at] === 'A' ? 'B' : 'A') + state.slice(at + 1)
  const reply = await callElicit(base, 2, { inputResponses: { [key]: ELICIT_ANSWER }, requestState: tampered })
  t.equal(reply.status, 400)
  t.equal(reply.body.error?.code, -32_602)
  t.match(reply.body.error?.message, /tampered/)
  const forged = await callElicit(base, 3, { inputResponses: { [key]: ELICIT_ANSWER }, requestState: 'v1.e30.AAAA' })
  t.equal(forged.status, 400)
  t.equal(forged.body.error?.code, -32_602, 'a state mcpx never issued is refused')
})

t.test('bridge/state/replayed-is-refused', async t => {
  const { base } = await listen(t, { upstreams: fixtureUpstreams(['--era', 'legacy']) })
  const { state } = await parkedQuestion(t, base)
  // A retry without the answer gets the same question again, under a new state (mrtr.mdx SHOULD).
  const again = await callElicit(base, 2, { inputResponses: {}, requestState: state })
  t.equal(again.status, 200)
  t.equal(again.body.result?.resultType, 'input_required')
  t.not(again.body.result?.requestState, state, 'a new state for the new round')
  const replay = await callElicit(base, 3, { inputResponses: { q1: ELICIT_ANSWER }, requestState: state })
  t.equal(replay.status, 400)
  t.equal(replay.body.error?.code, -32_602)
  t.match(replay.body.error?.message, /already used/)
  const fresh = await callElicit(base, 4, { inputResponses: { q1: ELICIT_ANSWER }, requestState: again.body.result?.requestState })
  t.equal(fresh.body.result?.resultType, 'complete', 'the current state still works')
  const afterwards = await callElicit(base, 5, { inputResponses: { q1: ELICIT_ANSWER }, requestState: again.body.result?.requestState })
  t.equal(afterwards.status, 400, 'a state of a finished call is refused')
  t.equal(afterwards.body.error?.code, -32_602)
})

t.test('bridge/state/expired-is-refused', async t => {
  const { base } = await listen(t, { upstreams: fixtureUpstreams(['--era', 'legacy']), mrtr: { stateTtl: '50ms' } })
  const { state, key } = await parkedQuestion(t, base)
  await new Promise(resolve => setTimeout(resolve, 150)) // the state's lifetime (50 ms) is over
  const reply = await callElicit(base, 2, { inputResponses: { [key]: ELICIT_ANSWER }, requestState: state })
  t.equal(reply.status, 400)
  t.equal(reply.body.error?.code, -32_602)
  t.match(reply.body.error?.message, /expired/)
})

t.test('bridge/state/state-of-another-request-is-refused', async t => {
  const { base } = await listen(t, { upstreams: fixtureUpstreams(['--era', 'legacy']) })
  const { state, key } = await parkedQuestion(t, base)
  const response = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: modernHeaders('tools/call', 'sample', { accept: 'application/json' }),
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'sample', arguments: {}, inputResponses: { [key]: ELICIT_ANSWER }, requestState: state, _meta: modernMeta({ elicitation: {}, sampling: {} }) } })
  })
  t.equal(response.status, 400)
  const body = await response.json() as Reply['body']
  t.equal(body.error?.code, -32_602)
  t.match(body.error?.message, /another request/)
})

t.test('bridge/park/never-resumed-is-cancelled-upstream', async t => {
  const { base } = await listen(t, { upstreams: fixtureUpstreams(['--era', 'legacy']), mrtr: { parkTimeout: '100ms' } })
  const { state, key } = await parkedQuestion(t, base)
  await new Promise(resolve => setTimeout(resolve, 1_000)) // ten times the park timeout
  const late = await callElicit(base, 2, { inputResponses: { [key]: ELICIT_ANSWER }, requestState: state })
  t.equal(late.status, 400)
  t.equal(late.body.error?.code, -32_602)
  t.match(late.body.error?.message, /no longer waiting/, 'the parked call was cancelled and forgotten')
  const next = await callElicit(base, 3, { inputResponses: {} })
  t.equal(next.body.result?.resultType, 'input_required', 'the upstream still serves new calls')
})

t.test('bridge/capability/undeclared-question-is-refused-upstream-and-named-to-the-client', async t => {
  const { base } = await listen(t, { upstreams: fixtureUpstreams(['--era', 'legacy']) })
  const reply = await callElicit(base, 11, {}, {})
  t.equal(reply.status, 400)
  t.equal(reply.body.id, 11)
  t.equal(reply.body.error?.code, -32_021)
  t.same((reply.body.error as { data?: unknown } | undefined)?.data, { requiredCapabilities: { elicitation: {} } })
})

t.test('bridge/state/bound-to-the-caller', async t => {
  const { base } = await listen(t, { upstreams: fixtureUpstreams(['--era', 'legacy']), auth: { bearerTokens: ['token-a', 'token-b'] } })
  const first = await callElicit(base, 1, {}, { elicitation: {} }, 'token-a')
  const state = first.body.result?.requestState
  t.type(state, 'string', 'caller A is asked a question')
  const hijack = await callElicit(base, 2, { inputResponses: { q1: { action: 'accept', content: { name: 'mallory' } } }, requestState: state }, { elicitation: {} }, 'token-b')
  t.equal(hijack.status, 400, 'caller B cannot resume A\'s parked call')
  t.equal(hijack.body.error?.code, -32_602)
  t.match(hijack.body.error?.message, /another caller/)
  const own = await callElicit(base, 3, { inputResponses: { q1: ELICIT_ANSWER }, requestState: state }, { elicitation: {} }, 'token-a')
  t.equal(own.body.result?.resultType, 'complete', 'A still resumes its own call')
  t.same(JSON.parse(textOf(own.body.result)), ELICIT_ANSWER, 'with A\'s answer, not B\'s')
})

// DIGEST §6f: an inputRequest is the question the client must answer. A legacy upstream's
// server→client request carries `_meta.progressToken` from mcpx's own upstream connection, which
// means nothing to the client (and would name a token the client never issued), so it is dropped;
// `_meta` goes with it when nothing else is left in it.
// Each case gets its own gateway and upstream: the first call stays parked upstream (its client
// never retries), and with two callers' calls in flight on one shared upstream a question cannot be
// tied to either, so mcpx refuses it rather than guess (isolation/shared/question-never-guessed).
t.test('2026-07-28/mrtr/input-requests-carry-no-upstream-progress-token', async t => {
  for (const [id, extra] of [[21, {}], [22, { _meta: modernMeta({ elicitation: {} }, { progressToken: 'client-token' }) }]] as const) {
    const { base } = await listen(t, { upstreams: fixtureUpstreams(['--era', 'legacy']) })
    const response = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: modernHeaders('tools/call', 'elicit', { accept: 'application/json' }),
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'elicit', arguments: {}, _meta: modernMeta({ elicitation: {} }), ...extra } })
    })
    t.equal(response.status, 200)
    const result = (await response.json() as Reply['body']).result ?? {}
    t.equal(result.resultType, 'input_required')
    const question = (result.inputRequests as Record<string, { method: string, params?: Record<string, unknown> }>).q1
    t.match(question, { method: 'elicitation/create', params: { message: 'Who are you?' } })
    t.notOk(question.params !== undefined && '_meta' in question.params, `id ${id}: no _meta left in the question's params: ${JSON.stringify(question.params)}`)
  }
})
