/**
 * The daemon (`mcpx daemon`, `npm start`, the container): a Fastify instance with mcpx
 * registered at `/mcp`, health endpoints, and graceful shutdown on SIGTERM/SIGINT.
 */
import Fastify, { type FastifyInstance } from 'fastify'
import mcpx from './app.js'
import { REDACTED_PATHS } from './lib/log.js'
import { loadBearerTokens, assertSafeBind } from './lib/auth.js'
import { parseHostPort } from './lib/origin.js'
import { McpxError } from './lib/errors.js'
import type { McpxConfig } from './lib/config.js'

/**
 * Builds the daemon's Fastify instance (not yet listening).
 * @throws McpxError MCPX_ERR_UNSAFE_BIND for a non-loopback address without authentication
 */
export async function buildDaemon (config: McpxConfig, options: { logLevel?: string } = {}): Promise<FastifyInstance> {
  assertSafeBind(config, loadBearerTokens(config.auth))
  const app = Fastify({
    logger: { name: 'mcpx', level: options.logLevel ?? process.env.MCPX_LOG_LEVEL ?? 'info', redact: REDACTED_PATHS },
    disableRequestLogging: true,
    forceCloseConnections: false,
    return503OnClosing: true
  })
  await app.register(mcpx, config as unknown as Record<string, unknown>)
  app.get('/healthz', { logLevel: 'warn' }, async function healthz () { return { status: 'ok' } })
  app.get('/readyz', { logLevel: 'warn' }, async function readyz (_request, reply) {
    const upstreams = app.upstreams.status()
    const failing = upstreams.filter(u => u.state !== 'ready').map(u => u.name)
    return reply.code(failing.length === 0 ? 200 : 503).send({ status: failing.length === 0 ? 'ready' : 'not ready', failing, upstreams })
  })
  return app
}

/**
 * Runs the daemon until SIGTERM/SIGINT: stop accepting, let in-flight requests finish for up to
 * `daemon.shutdownTimeout` ms, close streams and upstream children, then resolve.
 * @returns the process exit code
 */
export async function runDaemon (config: McpxConfig, source: string): Promise<number> {
  const app = await buildDaemon(config)
  const address = parseHostPort(config.daemon.address)
  if (address === undefined) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: daemon.address ${config.daemon.address} is not host:port`)
  const host = address.host.startsWith('[') ? address.host.slice(1, -1) : address.host
  await app.listen({ host, port: address.port })
  app.log.info({ config: source, upstreams: app.upstreams.status().map(u => ({ name: u.name, state: u.state, revision: u.revision })) }, 'mcpx daemon ready')
  return await new Promise<number>(resolve => {
    let stopping = false
    const stop = (signal: string): void => {
      if (stopping) return
      stopping = true
      app.log.info({ signal }, 'shutting down')
      const force = setTimeout(() => {
        app.log.warn('shutdown timeout: closing remaining connections')
        app.server.closeAllConnections()
      }, config.daemon.shutdownTimeout)
      force.unref()
      app.close().then(() => { clearTimeout(force); resolve(0) }, (err: unknown) => { app.log.error({ err }, 'shutdown failed'); resolve(1) })
    }
    process.once('SIGTERM', () => stop('SIGTERM'))
    process.once('SIGINT', () => stop('SIGINT'))
  })
}
