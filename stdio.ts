/**
 * `mcpx serve`: mcpx as an MCP server on its own stdin/stdout (seed › "stdio, every revision").
 *
 * stdout carries only MCP frames; every log line goes to the logger the caller built for fd 2,
 * and upstream children's stderr goes into those log lines. This file never imports Fastify
 * (Fastify's logger writes to stdout).
 */
import type { Readable, Writable } from 'node:stream'
import type { Logger } from './lib/telemetry/log.js'
import { resolveConfig } from './lib/config/load.js'
import type { McpxConfig } from './lib/config/types.js'
import { McpxError } from './lib/base/errors.js'
import { Reloader } from './lib/ops/reload.js'
import { createCore } from './lib/core.js'
import { startStdioServer } from './lib/stdio/server.js'
import { createRegistry, startUpstreams } from './lib/upstreams/registry.js'
import { isPersonal } from './lib/upstreams/config.js'
import { UserGrants, redirectUris } from './lib/upstreams/user-grants.js'
import { listenForConsent } from './lib/stdio/consent-listener.js'

/**
 * Serves MCP on process.stdin/process.stdout until stdin ends or SIGTERM/SIGINT arrives.
 *
 * Starts every upstream in `config.upstreams` (default call timeout `config.upstreamTimeout`, ms),
 * waits until each has been tried once (at most UPSTREAM_START_WAIT_MS), then reads stdin. On EOF (or a signal) in-flight requests
 * get `config.transport.stdioDrain` ms to answer, then are cancelled; the registry is closed
 * (every child process killed) and the exit code is resolved. A broken stdout (EPIPE) ends the
 * same way, quietly.
 * @param config a loaded config (lib/config/load.ts `loadConfig`/`resolveConfig`)
 * @param logger must not write to stdout: use `createLogger('stdio')` (fd 2)
 * @param io the streams served (default process.stdin and process.stdout; tests pass their own)
 * @param endpoint `--server <name>`: serve that curated endpoint of `config.servers`;
 *        an unknown name is logged and the exit code is 2 (nothing is started)
 * @param options.source the config file `config` came from: SIGHUP reads it again and reloads the
 *        upstreams (lib/ops/reload.ts; in stdio mode SIGHUP does the same as the daemon's). Without a file
 *        a SIGHUP is refused with one log line.
 * @returns the process exit code: 0 after a clean shutdown, 1 when the upstreams could not be
 *          started, 2 for an unknown `endpoint`. Never rejects.
 */
export async function runStdio (config: McpxConfig, logger: Logger, io: { input: Readable, output: Writable } = { input: process.stdin, output: process.stdout }, endpoint?: string, options: { source?: string } = {}): Promise<number> {
  if (endpoint !== undefined && config.servers?.[endpoint] === undefined) {
    // Checked before any upstream starts: a typo must not serve the whole catalogue, nor nothing silently.
    logger.error({ server: endpoint, configured: Object.keys(config.servers ?? {}) }, 'no such curated server in config.servers')
    return 2
  }
  // Each caller's own identity toward `oauth-user` upstreams (docs/upstreams.md › Upstream identity):
  // here the one local caller, whose consent comes back to a loopback listener of this process.
  let grants: UserGrants | undefined
  let consentListener: { close: () => Promise<void> } | undefined
  if (Object.values(config.upstreams).some(isPersonal)) {
    try {
      grants = new UserGrants(config.upstreams, { logger })
      consentListener = await listenForConsent(grants, redirectUris(config.upstreams), logger)
    } catch (err) {
      logger.error({ err }, 'cannot receive upstream consent callbacks')
      return 1
    }
  }
  const registry = createRegistry(config.upstreams, { logger, defaultTimeoutMs: config.upstreamTimeout, streamBufferBytes: config.transport.streamBufferBytes, ...(grants !== undefined ? { headerProvider: grants.headerProvider() } : {}) })
  // The audit trail never writes to stdout here (createCore refuses an audit.file that is stdout).
  const core = createCore(config, registry, logger, { stdio: true, ...(grants !== undefined ? { grants } : {}) })
  const { dispatcher, hub } = core
  let exitCode = 0
  // Signals are handled from the start: one during the upstream start wait must still reap the
  // children (the default action would exit at once and orphan them).
  let server: ReturnType<typeof startStdioServer> | undefined
  let signalled = false
  const onSignal = (signal: NodeJS.Signals): void => {
    if (signalled) { logger.info({ signal }, 'already shutting down'); return }
    signalled = true
    logger.info({ signal }, 'shutting down')
    if (server !== undefined) void server.close()
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
  const source = options.source ?? '(embedded default)'
  const reloader = new Reloader({
    registry,
    config,
    source,
    logger,
    load: source !== '(embedded default)'
      ? () => resolveConfig(source).config
      : () => { throw new McpxError('MCPX_ERR_CONFIG', 'mcpx: this server was given no config file to read again') },
    // policy and servers, and transport.pageSize, apply live, to requests that start after the reload.
    applyAccess: next => core.applyAccess(next),
    // A restarted upstream's old instance finishes its calls for as long as stdin EOF would give them.
    drainMs: config.transport.stdioDrain
  })
  // Node's default action for SIGHUP is to exit (orphaning the children): here it reloads.
  const onSighup = (): void => { if (!signalled) void reloader.reload('SIGHUP') }
  process.on('SIGHUP', onSighup)
  try {
    // Bounded (UPSTREAM_START_WAIT_MS): a silent or slow upstream must not keep stdin unread;
    // it keeps connecting in the background and comes up when it can.
    await startUpstreams(registry, logger)
  } catch (err) {
    logger.error({ err }, 'upstreams failed to start')
    exitCode = 1
  }
  if (exitCode === 0 && !signalled) {
    server = startStdioServer(io.input, io.output, dispatcher, hub, {
      drainMs: config.transport.stdioDrain,
      maxLineBytes: config.transport.maxBodyBytes,
      maxInFlight: config.transport.stdioMaxInFlight,
      maxBatchMembers: config.transport.maxBatchMembers,
      maxBatchInFlight: config.transport.maxBatchInFlight,
      streamBufferBytes: config.transport.streamBufferBytes,
      streamBufferMaxBytes: config.transport.streamBufferMaxBytes,
      logger,
      ...(endpoint !== undefined ? { endpoint } : {})
    })
    logger.info({ upstreams: Object.keys(config.upstreams) }, 'serving MCP on stdio')
    await server.closed
  }
  process.off('SIGTERM', onSignal)
  process.off('SIGINT', onSignal)
  process.off('SIGHUP', onSighup)
  await core.close()
  await consentListener?.close()
  await grants?.close()
  try {
    await registry.close()
  } catch (err) {
    logger.error({ err }, 'closing upstreams failed')
  }
  logger.info('stdio server stopped')
  return exitCode
}
