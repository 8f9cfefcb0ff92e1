/**
 * The human confirmation gate (docs/policy.md › Confirmation) at the HTTP tier: the mcpx plugin on a
 * bare Fastify, `fastify.inject`, the echo fixture as its upstream. A 2026-07-28 call answers an
 * InputRequiredResult; the retry with an accept forwards it once, a decline answers isError, the same
 * state again is -32602 (400); a 2025-03-26 POST (no elicitation in that revision) is refused as a
 * tool error. Tests are named confirm/http/<requirement>.
 */
import t from 'tap'
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
