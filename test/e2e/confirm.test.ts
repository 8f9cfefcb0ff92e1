/**
 * The human confirmation gate (docs/policy.md › Confirmation) through one real daemon and one
 * spawned `mcpx serve`, with the real fixture upstream behind them: a 2025-11-25 session asked by
 * `elicitation/create` (the official v1 client's elicitation handler), a 2026-07-28 client asked by
 * an InputRequiredResult and mcpx's sealed requestState (raw wire, and the official v2 client's
 * input_required handling), and `mcpx serve` in both eras. Whether the upstream saw a call is read
 * from the fixture's counter (`bump` increments `fixture://counter`). Tests are named confirm/<area>/<requirement>.
 */
import t, { type Test } from 'tap'
import { readFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client'
import { startDaemon } from '../helpers/daemon.js'
import { fixtureCommand } from '../helpers/fixture.js'
import { modernHeaders, modernMeta, type Teardown } from '../helpers/app.js'
import { legacyRpc, modernRpc, request, untilReady, type RawReply } from '../helpers/policy.js'
import { pollUntil, schemaErrors as legacySchemaErrors } from '../helpers/legacy.js'
import { schemaErrors as modernSchemaErrors } from '../helpers/modern-wire.js'
import { spawnServe, type Message } from '../helpers/spawn.js'

const EXPIRY_MS = 3_000
const STATE_KEY = randomBytes(32).toString('base64')
const ELICIT = { elicitation: {} }

/** `bump` and `echo` are gated everywhere (a policy rule); on /mcp/ops every destructive tool too, and `headers` is destructive there. */
function configWith (auditFile: string): Record<string, unknown> {
  return {
    upstreams: { fx: fixtureCommand() },
    mrtr: { stateKey: STATE_KEY },
    confirmation: { expiry: EXPIRY_MS, maxArgumentChars: 120, redact: ['*password*', '*token*'] },
    audit: { file: auditFile, arguments: 'keys' },
    policy: { default: 'allow', rules: [{ confirm: ['bump', 'ech?'] }] },
    servers: { ops: { tools: { allow: ['*'] }, override: { headers: { annotations: { destructiveHint: true } } }, confirm: { destructive: true } } }
  }
}

type Line = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

function auditLines (file: string): Line[] {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8').split('\n').filter(l => l !== '').map(l => JSON.parse(l) as Line)
}

function textOf (result: unknown): string {
  const content = (result as { content?: Array<{ type: string, text?: string }> }).content ?? []
  return content.filter(c => c.type === 'text').map(c => c.text ?? '').join('')
}

const dir = mkdtempSync(join(tmpdir(), 'mcpx-confirm-'))
t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
const AUDIT = join(dir, 'audit.jsonl')

/** One daemon for the whole file (every case reads the counter before and after, one at a time). */
let shared: Promise<string> | undefined
async function daemon (): Promise<string> {
  shared ??= (async () => {
    const started = await startDaemon(t, configWith(AUDIT))
    await untilReady(started.base)
    return started.base
  })()
  return await shared
}

async function counter (base: string): Promise<number> {
  const reply = await modernRpc({ base }, 'c', 'resources/read', { uri: 'fixture://counter' })
  return Number(reply.json.result.contents[0].text)
}

/** A raw 2026-07-28 tools/call (Mcp-Name mirrored), with the capabilities and extra params given. */
async function modernCall (base: string, id: number, name: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}, capabilities: Record<string, unknown> = ELICIT, path = '/mcp'): Promise<RawReply> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: modernHeaders('tools/call', name, { accept: 'application/json' }),
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...extra, _meta: modernMeta(capabilities) } })
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, text, json: JSON.parse(text) }
}

const ACCEPT = { action: 'accept', content: { confirm: true } }
const DECLINE = { action: 'decline' }

/** Asks (first leg) and returns mcpx's state, checking the InputRequiredResult's shape. */
async function asked (t: Test, base: string, name: string, args: Record<string, unknown>, path = '/mcp'): Promise<{ state: string, params: Line }> {
  const first = await modernCall(base, 1, name, args, {}, ELICIT, path)
  t.equal(first.status, 200)
  const result = first.json.result
  t.equal(result?.resultType, 'input_required', `${name}: an InputRequiredResult (${first.text.slice(0, 200)})`)
  t.equal(modernSchemaErrors('InputRequiredResult', result), '', 'valid against the 2026-07-28 schema')
  return { state: result.requestState as string, params: result.inputRequests.mcpx_confirm.params as Line }
}

async function legacyClient (t: Teardown, base: string, answer: (params: Line) => Promise<Line> | Line, path = '/mcp', capabilities: Record<string, unknown> = ELICIT): Promise<ClientV1> {
  const client = new ClientV1({ name: 'confirm-v1', version: '1.0.0' }, { capabilities })
  if (capabilities.elicitation !== undefined) client.setRequestHandler(ElicitRequestSchema, async (req) => await answer(req.params as Line) as never)
  await client.connect(new TransportV1(new URL(`${base}${path}`)))
  t.teardown(async () => { await client.close() })
  return client
}

/** `mcpx serve` with the same config (no audit), spawned now so that it starts while the daemon's cases run. */
const serve = spawnServe(t, { config: { ...configWith(join(dir, 'serve-audit.jsonl')), audit: undefined } })

/** A state issued early, retried once the expiry has passed (at the end of the file: no sleep of its own). */
let early: { state: string } | undefined

t.test('confirm/modern/accept-forwards-decline-does-not', async t => {
  const base = await daemon()
  early = await asked(t, base, 'bump', { n: 1 })
  const before = await counter(base)
  const { state, params } = await asked(t, base, 'bump', {})
  t.match(params, { mode: 'form', requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] } })
  t.match(params.message, /"bump"/, 'the question names the tool')
  t.equal(await counter(base), before, 'asking does not call the upstream')
  const declined = await modernCall(base, 2, 'bump', {}, { inputResponses: { mcpx_confirm: DECLINE }, requestState: state })
  t.equal(declined.status, 200)
  t.match(declined.json.result, { resultType: 'complete', isError: true, content: [{ type: 'text', text: /declined/ }] })
  t.equal(await counter(base), before, 'a declined call never reaches the upstream')
  for (const answer of [{ action: 'cancel' }, { action: 'accept', content: { confirm: false } }]) {
    const again = await asked(t, base, 'bump', {})
    const reply = await modernCall(base, 3, 'bump', {}, { inputResponses: { mcpx_confirm: answer }, requestState: again.state })
    t.equal(reply.json.result?.isError, true, `${JSON.stringify(answer)} is a decline`)
  }
  t.equal(await counter(base), before, 'nor does a cancel or confirm false')
  const yes = await asked(t, base, 'bump', {})
  const accepted = await modernCall(base, 4, 'bump', {}, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: yes.state })
  t.equal(accepted.status, 200)
  t.equal(textOf(accepted.json.result), `counter ${before + 1}`, 'an accepted call reaches the upstream once')
  // The retry without the answer: asked again (mrtr.mdx SHOULD), a new state.
  const pending = await asked(t, base, 'bump', {})
  const unanswered = await modernCall(base, 5, 'bump', {}, { inputResponses: {}, requestState: pending.state })
  t.equal(unanswered.json.result?.resultType, 'input_required')
})

t.test('confirm/modern/replayed-approval-refused', async t => {
  const base = await daemon()
  const { state } = await asked(t, base, 'bump', {})
  const first = await modernCall(base, 1, 'bump', {}, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: state })
  t.equal(first.status, 200)
  const after = await counter(base)
  const replay = await modernCall(base, 2, 'bump', {}, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: state })
  t.equal(replay.status, 400)
  t.match(replay.json, { id: 2, error: { code: -32_602, message: /already used/ } })
  t.equal(await counter(base), after, 'the replay never reached the upstream')
  // A declined approval is spent too.
  const no = await asked(t, base, 'bump', {})
  await modernCall(base, 3, 'bump', {}, { inputResponses: { mcpx_confirm: DECLINE }, requestState: no.state })
  const flip = await modernCall(base, 4, 'bump', {}, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: no.state })
  t.equal(flip.status, 400, 'a declined state cannot be retried as an accept')
  t.equal(await counter(base), after)
})

t.test('confirm/modern/tampered-state-refused', async t => {
  const base = await daemon()
  const before = await counter(base)
  const { state } = await asked(t, base, 'bump', {})
  const at = state.lastIndexOf('.') + 1
  const tampered = state.slice(0, at) + (state[at] === 'A' ? 'B' : 'A') + state.slice(at + 1)
  const reply = await modernCall(base, 1, 'bump', {}, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: tampered })
  t.equal(reply.status, 400)
  t.match(reply.json, { error: { code: -32_602, message: /tampered/ } })
  // A state for other arguments, or for another tool, does not approve this call.
  const echo = await asked(t, base, 'echo', { text: 'a' })
  const otherArgs = await modernCall(base, 2, 'echo', { text: 'b' }, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: echo.state })
  t.match(otherArgs.json, { error: { code: -32_602, message: /another call/ } })
  const otherTool = await modernCall(base, 3, 'bump', {}, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: echo.state })
  t.equal(otherTool.status, 400)
  t.equal(await counter(base), before, 'nothing reached the upstream')
  const good = await modernCall(base, 4, 'echo', { text: 'a' }, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: echo.state })
  t.equal(textOf(good.json.result), 'a', 'the untouched state, with its own arguments, still approves its call')
})

t.test('confirm/modern/client-without-elicitation-refused', async t => {
  const base = await daemon()
  const before = await counter(base)
  for (const capabilities of [{}, { elicitation: { url: {} } }]) {
    const reply = await modernCall(base, 1, 'bump', {}, {}, capabilities)
    t.equal(reply.status, 400)
    t.match(reply.json, { id: 1, error: { code: -32_021, data: { requiredCapabilities: { elicitation: {} } } } }, `${JSON.stringify(capabilities)}: -32021 naming elicitation`)
  }
  t.equal(await counter(base), before)
})

t.test('confirm/select/arguments-redacted-and-truncated', async t => {
  const base = await daemon()
  const args = { text: 'visible-text', password: 'hunter2', nested: { apiToken: 'tok-123', keep: 'kept' }, note: 'x'.repeat(400) }
  const { params } = await asked(t, base, 'echo', args)
  const message = params.message as string
  t.match(message, /visible-text/)
  t.match(message, /kept/)
  t.notMatch(message, /hunter2/, 'a value policy marks as secret is never shown')
  t.notMatch(message, /tok-123/, 'at any depth, case-insensitively')
  t.match(message, /\[redacted\]/)
  t.match(message, /more characters not shown/, 'cut at confirmation.maxArgumentChars')
  t.ok(message.length < 400, `bounded (${message.length} characters)`)
})

t.test('confirm/select/destructive-hint-after-overrides', async t => {
  const base = await daemon()
  const plain = await modernCall(base, 1, 'headers', { a: 1 })
  t.equal(plain.json.result?.resultType, 'complete', '/mcp: headers is not destructive there, not gated')
  await asked(t, base, 'headers', { a: 1 }, '/mcp/ops')
  const echoOps = await asked(t, base, 'echo', { text: 'x' }, '/mcp/ops')
  t.ok(echoOps.state, 'the policy rule gates echo on /mcp/ops too')
  const other = await modernCall(base, 2, 'fail', {}, {}, ELICIT, '/mcp/ops')
  t.equal(other.json.result?.resultType, 'complete', 'a tool neither globbed nor destructive is not gated')
  const elsewhere = await modernCall(base, 3, 'echo', { text: 'x' }, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: echoOps.state })
  t.match(elsewhere.json, { error: { code: -32_602, message: /another call/ } }, 'an approval given on /mcp/ops approves nothing on /mcp')
})

t.test('confirm/clients/v1-elicitation-accepts-and-declines', async t => {
  const base = await daemon()
  const asked: Line[] = []
  let answer: Line = ACCEPT
  const client = await legacyClient(t, base, params => { asked.push(params); return answer })
  const before = await counter(base)
  const yes = await client.callTool({ name: 'bump', arguments: {} })
  t.equal(textOf(yes), `counter ${before + 1}`, 'accept forwards the call')
  t.equal(asked.length, 1)
  t.same(legacySchemaErrors('2025-11-25', 'ElicitRequestParams', asked[0]), [], 'a valid 2025-11-25 elicitation')
  t.match(asked[0].message, /"bump"/)
  answer = DECLINE
  const no = await client.callTool({ name: 'bump', arguments: {} })
  t.equal(no.isError, true)
  t.match(textOf(no), /declined/)
  t.equal(await counter(base), before + 1, 'decline never reaches the upstream')
  const free = await client.callTool({ name: 'headers', arguments: {} })
  t.notOk(free.isError, 'an ungated tool is not asked')
  t.equal(asked.length, 2)
})

t.test('confirm/legacy/client-without-elicitation-refused', async t => {
  const base = await daemon()
  const before = await counter(base)
  const client = await legacyClient(t, base, () => ACCEPT, '/mcp', {})
  const refused = await client.callTool({ name: 'bump', arguments: {} })
  t.equal(refused.isError, true)
  t.match(textOf(refused), /cannot be asked/)
  // 2025-03-26 has no elicitation: a sessionless POST (assumed 2025-03-26) is refused the same way.
  const old = await legacyRpc({ base }, request(9, 'tools/call', { name: 'bump', arguments: {} }))
  t.equal(old.status, 200)
  t.match(old.json, { id: 9, result: { isError: true, content: [{ text: /2025-03-26 has no elicitation/ }] } })
  t.equal(await counter(base), before, 'never a silent call')
})

t.test('confirm/legacy/unanswered-question-expires', async t => {
  const base = await daemon()
  const before = await counter(base)
  const client = await legacyClient(t, base, async () => await new Promise<Line>(() => {}))
  const started = Date.now()
  const reply = await client.callTool({ name: 'bump', arguments: {} }, undefined, { timeout: 60_000 })
  t.equal(reply.isError, true)
  t.match(textOf(reply), new RegExp(`no answer within ${EXPIRY_MS} ms`))
  t.ok(Date.now() - started >= EXPIRY_MS - 100, 'after confirmation.expiry')
  t.equal(await counter(base), before)
})

t.test('confirm/clients/v2-input-required-accepts-and-declines', async t => {
  const base = await daemon()
  let answer: Line = ACCEPT
  const client = new ClientV2({ name: 'confirm-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: ELICIT })
  client.setRequestHandler('elicitation/create', async () => answer as never)
  await client.connect(new TransportV2(new URL(`${base}/mcp`)))
  t.teardown(async () => { await client.close() })
  const before = await counter(base)
  const yes = await client.callTool({ name: 'bump', arguments: {} })
  t.equal(textOf(yes), `counter ${before + 1}`, 'the v2 client answers input_required and retries: forwarded')
  answer = DECLINE
  const no = await client.callTool({ name: 'bump', arguments: {} })
  t.equal(no.isError, true)
  t.equal(await counter(base), before + 1)
})

t.test('confirm/modern/expired-approval-refused', async t => {
  const base = await daemon()
  if (early === undefined) throw new Error('the first case did not run')
  const state = early.state
  const before = await counter(base)
  // Issued at the start of the file; once confirmation.expiry has passed it is refused.
  const reply = await pollUntil('the early state expired', async () => {
    const r = await modernCall(base, 1, 'bump', { n: 1 }, { inputResponses: { mcpx_confirm: ACCEPT }, requestState: state })
    return r.status === 400 ? r : false
  }, 30_000)
  t.match(reply.json, { error: { code: -32_602, message: /expired/ } })
  t.equal(await counter(base), before, 'an unexpired accept would have been the one call (then replayed): none happened')
})

t.test('confirm/audit/confirmed-and-declined-with-time', async t => {
  await daemon()
  const lines = await pollUntil('confirmed and declined lines', () => {
    const all = auditLines(AUDIT).filter(l => l.method === 'tools/call' && l.name === 'bump')
    return all.some(l => l.confirmation === 'declined' && l.era === 'legacy') && all.some(l => l.confirmation === 'confirmed' && l.era === 'modern') ? all : false
  })
  const confirmed = lines.find(l => l.confirmation === 'confirmed' && l.era === 'legacy')
  t.match(confirmed, { outcome: 'ok', confirmation: 'confirmed', confirmMs: Number })
  const declined = lines.find(l => l.confirmation === 'declined' && l.era === 'modern')
  t.match(declined, { outcome: 'declined', confirmation: 'declined', confirmMs: Number })
  t.ok(lines.some(l => l.confirmation === 'asked' && l.outcome === 'ok'), 'the first leg of a 2026-07-28 call is audited as asked')
  t.ok(lines.some(l => l.confirmation === 'refused'), 'a client that cannot be asked is audited as refused')
  const argLine = auditLines(AUDIT).find(l => l.name === 'echo' && Array.isArray(l.argumentKeys) && l.argumentKeys.includes('password'))
  t.ok(argLine, 'audit.arguments "keys" still lists names')
  t.notMatch(readFileSync(AUDIT, 'utf8'), /hunter2|tok-123/, 'no secret in the trail')
})

/* ------------------------------------------------------------------ mcpx serve */

t.test('confirm/serve/both-eras-accept-decline-refuse', async t => {
  let id = 100
  const rpc = async (method: string, params: Record<string, unknown>): Promise<Message> => await serve.request({ jsonrpc: '2.0', id: id++, method, params }, 60_000)
  const init = await rpc('initialize', { protocolVersion: '2025-11-25', capabilities: ELICIT, clientInfo: { name: 'confirm-stdio', version: '0' } })
  t.equal(init.result?.protocolVersion, '2025-11-25')
  serve.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
  await pollUntil('the fixture listed', async () => ((await rpc('tools/list', {})).result?.tools ?? []).length > 0, 60_000)
  const count = async (): Promise<number> => Number((await rpc('resources/read', { uri: 'fixture://counter' })).result.contents[0].text)
  const before = await count()
  const isQuestion = (m: Message): boolean => m?.method === 'elicitation/create'
  for (const [answer, expected] of [[ACCEPT, before + 1], [DECLINE, before + 1]] as const) {
    const callId = id++
    const after = serve.messages.length
    serve.send({ jsonrpc: '2.0', id: callId, method: 'tools/call', params: { name: 'bump', arguments: {} } })
    const question = await serve.nextMessage(isQuestion, { after })
    t.match(question.params.message, /"bump"/)
    serve.send({ jsonrpc: '2.0', id: question.id, result: answer })
    const done = await serve.nextMessage(m => m?.id === callId, { after })
    if (answer === ACCEPT) t.equal(textOf(done.result), `counter ${before + 1}`, 'legacy stdio: accept forwards')
    else t.match(done.result, { isError: true }, 'legacy stdio: decline answers a tool error')
    t.equal(await count(), expected)
  }
  // 2026-07-28 requests on the same connection: input_required, then the retry.
  const first = await rpc('tools/call', { name: 'bump', arguments: {}, _meta: modernMeta(ELICIT) })
  t.equal(first.result?.resultType, 'input_required')
  const retry = await rpc('tools/call', { name: 'bump', arguments: {}, inputResponses: { mcpx_confirm: ACCEPT }, requestState: first.result.requestState, _meta: modernMeta(ELICIT) })
  t.equal(textOf(retry.result), `counter ${before + 2}`, 'modern stdio: accept forwards')
  const replay = await rpc('tools/call', { name: 'bump', arguments: {}, inputResponses: { mcpx_confirm: ACCEPT }, requestState: first.result.requestState, _meta: modernMeta(ELICIT) })
  t.match(replay.error, { code: -32_602, message: /already used/ }, 'modern stdio: a replay is refused')
  const noCaps = await rpc('tools/call', { name: 'bump', arguments: {}, _meta: modernMeta({}) })
  t.match(noCaps.error, { code: -32_021 }, 'modern stdio: a client without elicitation is refused')
  t.equal(await count(), before + 2)
  t.equal(serve.messages.filter(m => m === undefined).length, 0, 'every stdout line is JSON')
})
