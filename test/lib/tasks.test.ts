/**
 * lib/dispatch/tasks.ts: namespaced task ids of the Tasks extension (docs/wire.md › Tasks; SEP-2663) and the
 * declaration check. Tests are named tasks/<area>/<requirement>.
 */
import t from 'tap'
import { StateSealer } from '../../lib/dispatch/mrtr.js'
import { TaskBook, TaskIds } from '../../lib/dispatch/tasks.js'
import { TASKS_EXTENSION, declaresTasks } from '../../lib/protocol/tasks.js'

const KEY = Buffer.alloc(32, 7)

t.test('tasks/ids/round-trip-per-upstream-and-owner', async t => {
  const ids = new TaskIds(new StateSealer(KEY))
  const a = ids.wrap('a', 'task-1', 'anonymous')
  const b = ids.wrap('b', 'task-1', 'anonymous')
  t.not(a, b, 'the same upstream id under two upstreams gives two ids')
  t.match(a, /^mcpx1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/)
  t.same(ids.unwrap(a, 'anonymous'), { upstream: 'a', taskId: 'task-1' })
  t.same(ids.unwrap(b, 'anonymous'), { upstream: 'b', taskId: 'task-1' })
  t.same(ids.unwrap(ids.wrap('x/y', 'id with "quotes" and /', 'p1'), 'p1'), { upstream: 'x/y', taskId: 'id with "quotes" and /' })
  t.same(new TaskIds(new StateSealer(KEY)).unwrap(a, 'anonymous'), { upstream: 'a', taskId: 'task-1' }, 'replicas sharing mrtr.stateKey read each other\'s ids')
})

t.test('tasks/ids/foreign-or-malformed-is-unknown', async t => {
  const ids = new TaskIds(new StateSealer(KEY))
  const mine = ids.wrap('a', 'task-1', 'alice')
  t.equal(ids.unwrap(mine, 'bob'), undefined, "another caller's id")
  t.equal(new TaskIds(new StateSealer(Buffer.alloc(32, 8))).unwrap(mine, 'alice'), undefined, 'another key')
  const [, body, tag] = mine.split('.') as [string, string, string]
  const forged = Buffer.from(JSON.stringify(['b', 'task-1'])).toString('base64url')
  for (const id of ['task-1', '', `mcpx1.${body}`, `mcpx1.${body}.`, `mcpx1.${forged}.${tag}`, `mcpx1.${body}.${tag}x`, `mcpx2.${body}.${tag}`, 42, null, undefined, {}]) {
    t.equal(ids.unwrap(id, 'alice'), undefined, `${JSON.stringify(id)} is unknown`)
  }
  // A well-tagged body that is not an [upstream, taskId] pair.
  for (const payload of ['"x"', '[1,2]', '["a"]', 'not json']) {
    const odd = Buffer.from(payload).toString('base64url')
    const sealer = new StateSealer(KEY)
    const oddId = `mcpx1.${odd}.${sealer.sign(`task|alice|${odd}`).slice(0, 22)}`
    t.equal(ids.unwrap(oddId, 'alice'), undefined, `body ${payload}`)
  }
})

t.test('tasks/capabilities/declares-tasks', async t => {
  t.equal(declaresTasks({ extensions: { [TASKS_EXTENSION]: {} } }), true)
  t.equal(declaresTasks({ extensions: { [TASKS_EXTENSION]: { some: 'setting' } } }), true)
  t.equal(declaresTasks({ extensions: {} }), false)
  t.equal(declaresTasks({ extensions: { [TASKS_EXTENSION]: true } }), false)
  t.equal(declaresTasks({ tasks: {} }), false, 'the 2025-11-25 capabilities.tasks slot is not the extension')
  t.equal(declaresTasks(undefined), false)
  t.equal(declaresTasks('x'), false)
})

t.test('tasks/legacy-book/bounded-per-owner-and-in-all', async t => {
  const book = new TaskBook(2, 3)
  book.add({ upstream: 'u', taskId: 't1', owner: 'p', session: 's1' })
  book.add({ upstream: 'u', taskId: 't2', owner: 'p', session: 's1' })
  book.add({ upstream: 'u', taskId: 't3', owner: 'p', session: 's2' })
  t.same([...book.ownedOn('p', 'u').keys()], ['t2', 't3'], 'per owner: the oldest dropped first')
  t.equal(book.find('u', 't1'), undefined)
  t.equal(book.find('u', 't3')?.session, 's2', 'found by the upstream id, with its session')
  book.add({ upstream: 'v', taskId: 't1', owner: 'q', session: undefined })
  book.add({ upstream: 'v', taskId: 't2', owner: 'q', session: undefined })
  t.equal(book.size, 3, 'in all: the oldest dropped first, whoever owns it')
  t.same([...book.ownedOn('p', 'u').keys()], ['t3'])
  t.same([...book.ownedOn('p', 'v').keys()], [], 'another upstream\'s tasks are not this one\'s')
  book.forget('q', 'v', 't1')
  t.same([...book.ownedOn('q', 'v').keys()], ['t2'], 'forgotten when its upstream says it is unknown')
  book.add({ upstream: 'v', taskId: 't2', owner: 'p', session: 's3' })
  t.equal(book.find('v', 't2')?.owner, 'p', 'two owners\' isolated instances may mint one id: the latest is found')
  t.same([...book.ownedOn('q', 'v').keys()], ['t2'], 'and each owner keeps its own')
})
