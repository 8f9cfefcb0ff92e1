/**
 * Curated endpoints (docs/policy.md › Curated endpoints) over real HTTP in both eras, on a real daemon,
 * and through a spawned `mcpx serve --server`: lists, rename (Mcp-Name, Mcp-Param-*), override,
 * defaults, sessions bound to their endpoint, unknown endpoints, list_changed per endpoint view,
 * and the policy's `servers` rules. Tests are named servers/<area>/<requirement> (policy/… for the rules).
 */
import t, { type Test } from 'tap'
import { listen, fixtureUpstreams } from '../helpers/app.js'
import { startDaemon } from '../helpers/daemon.js'
import { spawnServe } from '../helpers/spawn.js'
import { fixtureCommand } from '../helpers/fixture.js'
import { pollUntil } from '../helpers/legacy.js'
import {
  legacyRpc, legacySession, modernRpc, namesOf, neutral, openGetStream, request, tokensAuth, untilReady, type Target
} from '../helpers/policy.js'

const SERVERS = {
  support: {
    tools: { allow: ['echo', 'head*', 'bump', 'slow', 'extra*'], deny: ['slow'] },
    prompts: { allow: ['*'] },
    resources: { allow: ['fixture://static'] },
    rename: { echo: 'say', headers: 'hdrs' },
    override: { bump: { description: 'Bumps the counter.', title: 'Bump', annotations: { readOnlyHint: false } } },
    defaults: { echo: { text: 'default text' }, headers: { region: 'eu' } }
  },
  billing: { tools: { allow: ['bump', 'extra*'] }, resources: { allow: ['*'], deny: ['fixture://items/{id}'] } },
  items: { resources: { allow: ['fixture://items/{id}'] } }
}

const ALL_TOOLS = ['add_tool', 'bump', 'crash', 'echo', 'elicit', 'fail', 'headers', 'log', 'roots', 'sample', 'slow']

async function serve (t: Test, extra: Record<string, unknown> = {}): Promise<string> {
  const { base, app } = await listen(t, { upstreams: fixtureUpstreams(), servers: SERVERS, ...extra })
  await app.upstreams.ready()
  return base
}

/**
 * One app with the default config, shared by the cases that only read through it (lists, calls,
 * headers, unknown endpoints: none adds a tool or changes the fixture's state), which run one at a
 * time. Started on first use, closed when the file ends: three app and fixture starts fewer.
 */
let shared: Promise<string> | undefined
async function sharedServe (): Promise<string> {
  shared ??= serve(t)
  return await shared
}

type Reply = Awaited<ReturnType<typeof modernRpc>>
async function rpc (era: 'modern' | 'legacy', target: Target, id: number, method: string, params: Record<string, unknown> = {}): Promise<Reply> {
  return era === 'modern' ? await modernRpc(target, id, method, params) : await legacyRpc(target, request(id, method, params))
}

t.test('servers/lists/curated-in-both-eras', async t => {
  const base = await sharedServe()
  const support = { base, path: '/mcp/support' }
  for (const era of ['modern', 'legacy'] as const) {
    const tools = await rpc(era, support, 1, 'tools/list')
    t.same(namesOf(tools, 'tools'), ['bump', 'hdrs', 'say'], `${era}: allowed, minus denied, renamed`)
    const byName = new Map<string, Record<string, any>>(tools.json.result.tools.map((tool: Record<string, any>) => [tool.name, tool])) // eslint-disable-line @typescript-eslint/no-explicit-any
    t.same(byName.get('say')?.inputSchema.required ?? [], [], `${era}: a defaulted argument leaves required`)
    t.equal(byName.get('say')?.description, 'Echoes text', `${era}: the renamed tool keeps the upstream's description`)
    t.equal(byName.get('bump')?.description, 'Bumps the counter.', `${era}: override replaces description`)
    t.equal(byName.get('bump')?.title, 'Bump', `${era}: ...title`)
    t.same(byName.get('bump')?.annotations, { readOnlyHint: false }, `${era}: ...and annotations`)
    t.same(namesOf(await rpc(era, support, 2, 'prompts/list'), 'prompts'), ['greet'])
    t.same(namesOf(await rpc(era, support, 3, 'resources/list'), 'resources'), ['fixture://static'])
    t.same(namesOf(await rpc(era, support, 4, 'resources/templates/list'), 'resourceTemplates'), [], `${era}: a template no glob allows is not listed`)
    t.same(namesOf(await rpc(era, { base, path: '/mcp/billing' }, 5, 'prompts/list'), 'prompts'), [], `${era}: an absent allow exposes nothing of the kind`)
    t.same(namesOf(await rpc(era, { base }, 6, 'tools/list'), 'tools'), ALL_TOOLS, `${era}: /mcp keeps serving the whole catalogue`)
  }
})

t.test('servers/calls/rename-defaults-and-hidden-names', async t => {
  const base = await sharedServe()
  const support = { base, path: '/mcp/support' }
  for (const era of ['modern', 'legacy'] as const) {
    t.equal((await rpc(era, support, 1, 'tools/call', { name: 'say', arguments: { text: 'hi' } })).json.result.content[0].text, 'hi', `${era}: the new name is routed to the original`)
    t.equal((await rpc(era, support, 2, 'tools/call', { name: 'say', arguments: {} })).json.result.content[0].text, 'default text', `${era}: defaults fill in what the client left out`)
    const original = await rpc(era, support, 3, 'tools/call', { name: 'echo', arguments: { text: 'x' } })
    const absent = await rpc(era, support, 4, 'tools/call', { name: 'no_such_tool', arguments: { text: 'x' } })
    t.equal(neutral(original.text, 3, 'echo'), neutral(absent.text, 4, 'no_such_tool'), `${era}: the original name of a renamed tool is unknown here`)
    t.equal(original.status, absent.status)
    const denied = await rpc(era, support, 5, 'tools/call', { name: 'slow', arguments: { ms: 1 } })
    t.same(denied.json.error, { code: -32602, message: 'Unknown tool: slow' }, `${era}: a denied tool is unknown here`)
    const read = await rpc(era, support, 6, 'resources/read', { uri: 'fixture://counter' })
    t.equal(read.json.error.code, era === 'modern' ? -32602 : -32002, `${era}: a resource no glob allows is not found`)
  }
  t.equal((await modernRpc({ base }, 7, 'tools/call', { name: 'echo', arguments: { text: 'whole' } })).json.result.content[0].text, 'whole', '/mcp calls the catalogue name')
})

t.test('servers/templates/a-template-decides-its-expansions', async t => {
  // billing exposes every resource but the template fixture://items/{id}; items exposes that template alone.
  const base = await sharedServe()
  const [hiddenUri, absentUri] = ['fixture://items/carol-1', 'fixture://nothing/carol'] // the same length: the same Content-Length
  const headers = (reply: Reply): Record<string, string> => Object.fromEntries([...reply.headers].filter(([name]) => name !== 'date'))
  for (const era of ['modern', 'legacy'] as const) {
    const billing = { base, path: '/mcp/billing' }
    const hidden = await rpc(era, billing, 1, 'resources/read', { uri: hiddenUri })
    const absent = await rpc(era, billing, 2, 'resources/read', { uri: absentUri })
    t.equal(hidden.status, absent.status, `${era}: a hidden template's expansion: the absent URI's status`)
    t.same(headers(hidden), headers(absent), `${era}: ...its headers (Date aside)`)
    t.equal(neutral(hidden.text, 1, hiddenUri), neutral(absent.text, 2, absentUri), `${era}: ...and its bytes apart from id and URI (${hidden.text})`)
    t.same(namesOf(await rpc(era, billing, 3, 'resources/list'), 'resources'), ['fixture://counter', 'fixture://static'], `${era}: billing lists the other resources`)
    const items = { base, path: '/mcp/items' }
    t.same(namesOf(await rpc(era, items, 4, 'resources/templates/list'), 'resourceTemplates'), ['fixture://items/{id}'], `${era}: items lists the template`)
    t.equal((await rpc(era, items, 5, 'resources/read', { uri: 'fixture://items/7' })).json.result?.contents[0].text, 'item 7', `${era}: a template allowed alone: its expansions are read`)
    t.same(namesOf(await rpc(era, items, 6, 'resources/list'), 'resources'), [], `${era}: and nothing else`)
    t.equal((await rpc(era, items, 7, 'resources/read', { uri: 'fixture://static' })).json.error?.code, era === 'modern' ? -32602 : -32002, `${era}: a resource no glob or template allows is not found`)
  }
})

t.test('servers/headers/mcp-name-and-mcp-param-against-the-exposed-name', async t => {
  const base = await sharedServe()
  const support = { base, path: '/mcp/support' }
  const ok = await modernRpc(support, 1, 'tools/call', { name: 'hdrs', arguments: { region: 'us' } }, { 'mcp-param-region': 'us' })
  t.equal(ok.status, 200, 'Mcp-Name carries the exposed name; Mcp-Param-Region matches')
  t.same(JSON.parse(ok.json.result.content[0].text), { region: 'us' }, 'the call reached headers with the client\'s region')
  const defaulted = await modernRpc(support, 2, 'tools/call', { name: 'hdrs', arguments: {} })
  t.same(JSON.parse(defaulted.json.result.content[0].text), { region: 'eu' }, 'no region, no header: the default region goes upstream')
  const missing = await modernRpc(support, 3, 'tools/call', { name: 'hdrs', arguments: { region: 'us' } })
  t.equal(missing.status, 400)
  t.equal(missing.json.error.code, -32020, 'the exposed tool\'s x-mcp-header is checked (missing Mcp-Param-Region)')
  const wrongName = await modernRpc(support, 4, 'tools/call', { name: 'hdrs', arguments: {} }, { 'mcp-name': 'headers' })
  t.equal(wrongName.status, 400)
  t.equal(wrongName.json.error.code, -32020, 'Mcp-Name with the catalogue name does not match the exposed name in the body')
  const original = await modernRpc(support, 5, 'tools/call', { name: 'headers', arguments: { region: 'us' } })
  t.same(original.json.error, { code: -32602, message: 'Unknown tool: headers' }, 'the catalogue name is unknown here, so its Mcp-Param-* are not checked')
})

t.test('servers/sessions/bound-to-their-endpoint', async t => {
  const base = await serve(t, { auth: tokensAuth() })
  const support = { base, path: '/mcp/support', token: 'ci' }
  const session = await legacySession(support)
  t.equal((await legacyRpc(support, request(1, 'tools/list'), session)).status, 200, 'the session works on its endpoint')
  for (const path of ['/mcp/billing', '/mcp']) {
    const elsewhere = await legacyRpc({ ...support, path }, request(2, 'tools/list'), session)
    t.equal(elsewhere.status, 404, `POST ${path}: 404`)
    t.equal(elsewhere.json.error.message, 'Session not found: it is unknown, expired or deleted; send initialize again without Mcp-Session-Id')
    const get = await fetch(`${base}${path}`, { headers: { accept: 'text/event-stream', authorization: 'Bearer ci-0123456789abcdef0123456789abcdef', 'mcp-session-id': session.id } })
    t.equal(get.status, 404, `GET ${path}: 404`)
    await get.text()
    const del = await fetch(`${base}${path}`, { method: 'DELETE', headers: { authorization: 'Bearer ci-0123456789abcdef0123456789abcdef', 'mcp-session-id': session.id } })
    t.equal(del.status, 404, `DELETE ${path}: 404`)
    await del.text()
  }
  const whole = await legacySession({ base, token: 'ci' })
  t.equal((await legacyRpc(support, request(3, 'tools/list'), whole)).status, 404, 'a session of /mcp is 404 on a curated endpoint')
  const del = await fetch(`${base}/mcp/support`, { method: 'DELETE', headers: { authorization: 'Bearer ci-0123456789abcdef0123456789abcdef', 'mcp-session-id': session.id } })
  t.equal(del.status, 204, 'DELETE on its own endpoint ends it')
})

t.test('servers/endpoints/unknown-is-404-with-a-json-rpc-body', async t => {
  const base = await sharedServe()
  for (const method of ['POST', 'GET', 'DELETE']) {
    const res = await fetch(`${base}/mcp/nope`, { method, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, ...(method === 'POST' ? { body: JSON.stringify(request(1, 'tools/list')) } : {}) })
    t.equal(res.status, 404, `${method} /mcp/nope`)
    t.match(res.headers.get('content-type'), /^application\/json/)
    t.same(await res.json(), { jsonrpc: '2.0', error: { code: -32600, message: 'Not Found: no MCP endpoint by this name' } }, `${method}: an id-less JSON-RPC error that does not echo the name`)
  }
})

t.test('servers/notifications/list-changed-only-when-the-endpoint-view-changes', async t => {
  const base = await serve(t)
  const billing = { base, path: '/mcp/billing' }
  const whole = { base }
  const billingStream = await openGetStream(billing, await legacySession(billing))
  const wholeStream = await openGetStream(whole, await legacySession(whole))
  t.teardown(() => { billingStream.close(); wholeStream.close() })
  const toolsChanged = (m: Record<string, unknown>): boolean => m.method === 'notifications/tools/list_changed'
  await modernRpc(whole, 1, 'tools/call', { name: 'add_tool', arguments: { name: 'other_tool' } })
  await pollUntil('/mcp told of other_tool', () => wholeStream.messages.some(toolsChanged), 20_000)
  await modernRpc(whole, 2, 'tools/call', { name: 'add_tool', arguments: { name: 'extra_tool' } })
  await pollUntil('billing told of extra_tool', () => billingStream.messages.some(toolsChanged), 20_000)
  await pollUntil('/mcp told of extra_tool', () => wholeStream.messages.filter(toolsChanged).length >= 2, 20_000)
  t.equal(billingStream.messages.filter(toolsChanged).length, 1, 'billing heard only of the change it can see (extra_tool), not of other_tool')
  t.same(namesOf(await modernRpc(billing, 3, 'tools/list'), 'tools'), ['bump', 'extra_tool'])
})

t.test('policy/servers/rules-scoped-to-an-endpoint', async t => {
  const policy = { rules: [{ principals: { tokens: ['ci'] }, servers: ['support'], allow: { tools: ['echo', 'bump'] } }, { principals: { tokens: ['admin'] }, allow: { tools: ['*'] } }] }
  const base = await serve(t, { auth: tokensAuth(), policy })
  t.same(namesOf(await modernRpc({ base, path: '/mcp/support', token: 'ci' }, 1, 'tools/list'), 'tools'), ['bump', 'say'], 'the rule applies on its server, on catalogue names (echo covers say)')
  t.same(namesOf(await modernRpc({ base, token: 'ci' }, 2, 'tools/list'), 'tools'), [], 'not on /mcp')
  t.same(namesOf(await modernRpc({ base, path: '/mcp/billing', token: 'ci' }, 3, 'tools/list'), 'tools'), [], 'nor on another server')
  t.same(namesOf(await modernRpc({ base, path: '/mcp/billing', token: 'admin' }, 4, 'tools/list'), 'tools'), ['bump'], 'a rule without servers applies everywhere; the endpoint still curates')
  const hidden = await modernRpc({ base, path: '/mcp/billing', token: 'ci' }, 5, 'tools/call', { name: 'bump', arguments: {} })
  t.same(hidden.json.error, { code: -32602, message: 'Unknown tool: bump' })
})

t.test('servers/daemon/curated-endpoint-on-a-real-daemon', async t => {
  const daemon = await startDaemon(t, { upstreams: fixtureUpstreams(), servers: SERVERS })
  await untilReady(daemon.base)
  const support = { base: daemon.base, path: '/mcp/support' }
  t.same(namesOf(await modernRpc(support, 1, 'tools/list'), 'tools'), ['bump', 'hdrs', 'say'], 'modern')
  t.same(namesOf(await legacyRpc(support, request(2, 'tools/list')), 'tools'), ['bump', 'hdrs', 'say'], 'legacy')
  t.equal((await modernRpc(support, 3, 'tools/call', { name: 'say', arguments: {} })).json.result.content[0].text, 'default text')
  const unknown = await modernRpc({ base: daemon.base, path: '/mcp/nope' }, 4, 'tools/list')
  t.equal(unknown.status, 404)
  t.equal(unknown.json.error.code, -32600)
})

t.test('servers/stdio/serve-server-flag', async t => {
  const { command, args } = fixtureCommand()
  const config = { upstreams: { fixture: { command, args } }, servers: SERVERS }
  const child = spawnServe(t, { config, args: ['--server', 'support'] })
  let seq = 100
  const listed = await pollUntil('the fixture listed', async () => {
    const reply = await child.request({ jsonrpc: '2.0', id: seq++, method: 'tools/list' })
    return reply.result.tools.length > 0 ? reply : undefined
  }, 20_000)
  t.same(listed.result.tools.map((tool: { name: string }) => tool.name).sort(), ['bump', 'hdrs', 'say'], 'the curated endpoint on stdio')
  const said = await child.request({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'say', arguments: {} } })
  t.equal(said.result.content[0].text, 'default text', 'rename and defaults on stdio')
  const original = await child.request({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: {} } })
  t.same(original.error, { code: -32602, message: 'Unknown tool: echo' })
  const modern = await child.request({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } })
  t.same(modern.result.tools.map((tool: { name: string }) => tool.name).sort(), ['bump', 'hdrs', 'say'], 'modern requests too')
  const unknown = spawnServe(t, { config, args: ['--server', 'nope'] })
  const exited = await unknown.exited
  t.equal(exited.code, 2, 'an unknown --server exits 2')
  t.match(unknown.stderr(), /no such curated server/)
  t.same(unknown.lines, [], 'and writes nothing on stdout')
})
