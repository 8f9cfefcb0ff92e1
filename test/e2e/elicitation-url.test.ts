/**
 * URL-mode elicitation (2025-11-25 client/elicitation.mdx) through
 * a real daemon, in the four era directions:
 * - legacy client (2025-11-25 session) ↔ legacy upstream (the hand-written hostile fixture, which
 *   asks a real `elicitation/create {mode: 'url'}` and sends `notifications/elicitation/complete`):
 *   passed through, the completion on the call's stream;
 * - legacy client ↔ 2026-07-28 upstream (echo fixture `--era modern`, `inputRequired.elicitUrl`):
 *   mcpx asks the real question with an `elicitationId` it mints, and completes it after the retry;
 * - 2026-07-28 client ↔ legacy upstream: an InputRequiredResult without the 2025-only `elicitationId`;
 * - 2026-07-28 client ↔ 2026-07-28 upstream: passes through.
 * In every direction a client that did not declare `elicitation.url` never receives one: a legacy
 * upstream gets -32602, a 2026-07-28 client gets -32021 naming `elicitation.url`. The same again
 * through a real spawned `mcpx serve` (elicitation-url/stdio-serve/…).
 * Tests are named elicitation-url/<area>/<requirement>.
 */
import t, { type Test } from 'tap'
import { fileURLToPath } from 'node:url'
import { startDaemon } from '../helpers/daemon.js'
import { fixtureCommand } from '../helpers/fixture.js'
import { modernHeaders, modernMeta, sseMessages } from '../helpers/app.js'
import { fetchSession, fixtureLogPath, pollUntil, post, schemaErrors as legacySchemaErrors, sessionHeaders, SseReader } from '../helpers/legacy.js'
import { schemaErrors as modernSchemaErrors } from '../helpers/modern-wire.js'
import { untilReady } from '../helpers/policy.js'
import { readFileSync, existsSync } from 'node:fs'
import type { Teardown } from '../helpers/app.js'
import { spawnServe, type ServeChild } from '../helpers/spawn.js'

const HOSTILE = fileURLToPath(new URL('../fixtures/hostile-upstream.js', import.meta.url))
const REVISION = '2025-11-25'
const URL_CAPS = { elicitation: { form: {}, url: {} } }
const FORM_ONLY = { elicitation: {} }
const TARGET = 'https://auth.example/confirm'

type Message = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

async function daemonWith (t: Teardown, upstream: 'legacy' | 'modern', log: string): Promise<string> {
  const config = upstream === 'legacy'
    ? { command: process.execPath, args: [HOSTILE, '--elicit'], env: { FIXTURE_LOG: log } }
    : fixtureCommand('--era', 'modern')
  const daemon = await startDaemon(t, { upstreams: { u: config } })
  await untilReady(daemon.base)
  return daemon.base
}

/** The tool and arguments that ask a URL-mode elicitation on each fixture. */
function urlTool (upstream: 'legacy' | 'modern'): { name: string, arguments: Record<string, unknown> } {
  return upstream === 'legacy' ? { name: 'elicit_url', arguments: {} } : { name: 'elicit', arguments: { url: TARGET } }
}

/** The hostile fixture's record of the answer it got to its question. */
function upstreamAnswers (log: string): Message[] {
  if (!existsSync(log)) return []
  return readFileSync(log, 'utf8').split('\n').filter(l => l !== '').map(l => JSON.parse(l) as Message).filter(e => e.event === 'elicitation-answer')
}

/** A tools/call in a legacy session, its SSE reply read as it comes. */
async function legacyCall (base: string, sid: string, id: number, tool: { name: string, arguments: Record<string, unknown> }): Promise<SseReader> {
  const res = await post(base, { jsonrpc: '2.0', id, method: 'tools/call', params: tool }, sessionHeaders(sid, REVISION))
  if (res.status !== 200 || res.headers.get('content-type')?.startsWith('text/event-stream') !== true) throw new Error(`tools/call: ${res.status} ${await res.text()}`)
  return new SseReader(res)
}

/** A tools/call in a legacy session, every message of its reply (SSE or JSON) once it is complete. */
async function legacyCallWhole (base: string, sid: string, id: number, tool: { name: string, arguments: Record<string, unknown> }): Promise<Message[]> {
  const res = await post(base, { jsonrpc: '2.0', id, method: 'tools/call', params: tool }, sessionHeaders(sid, REVISION))
  t.equal(res.status, 200)
  const body = await res.text()
  return res.headers.get('content-type')?.startsWith('text/event-stream') === true ? sseMessages(body) as Message[] : [JSON.parse(body) as Message]
}

async function modernCall (base: string, id: number, tool: { name: string, arguments: Record<string, unknown> }, capabilities: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<{ status: number, body: Message }> {
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: modernHeaders('tools/call', tool.name, { accept: 'application/json' }),
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { ...tool, ...extra, _meta: modernMeta(capabilities) } })
  })
  return { status: res.status, body: await res.json() as Message }
}

const textOf = (result: Message): string => (result.content as Array<{ text: string }>).map(c => c.text).join('')
const isElicitation = (m: Message): boolean => m.method === 'elicitation/create'
const isResponse = (id: number) => (m: Message): boolean => m.id === id && m.method === undefined

for (const upstream of ['legacy', 'modern'] as const) {
  t.test(`elicitation-url/legacy-client/${upstream}-upstream-asks-and-completes`, async t => {
    const log = fixtureLogPath()
    const base = await daemonWith(t, upstream, log)
    const sid = await fetchSession(base, REVISION, URL_CAPS)
    const reply = await legacyCall(base, sid, 7, urlTool(upstream))
    const question = await reply.message('the URL-mode elicitation', isElicitation) as Message
    t.same(legacySchemaErrors(REVISION, 'ElicitRequest', question), [], 'a valid 2025-11-25 ElicitRequest')
    t.match(question.params, { mode: 'url', url: upstream === 'legacy' ? /^https:\/\/auth\.example\/confirm\?n=1$/ : TARGET, message: 'Confirm in your browser' })
    const elicitationId = question.params.elicitationId as string
    if (upstream === 'legacy') t.equal(elicitationId, 'el-1', 'the upstream\'s elicitationId passes through')
    else t.match(elicitationId, /^mcpx-elicitation-[A-Za-z0-9_-]{16}$/, 'a 2026-07-28 upstream sends none: mcpx mints one for the 2025-11-25 client')
    const answered = await post(base, { jsonrpc: '2.0', id: question.id, result: { action: 'accept' } }, sessionHeaders(sid, REVISION))
    t.equal(answered.status, 202, 'the answer is taken')
    await answered.text()
    const done = await reply.message('the call\'s result', isResponse(7)) as Message
    t.same(JSON.parse(textOf(done.result)), { action: 'accept' }, 'the client\'s accept reached the upstream')
    const complete = reply.messages.findIndex(m => m.method === 'notifications/elicitation/complete')
    t.not(complete, -1, 'notifications/elicitation/complete reached the client')
    t.same(reply.messages[complete], { jsonrpc: '2.0', method: 'notifications/elicitation/complete', params: { elicitationId } }, 'naming the elicitation the client got')
    t.same(legacySchemaErrors(REVISION, 'ElicitationCompleteNotification', reply.messages[complete]), [])
    t.ok(complete < reply.messages.indexOf(done), 'before the call\'s result, on the call\'s stream')
    await reply.end()
  })

  t.test(`elicitation-url/legacy-client/${upstream}-upstream-undeclared-url-mode-never-sent`, async t => {
    const log = fixtureLogPath()
    const base = await daemonWith(t, upstream, log)
    const sid = await fetchSession(base, REVISION, FORM_ONLY)
    const messages = await legacyCallWhole(base, sid, 8, urlTool(upstream))
    t.notOk(messages.some(isElicitation), 'no elicitation/create reached the client')
    const done = messages.find(isResponse(8)) as Message
    if (upstream === 'legacy') {
      t.same(JSON.parse(textOf(done.result)).error?.code, -32602, 'the upstream got -32602 (2025-11-25: an undeclared elicitation mode)')
      t.match(upstreamAnswers(log)[0], { error: { code: -32602, message: /url-mode elicitation.*elicitation\.url/ } }, 'with a message naming the capability')
    } else {
      // mcpx hands a 2026-07-28 upstream the client's own capabilities, so the upstream does not ask:
      // it refuses the call itself, naming the capability (its own error, passed through).
      t.same({ code: done.error?.code, data: done.error?.data }, { code: -32021, data: { requiredCapabilities: { elicitation: { url: {} } } } },
        'the upstream saw the client lacks elicitation.url and asked nothing')
    }
  })
}

/**
 * A legacy upstream's 2025-11-25 `-32042` URLElicitationRequired (hostile `elicit_required`): a
 * 2026-07-28 client, to which that error must not be emitted, gets the InputRequiredResult carrying
 * the URL-mode elicitation, and its retry sends the request again; one without `elicitation.url`
 * gets -32021; a 2025-11-25 client gets the error unchanged.
 */
async function urlElicitationRequired (t: Test, base: string): Promise<void> {
  const tool = (tag: string): { name: string, arguments: Record<string, unknown> } => ({ name: 'elicit_required', arguments: { tag } })
  const first = await modernCall(base, 11, tool('a'), URL_CAPS)
  t.equal(first.status, 200)
  t.equal(modernSchemaErrors('InputRequiredResult', first.body.result), '', 'a valid 2026-07-28 InputRequiredResult, not -32042')
  t.same(first.body.result.inputRequests, { u1: { method: 'elicitation/create', params: { mode: 'url', url: 'https://auth.example/authorize?tag=a', message: 'Authorize in your browser' } } },
    'the upstream\'s URL-mode elicitation as an inputRequest, without the 2025-only elicitationId')
  const retry = await modernCall(base, 12, tool('a'), URL_CAPS, { inputResponses: { u1: { action: 'accept' } }, requestState: first.body.result.requestState })
  t.equal(retry.status, 200)
  t.equal(textOf(retry.body.result), 'authorized', 'the retry sent the request again, and the upstream answered it')
  const formOnly = await modernCall(base, 13, tool('b'), FORM_ONLY)
  t.equal(formOnly.status, 400)
  t.same({ code: formOnly.body.error?.code, data: formOnly.body.error?.data }, { code: -32021, data: { requiredCapabilities: { elicitation: { url: {} } } } },
    'a client without elicitation.url: -32021 naming it')
  const sid = await fetchSession(base, REVISION, URL_CAPS)
  const legacy = (await legacyCallWhole(base, sid, 14, tool('c'))).find(isResponse(14)) as Message
  t.match(legacy.error, { code: -32042, data: { elicitations: [{ mode: 'url', elicitationId: 'el-c-1', url: 'https://auth.example/authorize?tag=c' }] } }, 'a 2025-11-25 client gets -32042 unchanged')
}

for (const upstream of ['legacy', 'modern'] as const) {
  t.test(`elicitation-url/modern-client/${upstream}-upstream-input-required-and-retry`, async t => {
    const log = fixtureLogPath()
    const base = await daemonWith(t, upstream, log)
    const tool = urlTool(upstream)
    const first = await modernCall(base, 1, tool, URL_CAPS)
    t.equal(first.status, 200)
    t.equal(modernSchemaErrors('InputRequiredResult', first.body.result), '', 'a valid 2026-07-28 InputRequiredResult')
    const entries = Object.entries(first.body.result.inputRequests as Record<string, Message>)
    t.equal(entries.length, 1)
    const [key, request] = entries[0]
    t.same(request, { method: 'elicitation/create', params: { mode: 'url', url: upstream === 'legacy' ? `${TARGET}?n=1` : TARGET, message: 'Confirm in your browser' } },
      upstream === 'legacy' ? 'the legacy question, without the 2025-only elicitationId' : 'the upstream\'s inputRequest as it sent it')
    const retry = await modernCall(base, 2, tool, URL_CAPS, { inputResponses: { [key]: { action: 'accept' } }, requestState: first.body.result.requestState })
    t.equal(retry.status, 200)
    t.same(JSON.parse(textOf(retry.body.result)), { action: 'accept' }, 'the retry\'s accept reached the upstream')
    if (upstream === 'legacy') t.match(upstreamAnswers(log), [{ elicitationId: 'el-1', action: 'accept' }])
    if (upstream === 'legacy') await t.test('elicitation-url/modern-client/legacy-upstream-32042-is-input-required', async t => urlElicitationRequired(t, base))
  })

  t.test(`elicitation-url/modern-client/${upstream}-upstream-undeclared-url-mode-is-32021`, async t => {
    const log = fixtureLogPath()
    const base = await daemonWith(t, upstream, log)
    const reply = await modernCall(base, 3, urlTool(upstream), FORM_ONLY)
    t.equal(reply.status, 400)
    // A legacy upstream's question is refused by mcpx (its message); a 2026-07-28 upstream sees the
    // client's capabilities and refuses itself (its message): the same code and data either way.
    t.same({ code: reply.body.error?.code, data: reply.body.error?.data }, { code: -32021, data: { requiredCapabilities: { elicitation: { url: {} } } } },
      'the client is told which capability, not sent the elicitation')
    if (upstream === 'legacy') t.equal(reply.body.error.message, 'Missing required client capability: elicitation')
    if (upstream === 'legacy') {
      await pollUntil('the upstream recorded the refusal', () => upstreamAnswers(log).length > 0)
      t.match(upstreamAnswers(log), [{ elicitationId: 'el-1', error: { code: -32602 } }], 'the legacy upstream got -32602')
    }
  })
}

/**
 * The same through a real spawned `mcpx serve` (one client per process, both eras on its one
 * connection), with a legacy upstream (hostile `--elicit`, prefix `h`) and a 2026-07-28 one (echo
 * `--era modern`, prefix `e`): a client that declared `elicitation.url` gets the URL-mode question
 * (legacy: a real `elicitation/create` on stdout, then the completion; 2026-07-28: an
 * InputRequiredResult, then the retry), one that did not never does.
 */
async function serveWith (t: Test, log: string, capabilities: Record<string, unknown>): Promise<{ serve: ServeChild, request: (method: string, params: Record<string, unknown>) => Promise<Message> }> {
  const serve = spawnServe(t, { config: { upstreams: { h: { command: process.execPath, args: [HOSTILE, '--elicit'], env: { FIXTURE_LOG: log } }, e: fixtureCommand('--era', 'modern') } } })
  let id = 100
  const request = async (method: string, params: Record<string, unknown>): Promise<Message> => await serve.request({ jsonrpc: '2.0', id: id++, method, params })
  const init = await request('initialize', { protocolVersion: REVISION, capabilities, clientInfo: { name: 'elicitation-url-stdio', version: '0' } })
  t.equal(init.result?.protocolVersion, REVISION)
  serve.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
  await pollUntil('both upstreams listed', async () => {
    const names = ((await request('tools/list', {})).result.tools as Array<{ name: string }>).map(tool => tool.name)
    return names.includes('h__elicit_url') && names.includes('e__elicit')
  }, 60_000)
  return { serve, request }
}

const STDIO_TOOLS = { legacy: { name: 'h__elicit_url', arguments: {} }, modern: { name: 'e__elicit', arguments: { url: TARGET } } } as const

t.test('elicitation-url/stdio-serve/url-client-gets-url-mode-both-eras', async t => {
  const log = fixtureLogPath()
  const { serve, request } = await serveWith(t, log, URL_CAPS)
  let id = 1
  for (const upstream of ['legacy', 'modern'] as const) {
    // A legacy client: the question on stdout, answered on stdin, then the completion and the result.
    const callId = id++
    const after = serve.messages.length
    serve.send({ jsonrpc: '2.0', id: callId, method: 'tools/call', params: STDIO_TOOLS[upstream] })
    const question = await serve.nextMessage(isElicitation, { after })
    t.same(legacySchemaErrors(REVISION, 'ElicitRequest', question), [], `${upstream} upstream: a valid 2025-11-25 ElicitRequest on stdout`)
    t.match(question.params, { mode: 'url', url: upstream === 'legacy' ? `${TARGET}?n=1` : TARGET, message: 'Confirm in your browser' })
    const elicitationId = question.params.elicitationId as string
    t.match(elicitationId, upstream === 'legacy' ? /^el-1$/ : /^mcpx-elicitation-[A-Za-z0-9_-]{16}$/, `${upstream} upstream: the upstream's elicitationId, or one mcpx minted`)
    serve.send({ jsonrpc: '2.0', id: question.id, result: { action: 'accept' } })
    const done = await serve.nextMessage(isResponse(callId), { after })
    t.same(JSON.parse(textOf(done.result)), { action: 'accept' }, `${upstream} upstream: the client's accept reached it`)
    const complete = serve.messages.findIndex((m, i) => i >= after && (m as Message)?.method === 'notifications/elicitation/complete')
    t.not(complete, -1, `${upstream} upstream: notifications/elicitation/complete reached the client`)
    t.same(serve.messages[complete], { jsonrpc: '2.0', method: 'notifications/elicitation/complete', params: { elicitationId } })
    t.ok(complete < serve.messages.indexOf(done), 'before the call\'s result')

    // The same client's 2026-07-28 request (modern `_meta` on the same connection): InputRequiredResult, then the retry.
    const tool = STDIO_TOOLS[upstream]
    const first = await request('tools/call', { ...tool, _meta: modernMeta(URL_CAPS) })
    t.equal(modernSchemaErrors('InputRequiredResult', first.result), '', `${upstream} upstream: a valid 2026-07-28 InputRequiredResult over stdio`)
    const [[key, input]] = Object.entries(first.result.inputRequests as Record<string, Message>)
    t.match(input, { method: 'elicitation/create', params: { mode: 'url', message: 'Confirm in your browser' } })
    t.notOk('elicitationId' in input.params, 'without the 2025-only elicitationId')
    const retry = await request('tools/call', { ...tool, inputResponses: { [key]: { action: 'accept' } }, requestState: first.result.requestState, _meta: modernMeta(URL_CAPS) })
    t.same(JSON.parse(textOf(retry.result)), { action: 'accept' }, `${upstream} upstream: the retry's accept reached it`)
  }
  t.equal(serve.messages.filter(m => m === undefined).length, 0, 'every stdout line is JSON')
})

t.test('elicitation-url/stdio-serve/form-only-client-never-gets-url-mode', async t => {
  const log = fixtureLogPath()
  const { serve, request } = await serveWith(t, log, FORM_ONLY)
  for (const upstream of ['legacy', 'modern'] as const) {
    const done = await request('tools/call', STDIO_TOOLS[upstream])
    if (upstream === 'legacy') {
      t.same(JSON.parse(textOf(done.result)).error?.code, -32602, 'the legacy upstream got -32602 for its question')
    } else {
      t.same({ code: done.error?.code, data: done.error?.data }, { code: -32021, data: { requiredCapabilities: { elicitation: { url: {} } } } }, 'the 2026-07-28 upstream asked nothing')
    }
    const modern = await request('tools/call', { ...STDIO_TOOLS[upstream], _meta: modernMeta(FORM_ONLY) })
    t.same({ code: modern.error?.code, data: modern.error?.data }, { code: -32021, data: { requiredCapabilities: { elicitation: { url: {} } } } }, `${upstream} upstream, 2026-07-28 request: -32021 naming elicitation.url`)
  }
  t.notOk(serve.messages.some(m => isElicitation(m as Message)), 'no elicitation/create ever reached stdout')
  t.notOk(serve.messages.some(m => (m as Message)?.method === 'notifications/elicitation/complete'), 'nor a completion')
  t.match(upstreamAnswers(log), [{ elicitationId: 'el-1', error: { code: -32602, message: /elicitation\.url/ } }, { elicitationId: 'el-2', error: { code: -32602 } }])
})
