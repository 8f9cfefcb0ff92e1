#!/usr/bin/env node
/**
 * The `mcpx` command (README › Commands; docs/operating.md › Command-line helpers):
 *   mcpx daemon [--config F]           serve Streamable HTTP at /mcp on daemon.address
 *   mcpx serve  [--config F]           serve MCP over stdio (stdout carries only MCP; logs go to stderr)
 *   mcpx check  [--config F]           validate the config and probe every upstream
 *   mcpx tools  [--config F] [--json]  print the merged tool catalogue a client would see
 *   mcpx call NAME [--args JSON]       make one tool call through the configured upstreams
 *   mcpx integrity list|approve|reject list and decide changed definitions of pinned upstreams
 *   mcpx revoke PRINCIPAL [--upstream U] revoke a principal's upstream grants on the running daemon
 * Config resolution: --config, else MCPX_CONFIG, else ./mcpx.config.json, else the embedded default.
 *
 * Arguments are parsed by `node:util` parseArgs in strict mode (no dependency; Node ≥ 20 ships it):
 * every command has `--help`, and an unknown flag or a missing value is a one-line error plus the
 * command's usage on stderr, exit 2. check/tools/call print their answer on stdout and log to
 * stderr; `serve` writes nothing but MCP frames on stdout.
 */
// First: holds one process.nextTick entry before any other module loads (lib/base/tick-shape.ts).
import './lib/base/tick-shape-hold.js'
import { parseArgs } from 'node:util'
import { resolveConfig } from './lib/config/load.js'
import { parseDuration } from './lib/base/duration.js'
import type { McpxConfig } from './lib/config/types.js'
import { McpxError } from './lib/base/errors.js'
import { disablePretenuring } from './lib/base/pretenuring.js'
import type { CuratedServer } from './lib/policy/endpoints.js'

/** Exit code of a usage error (bad flag, missing argument). */
const USAGE_EXIT = 2

type OptionSpec = { type: 'string' | 'boolean', short?: string, help: string, value?: string }

const COMMON: Record<string, OptionSpec> = {
  config: { type: 'string', short: 'c', value: 'FILE', help: 'config file (else MCPX_CONFIG, else ./mcpx.config.json, else the embedded default)' },
  'log-level': { type: 'string', value: 'LEVEL', help: 'trace, debug, info, warn, error, fatal or silent (else MCPX_LOG_LEVEL)' },
  help: { type: 'boolean', short: 'h', help: 'show this help' }
}
const LOG_FORMAT: Record<string, OptionSpec> = {
  'log-format': { type: 'string', value: 'json|pretty', help: 'log line format (else MCPX_LOG_FORMAT; default pretty on a terminal, else json)' }
}
const WAIT: Record<string, OptionSpec> = {
  timeout: { type: 'string', value: 'DURATION', help: 'longest wait for the upstreams, and for a call (default 15s)' }
}

interface Command {
  summary: string
  usage: string
  options: Record<string, OptionSpec>
  positionals: number
}

const COMMANDS: Record<string, Command> = {
  daemon: {
    summary: 'serve Streamable HTTP at /mcp on daemon.address (SIGHUP reloads the config)',
    usage: 'mcpx daemon [options]',
    options: { ...COMMON, ...LOG_FORMAT, watch: { type: 'boolean', help: 'reload the config when its file changes' } },
    positionals: 0
  },
  serve: { summary: 'serve MCP over stdio (stdout carries only MCP; logs go to stderr; SIGHUP reloads the config)', usage: 'mcpx serve [options]', options: { ...COMMON, ...LOG_FORMAT, server: { type: 'string', value: 'NAME', help: 'serve one curated endpoint of config.servers; an unknown name exits 2' } }, positionals: 0 },
  check: {
    summary: 'validate the config and probe every upstream (exit 1 if any fails)',
    usage: 'mcpx check [options]',
    options: { ...COMMON, ...WAIT, json: { type: 'boolean', help: 'print the report as JSON' } },
    positionals: 0
  },
  tools: {
    summary: 'print the merged tool catalogue a client would see',
    usage: 'mcpx tools [options]',
    options: {
      ...COMMON,
      ...WAIT,
      server: { type: 'string', value: 'NAME', help: 'the catalogue of one curated endpoint of config.servers, as its clients list it; an unknown name exits 2' },
      json: { type: 'boolean', help: 'print the tools as JSON (the tools/list `tools` array)' }
    },
    positionals: 0
  },
  call: {
    summary: 'make one tool call through the configured upstreams and print its result',
    usage: 'mcpx call NAME [options]',
    options: { ...COMMON, ...WAIT, args: { type: 'string', value: 'JSON', help: 'the tool\'s arguments, a JSON object (default {})' } },
    positionals: 1
  },
  integrity: {
    summary: 'list, approve or reject changed definitions of pinned upstreams (the daemon\'s admin API, or a store file)',
    usage: 'mcpx integrity list | approve UPSTREAM NAME | reject UPSTREAM NAME [options]',
    options: {
      ...COMMON,
      url: { type: 'string', value: 'URL', help: 'the daemon (default http://<daemon.address>); the admin token is read from MCPX_ADMIN_TOKEN' },
      store: { type: 'string', value: 'FILE', help: 'work on this pin store file instead of a daemon (mcpx serve watches it)' },
      kind: { type: 'string', value: 'KIND', help: 'tool, prompt or template (default tool)' },
      hash: { type: 'string', value: 'SHA256', help: 'the definition decided on (default: the one waiting now, printed)' },
      json: { type: 'boolean', help: 'print the answer as JSON' }
    },
    positionals: -1
  },
  revoke: {
    summary: 'revoke a principal\'s grants to oauth-user upstreams on the running daemon (DELETE /admin/grants; exit 1 if it held none)',
    usage: 'mcpx revoke PRINCIPAL [options]',
    options: {
      ...COMMON,
      upstream: { type: 'string', value: 'NAME', help: 'only its grant for this upstream (default: all of its grants)' },
      url: { type: 'string', value: 'URL', help: 'the daemon (default http://<daemon.address>, a wildcard address read as loopback)' }
    },
    positionals: 1
  }
}

function globalUsage (): string {
  const width = Math.max(...Object.keys(COMMANDS).map(n => n.length))
  return ['usage: mcpx <command> [options]', '', 'commands:',
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`),
    '', 'Run `mcpx <command> --help` for its options.'].join('\n') + '\n'
}

function commandUsage (name: string): string {
  const command = COMMANDS[name]
  const flags = Object.entries(command.options).map(([flag, o]) => [`${o.short !== undefined ? `-${o.short}, ` : '    '}--${flag}${o.value !== undefined ? ` ${o.value}` : ''}`, o.help])
  const width = Math.max(...flags.map(([f]) => f.length))
  return [`usage: ${command.usage}`, '', command.summary, '', 'options:', ...flags.map(([f, h]) => `  ${f.padEnd(width)}  ${h}`)].join('\n') + '\n'
}

/** A usage error: printed with the command's usage, exit 2. */
class UsageError extends Error {}

/** A plain text table, columns padded to their widest cell. */
export function formatTable (headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map(r => (r[i] ?? '').length)))
  const line = (cells: string[]): string => cells.map((c, i) => i === cells.length - 1 ? c : c.padEnd(widths[i])).join('  ').trimEnd()
  return [line(headers), ...rows.map(line)].join('\n') + '\n'
}

function waitMs (value: string | undefined): number {
  if (value === undefined) return 15_000
  return parseDuration(value, '--timeout')
}

async function commandLogger (values: Record<string, unknown>): Promise<import('./lib/telemetry/log.js').Logger> {
  const { createLogger } = await import('./lib/telemetry/log.js')
  // check/tools/call answer on stdout; their log (upstream children's stderr included) goes to stderr, quiet by default.
  return createLogger('stdio', { level: (values['log-level'] as string | undefined) ?? (process.env.MCPX_LOG_LEVEL || undefined) ?? 'error', format: values['log-format'] as string | undefined })
}

async function check (config: McpxConfig, values: Record<string, unknown>): Promise<number> {
  const { probeUpstreams } = await import('./lib/ops/probe.js')
  const report = await probeUpstreams(config, await commandLogger(values), waitMs(values.timeout as string | undefined))
  if (values.json === true) {
    process.stdout.write(JSON.stringify(report, null, 2) + '\n')
  } else {
    process.stdout.write(formatTable(['UPSTREAM', 'STATE', 'ERA', 'REVISION', 'TOOLS', 'PROMPTS', 'RESOURCES', 'TARGET'],
      report.rows.map(r => [r.name, r.state, r.era ?? '-', r.revision ?? '-', String(r.tools), String(r.prompts), String(r.resources + r.resourceTemplates), r.target])))
    for (const d of report.duplicateUris) process.stdout.write(`duplicate resource URI ${d.uri}: listed by ${d.upstreams.join(', ')} (${d.upstreams[0]} keeps it)\n`)
    if (report.rows.length === 0) process.stdout.write('no upstreams configured\n')
  }
  for (const r of report.rows) if (r.error !== undefined) process.stderr.write(`mcpx check: upstream ${r.name} is ${r.state}: ${r.error}\n`)
  return report.ok ? 0 : 1
}

async function tools (config: McpxConfig, values: Record<string, unknown>): Promise<number> {
  let server: CuratedServer | undefined
  if (values.server !== undefined) {
    // One curated endpoint's catalogue: filtered, renamed, overridden, defaults dropped
    // from `required`, as its clients list it before any per-caller policy.
    const name = values.server as string
    if (config.servers === undefined) throw new UsageError(`--server ${JSON.stringify(name)}: this config has no \`servers\` (curated endpoints); drop --server to list the whole catalogue`)
    const { Servers } = await import('./lib/policy/endpoints.js')
    server = new Servers(config.servers).get(name)
    if (server === undefined) throw new UsageError(`--server ${JSON.stringify(name)}: no such curated endpoint; config.servers has ${Object.keys(config.servers).map(n => JSON.stringify(n)).join(', ') || 'none'}`)
  }
  const { withCatalogue } = await import('./lib/ops/probe.js')
  const { value: list, notReady } = await withCatalogue(config, await commandLogger(values), async registry => server === undefined ? registry.tools() : server.exposeTools(registry.tools()), waitMs(values.timeout as string | undefined))
  if (values.json === true) process.stdout.write(JSON.stringify(list, null, 2) + '\n')
  else {
    process.stdout.write(formatTable(['TOOL', 'DESCRIPTION'], list.map(t => {
      const description = typeof t.description === 'string' ? t.description.split('\n')[0] : ''
      return [String(t.name), description.length > 100 ? description.slice(0, 99) + '…' : description]
    })))
  }
  for (const u of notReady) process.stderr.write(`mcpx tools: upstream ${u.name} is ${u.state}${u.error !== undefined ? ` (${u.error})` : ''}: its tools are missing, as a client would see now\n`)
  return 0
}

async function call (config: McpxConfig, values: Record<string, unknown>, name: string): Promise<number> {
  let args: unknown = {}
  if (values.args !== undefined) {
    try { args = JSON.parse(values.args as string) } catch (err) { throw new UsageError(`--args is not JSON: ${(err as Error).message}`) }
    if (args === null || typeof args !== 'object' || Array.isArray(args)) throw new UsageError('--args must be a JSON object')
  }
  const { withCatalogue, callOnce } = await import('./lib/ops/probe.js')
  const timeout = waitMs(values.timeout as string | undefined)
  try {
    const { value: result } = await withCatalogue(config, await commandLogger(values), async registry => await callOnce(registry, name, args as Record<string, unknown>, timeout), timeout)
    process.stdout.write(JSON.stringify(result, null, 2) + '\n')
    if (result.isError === true) { process.stderr.write(`mcpx call: ${name} returned a tool error (isError: true)\n`); return 1 }
    return 0
  } catch (err) {
    const { code, message } = err as { code?: unknown, message?: string }
    process.stderr.write(`mcpx call: ${name} failed: ${typeof code === 'number' ? `${code} ` : ''}${message ?? String(err)}\n`)
    return 1
  }
}

/** One entry of GET /admin/integrity (lib/policy/integrity.ts IntegrityEntry), as the CLI prints it. */
interface IntegrityRow { upstream: string, kind: string, name: string, state: string, mode?: string, hidden?: boolean, hash: string, renamedFrom?: string, shadows?: Array<{ upstream: string, by: string }>, pinned?: { hash: string } }

async function integrity (config: McpxConfig, values: Record<string, unknown>, positionals: string[]): Promise<number> {
  const [action, upstream, item] = positionals
  if (action === 'list' ? positionals.length !== 1 : !((action === 'approve' || action === 'reject') && positionals.length === 3)) {
    throw new UsageError('expects `list`, `approve UPSTREAM NAME` or `reject UPSTREAM NAME`')
  }
  const kind = (values.kind as string | undefined) ?? 'tool'
  if (!['tool', 'prompt', 'template'].includes(kind)) throw new UsageError(`--kind ${JSON.stringify(kind)}: must be tool, prompt or template`)
  const store = values.store as string | undefined
  const { integrityOffline, integrityOnline } = await import('./lib/ops/integrity-cli.js')
  const answer = store !== undefined
    ? await integrityOffline(store, config, { action, upstream, kind, name: item, hash: values.hash as string | undefined })
    : await integrityOnline(values.url as string | undefined ?? daemonUrl(config.daemon.address), process.env.MCPX_ADMIN_TOKEN, { action, upstream, kind, name: item, hash: values.hash as string | undefined })
  if (answer.error !== undefined) { process.stderr.write(`mcpx integrity: ${answer.error}\n`); return 1 }
  if (values.json === true) process.stdout.write(JSON.stringify(answer.body, null, 2) + '\n')
  else if (action === 'list') {
    const rows = (answer.body as { entries: IntegrityRow[] }).entries
    process.stdout.write(formatTable(['UPSTREAM', 'KIND', 'NAME', 'STATE', 'HIDDEN', 'HASH', 'NOTE'], rows.map(r => [r.upstream, r.kind, r.name, r.state, r.hidden === true ? 'yes' : 'no', r.hash.slice(0, 16),
      [r.renamedFrom !== undefined ? `renamed from ${r.renamedFrom}` : '', r.pinned !== undefined ? `pinned ${r.pinned.hash.slice(0, 16)}` : '', ...(r.shadows ?? []).map(s => `copies the ${s.by} of ${s.upstream}`)].filter(n => n !== '').join('; ')])))
  } else {
    const body = answer.body as { status: string, hash: string }
    process.stdout.write(`${body.status} ${kind} ${item} of upstream ${upstream}: ${body.hash}\n`)
  }
  return 0
}

/** The daemon's base URL from daemon.address (a wildcard bind is reached on loopback). */
function daemonUrl (address: string): string {
  const host = address.replace(/^0\.0\.0\.0:/, '127.0.0.1:').replace(/^\[::\]:/, '[::1]:')
  return `http://${host}`
}

/**
 * `mcpx revoke PRINCIPAL`: asks the running daemon to revoke that principal's grants
 * (docs/upstreams.md › Tokens: the vault, refresh and revocation), with the config's first admin
 * token (admin.tokens, tokensFile or tokensEnv), or MCPX_ADMIN_TOKEN. Prints what went.
 * @returns 0 when a grant went, 1 when it held none or the daemon refused (its answer on stderr)
 */
async function revoke (config: McpxConfig, values: Record<string, unknown>, principal: string): Promise<number> {
  const { loadAdminTokens } = await import('./lib/auth/tokens.js')
  const token = process.env.MCPX_ADMIN_TOKEN ?? loadAdminTokens(config.admin)[0]
  if (token === undefined) throw new UsageError('needs an admin token: admin.tokens in the config, or MCPX_ADMIN_TOKEN')
  const address = config.daemon.address.replace(/^0\.0\.0\.0:/, '127.0.0.1:').replace(/^\[::\]:/, '[::1]:')
  const base = (values.url as string | undefined) ?? `http://${address}`
  const query = new URLSearchParams({ principal, ...(values.upstream !== undefined ? { upstream: values.upstream as string } : {}) })
  let response: Response
  try {
    response = await fetch(`${base}/admin/grants?${query.toString()}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(15_000) })
  } catch (err) {
    process.stderr.write(`mcpx revoke: cannot reach the daemon at ${base}: ${(err as Error).message}\n`)
    return 1
  }
  const body = await response.json().catch(() => ({})) as { revoked?: Array<{ principal: string, upstream: string }>, error?: string }
  if (response.status === 200 && body.revoked !== undefined) {
    for (const grant of body.revoked) process.stdout.write(`revoked ${grant.principal} ${grant.upstream}\n`)
    return 0
  }
  process.stderr.write(response.status === 404 ? `mcpx revoke: ${principal} holds no grant${values.upstream !== undefined ? ` for ${String(values.upstream)}` : ''}\n` : `mcpx revoke: the daemon answered ${response.status}${body.error !== undefined ? `: ${body.error}` : ''}\n`)
  return 1
}

async function main (argv: string[]): Promise<number> {
  const [name, ...rest] = argv
  if (name === undefined) { process.stderr.write(globalUsage()); return USAGE_EXIT }
  if (name === '--help' || name === '-h' || name === 'help') { process.stdout.write(globalUsage()); return 0 }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined
  if (command === undefined) {
    process.stderr.write(`mcpx: unknown command ${JSON.stringify(name)}\n${globalUsage()}`)
    return USAGE_EXIT
  }
  let values: Record<string, unknown>
  let positionals: string[]
  try {
    const options = Object.fromEntries(Object.entries(command.options).map(([flag, o]) => [flag, { type: o.type, ...(o.short !== undefined ? { short: o.short } : {}) }]))
    ;({ values, positionals } = parseArgs({ args: rest, options, strict: true, allowPositionals: command.positionals !== 0 }))
    if (values.help === true) { process.stdout.write(commandUsage(name)); return 0 }
    if (command.positionals >= 0 && positionals.length !== command.positionals) throw new UsageError(`expects ${command.usage.replace(/ \[options\]$/, '')}`)
  } catch (err) {
    process.stderr.write(`mcpx ${name}: ${(err as Error).message}\n${commandUsage(name)}`)
    return USAGE_EXIT
  }
  try {
    const { config, source } = resolveConfig(values.config as string | undefined)
    const log = { logLevel: values['log-level'] as string | undefined, logFormat: values['log-format'] as string | undefined }
    if (name === 'serve' || name === 'daemon') {
      // Before the server's modules load: request-scoped objects stay young (lib/base/pretenuring.ts).
      disablePretenuring()
      // OpenTelemetry only when the OTEL_* variables ask for it (lib/telemetry/trace.ts); otherwise nothing of it loads.
      const tracing = await import('./lib/telemetry/trace.js')
      if (tracing.tracingWantedByEnv()) await tracing.startTracing()
      try {
        if (name === 'serve') {
          // Imported lazily: the stdio path never loads Fastify (its logger would write to stdout).
          const { runStdio } = await import('./stdio.js')
          const { createLogger } = await import('./lib/telemetry/log.js')
          const logger = createLogger('stdio', { level: log.logLevel, format: log.logFormat })
          logger.debug({ config: source }, 'mcpx serve starting')
          return await runStdio(config, logger, undefined, values.server as string | undefined, { source })
        }
        const { runDaemon } = await import('./server.js')
        return await runDaemon(config, source, { ...log, watch: values.watch === true })
      } finally {
        await tracing.stopTracing() // flushes the spans still batched
      }
    }
    if (name === 'integrity') return await integrity(config, values, positionals)
    if (name === 'revoke') return await revoke(config, values, positionals[0])
    if (name === 'check') return await check(config, values)
    if (name === 'tools') return await tools(config, values)
    return await call(config, values, positionals[0])
  } catch (err) {
    if (!(err instanceof UsageError)) throw err
    process.stderr.write(`mcpx ${name}: ${err.message}\n`)
    return USAGE_EXIT
  }
}

main(process.argv.slice(2)).then(code => {
  process.exitCode = code
  // Leave the event loop to drain stdout/stderr; force the exit if something keeps it alive.
  setTimeout(() => process.exit(code), 2_000).unref()
}, (err: unknown) => {
  if (err instanceof McpxError) process.stderr.write(err.message + '\n')
  else process.stderr.write(`mcpx: ${(err as Error)?.stack ?? String(err)}\n`)
  process.exitCode = 1
  setTimeout(() => process.exit(1), 500).unref()
})
