/**
 * Scenarios 15–16, in process (docs/policy.md › Policy, Audit): what the 50-rule policy, its rate limit and the audit
 * trail (`arguments: "keys"`, to a file) add to one modern `tools/call` inside the dispatcher,
 * without HTTP and without an upstream process: the real Dispatcher, Policy, MemoryRateLimiter and
 * AuditTrail (asynchronous writes to a temp file), in front of an in-process registry whose callTool answers
 * at once. Both dispatchers run the same calls, alternately, so machine load hits both alike. The
 * HTTP rows 15 and 16 are dominated by load on a shared machine; this is the steadier figure.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { Dispatcher } from '../lib/dispatch/dispatcher.js'
import { compilePolicy, type PolicyConfig } from '../lib/policy/rules.js'
import { MemoryRateLimiter } from '../lib/policy/rate-limit.js'
import { AuditTrail } from '../lib/policy/audit.js'
import { tokenPrincipal } from '../lib/auth/principal.js'
import type { DispatchContext } from '../lib/dispatch/context.js'
import type { JsonRpcRequest } from '../lib/protocol/jsonrpc.js'
import type { UpstreamRegistry } from '../lib/upstreams/contract.js'

/** The figures of the in-process measurement. */
export interface PolicyFigures {
  calls: number
  /** CPU µs (user + system of this process) per call, median of 5 rounds, without policy and audit. */
  offUs: number
  /** The same with the 50-rule policy, its rate limit and audit `keys`. */
  onUs: number
  /** Audit lines written (must be every call on the `on` side). */
  auditLines: number
}

/** The 50 rules: 49 for other tokens (globs, denies, every fifth with a rateLimit), the caller's own last. */
export function fiftyRules (): PolicyConfig {
  const rules: PolicyConfig['rules'] = []
  for (let i = 0; i < 49; i++) {
    rules.push({
      principals: { tokens: [`team-${i}`] },
      allow: { tools: [`team${i}__*`, 'echo'], prompts: ['*'], resources: [`team${i}://*`] },
      deny: { tools: [`team${i}__delete_*`] },
      ...(i % 5 === 0 ? { rateLimit: { calls: 60, per: 60_000 } } : {})
    })
  }
  rules.push({ principals: { tokens: ['bench'] }, allow: { tools: ['echo', 'slow'] }, deny: { tools: ['crash'] }, rateLimit: { calls: 1_000_000, per: 1_000 } })
  return { default: 'deny', rules }
}

/** Measures both dispatchers (see module comment). Never throws but for a failed call (a bench bug). */
export async function policyCost (calls = 50_000): Promise<PolicyFigures> {
  const logger = pino({ level: 'silent' })
  const result = { content: [{ type: 'text', text: 'hello' }] }
  const registry = {
    callTool: async () => result,
    ownerOf: () => ({ upstream: 'fixture', name: 'echo' }),
    capabilities: () => ({})
  } as unknown as UpstreamRegistry
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-bench-policy-'))
  let auditLines = 0
  const audit = new AuditTrail({ file: join(dir, 'audit.jsonl'), arguments: 'keys' }, { logger })
  const record = audit.record.bind(audit)
  audit.record = (event) => { auditLines++; record(event) }
  const serverInfo = { name: 'mcpx', version: 'bench' }
  const off = new Dispatcher({ registry, serverInfo, logger })
  const limiter = new MemoryRateLimiter()
  const on = new Dispatcher({ registry, serverInfo, logger, policy: compilePolicy(fiftyRules()), audit, rateLimiter: limiter })
  const caller = tokenPrincipal('bench')
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} }
  const signal = new AbortController().signal
  const run = async (dispatcher: Dispatcher, n: number): Promise<number> => {
    // CPU time, not wall time: on a loaded machine the process is descheduled for a share of the run.
    const start = process.cpuUsage()
    for (let i = 0; i < n; i++) {
      const request: JsonRpcRequest = { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hello' }, _meta: meta } }
      const ctx: DispatchContext = { era: 'modern', revision: '2026-07-28', clientCapabilities: {}, signal, caller, principal: caller.key }
      const response = await dispatcher.handle(request, ctx)
      if ('error' in response) throw new Error(`bench: policy: the call failed: ${JSON.stringify(response.error)}`)
    }
    const used = process.cpuUsage(start)
    return (used.user + used.system) / n
  }
  await run(off, 5_000) // warm-up (JIT) of both
  await run(on, 5_000)
  auditLines = 0
  const offUs: number[] = []
  const onUs: number[] = []
  for (let round = 0; round < 5; round++) {
    offUs.push(await run(off, calls))
    onUs.push(await run(on, calls))
  }
  // The trail writes asynchronously: the lines of the last round are flushed (and their CPU spent) in close().
  await audit.close()
  await limiter.close()
  off.close()
  on.close()
  rmSync(dir, { recursive: true, force: true })
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[2]
  return { calls, offUs: median(offUs), onUs: median(onUs), auditLines }
}
