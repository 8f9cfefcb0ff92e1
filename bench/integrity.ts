/**
 * Scenario 24, in process (docs/policy.md › Integrity): what pinned definitions (quarantine) cost a
 * `tools/list` and a `tools/call`, against pinning off. Two real registries, each with its own echo
 * fixture child (stdio), and two real Dispatchers; one registry has the integrity gate (memory
 * store), the other none. Both run the same requests, alternately, round by round, so machine load
 * hits both alike; CPU µs of this process per request (the fixture's CPU is its own). Pinning judges
 * at each rebuild of a list (a list_changed, a reload, a re-list), never per request: the third
 * figure is what one rebuild of the three lists costs with the gate (hashes cached per item) and without.
 *
 * Standalone: `node dist/bench/integrity.js [requests]` (default 2000 per round, 5 rounds).
 */
import { pino } from 'pino'
import { Dispatcher } from '../lib/dispatch/dispatcher.js'
import { createRegistry } from '../lib/upstreams/registry.js'
import { Integrity } from '../lib/policy/integrity.js'
import { MemoryPinStore } from '../lib/policy/pin-store.js'
import type { DispatchContext } from '../lib/dispatch/context.js'
import type { JsonRpcRequest } from '../lib/protocol/jsonrpc.js'
import { fileURLToPath } from 'node:url'

/** The figures of the in-process measurement (CPU µs per request, median of 5 rounds). */
export interface IntegrityFigures {
  requests: number
  listOffUs: number
  listOnUs: number
  callOffUs: number
  callOnUs: number
  /** CPU µs per rebuild of the three lists (tools, prompts, templates), without and with the gate. */
  rebuildOffUs: number
  rebuildOnUs: number
}

const FIXTURE = fileURLToPath(new URL('../test/fixtures/echo-upstream.js', import.meta.url))

/** Measures (see module comment). Throws when a request fails (a bench bug). */
export async function integrityCost (requests = 2_000): Promise<IntegrityFigures> {
  const logger = pino({ level: 'silent' })
  const upstreams = { fixture: { command: process.execPath, args: [FIXTURE], env: { FIXTURE_INTEGRITY: '1' } } }
  const off = createRegistry(upstreams, { logger, defaultTimeoutMs: 30_000 })
  const on = createRegistry(upstreams, { logger, defaultTimeoutMs: 30_000 })
  await Promise.all([off.start(), on.start()])
  const integrity = new Integrity({ logger, store: new MemoryPinStore(), modes: { pin: 'quarantine', upstreams: {} } })
  on.setCatalogueGate?.(integrity)
  const serverInfo = { name: 'mcpx', version: 'bench' }
  const dispatchers = { off: new Dispatcher({ registry: off, serverInfo, logger }), on: new Dispatcher({ registry: on, serverInfo, logger }) }
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} }
  const signal = new AbortController().signal
  const ctx: DispatchContext = { era: 'modern', revision: '2026-07-28', clientCapabilities: {}, signal }
  const run = async (dispatcher: Dispatcher, method: 'tools/list' | 'tools/call', n: number): Promise<number> => {
    const start = process.cpuUsage()
    for (let i = 0; i < n; i++) {
      const params = method === 'tools/call' ? { name: 'echo', arguments: { text: 'hello' }, _meta: meta } : { _meta: meta }
      const request: JsonRpcRequest = { jsonrpc: '2.0', id: i, method, params }
      const response = await dispatcher.handle(request, ctx)
      if ('error' in response) throw new Error(`bench: integrity: ${method} failed: ${JSON.stringify(response.error)}`)
    }
    const used = process.cpuUsage(start)
    return (used.user + used.system) / n
  }
  const rebuilds = (which: 'off' | 'on', n: number): number => {
    const start = process.cpuUsage()
    for (let i = 0; i < n; i++) {
      if (which === 'on') integrity.changed?.()
      else off.setCatalogueGate?.(undefined)
    }
    const used = process.cpuUsage(start)
    return (used.user + used.system) / n
  }
  for (const method of ['tools/list', 'tools/call'] as const) { await run(dispatchers.off, method, 200); await run(dispatchers.on, method, 200) } // warm-up
  const figures: Record<string, number[]> = { listOff: [], listOn: [], callOff: [], callOn: [], rebuildOff: [], rebuildOn: [] }
  for (let round = 0; round < 5; round++) {
    figures.listOff.push(await run(dispatchers.off, 'tools/list', requests))
    figures.listOn.push(await run(dispatchers.on, 'tools/list', requests))
    figures.callOff.push(await run(dispatchers.off, 'tools/call', requests))
    figures.callOn.push(await run(dispatchers.on, 'tools/call', requests))
    figures.rebuildOff.push(rebuilds('off', 200))
    figures.rebuildOn.push(rebuilds('on', 200))
  }
  if (!on.tools().some(tool => tool.name === 'mutable')) throw new Error('bench: integrity: the gate hid an unchanged tool')
  dispatchers.off.close()
  dispatchers.on.close()
  await integrity.close()
  await Promise.all([off.close(), on.close()])
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[2]
  return {
    requests,
    listOffUs: median(figures.listOff),
    listOnUs: median(figures.listOn),
    callOffUs: median(figures.callOff),
    callOnUs: median(figures.callOn),
    rebuildOffUs: median(figures.rebuildOff),
    rebuildOnUs: median(figures.rebuildOn)
  }
}

/** One line of the report. */
export function integrityLine (f: IntegrityFigures): string {
  const fmt = (value: number): string => value.toFixed(1)
  return `integrity in process (24; quarantine, memory store, fixture over stdio; ${f.requests} requests × 5 rounds, alternating, median CPU µs of mcpx's side): ` +
    `tools/list ${fmt(f.listOffUs)} off, ${fmt(f.listOnUs)} on; tools/call ${fmt(f.callOffUs)} off, ${fmt(f.callOnUs)} on; ` +
    `one rebuild of the three lists ${fmt(f.rebuildOffUs)} off, ${fmt(f.rebuildOnUs)} on`
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  integrityCost(Number(process.argv[2] ?? 2_000)).then(figures => {
    process.stdout.write(integrityLine(figures) + '\n')
    process.exit(0)
  }, (err: unknown) => { process.stderr.write(`${(err as Error)?.stack ?? String(err)}\n`); process.exit(1) })
}
