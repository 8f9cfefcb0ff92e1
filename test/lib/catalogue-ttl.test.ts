/**
 * An upstream's own `ttlMs` on its lists (docs/upstreams.md › Lists that expire; 2026-07-28
 * server/utilities/caching.mdx): the registry re-lists a kind whose lists went stale, in the
 * background of the next reader, with no list_changed from the upstream; never before the TTL,
 * never more often than MIN_LIST_REFRESH_MS; a failed re-list keeps the last lists.
 *
 * A real upstream child (test/fixtures/ttl-upstream.ts: modern-only, no `listChanged`, its
 * `tools/list` carries the `ttlMs` the test picks and is recorded in FIXTURE_LOG). A TTL is a span
 * of time, so these tests must let time pass: they read the catalogue on a short tick (`readUntil`,
 * bounded) as a client would, and check WHEN the fixture was asked from its own records.
 */
import t, { type Test } from 'tap'
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MIN_LIST_REFRESH_MS } from '../../lib/upstreams/connection.js'
import type { UpstreamRegistry } from '../../lib/upstreams/contract.js'
import type { JsonObject } from '../../lib/protocol/jsonrpc.js'
import { pino } from 'pino'
import { Integrity } from '../../lib/policy/integrity.js'
import { MemoryPinStore } from '../../lib/policy/pin-store.js'
import { ttlFixtureCommand } from '../helpers/fixture.js'
import { startRegistry } from '../helpers/registry.js'

const noSignal = (): { signal: AbortSignal } => ({ signal: new AbortController().signal })
const TICK_MS = 25
/** Longest a test reads on its tick before it gives up, ms. */
const READ_BOUND_MS = 15_000

/** The fixture as the only upstream, its list requests recorded in a temp FIXTURE_LOG. */
async function ttlRegistry (t: Test, ...flags: string[]): Promise<Awaited<ReturnType<typeof startRegistry>> & { lists: () => number[] }> {
  const logFile = fixtureLog(t)
  const started = await startRegistry(t, { ttl: { ...ttlFixtureCommand(...flags), env: { FIXTURE_LOG: logFile } } })
  t.match(started.registry.status(), [{ state: 'ready', era: 'modern' }])
  return { ...started, lists: () => listsIn(logFile) }
}

/** A FIXTURE_LOG path in a temp directory removed at teardown. */
function fixtureLog (t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-ttl-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  return join(dir, 'fixture.log')
}

/** When (Date.now() ms) the fixture logging to `logFile` answered each tools/list so far. */
function listsIn (logFile: string): number[] {
  if (!existsSync(logFile)) return []
  return readFileSync(logFile, 'utf8').split('\n').filter(line => line !== '')
    .map(line => JSON.parse(line) as { event: string, at: number }).filter(entry => entry.event === 'list').map(entry => entry.at)
}

const names = (registry: UpstreamRegistry): string[] => registry.tools().map(tool => String(tool.name))
const extraNames = (registry: UpstreamRegistry): string[] => names(registry).filter(name => !['echo', 'set_tools', 'fail_lists'].includes(name))

/**
 * Reads the catalogue (`read`) every TICK_MS, as clients would, until `done()` holds; rejects after READ_BOUND_MS.
 * @returns how many reads it made
 */
async function readUntil (read: () => unknown, done: () => boolean): Promise<number> {
  const startMs = Date.now()
  let reads = 0
  while (!done()) {
    if (Date.now() - startMs > READ_BOUND_MS) throw new Error(`not done after ${READ_BOUND_MS} ms of reads`)
    read()
    reads++
    await new Promise(resolve => setTimeout(resolve, TICK_MS))
  }
  return reads
}

t.test('upstreams/catalogue/ttl-refreshes-without-list-changed', async t => {
  const { registry, lists } = await ttlRegistry(t, '--ttl-ms', '1500', '--tools', 'first')
  t.same(extraNames(registry), ['first'])
  const changed: string[] = []
  registry.on('list_changed', (kind: string) => changed.push(kind))
  await registry.callTool('set_tools', { names: ['second'] }, noSignal())
  t.same(extraNames(registry), ['first'], 'the upstream sent no list_changed: the list read before the TTL is served')

  await readUntil(() => registry.tools(), () => extraNames(registry).includes('second'))
  t.same(extraNames(registry), ['second'], 'after its ttlMs the tools were re-listed')
  t.same(changed, ['tools'], 'clients were told (list_changed), once')
  const [first, second] = lists()
  t.ok(second - first >= 1500 - 5, `the re-list came after the TTL (${second - first} ms after the first listing)`)
  t.match(await registry.callTool('second', {}, noSignal()), { content: [{ text: 'second' }] }, 'the new tool routes')
})

t.test('upstreams/catalogue/ttl-no-refresh-before-then-one', async t => {
  const ttlMs = 2500
  const { registry, lists } = await ttlRegistry(t, '--ttl-ms', String(ttlMs), '--tools', 'first')
  const listedAt = lists()[0]
  await registry.callTool('set_tools', { names: ['second'] }, noSignal())
  // Well past the floor, still inside the TTL: lists and calls read the catalogue, nothing is re-listed.
  const calls: Array<Promise<unknown>> = []
  await readUntil(() => { registry.tools(); calls.push(registry.callTool('echo', { text: 'x' }, noSignal())) }, () => Date.now() - listedAt > ttlMs - 500)
  t.equal(lists().length, 1, 'no re-list before the TTL passed, however often the catalogue was read')
  t.same(extraNames(registry), ['first'])

  // Past the TTL: many readers at once start one re-list.
  await readUntil(() => { for (let i = 0; i < 20; i++) { registry.tools(); calls.push(registry.callTool('echo', { text: 'x' }, noSignal())) } }, () => extraNames(registry).includes('second'))
  t.equal(lists().length, 2, 'one re-list, however many readers found the lists stale')
  t.ok(lists()[1] - listedAt >= ttlMs - 5, 'and not before the TTL')
  t.equal((await Promise.all(calls)).length, calls.length, 'every call meanwhile was answered')
})

t.test('upstreams/catalogue/failed-refresh-keeps-old-list', async t => {
  const { registry, lists, lines, waitFor } = await ttlRegistry(t, '--ttl-ms', '1000', '--tools', 'first')
  await registry.callTool('fail_lists', { fail: true }, noSignal())
  await registry.callTool('set_tools', { names: ['second'] }, noSignal())
  const failedLine = (line: JsonObject): boolean => line.msg === 'upstream re-list for staleness failed; serving its last lists'
  await readUntil(() => registry.tools(), () => lines.some(failedLine))
  t.same(extraNames(registry), ['first'], 'the failed re-list kept the last list')
  t.match(registry.status(), [{ state: 'ready' }], 'the upstream stays ready')
  t.match(await registry.callTool('echo', { text: 'still here' }, noSignal()), { content: [{ text: 'still here' }] }, 'and its tools keep routing')

  // It is retried after the floor; a second failure is not warned again.
  const before = lists().length
  await readUntil(() => registry.tools(), () => lists().length >= before + 1)
  await waitFor(line => line.msg === 'upstream re-list for staleness failed again; serving its last lists')
  t.equal(lines.filter(failedLine).length, 1, 'warned once for the streak')
  t.same(extraNames(registry), ['first'])

  await registry.callTool('fail_lists', { fail: false }, noSignal())
  await readUntil(() => registry.tools(), () => extraNames(registry).includes('second'))
  t.pass('once the upstream lists again, the next stale read re-lists it')
})

t.test('upstreams/catalogue/ttl-zero-floor', async t => {
  const { registry, lists } = await ttlRegistry(t, '--ttl-ms', '0', '--tools', 'first')
  // ttlMs 0 is "immediately stale": read on every tick for a while; re-lists come, at most one per floor.
  const startMs = Date.now()
  const reads = await readUntil(() => registry.tools(), () => Date.now() - startMs > 2 * MIN_LIST_REFRESH_MS + 800)
  const at = lists()
  t.ok(reads > 50, `read ${reads} times`)
  t.ok(at.length >= 3, `re-listed (${at.length - 1} times after the first listing)`)
  const bound = 1 + Math.floor((Date.now() - at[0]) / MIN_LIST_REFRESH_MS)
  t.ok(at.length <= bound, `but at most once per ${MIN_LIST_REFRESH_MS} ms (${at.length} listings in all, at most ${bound})`)
  for (let i = 1; i < at.length; i++) t.ok(at[i] - at[i - 1] >= MIN_LIST_REFRESH_MS - 5, `listing ${i} came ${at[i] - at[i - 1]} ms after the one before`)
})

t.test('upstreams/catalogue/ttl-zero-left-to-list-changed', async t => {
  // Two upstreams with ttlMs 0 on every tools/list: one declares tools.listChanged (mcpx holds a
  // listen stream for it, and 0 is the server SDK's default), the other does not.
  const announcing = fixtureLog(t)
  const silent = fixtureLog(t)
  const { registry } = await startRegistry(t, {
    announcing: { ...ttlFixtureCommand('--ttl-ms', '0', '--list-changed'), env: { FIXTURE_LOG: announcing } },
    silent: { ...ttlFixtureCommand('--ttl-ms', '0'), env: { FIXTURE_LOG: silent } }
  })
  t.match(registry.status(), [{ state: 'ready', era: 'modern' }, { state: 'ready', era: 'modern' }])
  const startMs = Date.now()
  await readUntil(() => registry.tools(), () => Date.now() - startMs > MIN_LIST_REFRESH_MS + 800)
  t.ok(listsIn(silent).length >= 2, `the upstream without listChanged was re-listed (${listsIn(silent).length} listings)`)
  t.equal(listsIn(announcing).length, 1, 'the one that announces its changes was not: its list_changed invalidates its list')
  t.match(readFileSync(announcing, 'utf8'), /"event":"listen"/, 'mcpx holds a subscriptions/listen for its list changes')
})

t.test('upstreams/catalogue/ttl-refresh-through-integrity-gate', async t => {
  // The re-list is the list_changed path: the catalogue gate judges it (quarantine: a tool new on a
  // pinned upstream is hidden until approved).
  const { registry } = await ttlRegistry(t, '--ttl-ms', '1000', '--tools', 'first')
  const integrity = new Integrity({ logger: pino({ level: 'silent' }), store: new MemoryPinStore(), modes: { pin: 'quarantine', upstreams: {} }, audit: () => {} })
  t.teardown(async () => { await integrity.close() })
  registry.setCatalogueGate?.(integrity)
  t.same(extraNames(registry), ['first'], 'the first definitions are pinned and served')
  await registry.callTool('set_tools', { names: ['second'] }, noSignal())
  await readUntil(() => registry.tools(), () => !extraNames(registry).includes('first'))
  t.same(extraNames(registry), [], 'the re-list dropped first, and second is held back')
  t.match(integrity.entries().filter(entry => entry.name === 'second'), [{ upstream: 'ttl', state: 'new', hidden: true }], 'second is quarantined as new')
})
