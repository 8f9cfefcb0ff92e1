/**
 * The operator commands' work (docs/operating.md › Command-line helpers): `mcpx check` probes every upstream,
 * `mcpx tools` lists the merged catalogue, `mcpx call` makes one tool call. Each builds the same
 * registry the daemon and `mcpx serve` build (lib/upstreams/registry.ts, with mcpx's own upstream
 * credentials), waits a bounded time for the upstreams' first attempt, and closes it (every child
 * reaped) before returning. Pure of Fastify; nothing here writes to stdout (cli.ts prints).
 */
import type { McpxConfig } from '../config/types.js'
import type { Logger } from '../telemetry/log.js'
import { createRegistry, startUpstreams } from '../upstreams/registry.js'
import { createUpstreamHeaderProvider } from '../upstreams/credentials.js'
import { redactText, redactUrl } from '../base/redact.js'
import type { JsonObject } from '../protocol/jsonrpc.js'
import type { UpstreamConfig } from '../upstreams/config.js'
import type { UpstreamRegistry } from '../upstreams/contract.js'

/** Default bound of the wait for the upstreams' first attempt, ms (the daemon waits 5 s; a probe may wait longer). */
export const PROBE_WAIT_MS = 15_000

/** One upstream as `mcpx check` found it. */
export interface ProbeRow {
  name: string
  /** `stdio` or `http`. */
  transport: 'stdio' | 'http'
  /** The command (stdio) or the URL, redacted (lib/base/redact.ts). */
  target: string
  /** `ready`, or what it was when the wait ended (`down`, `connecting`). */
  state: string
  era?: string
  revision?: string
  tools: number
  prompts: number
  resources: number
  resourceTemplates: number
  /** Why it is not ready (redacted), when it is not. */
  error?: string
}

/** What `mcpx check` reports. */
export interface ProbeReport {
  rows: ProbeRow[]
  /** Resource URIs listed by more than one upstream (the first in config order keeps each; docs/upstreams.md › Names and collisions). */
  duplicateUris: Array<{ uri: string, upstreams: string[] }>
  /** true when every upstream is ready. */
  ok: boolean
}

function registryFor (upstreams: Record<string, UpstreamConfig>, config: McpxConfig, logger: Logger): UpstreamRegistry {
  const headerProvider = createUpstreamHeaderProvider(upstreams, logger)
  return createRegistry(upstreams, { logger, defaultTimeoutMs: config.upstreamTimeout, ...(headerProvider !== undefined ? { headerProvider } : {}) })
}

/** The command line or redacted URL of an upstream's config. Never throws. */
export function upstreamTarget (upstream: UpstreamConfig): string {
  return 'command' in upstream ? [upstream.command, ...(upstream.args ?? [])].join(' ') : redactUrl(upstream.url)
}

/**
 * Probes every configured upstream on its own (connect, era and revision, list counts), in
 * parallel, each waiting at most `waitMs` for its first attempt.
 * @param waitMs longest wait for one upstream, ms (default {@link PROBE_WAIT_MS})
 * @returns one row per upstream in config order, the duplicate resource URIs, and whether all are ready. Never rejects.
 */
export async function probeUpstreams (config: McpxConfig, logger: Logger, waitMs = PROBE_WAIT_MS): Promise<ProbeReport> {
  const entries = Object.entries(config.upstreams)
  const probed = await Promise.all(entries.map(async ([name, upstream]) => {
    const registry = registryFor({ [name]: upstream }, config, logger)
    try {
      await startUpstreams(registry, logger, waitMs)
      const status = registry.status()[0]
      const ready = status.state === 'ready'
      const row: ProbeRow = {
        name,
        transport: 'command' in upstream ? 'stdio' : 'http',
        target: upstreamTarget(upstream),
        state: status.state,
        ...(status.era !== undefined ? { era: status.era } : {}),
        ...(status.revision !== undefined ? { revision: status.revision } : {}),
        tools: registry.tools().length,
        prompts: registry.prompts().length,
        resources: registry.resources().length,
        resourceTemplates: registry.resourceTemplates().length
      }
      if (!ready) row.error = redactText(status.lastError ?? `still ${status.state} after ${waitMs} ms`)
      const uris = registry.resources().map(item => item.uri).filter((uri): uri is string => typeof uri === 'string')
      return { row, uris }
    } finally {
      await registry.close()
    }
  }))
  const owners = new Map<string, string[]>()
  for (const { row, uris } of probed) for (const uri of new Set(uris)) owners.set(uri, [...(owners.get(uri) ?? []), row.name])
  const duplicateUris = [...owners].filter(([, names]) => names.length > 1).map(([uri, upstreams]) => ({ uri, upstreams }))
  const rows = probed.map(p => p.row)
  return { rows, duplicateUris, ok: rows.every(row => row.state === 'ready') }
}

/**
 * Runs `work` against the merged registry of every configured upstream (names prefixed as a client
 * sees them), after waiting at most `waitMs` for their first attempt; closes it afterwards.
 * @returns what `work` returned, and the upstreams that were not ready when it ran
 * @throws whatever `work` throws (the registry is closed first)
 */
export async function withCatalogue<T> (config: McpxConfig, logger: Logger, work: (registry: UpstreamRegistry) => Promise<T>, waitMs = PROBE_WAIT_MS): Promise<{ value: T, notReady: Array<{ name: string, state: string, error?: string }> }> {
  const registry = registryFor(config.upstreams, config, logger)
  try {
    await startUpstreams(registry, logger, waitMs)
    const notReady = registry.status().filter(s => s.state !== 'ready').map(s => ({ name: s.name, state: s.state, ...(s.lastError !== undefined ? { error: redactText(s.lastError) } : {}) }))
    return { value: await work(registry), notReady }
  } finally {
    await registry.close()
  }
}

/**
 * Makes one tool call through the merged registry.
 * @param name the tool's downstream (prefixed) name
 * @param args its arguments (a JSON object)
 * @param timeoutMs bound of the call, ms
 * @returns the upstream's result, verbatim
 * @throws UpstreamRpcError: -32602 for an unknown tool, the upstream's error otherwise, a timeout past `timeoutMs`
 */
export async function callOnce (registry: UpstreamRegistry, name: string, args: JsonObject | undefined, timeoutMs: number): Promise<JsonObject> {
  return await registry.callTool(name, args, { signal: AbortSignal.timeout(timeoutMs) })
}
