/**
 * The 2025-11-25 experimental tasks passed through to legacy clients (docs/wire.md › Tasks, in both
 * eras; basic/utilities/tasks.mdx; DIGEST §5) at the HTTP tier: the whole app through
 * `fastify.inject`, test/fixtures/tasks-upstream with `--legacy` (it refuses server/discover, so mcpx
 * initializes it at 2025-11-25, and it declares `capabilities.tasks`), shared by two callers with
 * their own bearer tokens (principals `ci` and `support`). The capability is offered to a 2025-11-25
 * session only; a tampered task id or another principal's is -32602; tasks/list shows a caller its
 * own tasks only. test/e2e/tasks-legacy.test.ts checks the same ids on a real socket, with the
 * routing, the status notifications, the official v1 client and `mcpx serve` besides.
 */
import t from 'tap'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { build, legacyHeaders, modernHeaders, modernMeta, sseMessages } from '../helpers/app.js'
import { TOKENS, tokensAuth } from '../helpers/policy.js'

const TASKS = fileURLToPath(new URL('../fixtures/tasks-upstream.js', import.meta.url))

type Message = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
interface Session { id: string, revision: string, token: string }

let nextId = 1

/** One legacy POST; the JSON-RPC reply (JSON or the SSE message answering it). */
async function rpc (app: FastifyInstance, method: string, params: Record<string, unknown>, headers: Record<string, string>): Promise<Message> {
  const id = nextId++
  const res = await app.inject({ method: 'POST', url: '/mcp', headers: legacyHeaders(headers), payload: JSON.stringify({ jsonrpc: '2.0', id, method, params }) })
  if (String(res.headers['content-type'] ?? '').includes('text/event-stream')) {
    const reply = (sseMessages(res.body) as Message[]).find(m => m.id === id)
    if (reply === undefined) throw new Error(`no reply to ${method} in ${res.body}`)
    return reply
  }
  return res.json() as Message
}

async function initialize (app: FastifyInstance, revision: string, token: string): Promise<{ session: Session, result: Message }> {
  const headers = { authorization: `Bearer ${TOKENS[token]}` }
  const res = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: legacyHeaders({ ...headers, accept: 'application/json' }),
    payload: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: revision, capabilities: {}, clientInfo: { name: 'tasks-legacy-test', version: '0.0.0' } } })
  })
  const id = res.headers['mcp-session-id']
  if (typeof id !== 'string') throw new Error(`no session: ${res.statusCode} ${res.body}`)
  await app.inject({ method: 'POST', url: '/mcp', headers: legacyHeaders({ ...headers, 'mcp-session-id': id, 'mcp-protocol-version': revision }), payload: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })
  return { session: { id, revision, token }, result: (res.json() as Message).result }
}

function as (app: FastifyInstance, session: Session): (method: string, params?: Record<string, unknown>) => Promise<Message> {
  const headers = { authorization: `Bearer ${TOKENS[session.token]}`, 'mcp-session-id': session.id, 'mcp-protocol-version': session.revision }
  return async (method, params = {}) => await rpc(app, method, params, headers)
}

t.test('tasks/legacy-http/shared-upstream-two-principals-inject', async t => {
  const app = await build(t, { upstreams: { jobs: { command: process.execPath, args: [TASKS, '--legacy'] } }, auth: tokensAuth() })
  const a = await initialize(app, '2025-11-25', 'ci')
  const b = await initialize(app, '2025-11-25', 'support')
  const callA = as(app, a.session)
  const callB = as(app, b.session)

  t.test('tasks/legacy-capabilities/declared-at-2025-11-25-only', async t => {
    t.same(a.result.capabilities.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } }, 'merged from the 2025-11-25 upstream')
    const older = await initialize(app, '2025-06-18', 'ci')
    t.notOk('tasks' in older.result.capabilities, 'not offered to a 2025-06-18 client')
    const callOld = as(app, older.session)
    t.equal((await callOld('tasks/get', { taskId: 'x' })).error?.code, -32601, 'tasks/* stay -32601 for an older revision')
    const plain = await callOld('tools/call', { name: 'slow_compute', arguments: { seconds: 0, label: 'old' }, task: {} })
    t.equal(plain.result?.content?.[0]?.text, 'old: done after 0s', 'an older revision\'s task param is not forwarded: a plain result')
    const discover = await app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...modernHeaders('server/discover', undefined, { accept: 'application/json' }), authorization: `Bearer ${TOKENS.ci}` },
      payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: modernMeta() } })
    })
    const caps = (discover.json() as Message).result.capabilities
    t.notOk('tasks' in caps, 'server/discover never carries the 2025-11-25 capability')
    t.notOk('extensions' in caps, 'nor the extension: no upstream declares it')
  })

  t.test('tasks/legacy-ids/tampered-or-foreign-is-32602', async t => {
    const mine = (await callA('tools/call', { name: 'slow_compute', arguments: { seconds: 0 }, task: {} })).result.task.taskId as string
    t.match(mine, /^mcpx1\./, 'a namespaced id')
    const tampered = mine.slice(0, -1) + (mine.endsWith('A') ? 'B' : 'A')
    for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      t.equal((await callA(method, { taskId: tampered })).error?.code, -32602, `${method}: tampered`)
      t.equal((await callB(method, { taskId: mine })).error?.code, -32602, `${method}: another principal's`)
    }
    t.equal((await callA('tasks/get', { taskId: 'task-1' })).error?.code, -32602, 'an upstream\'s raw id')
    t.equal((await callA('tasks/get', { taskId: mine })).result?.taskId, mine, 'the owner still reads its task')
  })

  t.test('tasks/legacy-list/only-the-callers-tasks', async t => {
    const other = (await callB('tools/call', { name: 'slow_compute', arguments: { seconds: 0, label: 'b' }, task: {} })).result.task.taskId as string
    await callA('tools/call', { name: 'slow_compute', arguments: { seconds: 0, label: 'a' }, task: {} })
    const listA = await callA('tasks/list')
    const listB = await callB('tasks/list')
    const idsA = (listA.result.tasks as Message[]).map(task => task.taskId as string)
    const idsB = (listB.result.tasks as Message[]).map(task => task.taskId as string)
    t.ok(idsA.length >= 2, `A sees its own tasks (${idsA.length})`)
    t.ok(idsA.every(id => id.startsWith('mcpx1.')), 'namespaced ids')
    t.notOk(idsA.includes(other), 'not B\'s task')
    t.same(idsB, [other], 'B sees only its own')
    t.notOk('nextCursor' in listA.result, 'one page')
    t.equal((await callA('tasks/list', { cursor: 'x' })).error?.code, -32602, 'mcpx issues no cursor')
  })
})
