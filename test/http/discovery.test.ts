/**
 * Tool search under a per-caller policy (docs/discovery.md › Policy first), over real HTTP on one app
 * with the echo fixture: `/mcp` in search mode (top-level `discovery`), static tokens, a rule that
 * hides `slow` from `ci`, a rate limit on `bump`, an audit trail, and a reload that switches the mode;
 * and one app in front of the fixture over Streamable HTTP, for the headers of the inner call upstream,
 * and one in front of test/fixtures/tasks-upstream, for a task created through call_tool; and one with
 * the generated catalogue and curated endpoints, for call_tool answering as tools/call of the inner name.
 */
import t from 'tap'
import { mkdtempSync, readFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { listen } from '../helpers/app.js'
import { legacyRpc, modernRpc, neutral, request, tokensAuth, type RawReply, type Target } from '../helpers/policy.js'
import { pollUntil } from '../helpers/legacy.js'
import { loadConfig } from '../../lib/config/load.js'
import { fixtureCommand, startHttpFixture } from '../helpers/fixture.js'
import { modernHeaders, modernMeta } from '../helpers/app.js'
import { fileURLToPath } from 'node:url'

const AUDIT_FILE = join(mkdtempSync(join(tmpdir(), 'mcpx-discovery-http-')), 'audit.log')
const POLICY = {
  default: 'allow',
  rules: [
    { principals: { tokens: ['ci'] }, deny: { tools: ['slow'] } },
    { principals: { tokens: ['ci'] }, allow: { tools: ['bump'] }, rateLimit: { calls: 1, per: '1h' } }
  ]
}

type Era = 'modern' | 'legacy'
type Entry = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

async function rpc (era: Era, target: Target, id: number, method: string, params: Record<string, unknown> = {}): Promise<RawReply> {
  return era === 'modern' ? await modernRpc(target, id, method, params) : await legacyRpc(target, request(id, method, params))
}

async function names (era: Era, target: Target, id: number, query: string): Promise<string[]> {
  const reply = await rpc(era, target, id, 'tools/call', { name: 'search_tools', arguments: { query, limit: 50 } })
  return (reply.json.result.structuredContent.tools as Entry[]).map(entry => entry.name as string)
}

let shared: Promise<{ base: string, app: Awaited<ReturnType<typeof listen>>['app'] }> | undefined
async function serve (): Promise<{ base: string, app: Awaited<ReturnType<typeof listen>>['app'] }> {
  shared ??= listen(t, { auth: tokensAuth(), policy: POLICY, discovery: { mode: 'search' }, audit: { file: AUDIT_FILE, arguments: 'none' } } as never)
  return await shared
}

t.test('discovery/policy/hidden-tools-are-never-found', async t => {
  const { base } = await serve()
  for (const era of ['modern', 'legacy'] as const) {
    const ci = { base, token: 'ci' }
    const admin = { base, token: 'admin' }
    t.ok((await names(era, admin, 1, 'slow')).includes('slow'), `${era}: a caller the rule does not hide it from finds slow`)
    for (const query of ['slow', 'sleeps', 'ms', '']) t.notOk((await names(era, ci, 2, query)).includes('slow'), `${era}: "${query}": ci never finds slow`)
    const hidden = await rpc(era, ci, 3, 'tools/call', { name: 'call_tool', arguments: { name: 'slow', arguments: { ms: 1 } } })
    const unknown = await rpc(era, ci, 3, 'tools/call', { name: 'nope', arguments: { ms: 1 } })
    t.equal(hidden.status, unknown.status, `${era}: call_tool of a hidden tool: an unknown name's status`)
    t.equal(neutral(hidden.text, 3, 'slow'), neutral(unknown.text, 3, 'nope'), `${era}: ...and its bytes`)
  }
})

t.test('discovery/policy/rate-limits-count-the-inner-call', async t => {
  const { base } = await serve()
  const ci = { base, token: 'ci' }
  const first = await rpc('modern', ci, 1, 'tools/call', { name: 'call_tool', arguments: { name: 'bump' } })
  t.equal(first.status, 200, 'the first call of bump through call_tool is counted and served')
  const second = await rpc('modern', ci, 2, 'tools/call', { name: 'bump', arguments: {} })
  t.equal(second.status, 429, 'a direct call of bump is then past the limit: the call through call_tool counted')
  t.equal(second.json.error.code, -31_002)
  const third = await rpc('legacy', ci, 3, 'tools/call', { name: 'call_tool', arguments: { name: 'bump' } })
  t.equal(third.status, 429, 'and so is a call through call_tool')
  t.match(third.json.error, { code: -31_002, message: /too many calls of bump/ }, 'named by the inner tool')
  const lines = await pollUntil('the audit lines', () => {
    if (!existsSync(AUDIT_FILE)) return undefined
    const all = readFileSync(AUDIT_FILE, 'utf8').split('\n').filter(l => l !== '').map(l => JSON.parse(l) as Entry)
    const bumps = all.filter(l => l.name === 'bump')
    return bumps.length >= 3 ? bumps : undefined
  }, 20_000)
  t.same(lines.map(l => [l.outcome, l.via]), [['ok', 'call_tool'], ['rate_limited', undefined], ['rate_limited', 'call_tool']], 'audited under the inner name, with via where it came through call_tool')
})

t.test('discovery/config/reload-switches-the-mode', async t => {
  const { base, app } = await serve()
  const before = await rpc('modern', { base, token: 'admin' }, 1, 'tools/list')
  t.same(before.json.result.tools.map((tool: Entry) => tool.name), ['call_tool', 'search_tools'])
  const notApplied = app.mcpx.applyAccess(loadConfig({ auth: tokensAuth(), policy: POLICY }))
  t.same(notApplied, [], 'applied')
  const after = await rpc('modern', { base, token: 'admin' }, 2, 'tools/list')
  t.ok(after.json.result.tools.some((tool: Entry) => tool.name === 'echo'), 'list mode again: the tools themselves')
  t.equal((await rpc('modern', { base, token: 'admin' }, 3, 'tools/call', { name: 'search_tools', arguments: { query: 'x' } })).json.error?.code, -32_602, 'search_tools is an unknown tool in list mode')
  app.mcpx.applyAccess(loadConfig({ auth: tokensAuth(), policy: POLICY, discovery: { mode: 'search' } }))
})

t.test('discovery/headers/inner-call-headers-toward-the-upstream', async t => {
  const { url } = await startHttpFixture(t)
  const { base } = await listen(t, { upstreams: { fixture: { url } }, discovery: { mode: 'search' } } as never)
  const reply = await modernRpc({ base }, 1, 'tools/call', { name: 'call_tool', arguments: { name: 'headers', arguments: { region: 'eu-west' } } })
  t.equal(reply.status, 200, `served (${reply.text})`)
  const [args, headers] = (reply.json.result.content as Entry[]).map(item => JSON.parse(item.text as string) as Entry)
  t.same(args, { region: 'eu-west' }, 'the inner tool got its arguments')
  t.match(headers, { 'mcp-method': 'tools/call', 'mcp-name': 'headers', 'mcp-param-region': 'eu-west' }, 'upstream, Mcp-Name is the inner tool and Mcp-Param-* come from its schema')
})

t.test('discovery/call/call-tool-creates-a-task', async t => {
  const TASKS = fileURLToPath(new URL('../fixtures/tasks-upstream.js', import.meta.url))
  const caps = { extensions: { 'io.modelcontextprotocol/tasks': {} } }
  const { base } = await listen(t, { upstreams: { tasks: { command: process.execPath, args: [TASKS] } }, discovery: { mode: 'search' } } as never)
  let id = 1
  const send = async (method: string, params: Record<string, unknown>, name: string | undefined): Promise<Entry> => {
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: modernHeaders(method, name, { accept: 'application/json' }),
      body: JSON.stringify({ jsonrpc: '2.0', id: id++, method, params: { ...params, _meta: modernMeta(caps) } })
    })
    return await res.json() as Entry
  }
  // The upstream may still be connecting: wait (bounded) until mcpx advertises the extension, as test/e2e/tasks does.
  await pollUntil('the tasks extension is advertised', async () => (await send('server/discover', {}, undefined)).result?.capabilities?.extensions?.['io.modelcontextprotocol/tasks'] !== undefined, 20_000)
  const created = await send('tools/call', { name: 'call_tool', arguments: { name: 'slow_compute', arguments: { seconds: 1, label: 'via-call-tool' } } }, 'call_tool')
  t.equal(created.result?.resultType, 'task', `call_tool answers the inner tool's task (${JSON.stringify(created)})`)
  const taskId = created.result.taskId as string
  t.match(taskId, /^mcpx1\./, 'namespaced by mcpx as for a direct call')
  const done = await pollUntil('the task completes', async () => {
    const reply = await send('tasks/get', { taskId }, taskId)
    return reply.result?.status === 'completed' || reply.result?.status === 'failed' ? reply.result as Entry : undefined
  }, 20_000)
  t.equal(done.status, 'completed', 'the task completes')
})

// call_tool is tools/call of the inner exposed name (docs/discovery.md › What the client sees): one
// app with the generated catalogue (`gen`) and the echo fixture, curated endpoints in search and list
// mode, and `support` with a rename, an override, a default and a denied tool. The same cases as
// test/e2e/discovery.test.ts, which runs them through a daemon with the three reference servers besides.
const CATALOGUE_UPSTREAM = fileURLToPath(new URL('../fixtures/catalogue-upstream.js', import.meta.url))
let curated: Promise<string> | undefined
async function curatedBase (): Promise<string> {
  curated ??= (async () => (await listen(t, {
    upstreams: { gen: { command: process.execPath, args: [CATALOGUE_UPSTREAM] }, fixture: fixtureCommand() },
    servers: {
      catalogue: { tools: { allow: ['gen__*'] }, discovery: { mode: 'search', maxResults: 8 } },
      'catalogue-list': { tools: { allow: ['gen__*'] } },
      support: {
        tools: { allow: ['fixture__*'], deny: ['fixture__crash'] },
        rename: { fixture__echo: 'say' },
        override: { fixture__bump: { description: 'Adds one to the shared counter.' } },
        defaults: { fixture__echo: { text: 'default text' } },
        discovery: { mode: 'search' }
      }
    }
  } as never)).base)()
  return await curated
}

function textOf (result: unknown): string {
  const content = (result as { content?: Array<{ type: string, text?: string }> }).content ?? []
  return content.filter(c => c.type === 'text').map(c => c.text ?? '').join('')
}

t.test('discovery/call/call-tool-answers-as-tools-call', async t => {
  const base = await curatedBase()
  const catalogue = { base, path: '/mcp/catalogue' }
  const support = { base, path: '/mcp/support' }
  for (const era of ['modern', 'legacy'] as const) {
    const args = { id: 'inv-7' }
    const viaCallTool = await rpc(era, catalogue, 1, 'tools/call', { name: 'call_tool', arguments: { name: 'gen__acme_billing_get_invoice', arguments: args } })
    const direct = await rpc(era, { base, path: '/mcp/catalogue-list' }, 1, 'tools/call', { name: 'gen__acme_billing_get_invoice', arguments: args })
    t.equal(viaCallTool.text, direct.text, `${era}: the inner tool's answer, byte for byte`)
    t.same(JSON.parse(textOf(viaCallTool.json.result)), { tool: 'acme_billing_get_invoice', arguments: args })
    // Unknown and hidden names: what tools/call of an unknown name answers.
    const unknown = await rpc(era, catalogue, 2, 'tools/call', { name: 'gen__no_such_tool', arguments: {} })
    const unknownInner = await rpc(era, catalogue, 2, 'tools/call', { name: 'call_tool', arguments: { name: 'gen__no_such_tool', arguments: {} } })
    t.equal(unknownInner.status, unknown.status, `${era}: an unknown inner name: the status of tools/call of it`)
    t.equal(unknownInner.text, unknown.text, `${era}: ...and its bytes (${unknown.text})`)
    const hidden = await rpc(era, support, 3, 'tools/call', { name: 'call_tool', arguments: { name: 'fixture__crash' } })
    const absent = await rpc(era, support, 3, 'tools/call', { name: 'fixture__nothing' })
    t.equal(hidden.status, absent.status, `${era}: a hidden inner name: an unknown name's status`)
    t.equal(neutral(hidden.text, 3, 'fixture__crash'), neutral(absent.text, 3, 'fixture__nothing'), `${era}: ...and bytes`)
    const elsewhere = await rpc(era, catalogue, 4, 'tools/call', { name: 'call_tool', arguments: { name: 'fixture__echo', arguments: { text: 'x' } } })
    t.equal(elsewhere.json.error?.code, -32602, `${era}: a tool of another endpoint is unknown here`)
    // The endpoint's rename, defaults and override apply to the inner call as to a direct one.
    const renamed = await rpc(era, support, 5, 'tools/call', { name: 'call_tool', arguments: { name: 'say' } })
    t.equal(textOf(renamed.json.result), 'default text', `${era}: the exposed name, with the endpoint's default`)
    const original = await rpc(era, support, 6, 'tools/call', { name: 'call_tool', arguments: { name: 'fixture__echo', arguments: { text: 'x' } } })
    t.equal(original.json.error?.code, -32602, `${era}: the catalogue name of a renamed tool is unknown`)
    // Bad arguments to a meta-tool: a tool error, as a tool answers invalid arguments.
    const badLimit = await rpc(era, support, 9, 'tools/call', { name: 'search_tools', arguments: { query: 'x', limit: 0 } })
    t.match(badLimit.json.result, { content: [{ type: 'text', text: 'Input validation error: Invalid arguments for tool search_tools: limit must be an integer from 1 to 50' }], isError: true }, `${era}: limit 0`)
    const noName = await rpc(era, support, 11, 'tools/call', { name: 'call_tool', arguments: { arguments: {} } })
    t.match(noName.json.result, { content: [{ type: 'text', text: 'Input validation error: Invalid arguments for tool call_tool: name must be a string' }], isError: true }, `${era}: call_tool without a name`)
    const badArgs = await rpc(era, support, 12, 'tools/call', { name: 'call_tool', arguments: { name: 'say', arguments: [1] } })
    t.equal(badArgs.json.result.isError, true, `${era}: call_tool with non-object arguments`)
    t.equal(textOf((await rpc(era, support, 13, 'tools/call', { name: 'say', arguments: { text: 'direct' } })).json.result), 'direct', `${era}: a direct tools/call`)
  }
})

t.test('discovery/headers/call-tool-needs-no-inner-mcp-param', async t => {
  const support = { base: await curatedBase(), path: '/mcp/support' }
  // fixture__headers declares x-mcp-header region: a direct modern call with a region must mirror it.
  const direct = await modernRpc(support, 1, 'tools/call', { name: 'fixture__headers', arguments: { region: 'us' } })
  t.equal(direct.status, 400, 'a direct call without Mcp-Param-Region is refused')
  const inner = await modernRpc(support, 2, 'tools/call', { name: 'call_tool', arguments: { name: 'fixture__headers', arguments: { region: 'us' } } })
  t.equal(inner.status, 200, 'Mcp-Name: call_tool, no Mcp-Param-* for the inner tool: accepted')
  t.match(JSON.parse(textOf(inner.json.result)), { region: 'us' }, 'the inner tool got its arguments')
})
