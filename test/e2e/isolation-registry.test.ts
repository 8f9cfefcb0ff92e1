/**
 * Isolated upstreams at the registry (docs/upstreams.md › Isolated upstreams; WORK IN PROGRESS, not landed):
 * per-session instances of a stateful fixture (its counter lives in the child), the cap, idle
 * reaping and endSession. Real fixture children.
 */
import t from 'tap'
import { INSTANCES_EXHAUSTED, type JsonObject } from '../../lib/protocol/jsonrpc.js'
import { fixtureCommand } from '../helpers/fixture.js'
import { isAlive } from '../helpers/daemon.js'
import { pollUntil } from '../helpers/legacy.js'
import { startRegistry } from '../helpers/registry.js'

const textOf = (result: JsonObject): string => ((result.content as Array<{ text: string }>)[0]).text
const as = (owner: string): { signal: AbortSignal, owner: string } => ({ signal: new AbortController().signal, owner })

t.test('isolation/per-session/own-state', async t => {
  const { registry } = await startRegistry(t, { fixture: { ...fixtureCommand(), isolation: 'per-session' } })
  t.equal(textOf(await registry.callTool('bump', {}, as('A'))), 'counter 1')
  t.equal(textOf(await registry.callTool('bump', {}, as('A'))), 'counter 2')
  t.equal(textOf(await registry.callTool('bump', {}, as('B'))), 'counter 1', 'B has its own instance, its own counter')
  t.equal(registry.instancePids('fixture').length, 2, 'two instances')
  const shared = registry.status()[0].pid
  t.notOk(registry.instancePids('fixture').includes(shared as number), 'neither is the shared (catalogue) child')
})

t.test('isolation/per-session/end-session-stops-instance', async t => {
  const { registry } = await startRegistry(t, { fixture: { ...fixtureCommand(), isolation: 'per-session' } })
  await registry.callTool('bump', {}, as('A'))
  const [pid] = registry.instancePids('fixture')
  await registry.endSession('A')
  t.same(registry.instancePids('fixture'), [], 'no instance left')
  t.notOk(isAlive(pid), 'its child exited')
})

t.test('isolation/per-session/idle-reaped', async t => {
  const { registry } = await startRegistry(t, { fixture: { ...fixtureCommand(), isolation: 'per-session', idleTimeout: 500 } })
  await registry.callTool('bump', {}, as('A'))
  const [pid] = registry.instancePids('fixture')
  await pollUntil('the idle instance to be reaped', () => registry.instancePids('fixture').length === 0 && !isAlive(pid), 20_000)
  t.pass('reaped after idleTimeout, child gone')
})

t.test('isolation/per-session/cap', async t => {
  const { registry } = await startRegistry(t, { fixture: { ...fixtureCommand(), isolation: 'per-session', maxInstances: 1 } })
  await registry.callTool('bump', {}, as('A'))
  await t.rejects(registry.callTool('bump', {}, as('B')), { code: INSTANCES_EXHAUSTED, message: /all 1 isolated instances are in use/ })
  await registry.endSession('A')
  t.equal(textOf(await registry.callTool('bump', {}, as('B'))), 'counter 1', 'a freed slot serves the next session')
})
