/**
 * The 2025-11-25 experimental tasks passed through to legacy clients (docs/wire.md › Tasks, in both
 * eras; basic/utilities/tasks.mdx), over real HTTP against a listening app and through a spawned
 * `mcpx serve`. The upstream is test/fixtures/tasks-upstream with `--legacy` (it refuses
 * server/discover, so mcpx initializes it, at 2025-11-25, and it declares `capabilities.tasks`).
 * Two callers with their own bearer tokens (principals `ci` and `support`) share that upstream:
 * task ids are bound to the principal, tasks/list shows each only its own, and a task's status
 * notifications reach the session that created it. Tests are named tasks/legacy-<area>/<requirement>.
 */
import t from 'tap'
import { fileURLToPath } from 'node:url'
import { listen, legacyHeaders, modernHeaders, modernMeta, sseMessages } from '../helpers/app.js'
import { TOKENS, openGetStream, tokensAuth, type Collected } from '../helpers/policy.js'
import { spawnServe, type Message } from '../helpers/spawn.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'

const TASKS = fileURLToPath(new URL('../fixtures/tasks-upstream.js', import.meta.url))
const RELATED = 'io.modelcontextprotocol/related-task'
const upstream = (): Record<string, unknown> => ({ command: process.execPath, args: [TASKS, '--legacy'] })

interface Session { id: string, revision: string, token: string }

let nextId = 1

/** One legacy POST; the JSON-RPC reply (JSON or the SSE message answering it). */
async function rpc (base: string, method: string, params: Record<string, unknown>, headers: Record<string, string>): Promise<Message> {
  const id = nextId++
  const res = await fetch(`${base}/mcp`, { method: 'POST', headers: legacyHeaders(headers), body: JSON.stringify({ jsonrpc: '2.0', id, method, params }) })
  const text = await res.text()
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    const reply = (sseMessages(text) as Message[]).find(m => m.id === id)
    if (reply === undefined) throw new Error(`no reply to ${method} in ${text}`)
    return reply
  }
  return JSON.parse(text) as Message
}

async function initialize (base: string, revision: string, token: string): Promise<{ session: Session, result: Message }> {
  const headers = { authorization: `Bearer ${TOKENS[token]}` }
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: legacyHeaders({ ...headers, accept: 'application/json' }),
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: revision, capabilities: {}, clientInfo: { name: 'tasks-legacy-test', version: '0.0.0' } } })
  })
  const body = await res.json() as Message
  const id = res.headers.get('mcp-session-id')
  if (id === null) throw new Error(`no session: ${res.status} ${JSON.stringify(body)}`)
  await fetch(`${base}/mcp`, { method: 'POST', headers: legacyHeaders({ ...headers, 'mcp-session-id': id, 'mcp-protocol-version': revision }), body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })
  return { session: { id, revision, token }, result: body.result }
}

function as (base: string, session: Session): (method: string, params?: Record<string, unknown>) => Promise<Message> {
  const headers = { authorization: `Bearer ${TOKENS[session.token]}`, 'mcp-session-id': session.id, 'mcp-protocol-version': session.revision }
  return async (method, params = {}) => await rpc(base, method, params, headers)
}

/** Waits (bounded, 20 s) until `check` finds something; polling, not a delay. */
async function until<T> (what: string, check: () => T | undefined): Promise<T> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const found = check()
    if (found !== undefined) return found
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 50))
  }
}

t.test('tasks/legacy-http/shared-upstream-two-principals', async t => {
  const { base, app } = await listen(t, { upstreams: { jobs: upstream() }, auth: tokensAuth() })
  await until('the upstream ready', () => app.upstreams.status().every(s => s.state === 'ready') ? true : undefined)

  const a = await initialize(base, '2025-11-25', 'ci')
  const b = await initialize(base, '2025-11-25', 'support')
  const callA = as(base, a.session)
  const callB = as(base, b.session)
  const streamA: Collected = await openGetStream({ base, token: 'ci' }, a.session)
  const streamB: Collected = await openGetStream({ base, token: 'support' }, b.session)
  t.teardown(() => { streamA.close(); streamB.close() })

  t.test('tasks/legacy-capabilities/declared-at-2025-11-25-only', async t => {
    t.same(a.result.capabilities.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } }, 'merged from the 2025-11-25 upstream')
    const older = await initialize(base, '2025-06-18', 'ci')
    t.notOk('tasks' in older.result.capabilities, 'not offered to a 2025-06-18 client')
    const callOld = as(base, older.session)
    t.equal((await callOld('tasks/get', { taskId: 'x' })).error.code, -32601, 'tasks/* stay -32601 for an older revision')
    const plain = await callOld('tools/call', { name: 'slow_compute', arguments: { seconds: 0, label: 'old' }, task: {} })
    t.equal(plain.result.content[0].text, 'old: done after 0s', 'an older revision\'s task param is not forwarded: a plain result')
    const discover = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { ...modernHeaders('server/discover', undefined, { accept: 'application/json' }), authorization: `Bearer ${TOKENS.ci}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: modernMeta() } })
    })
    const caps = (await discover.json() as Message).result.capabilities
    t.notOk('tasks' in caps, 'server/discover never carries the 2025-11-25 capability')
    t.notOk('extensions' in caps, 'nor the extension: no upstream declares it')
  })

  t.test('tasks/legacy-routing/call-get-result-cancel', async t => {
    const created = await callA('tools/call', { name: 'slow_compute', arguments: { seconds: 1, label: 'legacy' }, task: { ttl: 30_000 } })
    const taskId = created.result.task.taskId as string
    t.match(taskId, /^mcpx1\./, 'CreateTaskResult with a namespaced id')
    t.equal(created.result.task.status, 'working')
    const got = await callA('tasks/get', { taskId })
    t.equal(got.result.taskId, taskId, 'tasks/get answers with the client id')
    const result = await callA('tasks/result', { taskId }) // blocks until the task completes upstream
    t.equal(result.result.content[0].text, 'legacy: done after 1s')
    t.same(result.result._meta[RELATED], { taskId }, 'the related-task id is the client one')
    t.equal((await callA('tasks/get', { taskId })).result.status, 'completed')

    const long = await callA('tools/call', { name: 'slow_compute', arguments: { seconds: 60 }, task: {} })
    const longId = long.result.task.taskId as string
    const cancelled = await callA('tasks/cancel', { taskId: longId })
    t.equal(cancelled.result.taskId, longId)
    t.equal(cancelled.result.status, 'cancelled')
    t.equal((await callA('tasks/cancel', { taskId: longId })).error.code, -32602, 'a terminal task: the upstream\'s -32602')

    const forbidden = await callA('tools/call', { name: 'greet', arguments: {}, task: {} })
    t.equal(forbidden.error.code, -32601, 'a sync-only tool: the upstream decides (-32601)')
  })

  t.test('tasks/legacy-ids/tampered-or-foreign-is-32602', async t => {
    const mine = (await callA('tools/call', { name: 'slow_compute', arguments: { seconds: 0 }, task: {} })).result.task.taskId as string
    const tampered = mine.slice(0, -1) + (mine.endsWith('A') ? 'B' : 'A')
    for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      t.equal((await callA(method, { taskId: tampered })).error.code, -32602, `${method}: tampered`)
      t.equal((await callB(method, { taskId: mine })).error.code, -32602, `${method}: another principal's`)
    }
    t.equal((await callA('tasks/get', { taskId: 'task-1' })).error.code, -32602, 'an upstream\'s raw id')
  })

  t.test('tasks/legacy-list/only-the-callers-tasks', async t => {
    const other = (await callB('tools/call', { name: 'slow_compute', arguments: { seconds: 0, label: 'b' }, task: {} })).result.task.taskId as string
    const listA = await callA('tasks/list')
    const listB = await callB('tasks/list')
    const idsA = (listA.result.tasks as Message[]).map(task => task.taskId as string)
    const idsB = (listB.result.tasks as Message[]).map(task => task.taskId as string)
    t.ok(idsA.length >= 3, `A sees its own tasks across the upstream's pages (${idsA.length})`)
    t.ok(idsA.every(id => id.startsWith('mcpx1.')), 'namespaced ids')
    t.notOk(idsA.includes(other), 'not B\'s task')
    t.same(idsB, [other], 'B sees only its own')
    t.notOk('nextCursor' in listA.result, 'one page')
    t.equal((await callA('tasks/list', { cursor: 'x' })).error.code, -32602, 'mcpx issues no cursor')
  })

  t.test('tasks/legacy-sdk/v1-client-drives-a-task', async t => {
    // The official v1 SDK client (its experimental tasks API) at 2025-11-25, as principal `ci`.
    const client = new Client({ name: 'sdk-v1', version: '1.0.0' })
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${TOKENS.ci}` } } })
    await client.connect(transport)
    t.teardown(async () => { await client.close() })
    t.ok(client.getServerCapabilities()?.tasks?.requests?.tools?.call, 'the SDK sees task-augmented tools/call offered')
    const types: string[] = []
    let taskId: string | undefined
    let text: string | undefined
    for await (const message of client.experimental.tasks.callToolStream({ name: 'slow_compute', arguments: { seconds: 0.3, label: 'sdk' } }, undefined, { task: { ttl: 30_000 } })) {
      types.push(message.type)
      if (message.type === 'taskCreated') taskId = message.task.taskId
      if (message.type === 'result') text = (message.result.content as Array<{ text: string }>)[0]?.text
      if (message.type === 'error') t.fail(String(message.error))
    }
    t.equal(types[0], 'taskCreated')
    t.equal(types.at(-1), 'result')
    t.match(taskId, /^mcpx1\./)
    t.equal(text, 'sdk: done after 0.3s', 'polled with tasks/get, then tasks/result')
    t.equal((await client.experimental.tasks.getTask(taskId as string)).status, 'completed')
    const listed = await client.experimental.tasks.listTasks()
    t.ok(listed.tasks.some(task => task.taskId === taskId), 'tasks/list has it (same principal as A)')
  })

  t.test('tasks/legacy-notify/status-reaches-the-owning-session-only', async t => {
    const created = await callB('tools/call', { name: 'slow_compute', arguments: { seconds: 0.2 }, task: {} })
    const taskId = created.result.task.taskId as string
    const note = await until('B\'s status notification', () => streamB.messages.find(m => m.method === 'notifications/tasks/status' && m.params.taskId === taskId && m.params.status === 'completed'))
    t.equal(note.params.taskId, taskId, 'the client id')
    // A's stream has had the time B's took, and more: its own tasks' notifications only.
    await until('A\'s own completed notification', () => streamA.messages.find(m => m.method === 'notifications/tasks/status' && m.params.status === 'completed'))
    const seenByA = streamA.messages.filter(m => m.method === 'notifications/tasks/status').map(m => m.params.taskId as string)
    t.notOk(seenByA.includes(taskId), 'not on another session\'s stream')
    t.ok(seenByA.every(id => id.startsWith('mcpx1.')), 'never an upstream\'s raw id')
  })
})

t.test('tasks/legacy-stdio/serve-relays-tasks-and-status', async t => {
  const s = spawnServe(t, { config: { upstreams: { jobs: upstream() } } })
  const deadline = Date.now() + 20_000
  let init = await s.request({ jsonrpc: '2.0', id: 'i', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '0' } } })
  // The upstream may still be connecting: initialize (legacy stdio allows one) reports what is ready; tasks/list tells when it is.
  t.equal(init.result.protocolVersion, '2025-11-25')
  s.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
  let created = await s.request({ jsonrpc: '2.0', id: 'c0', method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 0.2, label: 'stdio' }, task: {} } })
  for (let n = 1; created.result?.task === undefined && Date.now() < deadline; n++) {
    await new Promise(resolve => setTimeout(resolve, 100))
    created = await s.request({ jsonrpc: '2.0', id: `c${n}`, method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 0.2, label: 'stdio' }, task: {} } })
  }
  const taskId = created.result.task.taskId as string
  t.match(taskId, /^mcpx1\./)
  const result = await s.request({ jsonrpc: '2.0', id: 'r', method: 'tasks/result', params: { taskId } })
  t.equal(result.result.content[0].text, 'stdio: done after 0.2s')
  t.same(result.result._meta[RELATED], { taskId })
  const note = await s.nextMessage(m => m.method === 'notifications/tasks/status' && m.params?.status === 'completed')
  t.equal(note.params.taskId, taskId, 'the status notification carries the client id')
  const list = await s.request({ jsonrpc: '2.0', id: 'l', method: 'tasks/list', params: {} })
  t.same((list.result.tasks as Message[]).map(task => task.taskId), [taskId])
  init = await s.request({ jsonrpc: '2.0', id: 'p', method: 'ping' })
  t.same(init.result, {})
})
