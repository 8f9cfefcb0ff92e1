#!/usr/bin/env node
/**
 * The `mcpx` command:
 *   mcpx daemon [--config F]   serve Streamable HTTP at /mcp on daemon.address
 *   mcpx serve  [--config F]   serve MCP over stdio (stdout carries only MCP; logs go to stderr)
 * Config resolution: --config, else MCPX_CONFIG, else ./mcpx.config.json, else the embedded default.
 */
import { parseArgs } from 'node:util'
import { resolveConfig } from './lib/config.js'
import { McpxError } from './lib/errors.js'

const USAGE = 'usage: mcpx <daemon|serve> [--config FILE]'

async function main (argv: string[]): Promise<number> {
  let parsed
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' } } })
  } catch (err) {
    process.stderr.write(`mcpx: ${(err as Error).message}\n${USAGE}\n`)
    return 2
  }
  const [command] = parsed.positionals
  if (parsed.values.help === true || command === undefined) {
    process.stderr.write(USAGE + '\n')
    return command === undefined && parsed.values.help !== true ? 2 : 0
  }
  if (command !== 'daemon' && command !== 'serve') {
    process.stderr.write(`mcpx: unknown command ${JSON.stringify(command)}\n${USAGE}\n`)
    return 2
  }
  const { config, source } = resolveConfig(parsed.values.config)
  // OpenTelemetry only when the OTEL_* variables ask for it (lib/trace.ts); otherwise nothing of it loads.
  const tracing = await import('./lib/trace.js')
  if (tracing.tracingWantedByEnv()) await tracing.startTracing()
  try {
    return await run(command, config, source)
  } finally {
    await tracing.stopTracing() // flushes the spans still batched
  }
}

async function run (command: 'daemon' | 'serve', config: ReturnType<typeof resolveConfig>['config'], source: string): Promise<number> {
  if (command === 'serve') {
    // Imported lazily: the stdio path never loads Fastify (its logger would write to stdout).
    const { runStdio } = await import('./stdio.js')
    const { createLogger } = await import('./lib/log.js')
    const logger = createLogger('stdio')
    logger.debug({ config: source }, 'mcpx serve starting')
    return await runStdio(config, logger)
  }
  const { runDaemon } = await import('./server.js')
  return await runDaemon(config, source)
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
