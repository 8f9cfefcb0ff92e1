/**
 * The Tasks extension (docs/wire.md › Tasks; SEP-2663, `io.modelcontextprotocol/tasks`) through mcpx's
 * HTTP face (`fastify.inject`), with real upstream processes: two copies of
 * test/fixtures/tasks-upstream (which mint the same task ids, `task-1`, …) and, in a second app,
 * the echo fixture, which does not declare the extension; and, in a third, the 2025-11-25 tasks of a
 * legacy upstream as legacy clients see them. Tests are named tasks/<area>/<requirement>.
 */
import t from 'tap'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { build, legacyHeaders, modernHeaders, modernMeta, sseMessages } from '../helpers/app.js'
import { TOKENS, tokensAuth } from '../helpers/policy.js'

const TASKS = fileURLToPath(new URL('../fixtures/tasks-upstream.js', import.meta.url))
const EXTENSION = 'io.modelcontextprotocol/tasks'
const WITH_TASKS = { extensions: { [EXTENSION]: {} }, elicitation: {} }

let nextId = 1

/** A 2026-07-28 POST; `name` is what Mcp-Name carries (default: the body's name or taskId). */
async function rpc (app: FastifyInstance, method: string, params: Record<string, unknown>, capabilities: Record<string, unknown> = WITH_TASKS, name?: string | null, token?: string): Promise<{ status: number, body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const mirrored = name === null ? undefined : name ?? (typeof params.name === 'string' ? params.name : typeof params.taskId === 'string' ? params.taskId : undefined)
  const res = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: modernHeaders(method, mirrored, { accept: 'application/json', ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}) }),
    payload: { jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: modernMeta(capabilities) } }
  })
  return { status: res.statusCode, body: res.json() }
}

/** Polls tasks/get until the task is terminal (bounded, 10 s). */
async function settle (app: FastifyInstance, taskId: string): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const deadline = Date.now() + 10_000
  for (;;) {
    const reply = await rpc(app, 'tasks/get', { taskId })
    const status = reply.body.result?.status
    if (status === 'completed' || status === 'failed' || status === 'cancelled' || Date.now() > deadline) return reply.body.result
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}

async function untilStatus (app: FastifyInstance, taskId: string, status: string): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const deadline = Date.now() + 10_000
  for (;;) {
    const reply = await rpc(app, 'tasks/get', { taskId })
    if (reply.body.result?.status === status || Date.now() > deadline) return reply.body.result
    await new Promise(resolve => setTimeout(resolve, 50))
  }
}

const tasksUpstream = (): Record<string, unknown> => ({ command: process.execPath, args: [TASKS] })

t.test('tasks/passthrough/two-declaring-upstreams', async t => {
  const app = await build(t, { upstreams: { a: tasksUpstream(), b: tasksUpstream() } })

  t.test('tasks/capabilities/advertised-when-an-upstream-declares', async t => {
    const reply = await rpc(app, 'server/discover', {})
    t.same(reply.body.result.capabilities.extensions, { [EXTENSION]: {} })
    t.notOk('tasks' in reply.body.result.capabilities, 'no v1-style capabilities.tasks slot')
  })

  t.test('tasks/routing/namespaced-ids-do-not-collide', async t => {
    const a = await rpc(app, 'tools/call', { name: 'a__slow_compute', arguments: { seconds: 0, label: 'from-a' } })
    const b = await rpc(app, 'tools/call', { name: 'b__slow_compute', arguments: { seconds: 0, label: 'from-b' } })
    t.equal(a.body.result.resultType, 'task')
    t.equal(b.body.result.resultType, 'task')
    t.match(a.body.result.taskId, /^mcpx1\./)
    t.not(a.body.result.taskId, b.body.result.taskId, 'each upstream minted task-1; the client ids differ')
    t.notOk('task' in a.body.result, 'flat CreateTaskResult')
    const doneA = await settle(app, a.body.result.taskId)
    const doneB = await settle(app, b.body.result.taskId)
    t.equal(doneA.taskId, a.body.result.taskId, 'tasks/get answers with the client id')
    t.equal(doneA.status, 'completed')
    t.equal(doneA.result.content[0].text, 'from-a: done after 0s')
    t.equal(doneB.result.content[0].text, 'from-b: done after 0s')
  })

  t.test('tasks/routing/update-resumes-and-cancel-settles', async t => {
    const created = await rpc(app, 'tools/call', { name: 'b__confirm_delete', arguments: { filename: 'x.txt' } })
    const taskId = created.body.result.taskId as string
    const parked = await untilStatus(app, taskId, 'input_required')
    const keys = Object.keys(parked.inputRequests ?? {})
    t.equal(keys.length, 1)
    t.equal(parked.inputRequests[keys[0] as string].method, 'elicitation/create')
    const ack = await rpc(app, 'tasks/update', { taskId, inputResponses: { [keys[0] as string]: { action: 'accept', content: { confirm: true } } } })
    t.same(ack.body.result, { resultType: 'complete', _meta: ack.body.result._meta })
    t.equal((await settle(app, taskId)).result.content[0].text, 'Deleted x.txt')

    const slow = await rpc(app, 'tools/call', { name: 'a__slow_compute', arguments: { seconds: 60 } })
    const cancel = await rpc(app, 'tasks/cancel', { taskId: slow.body.result.taskId })
    t.equal(cancel.body.result.resultType, 'complete')
    t.notOk('taskId' in cancel.body.result)
    t.equal((await settle(app, slow.body.result.taskId)).status, 'cancelled')
  })

  t.test('tasks/ids/unknown-or-foreign-is-32602', async t => {
    const created = await rpc(app, 'tools/call', { name: 'a__slow_compute', arguments: { seconds: 0 } })
    const good = created.body.result.taskId as string
    const tampered = good.slice(0, -1) + (good.endsWith('A') ? 'B' : 'A')
    const [, body] = good.split('.')
    const forged = `mcpx1.${Buffer.from(JSON.stringify(['b', 'task-1'])).toString('base64url')}.${good.split('.')[2] as string}`
    for (const [label, taskId] of [['an upstream\'s raw id', 'task-1'], ['a tampered tag', tampered], ['a forged body', forged], ['no tag', `mcpx1.${body as string}`]] as const) {
      for (const method of ['tasks/get', 'tasks/cancel']) {
        const reply = await rpc(app, method, { taskId })
        t.equal(reply.status, 400, `${method} ${label}: 400`)
        t.equal(reply.body.error?.code, -32602, `${method} ${label}: -32602`)
      }
    }
  })

  t.test('tasks/gating/undeclared-client-is-32021', async t => {
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const reply = await rpc(app, method, { taskId: 'gate-test', inputResponses: {} }, {})
      t.equal(reply.status, 400)
      t.equal(reply.body.error.code, -32021, method)
      t.same(reply.body.error.data, { requiredCapabilities: { extensions: { [EXTENSION]: {} } } })
    }
    // Without the extension an optional-task tool runs synchronously upstream (the client's capabilities are passed on).
    const sync = await rpc(app, 'tools/call', { name: 'a__slow_compute', arguments: { seconds: 0, label: 'sync' } }, {})
    t.equal(sync.body.result.resultType, 'complete')
    t.notOk('taskId' in sync.body.result)
    const required = await rpc(app, 'tools/call', { name: 'a__failing_job', arguments: {} }, {})
    t.equal(required.body.error.code, -32021, "a required-task tool: the upstream's -32021 passes through")
  })

  t.test('tasks/headers/mcp-name-mirrors-task-id', async t => {
    const created = await rpc(app, 'tools/call', { name: 'a__slow_compute', arguments: { seconds: 0 } })
    const taskId = created.body.result.taskId as string
    const missing = await rpc(app, 'tasks/get', { taskId }, WITH_TASKS, null)
    t.equal(missing.status, 400)
    t.equal(missing.body.error.code, -32020)
    const wrong = await rpc(app, 'tasks/get', { taskId }, WITH_TASKS, 'another-task')
    t.equal(wrong.body.error.code, -32020)
  })

  t.test('tasks/removed/result-and-list-are-32601', async t => {
    for (const method of ['tasks/result', 'tasks/list']) {
      const reply = await rpc(app, method, {})
      t.equal(reply.status, 404)
      t.equal(reply.body.error.code, -32601, method)
    }
  })

  t.test('tasks/legacy/no-task-surface-in-2025', async t => {
    // The 2025-11-25 experimental tasks (capabilities.tasks, task-augmented requests) are not offered:
    // a legacy client sees no tasks capability, and tasks/* is -32601.
    const init = await app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      payload: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } } }
    })
    const result = init.json().result ?? JSON.parse(/data: (.*)/.exec(init.body)?.[1] ?? '{}').result
    t.notOk('tasks' in result.capabilities)
    t.notOk('extensions' in result.capabilities, 'the 2026 extension is not advertised to a legacy client')
  })
})

t.test('tasks/non-declaring-upstream/no-extension-and-32601', async t => {
  const app = await build(t)
  const discover = await rpc(app, 'server/discover', {})
  t.notOk('extensions' in discover.body.result.capabilities)
  const reply = await rpc(app, 'tasks/get', { taskId: 'task-1' })
  t.equal(reply.status, 404)
  t.equal(reply.body.error.code, -32601)
})

t.test('tasks/ids/another-callers-task-is-32602', async t => {
  const app = await build(t, { upstreams: { tasks: tasksUpstream() }, auth: tokensAuth() })
  const created = await rpc(app, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } }, WITH_TASKS, undefined, TOKENS.ci)
  const taskId = created.body.result.taskId as string
  t.equal((await rpc(app, 'tasks/get', { taskId }, WITH_TASKS, undefined, TOKENS.ci)).body.result.taskId, taskId, 'its creator reads it')
  for (const method of ['tasks/get', 'tasks/cancel']) {
    const other = await rpc(app, method, { taskId }, WITH_TASKS, undefined, TOKENS.support)
    t.equal(other.status, 400)
    t.equal(other.body.error.code, -32602, `${method}: another principal's task id is unknown to them`)
  }
})

// The 2025-11-25 experimental tasks passed through to legacy clients (docs/wire.md › Tasks, in both
// eras; basic/utilities/tasks.mdx; DIGEST §5): the tasks fixture with `--legacy` (it refuses
// server/discover, so mcpx initializes it at 2025-11-25, and it declares `capabilities.tasks`),
// shared by two callers with their own bearer tokens (principals `ci` and `support`). The capability
// is offered to a 2025-11-25 session only; a tampered task id or another principal's is -32602;
// tasks/list shows a caller its own tasks only. test/e2e/tasks-legacy.test.ts checks the same ids on
// a real socket, with the routing, the status notifications, the official v1 client and `mcpx serve`.
type Message = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
interface Session { id: string, revision: string, token: string }

/** One legacy POST; the JSON-RPC reply (JSON or the SSE message answering it). */
async function legacyRpc (app: FastifyInstance, method: string, params: Record<string, unknown>, headers: Record<string, string>): Promise<Message> {
  const id = nextId++
  const res = await app.inject({ method: 'POST', url: '/mcp', headers: legacyHeaders(headers), payload: JSON.stringify({ jsonrpc: '2.0', id, method, params }) })
  if (String(res.headers['content-type'] ?? '').includes('text/event-stream')) {
    const reply = (sseMessages(res.body) as Message[]).find(m => m.id === id)
    if (reply === undefined) throw new Error(`no reply to ${method} in ${res.body}`)
    return reply
  }
  return res.json() as Message
}

async function legacyInitialize (app: FastifyInstance, revision: string, token: string): Promise<{ session: Session, result: Message }> {
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

function caller (app: FastifyInstance, session: Session): (method: string, params?: Record<string, unknown>) => Promise<Message> {
  const headers = { authorization: `Bearer ${TOKENS[session.token]}`, 'mcp-session-id': session.id, 'mcp-protocol-version': session.revision }
  return async (method, params = {}) => await legacyRpc(app, method, params, headers)
}

t.test('tasks/legacy-http/shared-upstream-two-principals-inject', async t => {
  const app = await build(t, { upstreams: { jobs: { command: process.execPath, args: [TASKS, '--legacy'] } }, auth: tokensAuth() })
  const a = await legacyInitialize(app, '2025-11-25', 'ci')
  const b = await legacyInitialize(app, '2025-11-25', 'support')
  const callA = caller(app, a.session)
  const callB = caller(app, b.session)

  t.test('tasks/legacy-capabilities/declared-at-2025-11-25-only', async t => {
    t.same(a.result.capabilities.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } }, 'merged from the 2025-11-25 upstream')
    const older = await legacyInitialize(app, '2025-06-18', 'ci')
    t.notOk('tasks' in older.result.capabilities, 'not offered to a 2025-06-18 client')
    const callOld = caller(app, older.session)
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
