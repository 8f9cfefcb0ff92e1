/**
 * Paged catalogues (docs/wire.md › Paged catalogues; lib/dispatch/paging.ts) through real processes: a real
 * daemon in both eras (modern, sessionless legacy, a legacy session) and a spawned `mcpx serve`,
 * over three upstreams, one of which pages its own lists (the hostile fixture's `--page-size`);
 * malformed cursors; a cursor across a catalogue change. Tests are named paging/<area>/<requirement>.
 */
import t, { type Test } from 'tap'
import { mkdtempSync, readFileSync, existsSync, renameSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startDaemon, type DaemonProcess } from '../helpers/daemon.js'
import { spawnServe, type Message } from '../helpers/spawn.js'
import { fixtureCommand } from '../helpers/fixture.js'
import { modernMeta } from '../helpers/app.js'
import { pollUntil, schemaErrors as legacySchemaErrors } from '../helpers/legacy.js'
import { schemaErrors as modernSchemaErrors } from '../helpers/modern-wire.js'
import { legacyRpc, legacySession, modernRpc, request, untilReady, type Target } from '../helpers/policy.js'

const HOSTILE = fileURLToPath(new URL('../fixtures/hostile-upstream.js', import.meta.url))
const PAGE_SIZE = 4

type ListKey = 'tools' | 'prompts' | 'resources' | 'resourceTemplates'
const LISTS: ReadonlyArray<{ method: string, key: ListKey, field: string, result: string }> = [
  { method: 'tools/list', key: 'tools', field: 'name', result: 'ListToolsResult' },
  { method: 'prompts/list', key: 'prompts', field: 'name', result: 'ListPromptsResult' },
  { method: 'resources/list', key: 'resources', field: 'uri', result: 'ListResourcesResult' },
  { method: 'resources/templates/list', key: 'resourceTemplates', field: 'uriTemplate', result: 'ListResourceTemplatesResult' }
]

/** The echo fixture's own catalogue (test/fixtures/echo-upstream.ts). */
const ECHO_TOOLS = ['add_tool', 'bump', 'crash', 'echo', 'elicit', 'fail', 'headers', 'log', 'roots', 'sample', 'slow']
const HOSTILE_TOOLS = ['echo', 'hold', 'big', 'noise', 'stall']
const ITEMS = 7
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i)

/** What the merged lists must hold, sorted: a = echo fixture, b = hostile paging by 3 with 7 items, c = hostile. */
const EXPECTED: Readonly<Record<ListKey, string[]>> = {
  tools: [...ECHO_TOOLS.map(n => `a__${n}`), ...[...HOSTILE_TOOLS, 'catalogue', ...range(ITEMS).map(i => `item${i}`)].map(n => `b__${n}`), ...HOSTILE_TOOLS.map(n => `c__${n}`)].sort(),
  prompts: ['a__greet', ...range(ITEMS).map(i => `b__prompt${i}`)].sort(),
  resources: ['fixture://counter', 'fixture://static', ...range(ITEMS).map(i => `paged://item/${i}`)].sort(),
  resourceTemplates: ['fixture://items/{id}', ...range(ITEMS).map(i => `paged://item/${i}/{part}`)].sort()
}

function hostile (log: string, flags: string[] = []): Record<string, unknown> {
  return { command: process.execPath, args: [HOSTILE, ...flags], env: { FIXTURE_LOG: log } }
}

function threeUpstreams (log: string): Record<string, unknown> {
  const { command, args } = fixtureCommand()
  return { a: { command, args }, b: hostile(log, ['--items', String(ITEMS), '--page-size', '3']), c: hostile(join(log + '.c')) }
}

function logPath (): string { return join(mkdtempSync(join(tmpdir(), 'mcpx-paging-')), 'fixture.jsonl') }

function fixtureLists (file: string): Array<{ method: string, cursor?: string }> {
  if (!existsSync(file)) return []
  const events = readFileSync(file, 'utf8').split('\n').filter(l => l !== '').map(l => JSON.parse(l) as { event: string, method: string, cursor?: string })
  return events.filter(e => e.event === 'list')
}

/** A list client: sends one list request with an optional cursor, returns the JSON-RPC message. */
type Lister = (method: string, id: number, cursor?: string) => Promise<Message>

/**
 * Reads a whole list page by page; checks every page's size (PAGE_SIZE, the last one 1…PAGE_SIZE)
 * and result schema. @returns the items' keys in order.
 */
async function walk (t: Test, label: string, list: Lister, entry: typeof LISTS[number], validate: (def: string, value: unknown) => string[]): Promise<string[]> {
  const keys: string[] = []
  let cursor: string | undefined
  for (let page = 0; page < 50; page++) {
    const reply = await list(entry.method, 100 + page, cursor)
    if (reply.result === undefined) throw new Error(`${label} ${entry.method}: ${JSON.stringify(reply)}`)
    const errors = validate(entry.result, reply.result)
    if (errors.length > 0) t.fail(`${label} ${entry.method} page ${page}: schema ${errors.join('; ')}`)
    const items = reply.result[entry.key] as Array<Record<string, string>>
    keys.push(...items.map(item => item[entry.field]))
    cursor = reply.result.nextCursor
    if (cursor === undefined) {
      t.ok(items.length >= 1 && items.length <= PAGE_SIZE, `${label} ${entry.method}: last page holds 1…${PAGE_SIZE} (${items.length})`)
      return keys
    }
    if (items.length !== PAGE_SIZE) t.fail(`${label} ${entry.method}: page ${page} holds ${items.length}, not ${PAGE_SIZE}, yet has a nextCursor`)
    t.type(cursor, 'string')
  }
  throw new Error(`${label} ${entry.method}: no last page after 50`)
}

async function checkAllLists (t: Test, label: string, list: Lister, validate: (def: string, value: unknown) => string[]): Promise<void> {
  for (const entry of LISTS) {
    const keys = await walk(t, label, list, entry, validate)
    t.equal(new Set(keys).size, keys.length, `${label} ${entry.method}: no item twice`)
    t.same([...keys].sort(), EXPECTED[entry.key], `${label} ${entry.method}: the pages make the whole merged list, the paging upstream's in full`)
  }
}

const modernValidate = (def: string, value: unknown): string[] => { const e = modernSchemaErrors(def, value); return e === '' ? [] : [e] }

function daemonListers (target: Target, session: { id: string, revision: string }): Array<[string, Lister, (def: string, value: unknown) => string[]]> {
  return [
    ['modern', async (method, id, cursor) => (await modernRpc(target, id, method, cursor === undefined ? {} : { cursor })).json, modernValidate],
    ['legacy sessionless', async (method, id, cursor) => (await legacyRpc(target, request(id, method, cursor === undefined ? {} : { cursor }))).json,
      (def, value) => legacySchemaErrors('2025-03-26', def, value)],
    [`legacy session ${session.revision}`, async (method, id, cursor) => (await legacyRpc(target, request(id, method, cursor === undefined ? {} : { cursor }), session)).json,
      (def, value) => legacySchemaErrors(session.revision, def, value)]
  ]
}

t.test('paging/catalogue/three-upstreams-one-paging-daemon-both-eras', async t => {
  const log = logPath()
  const servers = { items: { tools: { allow: ['b__item*', 'c__echo'] }, rename: { b__item0: 'first' } } }
  const daemon = await startDaemon(t, { transport: { pageSize: PAGE_SIZE }, upstreams: threeUpstreams(log), servers })
  await untilReady(daemon.base)
  const target = { base: daemon.base }
  for (const [label, list, validate] of daemonListers(target, await legacySession(target, '2025-11-25'))) await checkAllLists(t, label, list, validate)
  // A curated endpoint pages what it exposes (filtered and renamed), its cursors naming the exposed names.
  const curated = { base: daemon.base, path: '/mcp/items' }
  const exposed = ['c__echo', 'first', ...range(ITEMS - 1).map(i => `b__item${i + 1}`)].sort()
  for (const [label, list, validate] of daemonListers(curated, await legacySession(curated, '2025-06-18'))) {
    const keys = await walk(t, `/mcp/items ${label}`, list, LISTS[0], validate)
    t.same([...keys].sort(), exposed, `/mcp/items ${label}: the endpoint's tools, paged`)
  }
  // mcpx followed b's own cursors: each of its lists read page by page (3, 6, then the last).
  for (const { method } of LISTS) {
    const cursors = fixtureLists(log).filter(e => e.method === method).map(e => e.cursor ?? null)
    t.same(cursors.slice(0, 3), [null, 'fixture-page-3', 'fixture-page-6'], `mcpx read upstream b's ${method} by its nextCursor`)
  }
})

t.test('paging/catalogue/three-upstreams-one-paging-mcpx-serve', async t => {
  const log = logPath()
  const serve = spawnServe(t, { config: { transport: { pageSize: PAGE_SIZE }, upstreams: threeUpstreams(log) } })
  let id = 1000
  // Wait (generously: three children starting on a loaded machine) until the merged tools list is whole.
  let seen = 0
  await pollUntil('all three upstreams listed', async () => {
    const reply = await serve.request({ jsonrpc: '2.0', id: id++, method: 'tools/list', params: { _meta: modernMeta() } })
    let count = (reply.result.tools as unknown[]).length
    let cursor = reply.result.nextCursor as string | undefined
    while (cursor !== undefined) {
      const next = await serve.request({ jsonrpc: '2.0', id: id++, method: 'tools/list', params: { cursor, _meta: modernMeta() } })
      count += (next.result.tools as unknown[]).length
      cursor = next.result.nextCursor
    }
    seen = count
    return count === EXPECTED.tools.length
  }, 60_000).catch(err => { throw new Error(`${(err as Error).message}: ${seen} of ${EXPECTED.tools.length} tools listed; stderr ${serve.stderr().slice(-2000)}`) })
  await checkAllLists(t, 'stdio modern', async (method, _id, cursor) => await serve.request({ jsonrpc: '2.0', id: id++, method, params: { ...(cursor === undefined ? {} : { cursor }), _meta: modernMeta() } }), modernValidate)
  const init = await serve.request({ jsonrpc: '2.0', id: id++, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'paging-test', version: '0' } } })
  t.equal(init.result.protocolVersion, '2025-06-18')
  serve.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
  await checkAllLists(t, 'stdio legacy', async (method, _id, cursor) => await serve.request({ jsonrpc: '2.0', id: id++, method, params: cursor === undefined ? {} : { cursor } }),
    (def, value) => legacySchemaErrors('2025-06-18', def, value))
  t.equal(serve.messages.filter(m => m === undefined).length, 0, 'every stdout line is JSON')
})

t.test('paging/cursor/malformed-is-invalid-params', async t => {
  const log = logPath()
  const daemon = await startDaemon(t, { transport: { pageSize: PAGE_SIZE }, upstreams: { b: hostile(log, ['--items', '3']) } })
  await untilReady(daemon.base)
  const target = { base: daemon.base }
  const first = await modernRpc(target, 1, 'tools/list')
  const toolsCursor = first.json.result.nextCursor as string
  t.type(toolsCursor, 'string', 'a first page of 4 out of 9 tools has a cursor')
  const cases: Array<[string, unknown, RegExp]> = [
    ['not base64url', 'bogus!', /^Invalid params: malformed cursor/],
    ['base64url, not JSON', Buffer.from('nope').toString('base64url'), /^Invalid params: malformed cursor/],
    ['JSON, not a cursor', Buffer.from('{"o":1}').toString('base64url'), /^Invalid params: malformed cursor/],
    ['not a string', 42, /^Invalid params: cursor must be a string/],
    ['the tools list\'s cursor on prompts/list', toolsCursor, /^Invalid params: cursor belongs to another list \(tools\), not prompts/]
  ]
  for (const [what, cursor, message] of cases) {
    const method = what.includes('prompts/list') ? 'prompts/list' : 'tools/list'
    const modern = await modernRpc(target, 2, method, { cursor })
    t.equal(modern.status, 400, `modern, ${what}: 400 (seed: every -32602 is 400)`)
    t.equal(modern.json.error.code, -32602, `modern, ${what}: -32602`)
    t.match(modern.json.error.message, message, `modern, ${what}: says why`)
    const legacy = await legacyRpc(target, request(3, method, { cursor }))
    t.equal(legacy.status, 200, `legacy, ${what}: 200`)
    t.same({ code: legacy.json.error.code, id: legacy.json.id }, { code: -32602, id: 3 }, `legacy, ${what}: -32602`)
    t.match(legacy.json.error.message, message)
  }
  t.equal(fixtureLists(log).filter(e => e.cursor !== undefined).length, 0, 'no client cursor ever reaches an upstream')
})

t.test('paging/cursor/across-a-catalogue-change', async t => {
  const log = logPath()
  // One upstream alone: no prefix. Its tools: echo hold big noise stall catalogue item0 item1 item2.
  const daemon = await startDaemon(t, { transport: { pageSize: PAGE_SIZE }, upstreams: { b: hostile(log, ['--items', '3']) } })
  await untilReady(daemon.base)
  const target = { base: daemon.base }
  const names = (reply: Message): string[] => (reply.result.tools as Array<{ name: string }>).map(tool => tool.name)
  // The whole list; a walk that met the change midway (its cursor outdated: -32602) starts over.
  const whole = async (): Promise<string[]> => {
    const out: string[] = []
    let cursor: string | undefined
    do {
      const reply = (await modernRpc(target, 9, 'tools/list', cursor === undefined ? {} : { cursor })).json
      if (reply.error?.code === -32602 && cursor !== undefined) return await whole()
      out.push(...names(reply))
      cursor = reply.result.nextCursor
    } while (cursor !== undefined)
    return out
  }
  for (const era of ['modern', 'legacy'] as const) {
    const list = async (id: number, cursor?: string): Promise<Message> => {
      const params = cursor === undefined ? {} : { cursor }
      return era === 'modern' ? (await modernRpc(target, id, 'tools/list', params)).json : (await legacyRpc(target, request(id, 'tools/list', params))).json
    }
    const before = await whole()
    const page1 = await list(1)
    t.same(names(page1), before.slice(0, PAGE_SIZE), `${era}: the first page`)
    const last = before[PAGE_SIZE - 1]
    // Change the catalogue ahead of the cursor (remove the first tool) and behind it (add one at the end).
    const added = `${era}_added`
    const removed = before[0]
    await modernRpc(target, 2, 'tools/call', { name: 'catalogue', arguments: { remove: [removed], add: [added] } })
    await pollUntil('the change reaches the merged list', async () => { const now = await whole(); return now.includes(added) && !now.includes(removed) })
    const rest: string[] = []
    let cursor: string | undefined = page1.result.nextCursor
    while (cursor !== undefined) {
      const reply = await list(3, cursor)
      t.notOk(reply.error, `${era}: the cursor stays valid across the change`)
      rest.push(...names(reply))
      cursor = reply.result.nextCursor
    }
    const after = await whole()
    t.same(rest, after.slice(after.indexOf(last) + 1), `${era}: the old cursor resumes right after ${last}: nothing skipped, nothing twice, the new tool included`)
    t.ok(rest.includes(added))

    // A cursor whose last item is gone is outdated: -32602, never a silent restart.
    const fresh = await list(4)
    const gone = names(fresh)[PAGE_SIZE - 1]
    await modernRpc(target, 5, 'tools/call', { name: 'catalogue', arguments: { remove: [gone] } })
    await pollUntil('the removal reaches the merged list', async () => !(await whole()).includes(gone))
    const outdated = era === 'modern'
      ? await modernRpc(target, 6, 'tools/list', { cursor: fresh.result.nextCursor })
      : await legacyRpc(target, request(6, 'tools/list', { cursor: fresh.result.nextCursor }))
    t.equal(outdated.status, era === 'modern' ? 400 : 200)
    t.equal(outdated.json.error.code, -32602, `${era}: a cursor whose last item was removed is -32602`)
    t.equal(outdated.json.error.message, 'Invalid params: outdated cursor: the tools list changed and no longer holds the item this cursor resumes after; list again without a cursor')
    t.equal((await list(7)).result.tools.length, PAGE_SIZE, `${era}: listing again without a cursor works`)
  }
})

t.test('paging/catalogue/no-paging-by-default', async t => {
  const log = logPath()
  const upstreams = { b: hostile(log, ['--items', '20', '--page-size', '3']) }
  const daemon = await startDaemon(t, { upstreams })
  await untilReady(daemon.base)
  const target = { base: daemon.base }
  const reply = await modernRpc(target, 1, 'tools/list')
  t.equal(reply.json.result.tools.length, 26, 'pageSize 0: the whole merged list in one answer (the upstream\'s 9 pages merged)')
  t.notOk('nextCursor' in reply.json.result, 'no nextCursor')

  // On the same daemon: a reload (SIGHUP) applies transport.pageSize live.
  await t.test('paging/reload/applies-page-size', async t => reloadAppliesPageSize(t, daemon, upstreams))
})

async function reloadAppliesPageSize (t: Test, daemon: DaemonProcess, upstreams: Record<string, unknown>): Promise<void> {
  const target = { base: daemon.base }
  const address = daemon.base.slice('http://'.length)
  const reload = async (transport: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const since = daemon.lines.length
    writeFileSync(daemon.file + '.tmp', JSON.stringify({ daemon: { address }, transport, upstreams }))
    renameSync(daemon.file + '.tmp', daemon.file)
    daemon.child.kill('SIGHUP')
    return await daemon.waitForLine(line => /^config reload/.test(String(line.msg)), since)
  }
  const paged = await reload({ pageSize: PAGE_SIZE })
  t.match(paged, { msg: /^config reloaded/, restartToApply: [] }, 'applied, not "restart to apply"')
  const page1 = (await modernRpc(target, 2, 'tools/list')).json.result
  t.equal(page1.tools.length, PAGE_SIZE, 'the next list answers a page of the new size')
  t.type(page1.nextCursor, 'string', 'with a cursor')
  t.equal((await legacyRpc(target, request(3, 'tools/list'))).json.result.tools.length, PAGE_SIZE, 'legacy clients too')
  const whole = await reload({ pageSize: 0, maxBodyBytes: 2_000_000 })
  t.match(whole, { msg: /restart to apply transport\.maxBodyBytes$/, restartToApply: ['transport.maxBodyBytes'] }, 'another transport key is named as "restart to apply"; pageSize is not')
  const rest = (await modernRpc(target, 4, 'tools/list', { cursor: page1.nextCursor })).json.result
  t.equal(rest.tools.length, 26 - PAGE_SIZE, 'paging off again: a cursor from before resumes with the whole rest')
  t.notOk('nextCursor' in rest)
  t.equal((await modernRpc(target, 5, 'tools/list')).json.result.tools.length, 26, 'and a fresh list is whole')
}
