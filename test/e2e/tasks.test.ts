/**
 * The Tasks extension (docs/wire.md › Tasks; SEP-2663) end to end through real processes: a real
 * `mcpx daemon` over HTTP with two copies of test/fixtures/tasks-upstream (both mint `task-1`, …),
 * and a real `mcpx serve` over stdio with one. The full behaviour is the conformance run's
 * (`npm run conformance`, the `tasks ext` rows); this file keeps `npm test` covering the daemon and
 * stdio paths. Tests are named tasks/<area>/<requirement>.
 */
import t from 'tap'
import { fileURLToPath } from 'node:url'
import { startDaemon } from '../helpers/daemon.js'
import { spawnServe, type Message } from '../helpers/spawn.js'
import { modernHeaders, modernMeta, sseMessages } from '../helpers/app.js'
import { untilReady } from '../helpers/policy.js'

const TASKS = fileURLToPath(new URL('../fixtures/tasks-upstream.js', import.meta.url))
const EXTENSION = 'io.modelcontextprotocol/tasks'
const CAPS = { extensions: { [EXTENSION]: {} } }
const upstream = (): Record<string, unknown> => ({ command: process.execPath, args: [TASKS] })

/** Sends one 2026-07-28 request and returns its JSON-RPC message. */
type Send = (method: string, params: Record<string, unknown>) => Promise<Message>

/** Polls tasks/get (bounded, 10 s) until the task is terminal; returns the last DetailedTask. */
async function settle (send: Send, taskId: string): Promise<Message> {
  const deadline = Date.now() + 10_000
  for (;;) {
    const reply = await send('tasks/get', { taskId })
    const status = reply.result?.status
    if (status === 'completed' || status === 'failed' || status === 'cancelled' || Date.now() > deadline) return reply.result ?? reply
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}

t.test('tasks/e2e/daemon-routes-two-upstreams-by-namespaced-id', async t => {
  const daemon = await startDaemon(t, { upstreams: { a: upstream(), b: upstream() } })
  await untilReady(daemon.base)
  let id = 1
  const send: Send = async (method, params) => {
    const name = typeof params.name === 'string' ? params.name : typeof params.taskId === 'string' ? params.taskId : undefined
    const res = await fetch(`${daemon.base}/mcp`, {
      method: 'POST',
      headers: modernHeaders(method, name, { accept: 'application/json' }),
      body: JSON.stringify({ jsonrpc: '2.0', id: id++, method, params: { ...params, _meta: modernMeta(CAPS) } })
    })
    return await res.json() as Message
  }
  const discover = await send('server/discover', {})
  t.same(discover.result.capabilities.extensions, { [EXTENSION]: {} })
  const a = await send('tools/call', { name: 'a__slow_compute', arguments: { seconds: 1, label: 'on-a' } })
  const b = await send('tools/call', { name: 'b__slow_compute', arguments: { seconds: 1, label: 'on-b' } })
  t.equal(a.result.resultType, 'task')
  t.not(a.result.taskId, b.result.taskId)
  const [doneA, doneB] = await Promise.all([settle(send, a.result.taskId), settle(send, b.result.taskId)])
  t.equal(doneA.taskId, a.result.taskId)
  t.equal(doneA.result.content[0].text, 'on-a: done after 1s')
  t.equal(doneB.result.content[0].text, 'on-b: done after 1s')
  const unknown = await send('tasks/get', { taskId: 'task-1' })
  t.equal(unknown.error.code, -32602, "an upstream's raw id is not a client id")
})

t.test('tasks/e2e/status-notification-on-the-tasks-get-reply', async t => {
  // SEP-2663 › Task Status Notifications: a server MAY push `notifications/tasks/status`, on the
  // stream of a tasks/get. The fixture (--status-on-get) sends the task it answers first; mcpx
  // relays it on the client's tasks/get reply with the client's namespaced taskId.
  const daemon = await startDaemon(t, { upstreams: { a: { command: process.execPath, args: [TASKS, '--status-on-get'] } } })
  await untilReady(daemon.base)
  const post = async (id: number, method: string, params: Record<string, unknown>, accept: string): Promise<Response> => {
    const name = typeof params.name === 'string' ? params.name : params.taskId as string
    return await fetch(`${daemon.base}/mcp`, {
      method: 'POST',
      headers: modernHeaders(method, name, { accept }),
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: modernMeta(CAPS) } })
    })
  }
  const created = await (await post(1, 'tools/call', { name: 'slow_compute', arguments: { seconds: 30, label: 'pushed' } }, 'application/json')).json() as Message
  const taskId = created.result.taskId as string
  t.match(taskId, /^mcpx1\./, 'a namespaced id')
  const res = await post(2, 'tasks/get', { taskId }, 'application/json, text/event-stream')
  t.equal(res.headers.get('content-type'), 'text/event-stream', 'the reply streams to carry the notification')
  const messages = sseMessages(await res.text()) as Message[]
  t.same(messages.map(m => m.method ?? `reply ${String(m.id)}`), ['notifications/tasks/status', 'reply 2'], 'the status, then the reply')
  t.match(messages[0].params, { taskId, status: 'working' }, "with the client's taskId, never the upstream's")
  t.equal(messages[1].result.taskId, taskId)
  // A client that takes JSON only gets the reply alone.
  const json = await post(3, 'tasks/get', { taskId }, 'application/json')
  t.equal(json.status, 200)
  t.match(await json.json(), { id: 3, result: { taskId, status: 'working' } })
  await (await post(4, 'tasks/cancel', { taskId }, 'application/json')).text()
})

t.test('tasks/e2e/serve-stdio-lifecycle', async t => {
  const s = spawnServe(t, { config: { upstreams: { tasks: upstream() } } })
  let id = 1
  const send: Send = async (method, params) => await s.request({ jsonrpc: '2.0', id: `r${id++}`, method, params: { ...params, _meta: modernMeta(CAPS) } })
  // The upstream may still be connecting: retry discover until it advertises the extension (bounded).
  const deadline = Date.now() + 20_000
  let discover = await send('server/discover', {})
  while (discover.result?.capabilities?.extensions === undefined && Date.now() < deadline) {
    await new Promise(resolve => setTimeout(resolve, 100))
    discover = await send('server/discover', {})
  }
  t.same(discover.result.capabilities.extensions, { [EXTENSION]: {} })
  const created = await send('tools/call', { name: 'confirm_delete', arguments: { filename: 'stdio.txt' } })
  t.equal(created.result.resultType, 'task')
  const taskId = created.result.taskId as string
  let parked = await send('tasks/get', { taskId })
  while (parked.result.status !== 'input_required' && Date.now() < deadline) parked = await send('tasks/get', { taskId })
  const [key] = Object.keys(parked.result.inputRequests)
  const ack = await send('tasks/update', { taskId, inputResponses: { [key as string]: { action: 'accept', content: { confirm: true } } } })
  t.equal(ack.result.resultType, 'complete')
  const done = await settle(send, taskId)
  t.equal(done.status, 'completed')
  t.equal(done.result.content[0].text, 'Deleted stdio.txt')
})
