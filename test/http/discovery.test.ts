/**
 * Tool search under a per-caller policy (docs/discovery.md › Policy first), over real HTTP on one app
 * with the echo fixture: `/mcp` in search mode (top-level `discovery`), static tokens, a rule that
 * hides `slow` from `ci`, a rate limit on `bump`, an audit trail, and a reload that switches the mode;
 * and one app in front of the fixture over Streamable HTTP, for the headers of the inner call upstream,
 * and one in front of test/fixtures/tasks-upstream, for a task created through call_tool.
 */
import t from 'tap'
import { mkdtempSync, readFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { listen } from '../helpers/app.js'
import { legacyRpc, modernRpc, neutral, request, tokensAuth, type RawReply, type Target } from '../helpers/policy.js'
import { pollUntil } from '../helpers/legacy.js'
import { loadConfig } from '../../lib/config/load.js'
import { startHttpFixture } from '../helpers/fixture.js'
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
