/**
 * The human confirmation gate (docs/policy.md › Confirmation) at the HTTP tier: the mcpx plugin on a
 * bare Fastify, `fastify.inject`, the echo fixture as its upstream. A 2026-07-28 call answers an
 * InputRequiredResult; the retry with an accept forwards it once, a decline answers isError, the same
 * state again is -32602 (400); a 2025-03-26 POST (no elicitation in that revision) is refused as a
 * tool error. Tests are named confirm/http/<requirement>; the confirm/modern/… rules (decline, replay,
 * tampering, expiry, a client without elicitation: none forwards the call) are checked here as well as
 * through a real daemon in test/e2e/confirm.test.ts.
 */
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, modernHeaders, modernMeta, legacyHeaders } from '../helpers/app.js'

const app = await build(t, { policy: { default: 'allow', rules: [{ confirm: ['echo'] }] }, confirmation: { expiry: '1m' } })

async function call (id: number, extra: Record<string, unknown> = {}): Promise<{ status: number, json: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const reply = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: modernHeaders('tools/call', 'echo', { accept: 'application/json' }),
    payload: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' }, ...extra, _meta: modernMeta({ elicitation: {} }) } })
  })
  return { status: reply.statusCode, json: reply.json() }
}

t.test('confirm/http/input-required-accept-decline-replay', async t => {
  const first = await call(1)
  t.equal(first.status, 200)
  t.match(first.json, { id: 1, result: { resultType: 'input_required', inputRequests: { mcpx_confirm: { method: 'elicitation/create', params: { mode: 'form', message: /"echo"[\s\S]*"text":"hi"/ } } }, requestState: String } })
  const state = first.json.result.requestState as string
  const yes = await call(2, { inputResponses: { mcpx_confirm: { action: 'accept', content: { confirm: true } } }, requestState: state })
  t.match(yes.json, { id: 2, result: { resultType: 'complete', content: [{ type: 'text', text: 'hi' }] } })
  const replay = await call(3, { inputResponses: { mcpx_confirm: { action: 'accept', content: { confirm: true } } }, requestState: state })
  t.equal(replay.status, 400)
  t.match(replay.json, { id: 3, error: { code: -32_602, message: /already used/ } })
  const again = await call(4)
  const no = await call(5, { inputResponses: { mcpx_confirm: { action: 'decline' } }, requestState: again.json.result.requestState })
  t.match(no.json, { id: 5, result: { resultType: 'complete', isError: true, content: [{ type: 'text', text: /declined/ }] } })
})

t.test('confirm/http/revision-without-elicitation-refused', async t => {
  const reply = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: legacyHeaders({ accept: 'application/json, text/event-stream' }),
    payload: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } })
  })
  t.equal(reply.statusCode, 200)
  t.match(reply.json(), { id: 7, result: { isError: true, content: [{ type: 'text', text: /cannot be asked.*2025-03-26 has no elicitation/ }] } })
})

// Tool search's call_tool is the inner tool's tools/call (docs/discovery.md › Policy first): the gate
// asks about the inner tool, and the retry, sent again as call_tool, forwards it once.
t.test('confirm/http/call-tool-of-a-gated-tool-is-gated', async t => {
  const search = await build(t, { discovery: { mode: 'search' }, policy: { default: 'allow', rules: [{ confirm: ['echo'] }] }, confirmation: { expiry: '1m' } })
  const callTool = async (id: number, extra: Record<string, unknown> = {}): Promise<{ status: number, json: any }> => { // eslint-disable-line @typescript-eslint/no-explicit-any
    const reply = await search.inject({
      method: 'POST',
      url: '/mcp',
      headers: modernHeaders('tools/call', 'call_tool', { accept: 'application/json' }),
      payload: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'call_tool', arguments: { name: 'echo', arguments: { text: 'via search' } }, ...extra, _meta: modernMeta({ elicitation: {} }) } })
    })
    return { status: reply.statusCode, json: reply.json() }
  }
  const first = await callTool(1)
  t.match(first.json, { id: 1, result: { resultType: 'input_required', inputRequests: { mcpx_confirm: { params: { message: /"echo"[\s\S]*"text":"via search"/ } } }, requestState: String } }, 'the inner tool is gated')
  const state = first.json.result.requestState as string
  const yes = await callTool(2, { inputResponses: { mcpx_confirm: { action: 'accept', content: { confirm: true } } }, requestState: state })
  t.match(yes.json, { id: 2, result: { resultType: 'complete', content: [{ type: 'text', text: 'via search' }] } }, 'accepted: forwarded')
  const replay = await callTool(3, { inputResponses: { mcpx_confirm: { action: 'accept', content: { confirm: true } } }, requestState: state })
  t.match(replay.json, { id: 3, error: { code: -32_602, message: /already used/ } }, 'single use through call_tool too')
})

// The 2026-07-28 gate's rules (confirm/modern/…) on the whole app: `bump` increments the fixture's
// `fixture://counter`, so whether the upstream saw a call is read from it, as test/e2e/confirm.test.ts
// does through a real daemon.
const ACCEPT = { action: 'accept', content: { confirm: true } }
const DECLINE = { action: 'decline' }
const GATED = { policy: { default: 'allow' as const, rules: [{ confirm: ['bump', 'ech?'] }] }, confirmation: { expiry: '1m' } }

let gatedApp: Promise<FastifyInstance> | undefined
/** One app for the confirm/modern cases that need no config of their own (they run one at a time). */
async function gated (): Promise<FastifyInstance> {
  gatedApp ??= build(t, GATED)
  return await gatedApp
}

/** A 2026-07-28 tools/call of `name` with `args`, extra params and the client's capabilities. */
async function modernCall (app: FastifyInstance, id: number, name: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}, capabilities: Record<string, unknown> = { elicitation: {} }): Promise<{ status: number, json: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const reply = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: modernHeaders('tools/call', name, { accept: 'application/json' }),
    payload: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...extra, _meta: modernMeta(capabilities) } })
  })
  return { status: reply.statusCode, json: reply.json() }
}

/** The first leg: asserts an InputRequiredResult and returns mcpx's state. */
async function asked (t: Test, app: FastifyInstance, name: string, args: Record<string, unknown>): Promise<string> {
  const first = await modernCall(app, 1, name, args)
  t.equal(first.status, 200)
  t.equal(first.json.result?.resultType, 'input_required', `${name}: an InputRequiredResult`)
  return first.json.result.requestState as string
}

/** The fixture's counter: how many `bump` calls reached the upstream. */
async function counter (app: FastifyInstance): Promise<number> {
  const reply = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: modernHeaders('resources/read', 'fixture://counter', { accept: 'application/json' }),
    payload: JSON.stringify({ jsonrpc: '2.0', id: 'c', method: 'resources/read', params: { uri: 'fixture://counter', _meta: modernMeta() } })
  })
  return Number(reply.json().result.contents[0].text)
}

function textOf (result: unknown): string {
  const content = (result as { content?: Array<{ type: string, text?: string }> } | undefined)?.content ?? []
  return content.filter(c => c.type === 'text').map(c => c.text ?? '').join('')
}

t.test('confirm/modern/accept-forwards-decline-does-not', async t => {
  const app = await gated()
  const before = await counter(app)
  const state = await asked(t, app, 'bump', {})
  t.equal(await counter(app), before, 'asking does not call the upstream')
  const declined = await modernCall(app, 2, 'bump', {}, { inputResponses: { mcpx_confirm: DECLINE }, requestState: state })
  t.equal(declined.status, 200)
  t.match(declined.json.result, { resultType: 'complete', isError: true, content: [{ type: 'text', text: /declined/ }] })
  for (const answer of [{ action: 'cancel' }, { action: 'accept', content: { confirm: false } }]) {
    const again = await asked(t, app, 'bump', {})
    const reply = await modernCall(app, 3, 'bump', {}, { inputResponses: { mcpx_confirm: answer }, requestState: again })
    t.equal(reply.json.result?.isError, true, `${JSON.stringify(answer)} is a decline`)
  }
  t.equal(await counter(app), before, 'a decline, a cancel or confirm false never reaches the upstream')
  const yes = await asked(t, app, 'bump', {})
  const accepted = await modernCall(app, 4, 'bump', {}, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: yes })
  t.equal(accepted.status, 200)
  t.equal(textOf(accepted.json.result), `counter ${before + 1}`, 'an accepted call reaches the upstream once')
})

t.test('confirm/modern/replayed-approval-refused', async t => {
  const app = await gated()
  const state = await asked(t, app, 'bump', {})
  const first = await modernCall(app, 1, 'bump', {}, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: state })
  t.equal(first.status, 200)
  const after = await counter(app)
  const replay = await modernCall(app, 2, 'bump', {}, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: state })
  t.equal(replay.status, 400)
  t.match(replay.json, { id: 2, error: { code: -32_602, message: /already used/ } })
  const no = await asked(t, app, 'bump', {})
  await modernCall(app, 3, 'bump', {}, { inputResponses: { mcpx_confirm: DECLINE }, requestState: no })
  const flip = await modernCall(app, 4, 'bump', {}, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: no })
  t.equal(flip.status, 400, 'a declined state cannot be retried as an accept')
  t.match(flip.json, { id: 4, error: { code: -32_602 } })
  t.equal(await counter(app), after, 'neither replay reached the upstream')
})

t.test('confirm/modern/tampered-state-refused', async t => {
  const app = await gated()
  const before = await counter(app)
  const state = await asked(t, app, 'bump', {})
  // Flip the MAC's first character (its last one carries padding bits base64url decoding ignores).
  const at = state.lastIndexOf('.') + 1
  const tampered = state.slice(0, at) + (state[at] === 'A' ? 'B' : 'A') + state.slice(at + 1)
  const reply = await modernCall(app, 1, 'bump', {}, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: tampered })
  t.equal(reply.status, 400)
  t.match(reply.json, { id: 1, error: { code: -32_602, message: /tampered/ } })
  const echo = await asked(t, app, 'echo', { text: 'a' })
  const otherArgs = await modernCall(app, 2, 'echo', { text: 'b' }, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: echo })
  t.equal(otherArgs.status, 400)
  t.match(otherArgs.json, { id: 2, error: { code: -32_602, message: /another call/ } }, 'a state for other arguments')
  const otherTool = await modernCall(app, 3, 'bump', {}, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: echo })
  t.equal(otherTool.status, 400, 'a state for another tool')
  t.match(otherTool.json, { id: 3, error: { code: -32_602 } })
  t.equal(await counter(app), before, 'nothing reached the upstream')
  const good = await modernCall(app, 4, 'echo', { text: 'a' }, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: echo })
  t.equal(textOf(good.json.result), 'a', 'the untouched state, with its own arguments, still approves its call')
})

t.test('confirm/modern/client-without-elicitation-refused', async t => {
  const app = await gated()
  const before = await counter(app)
  for (const capabilities of [{}, { elicitation: { url: {} } }]) {
    const reply = await modernCall(app, 1, 'bump', {}, {}, capabilities)
    t.equal(reply.status, 400)
    t.match(reply.json, { id: 1, error: { code: -32_021, data: { requiredCapabilities: { elicitation: {} } } } }, `${JSON.stringify(capabilities)}: -32021 naming elicitation`)
  }
  t.equal(await counter(app), before, 'never a silent call')
})

t.test('confirm/modern/expired-approval-refused', async t => {
  const app = await build(t, { ...GATED, confirmation: { expiry: '100ms' } })
  const before = await counter(app)
  const state = await asked(t, app, 'bump', {})
  await new Promise(resolve => setTimeout(resolve, 300)) // three times confirmation.expiry
  const reply = await modernCall(app, 2, 'bump', {}, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: state })
  t.equal(reply.status, 400)
  t.match(reply.json, { id: 2, error: { code: -32_602, message: /expired/ } })
  t.equal(await counter(app), before, 'the expired accept forwarded nothing')
})

t.test('confirm/legacy/client-without-elicitation-refused', async t => {
  const app = await gated()
  const before = await counter(app)
  const init = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: legacyHeaders({ accept: 'application/json' }),
    payload: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'no-elicitation', version: '0.0.0' } } })
  })
  const sid = init.headers['mcp-session-id'] as string
  t.type(sid, 'string', 'a 2025-11-25 session without the elicitation capability')
  const session = { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' }
  await app.inject({ method: 'POST', url: '/mcp', headers: legacyHeaders(session), payload: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })
  const refused = await app.inject({ method: 'POST', url: '/mcp', headers: legacyHeaders({ ...session, accept: 'application/json' }), payload: JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'bump', arguments: {} } }) })
  t.equal(refused.statusCode, 200)
  t.match(refused.json(), { id: 8, result: { isError: true, content: [{ type: 'text', text: /cannot be asked/ }] } })
  // 2025-03-26 has no elicitation: a sessionless POST (assumed 2025-03-26) is refused the same way.
  const old = await app.inject({ method: 'POST', url: '/mcp', headers: legacyHeaders({ accept: 'application/json, text/event-stream' }), payload: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'bump', arguments: {} } }) })
  t.equal(old.statusCode, 200)
  t.match(old.json(), { id: 9, result: { isError: true, content: [{ text: /2025-03-26 has no elicitation/ }] } })
  t.equal(await counter(app), before, 'never a silent call')
})
