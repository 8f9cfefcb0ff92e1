/**
 * Tool search (docs/discovery.md › Tool search) through ONE real daemon process, shared by the cases, in
 * both eras, with five real upstream children: the generated 1,024-tool catalogue
 * (test/fixtures/catalogue-upstream.ts, prefix `gen`), the three reference servers (server-everything,
 * server-memory, server-filesystem on a temp dir) and our echo fixture. Curated endpoints: `catalogue`
 * (search mode over `gen__*`), `catalogue-list` (the same tools in list mode), `reference` (search
 * mode over the three reference servers) and `support` (search mode over the fixture, with a rename,
 * an override, a default and a denied tool); `/mcp` itself is in search mode (top-level `discovery`).
 * The official v1 and v2 clients call through call_tool (a question to the client included), and
 * one case runs `mcpx serve --server support`. Tests are named discovery/<area>/<requirement>.
 */
import t from 'tap'
import { mkdtempSync, readFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client'
import { daemonReady, startDaemon, type DaemonProcess } from '../helpers/daemon.js'
import { everythingCommand, fixtureCommand } from '../helpers/fixture.js'
import { spawnServe } from '../helpers/spawn.js'
import { pollUntil, schemaErrors as legacySchemaErrors } from '../helpers/legacy.js'
import { schemaErrors as modernSchemaErrors } from '../helpers/modern-wire.js'
import { legacyRpc, modernRpc, neutral, request, type RawReply, type Target } from '../helpers/policy.js'
import { GENERATED_GOLDENS, REFERENCE_GOLDENS } from '../helpers/discovery.js'

const CATALOGUE_UPSTREAM = fileURLToPath(new URL('../fixtures/catalogue-upstream.js', import.meta.url))
const MEMORY = fileURLToPath(import.meta.resolve('@modelcontextprotocol/server-memory/dist/index.js'))
const FILESYSTEM = fileURLToPath(import.meta.resolve('@modelcontextprotocol/server-filesystem/dist/index.js'))

const dir = mkdtempSync(join(tmpdir(), 'mcpx-discovery-'))
const AUDIT_FILE = join(dir, 'audit.log')

const SUPPORT = {
  tools: { allow: ['fixture__*'], deny: ['fixture__crash'] },
  rename: { fixture__echo: 'say' },
  override: { fixture__bump: { description: 'Adds one to the shared counter.' } },
  defaults: { fixture__echo: { text: 'default text' } },
  discovery: { mode: 'search' }
}

const CONFIG = {
  upstreams: {
    gen: { command: process.execPath, args: [CATALOGUE_UPSTREAM] },
    everything: everythingCommand(),
    memory: { command: process.execPath, args: [MEMORY], env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') } },
    filesystem: { command: process.execPath, args: [FILESYSTEM, mkdtempSync(join(dir, 'files-'))] },
    fixture: fixtureCommand()
  },
  discovery: { mode: 'search' },
  servers: {
    catalogue: { tools: { allow: ['gen__*'] }, discovery: { mode: 'search', maxResults: 8 } },
    'catalogue-list': { tools: { allow: ['gen__*'] } },
    reference: { tools: { allow: ['everything__*', 'memory__*', 'filesystem__*'] }, discovery: { mode: 'search', maxResults: 5 } },
    support: SUPPORT
  },
  audit: { file: AUDIT_FILE, arguments: 'keys' }
}

/** The one daemon every case shares (none changes what another reads, but the last, which adds a tool). */
let shared: Promise<DaemonProcess> | undefined
async function daemon (): Promise<DaemonProcess> {
  shared ??= (async () => {
    const started = await startDaemon(t, CONFIG)
    await daemonReady(started.base)
    return started
  })()
  return await shared
}

type Era = 'modern' | 'legacy'
const ERAS: readonly Era[] = ['modern', 'legacy']

async function rpc (era: Era, target: Target, id: number, method: string, params: Record<string, unknown> = {}): Promise<RawReply> {
  return era === 'modern' ? await modernRpc(target, id, method, params) : await legacyRpc(target, request(id, method, params))
}

type Entry = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

async function search (era: Era, target: Target, id: number, args: Record<string, unknown>): Promise<Entry[]> {
  const reply = await rpc(era, target, id, 'tools/call', { name: 'search_tools', arguments: args })
  const result = reply.json?.result
  if (result?.structuredContent?.tools === undefined) throw new Error(`not a search_tools result: ${reply.status} ${reply.text}`)
  return result.structuredContent.tools as Entry[]
}

function textOf (result: unknown): string {
  const content = (result as { content?: Array<{ type: string, text?: string }> }).content ?? []
  return content.filter(c => c.type === 'text').map(c => c.text ?? '').join('')
}

t.test('discovery/list/two-meta-tools-in-both-eras', async t => {
  const { base } = await daemon()
  for (const era of ERAS) {
    for (const path of ['/mcp/catalogue', '/mcp/reference', '/mcp']) {
      const reply = await rpc(era, { base, path }, 1, 'tools/list')
      t.same(reply.json.result.tools.map((tool: Entry) => tool.name), ['call_tool', 'search_tools'], `${era} ${path}: exactly the two meta-tools`)
      const errors = era === 'modern' ? modernSchemaErrors('ListToolsResult', reply.json.result) : legacySchemaErrors('2025-03-26', 'ListToolsResult', reply.json.result).join('; ')
      t.equal(errors, '', `${era} ${path}: a valid ListToolsResult`)
    }
    const list = await rpc(era, { base, path: '/mcp/catalogue-list' }, 2, 'tools/list')
    t.equal(list.json.result.tools.length, 1024, `${era}: the same tools in list mode: all 1,024`)
    const prompts = await rpc(era, { base }, 3, 'prompts/list')
    t.ok(prompts.json.result.prompts.some((prompt: Entry) => (prompt.name as string).startsWith('everything__')), `${era}: prompts are unchanged in search mode`)
    const resources = await rpc(era, { base }, 4, 'resources/list')
    t.ok(resources.json.result.resources.length > 0, `${era}: resources too`)
  }
  for (const revision of ['2024-11-05', '2025-06-18', '2025-11-25']) {
    const reply = await rpc('modern', { base, path: '/mcp/catalogue' }, 5, 'tools/list')
    for (const tool of reply.json.result.tools) t.same(legacySchemaErrors(revision, 'Tool', tool), [], `${revision}: ${String(tool.name)} is a valid Tool`)
  }
})

t.test('discovery/golden/generated-catalogue-top-results', async t => {
  const { base } = await daemon()
  const listed = await rpc('modern', { base, path: '/mcp/catalogue-list' }, 1, 'tools/list')
  const byName = new Map<string, Entry>(listed.json.result.tools.map((tool: Entry) => [tool.name, tool]))
  for (const era of ERAS) {
    let id = 10
    for (const golden of GENERATED_GOLDENS) {
      const reply = await rpc(era, { base, path: '/mcp/catalogue' }, id++, 'tools/call', { name: 'search_tools', arguments: { query: golden.query, limit: golden.top.length } })
      const result = reply.json.result
      t.same(result.structuredContent.tools.map((entry: Entry) => entry.name), golden.top, `${era} "${golden.query}"`)
      t.same(JSON.parse(textOf(result)), result.structuredContent, `${era} "${golden.query}": the same list as JSON text`)
      for (const entry of result.structuredContent.tools) {
        const { name, title, description, inputSchema, annotations } = byName.get(entry.name) ?? {}
        t.same(entry, JSON.parse(JSON.stringify({ name, title, description, inputSchema, annotations })), `${era}: ${String(entry.name)} as tools/list shows it`)
      }
    }
    t.equal((await search(era, { base, path: '/mcp/catalogue' }, 30, { query: 'list' })).length, 8, `${era}: no limit: maxResults (8)`)
  }
})

t.test('discovery/golden/reference-servers-top-results', async t => {
  const { base } = await daemon()
  for (const era of ERAS) {
    let id = 1
    for (const golden of REFERENCE_GOLDENS) {
      const found = await search(era, { base, path: '/mcp/reference' }, id++, { query: golden.query, limit: golden.top.length })
      t.same(found.map(entry => entry.name), golden.top, `${era} "${golden.query}"`)
    }
  }
})

t.test('discovery/call/call-tool-answers-as-tools-call', async t => {
  const { base } = await daemon()
  const catalogue = { base, path: '/mcp/catalogue' }
  const support = { base, path: '/mcp/support' }
  for (const era of ERAS) {
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
    const found = await search(era, support, 7, { query: 'counter' })
    t.same(found.map(entry => [entry.name, entry.description]), [['fixture__bump', 'Adds one to the shared counter.']], `${era}: search finds a tool by its override`)
    t.same((await search(era, support, 8, { query: 'echo' })).map(entry => entry.name), ['say'], `${era}: and by its exposed name`)
    // Bad arguments to a meta-tool: a tool error, as a tool answers invalid arguments.
    const badLimit = await rpc(era, support, 9, 'tools/call', { name: 'search_tools', arguments: { query: 'x', limit: 0 } })
    t.match(badLimit.json.result, { content: [{ type: 'text', text: 'Input validation error: Invalid arguments for tool search_tools: limit must be an integer from 1 to 50' }], isError: true }, `${era}: limit 0`)
    const noQuery = await rpc(era, support, 10, 'tools/call', { name: 'search_tools', arguments: {} })
    t.equal(noQuery.json.result.isError, true, `${era}: no query`)
    const noName = await rpc(era, support, 11, 'tools/call', { name: 'call_tool', arguments: { arguments: {} } })
    t.match(noName.json.result, { content: [{ type: 'text', text: 'Input validation error: Invalid arguments for tool call_tool: name must be a string' }], isError: true }, `${era}: call_tool without a name`)
    const badArgs = await rpc(era, support, 12, 'tools/call', { name: 'call_tool', arguments: { name: 'say', arguments: [1] } })
    t.equal(badArgs.json.result.isError, true, `${era}: call_tool with non-object arguments`)
    // A direct call of a tool's exposed name still works (search mode changes what tools/list shows, not what may be called).
    t.equal(textOf((await rpc(era, support, 13, 'tools/call', { name: 'say', arguments: { text: 'direct' } })).json.result), 'direct', `${era}: a direct tools/call`)
  }
})

t.test('discovery/headers/call-tool-needs-no-inner-mcp-param', async t => {
  const { base } = await daemon()
  const support = { base, path: '/mcp/support' }
  // fixture__headers declares x-mcp-header region: a direct modern call with a region must mirror it.
  const direct = await modernRpc(support, 1, 'tools/call', { name: 'fixture__headers', arguments: { region: 'us' } })
  t.equal(direct.status, 400, 'a direct call without Mcp-Param-Region is refused')
  const inner = await modernRpc(support, 2, 'tools/call', { name: 'call_tool', arguments: { name: 'fixture__headers', arguments: { region: 'us' } } })
  t.equal(inner.status, 200, 'Mcp-Name: call_tool, no Mcp-Param-* for the inner tool: accepted')
  t.match(JSON.parse(textOf(inner.json.result)), { region: 'us' }, 'the inner tool got its arguments')
})

t.test('discovery/clients/official-v1-and-v2-clients-search-and-call-with-questions', async t => {
  const { base } = await daemon()
  const answer = { action: 'accept', content: { name: 'Ada' } } as const
  const v1 = new ClientV1({ name: 'discovery-v1', version: '1.0.0' }, { capabilities: { elicitation: {} } })
  v1.setRequestHandler(ElicitRequestSchema, async () => ({ ...answer }))
  await v1.connect(new TransportV1(new URL(`${base}/mcp/support`)))
  t.teardown(async () => { await v1.close() })
  t.same((await v1.listTools()).tools.map(tool => tool.name), ['call_tool', 'search_tools'], 'v1 lists the two meta-tools')
  const v1Found = await v1.callTool({ name: 'search_tools', arguments: { query: 'ask the user a question', limit: 3 } })
  t.ok((v1Found.structuredContent as { tools: Entry[] }).tools.some(entry => entry.name === 'fixture__elicit'), 'v1 finds the elicit tool (its structuredContent matches search_tools\'s outputSchema)')
  t.same(JSON.parse(textOf(await v1.callTool({ name: 'call_tool', arguments: { name: 'fixture__elicit' } }))), answer, 'v1: the inner tool asked the client through call_tool')
  const v1Progress: unknown[] = []
  const slept = await v1.callTool({ name: 'call_tool', arguments: { name: 'fixture__slow', arguments: { ms: 40, steps: 2 } } }, undefined, { onprogress: progress => { v1Progress.push(progress) } })
  t.equal(textOf(slept), 'slept 40', 'v1: the inner tool\'s result')
  t.match(v1Progress, [{ progress: 1, total: 2 }, { progress: 2, total: 2 }], 'v1: the inner tool\'s progress reached the client')

  const v2 = new ClientV2({ name: 'discovery-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: {} } })
  v2.setRequestHandler('elicitation/create', async () => ({ ...answer }))
  await v2.connect(new TransportV2(new URL(`${base}/mcp/support`)))
  t.teardown(async () => { await v2.close() })
  t.equal(v2.getProtocolEra(), 'modern')
  t.same((await v2.listTools()).tools.map(tool => tool.name), ['call_tool', 'search_tools'], 'v2 lists the two meta-tools')
  const v2Found = await v2.callTool({ name: 'search_tools', arguments: { query: 'say' } })
  t.same((v2Found.structuredContent as { tools: Entry[] }).tools.map(entry => entry.name), ['say'], 'v2 finds the renamed echo')
  t.equal(textOf(await v2.callTool({ name: 'call_tool', arguments: { name: 'say', arguments: { text: 'from v2' } } })), 'from v2')
  t.same(JSON.parse(textOf(await v2.callTool({ name: 'call_tool', arguments: { name: 'fixture__elicit' } }))), answer, 'v2 (2026-07-28): the inner tool\'s question went through input_required and back')
  const failed = await v2.callTool({ name: 'call_tool', arguments: { name: 'fixture__fail' } })
  t.same([failed.isError, textOf(failed)], [true, 'it failed\non two lines'], 'v2: the inner tool\'s tool error')
})

t.test('discovery/audit/inner-call-audited-with-via', async t => {
  const { base } = await daemon()
  await rpc('modern', { base, path: '/mcp/support' }, 77_001, 'tools/call', { name: 'call_tool', arguments: { name: 'say', arguments: { text: 'audited' } } })
  const line = await pollUntil('the audit line of the inner call', () => {
    if (!existsSync(AUDIT_FILE)) return undefined
    return readFileSync(AUDIT_FILE, 'utf8').split('\n').filter(l => l !== '').map(l => JSON.parse(l) as Entry).find(l => l.requestId === 77_001)
  }, 20_000)
  t.match(line, { method: 'tools/call', name: 'say', via: 'call_tool', upstream: 'fixture', upstreamName: 'echo', outcome: 'ok', endpoint: '/mcp/support', argumentKeys: ['text'] })
})

t.test('discovery/serve/stdio-server-endpoint-in-search-mode', async t => {
  // One upstream has no prefix unless given one: `fixture` keeps the names SUPPORT's globs use.
  const serve = spawnServe(t, { config: { upstreams: { fixture: { ...fixtureCommand(), prefix: 'fixture' } }, servers: { support: SUPPORT } }, args: ['--server', 'support'] })
  await serve.request({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'discovery-stdio', version: '0' } } }, 60_000)
  serve.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
  const tools = await serve.request({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, 60_000)
  t.same(tools.result.tools.map((tool: Entry) => tool.name), ['call_tool', 'search_tools'], 'mcpx serve --server lists the two meta-tools')
  const found = await pollUntil('the fixture is up', async () => {
    const reply = await serve.request({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'search_tools', arguments: { query: 'echo' } } })
    return reply.result.structuredContent.tools.length > 0 ? reply.result.structuredContent.tools as Entry[] : undefined
  }, 30_000)
  t.same(found.map(entry => entry.name), ['say'])
  const called = await serve.request({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'call_tool', arguments: { name: 'say', arguments: { text: 'over stdio' } } } })
  t.equal(textOf(called.result), 'over stdio')
  t.ok(serve.messages.every(message => message !== undefined), 'stdout carried only JSON-RPC')
})

// Last: it adds a tool to the fixture.
t.test('discovery/fresh/index-follows-list-changed', async t => {
  const { base } = await daemon()
  const support = { base, path: '/mcp/support' }
  t.same(await search('modern', support, 1, { query: 'arrives later' }), [], 'not there yet')
  const added = await rpc('legacy', support, 2, 'tools/call', { name: 'call_tool', arguments: { name: 'fixture__add_tool', arguments: { name: 'arrives_later' } } })
  t.equal(added.json.result?.isError, undefined, 'the fixture added a tool')
  const found = await pollUntil('search finds the new tool', async () => {
    const entries = await search('modern', support, 3, { query: 'arrives later' })
    return entries.length > 0 ? entries : undefined
  }, 20_000)
  t.equal(found[0].name, 'fixture__arrives_later', 'the index follows the upstream\'s list_changed')
  const listed = await rpc('modern', support, 4, 'tools/list')
  t.same(listed.json.result.tools.map((tool: Entry) => tool.name), ['call_tool', 'search_tools'], 'tools/list is still the two meta-tools')
})
