/**
 * Scenario 19, in process (docs/discovery.md › Tool search): what tool search saves and costs, with the
 * real Dispatcher, curated endpoints and index, in front of an in-process registry that holds the
 * generated catalogue (test/fixtures/catalogue.ts, exposed as `gen__<name>`) and answers calls at once.
 *
 * - bytes: the `tools/list` response of the 1,024-tool catalogue on a list-mode endpoint, against the
 *   search endpoint's `tools/list` plus one `search_tools` response (`create invoice`, maxResults 8);
 * - `search_tools` latency over that catalogue through Dispatcher.handle, index warm, p50/p99 (wall
 *   ms per call), and the first search, which builds the index;
 * - index build time for 2,000 generated tools: the first build in this process (cold JIT) and the
 *   median of 5 more (CPU ms); and the in-place update after an upstream's list_changed (new objects
 *   for every tool, 33 of them with a new description), CPU ms;
 * - the cost on `tools/call` for an endpoint that does not use search: the same call on a list-mode
 *   endpoint of a dispatcher with no `discovery` anywhere and of one whose other endpoint and `/mcp`
 *   are in search mode, CPU µs per call, alternating rounds (median of 5). Expected equal: that path
 *   reads one property (`view.search`) in Dispatcher.handle and in the tools/call handler.
 */
import { pino } from 'pino'
import { Dispatcher } from '../lib/dispatch/dispatcher.js'
import { Servers } from '../lib/policy/endpoints.js'
import { ToolIndex, ToolSearch, indexOf } from '../lib/policy/discovery.js'
import type { DispatchContext } from '../lib/dispatch/context.js'
import type { JsonObject, JsonRpcRequest } from '../lib/protocol/jsonrpc.js'
import type { UpstreamRegistry } from '../lib/upstreams/contract.js'
import { generatedTools } from '../test/fixtures/catalogue.js'

/** The figures of scenario 19. */
export interface DiscoveryFigures {
  tools: number
  /** Bytes of the list-mode tools/list response (JSON-RPC, modern shaping). */
  listBytes: number
  /** Bytes of the search endpoint's tools/list response plus one search_tools response. */
  searchBytes: number
  /** search_tools calls measured, and their wall ms per call. */
  searches: number
  p50Ms: number
  p99Ms: number
  /** The first search_tools (it builds the index), ms. */
  firstSearchMs: number
  /** Building the index of 2,000 tools: the first build in this process and the median of 5 more, CPU ms. */
  build2000FirstMs: number
  build2000Ms: number
  /** Updating the 2,000-tool index in place after one upstream's list changed (new objects for all, `changedTools` of them changed), CPU ms, median of 5. */
  update2000Ms: number
  changedTools: number
  /** tools/call on a list-mode endpoint, CPU µs per call: no discovery configured / discovery on other endpoints. */
  callOffUs: number
  callOnUs: number
  calls: number
}

const QUERIES = ['create invoice', 'refund a payment globex', 'weathr forcast', 'dueDate', 'hurricane', 'wonka_chat_delete_reaction', 'umbrella pull request', 'share a file', 'emoji', 'free busy time']

/** Measures scenario 19 (see the module comment). Throws only for a failed call (a bench bug). */
export async function discoveryCost (searches = 2_000, calls = 20_000): Promise<DiscoveryFigures> {
  const logger = pino({ level: 'silent' })
  const catalogue: JsonObject[] = generatedTools(1024).map(tool => ({ ...tool, name: `gen__${tool.name}` }))
  const result = { content: [{ type: 'text', text: 'ok' }] }
  const registry = {
    tools: () => catalogue,
    callTool: async () => result,
    ownerOf: () => ({ upstream: 'gen', name: 'x' }),
    capabilities: () => ({}),
    resourceTemplates: () => [],
    absent: (kind: string, name: string) => ({ code: -32_602, message: `Unknown ${kind}: ${name}` })
  } as unknown as UpstreamRegistry
  const serverInfo = { name: 'mcpx', version: 'bench' }
  const servers = {
    list: { tools: { allow: ['gen__*'] } },
    search: { tools: { allow: ['gen__*'] }, discovery: { mode: 'search' as const, maxResults: 8 } }
  }
  const withSearch = new Dispatcher({ registry, serverInfo, logger, servers: new Servers(servers), discovery: new ToolSearch(8) })
  const without = new Dispatcher({ registry, serverInfo, logger, servers: new Servers({ list: servers.list }) })
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} }
  const signal = new AbortController().signal
  const ctxFor = (endpoint: string): DispatchContext => ({ era: 'modern', revision: '2026-07-28', clientCapabilities: {}, signal, endpoint })
  const ask = async (dispatcher: Dispatcher, endpoint: string, id: number, method: string, params: JsonObject): Promise<string> => {
    const request: JsonRpcRequest = { jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } }
    const response = await dispatcher.handle(request, ctxFor(endpoint))
    if ('error' in response || (response.result as JsonObject).isError === true) throw new Error(`bench: discovery: ${method} failed: ${JSON.stringify(response)}`)
    return JSON.stringify(response)
  }

  // Bytes.
  const listBytes = Buffer.byteLength(await ask(withSearch, 'list', 1, 'tools/list', {}))
  const metaList = await ask(withSearch, 'search', 2, 'tools/list', {})
  const t0 = performance.now()
  const oneSearch = await ask(withSearch, 'search', 3, 'tools/call', { name: 'search_tools', arguments: { query: 'create invoice' } })
  const firstSearchMs = performance.now() - t0
  const searchBytes = Buffer.byteLength(metaList) + Buffer.byteLength(oneSearch)

  // search_tools latency, index warm.
  for (let i = 0; i < 200; i++) await ask(withSearch, 'search', i, 'tools/call', { name: 'search_tools', arguments: { query: QUERIES[i % QUERIES.length] } })
  const times: number[] = []
  for (let i = 0; i < searches; i++) {
    const start = performance.now()
    await ask(withSearch, 'search', i, 'tools/call', { name: 'search_tools', arguments: { query: QUERIES[i % QUERIES.length] } })
    times.push(performance.now() - start)
  }
  times.sort((a, b) => a - b)

  // Index build, 2,000 tools.
  const big: JsonObject[] = generatedTools(2000).map(tool => ({ ...tool, name: `gen__${tool.name}` }))
  // CPU time, not wall time: on a loaded machine the process is descheduled for a share of the build.
  const cpuMs = (build: () => unknown): number => {
    const begin = process.cpuUsage()
    build()
    const used = process.cpuUsage(begin)
    return (used.user + used.system) / 1000
  }
  const build2000FirstMs = cpuMs(() => new ToolIndex(big))
  const builds: number[] = []
  for (let i = 0; i < 5; i++) builds.push(cpuMs(() => new ToolIndex(big)))
  builds.sort((a, b) => a - b)
  // An upstream's list_changed: the registry merges anew (new objects for every tool); 33 tools changed.
  const changedTools = big.filter((_, i) => i % 62 === 0).length
  const updates: number[] = []
  for (let round = 0; round < 5; round++) {
    const lineage = { policy: {}, server: {} }
    indexOf(big, lineage)
    const next = big.map((tool, i) => i % 62 === 0 ? { ...tool, description: `${String(tool.description)} (revised ${round})` } : { ...tool })
    const begin = process.cpuUsage()
    const updated = indexOf(next, lineage)
    const used = process.cpuUsage(begin)
    if (updated.list !== next) throw new Error('bench: discovery: the index was not updated')
    updates.push((used.user + used.system) / 1000)
  }

  // tools/call on the list-mode endpoint, with and without discovery elsewhere.
  const run = async (dispatcher: Dispatcher, n: number): Promise<number> => {
    // CPU time, not wall time: on a loaded machine the process is descheduled for a share of the run.
    const begin = process.cpuUsage()
    for (let i = 0; i < n; i++) await ask(dispatcher, 'list', i, 'tools/call', { name: 'gen__acme_billing_get_invoice', arguments: { id: 'x' } })
    const used = process.cpuUsage(begin)
    return (used.user + used.system) / n
  }
  await run(without, 2_000)
  await run(withSearch, 2_000)
  const offUs: number[] = []
  const onUs: number[] = []
  for (let round = 0; round < 5; round++) {
    offUs.push(await run(without, calls))
    onUs.push(await run(withSearch, calls))
  }
  withSearch.close()
  without.close()
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[2]
  return {
    tools: catalogue.length,
    listBytes,
    searchBytes,
    searches,
    p50Ms: times[Math.floor(times.length * 0.5)],
    p99Ms: times[Math.min(times.length - 1, Math.floor(times.length * 0.99))],
    firstSearchMs,
    build2000FirstMs,
    build2000Ms: builds[2],
    update2000Ms: median(updates),
    changedTools,
    callOffUs: median(offUs),
    callOnUs: median(onUs),
    calls
  }
}
