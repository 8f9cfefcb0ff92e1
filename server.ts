/**
 * The daemon (`mcpx daemon`, `npm start`, the container): a Fastify instance with mcpx
 * registered at `/mcp`, `GET /healthz` (liveness), `GET /readyz` (readiness), `GET /metrics`
 * (Prometheus), `GET /status` and `/status.json` (the status page), `POST /admin/reload`, and graceful
 * shutdown on SIGTERM/SIGINT (docs/operating.md).
 *
 * The health and metrics routes sit on the root instance, outside mcpx's /mcp scope: no Origin,
 * CORS, /mcp auth or header rules apply to them, and they are never logged at info. Who may read
 * the operator endpoints is lib/ops/access.ts: a local client (by the connection's peer address),
 * else an admin credential. Fastify's own per-request lines are switched off (logController);
 * mcpx-request-log writes one line per /mcp request instead.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import { collectDefaultMetrics } from 'prom-client'
import mcpx from './app.js'
import sendRefusalPlugin from './plugins/send-refusal.js'
import { pino } from 'pino'
import { REDACTED_PATHS, batchedDestination, prettyStream, resolveLogOptions } from './lib/telemetry/log.js'
import { loadBearerTokens, loadAdminTokens, assertSafeBind, createBearerVerifier, type BearerVerifier } from './lib/auth/tokens.js'
import { Reloader, watchConfig } from './lib/ops/reload.js'
import { parseHostPort } from './lib/base/net.js'
import { McpxError } from './lib/base/errors.js'
import { STATUS_CODES } from 'node:http'
import { readinessStatus, refusal, reloadStatus, type Refusal } from './lib/protocol/http-status.js'
import { FORWARDING_HEADERS, opsLocality, opsRefusalReason, type OpsPeer } from './lib/ops/access.js'
import { createAuthenticator, type Authenticator } from './lib/auth/authenticate.js'
import { httpServerTimeouts } from './lib/config/derive.js'
import { resolveConfig } from './lib/config/load.js'
import type { McpxConfig } from './lib/config/types.js'
import type { Socket } from 'node:net'
import statusRoutes from './routes/status/index.js'
import integrityRoutes from './routes/admin/integrity.js'
import { createHash } from 'node:crypto'
import { collectStatus } from './lib/ops/status-model.js'

/** How often idle keep-alive connections are closed while shutting down, ms. */
const SHUTDOWN_IDLE_SWEEP_MS = 100

/** Answers to HTTP errors Node raises before any route runs (oversized headers, garbage requests, late requests), written raw. */
const HEADERS_TOO_LARGE = rawResponse(refusal('headersTooLarge'))
const BAD_REQUEST = rawResponse(refusal('malformedHttp'))
const REQUEST_TIMEOUT = rawResponse(refusal('requestTimeout'))

/** A refusal as a whole HTTP/1.1 response on a socket that is then closed (no Fastify reply exists yet). */
function rawResponse (refused: ReturnType<typeof refusal>): string {
  return `HTTP/1.1 ${refused.status} ${STATUS_CODES[refused.status] ?? ''}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(refused.body)}\r\nConnection: close\r\n\r\n${refused.body}`
}

/**
 * Fastify's clientErrorHandler: a request Node's parser refused gets an id-less JSON-RPC error
 * (431 for oversized headers, 400 otherwise), like every other refusal on the daemon, then the
 * socket closes. A request past transport.headersTimeout or bodyTimeout (Node's
 * ERR_HTTP_REQUEST_TIMEOUT) is 408, unless the connection never sent a byte: that one is just
 * closed (docs/security.md › Limits). Nothing is written once a response has begun on the
 * socket (an early refusal while the body still trickles): it is closed. Never throws.
 */
function answerClientError (this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket): void {
  // Node's in-flight ServerResponse on this socket: set once a request head was parsed, until its response finished.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    const kind = socket.bytesRead === 0 ? 'silent' : inFlight != null ? 'body' : 'head'
    // Bound to the daemon's instance by Fastify; mcpxMetrics exists once the plugin registered.
    if (this.hasDecorator('mcpxMetrics')) this.mcpxMetrics.connectionTimedOut(kind)
    this.log.debug({ kind, remoteAddress: socket.remoteAddress }, 'connection timed out sending its request')
    if (kind === 'silent' || !socket.writable || inFlight?.headersSent === true) socket.destroy()
    else socket.end(REQUEST_TIMEOUT)
    return
  }
  if (!socket.writable || inFlight?.headersSent === true) { socket.destroy(); return }
  socket.end(err.code === 'HPE_HEADER_OVERFLOW' ? HEADERS_TOO_LARGE : BAD_REQUEST)
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Hot reload of the config (lib/ops/reload.ts): SIGHUP, --watch and POST /admin/reload go through it. */
    mcpxReloader: Reloader
  }
}

/**
 * The connection's view of a request, for lib/ops/access.ts. `request.ip` is the socket's peer, or
 * with daemon.trustProxy the client the trusted proxies named; `request.ips` (trustProxy only) is
 * `[peer, …trusted hops, client]`, so more than one entry means X-Forwarded-For was resolved.
 */
function peerOf (request: FastifyRequest, trustProxy: boolean): OpsPeer {
  const forwarded = FORWARDING_HEADERS.some(name => request.headers[name] !== undefined)
  const resolved = trustProxy && (request.ips?.length ?? 0) > 1
  return { ip: request.ip, host: request.headers.host, unresolvedForward: forwarded && !resolved }
}

/** Decides one request: undefined when it may go on, else the refusal to send. */
type AccessCheck = (request: FastifyRequest) => Promise<Refusal | undefined>

/**
 * Builds the two access checks. `admin` (POST /admin/reload): an admin credential always, local
 * client or not (403 when none is configured, 401 without one or with a wrong one): neither the
 * peer address nor the Host can stop a cross-site POST from a browser on the same machine, while an
 * Authorization header can only be set by a real client. `ops` (the operator endpoints,
 * lib/ops/access.ts): a local client passes with no credential; anyone else needs one, and is
 * refused as {@link opsRefusalReason} says. A credential is one of admin.tokens, or with `oauth` (admin.scopes
 * with auth.oauth) an OAuth access token holding admin.scopes; a valid OAuth token without them is
 * the authenticator's 403 insufficient_scope (RFC 6750 §3.1). Never throws.
 */
function accessChecks (verify: BearerVerifier, oauth: Authenticator | undefined, configured: boolean, trustProxy: boolean): { admin: AccessCheck, ops: AccessCheck } {
  /** ok, or why not: missing / invalid, or the OAuth authenticator's own refusal to send as it is. */
  async function credential (request: FastifyRequest): Promise<'ok' | 'missing' | 'invalid' | Refusal> {
    const outcome = verify(request.headers.authorization)
    if (outcome !== 'invalid' || oauth === undefined) return outcome
    const verdict = await oauth.authenticate(request.headers.authorization)
    if (verdict.kind === 'ok') return 'ok'
    return verdict.refusal.reason === 'insufficient_scope' ? verdict.refusal : 'invalid'
  }
  return {
    admin: async function checkAdmin (request) {
      const outcome = await credential(request)
      if (outcome === 'ok') return undefined
      if (typeof outcome !== 'string') return outcome
      return refusal(!configured ? 'adminNotConfigured' : outcome === 'invalid' ? 'adminTokenInvalid' : 'adminTokenMissing')
    },
    ops: async function checkOps (request) {
      const locality = opsLocality(peerOf(request, trustProxy))
      if (locality === 'local') return undefined
      const outcome = await credential(request)
      if (outcome === 'ok') return undefined
      if (typeof outcome !== 'string') return outcome
      return refusal(opsRefusalReason(locality, outcome, configured))
    }
  }
}

/** An onRequest hook that sends `check`'s refusal, if any. */
function guardWith (check: AccessCheck) {
  return async function guard (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const refused = await check(request)
    if (refused !== undefined) await reply.sendRefusal(refused)
  }
}

/**
 * Builds the daemon's Fastify instance (not yet listening).
 * @param options.logLevel pino level (default env MCPX_LOG_LEVEL, else 'info')
 * @param options.logFormat 'json' | 'pretty' (default env MCPX_LOG_FORMAT, else pretty when stdout is a terminal)
 * @param options.source where `config` came from (a file path, or "(embedded default)"); a reload reads it again
 * @param options.load reads the config again for a reload (default: the `source` file; none: reloads are refused)
 * @throws McpxError MCPX_ERR_UNSAFE_BIND for a non-loopback address without authentication;
 *         McpxError MCPX_ERR_CONFIG for an invalid config
 */
export async function buildDaemon (config: McpxConfig, options: DaemonOptions = {}): Promise<FastifyInstance> {
  assertSafeBind(config, loadBearerTokens(config.auth))
  const adminTokens = loadAdminTokens(config.admin)
  const verifyAdmin = createBearerVerifier(adminTokens)
  const { headersTimeout, requestTimeout, keepAliveTimeout, connectionsCheckingInterval } = httpServerTimeouts(config.transport)
  const log = resolveLogOptions(1, { level: options.logLevel, format: options.logFormat })
  const loggerOptions = { name: 'mcpx', level: log.level, redact: REDACTED_PATHS }
  const app = Fastify({
    // JSON: Fastify's own pino on stdout, written in batches (lib/telemetry/log batchedDestination: one line
    // per /mcp request). Pretty (a terminal, or --log-format pretty): pino-pretty on fd 1, line by line.
    ...(log.format === 'pretty' ? { loggerInstance: pino(loggerOptions, prettyStream(1)) as unknown as FastifyBaseLogger } : { logger: { ...loggerOptions, stream: batchedDestination(1) } }),
    // Fastify's "incoming request" / "request completed" pairs are off (FSTDEP023: the top-level
    // disableRequestLogging option is deprecated in favour of logController).
    logController: new LogController({ disableRequestLogging: true }),
    forceCloseConnections: false,
    // daemon.trustProxy (docs/deployment.md › Client addresses): only a request arriving from a
    // listed proxy has its X-Forwarded-For believed; request.ip is then the client it names.
    trustProxy: config.daemon.trustProxy.length > 0 ? config.daemon.trustProxy : false,
    return503OnClosing: true,
    clientErrorHandler: answerClientError,
    // transport.headersTimeout / bodyTimeout: Node bounds sending a request, never the
    // answer (lib/config/derive httpServerTimeouts). connectionTimeout stays 0: a socket timeout would
    // cut GET streams and long-running calls.
    http: { headersTimeout, requestTimeout, connectionsCheckingInterval },
    requestTimeout
  })
  // Set on the server itself: Fastify reads keepAliveTimeout 0 (off) as "use my 72 s default".
  app.server.keepAliveTimeout = keepAliveTimeout
  // reply.sendRefusal for the operator routes' guards (and, inherited, for mcpx's /mcp scope).
  await app.register(sendRefusalPlugin)
  try {
    await app.register(mcpx, config as unknown as Record<string, unknown>)
  } catch (err) {
    // The plugin may have spawned upstream children before it failed: its onClose kills them.
    await app.close().catch(() => {})
    throw err
  }
  collectDefaultMetrics({ register: app.mcpxMetrics.registry, prefix: 'mcpx_' })
  // GET /healthz: liveness, open to every client (an orchestrator's probe comes from the node, not
  // loopback); it says only that the process serves HTTP.
  app.get('/healthz', { logLevel: 'warn' }, async function healthz () { return { status: 'ok' } })
  // admin.scopes (the status page is open to admin tokens "or OAuth with an admin scope"): an OAuth access token
  // for auth.oauth.resource holding all of them opens the admin endpoints as an admin token does.
  // Its own authenticator, with admin.scopes as the required scopes, on the /mcp authenticator's
  // verifier: one JWKS cache, one verdict cache, one discovery.
  const mcpVerifier = app.mcpx.authenticator.oauth?.verifier
  const adminOAuth = config.admin.scopes.length > 0 && config.auth.oauth !== undefined
    ? createAuthenticator({ bearerTokens: [], allowUnauthenticated: false, oauth: { ...config.auth.oauth, requiredScopes: config.admin.scopes } },
      { logger: app.log.child({ component: 'admin-auth' }), ...(mcpVerifier !== undefined ? { verifier: mcpVerifier } : {}) })
    : undefined
  const adminConfigured = adminTokens.length > 0 || adminOAuth !== undefined
  // Operator endpoints (docs/operating.md › Who may read the operator endpoints): a local client by
  // the connection's peer address (daemon.trustProxy resolves a listed proxy's X-Forwarded-For), on
  // every bind, else an admin credential; the Host header never opens them.
  const checks = accessChecks(verifyAdmin, adminOAuth, adminConfigured, config.daemon.trustProxy.length > 0)
  const opsRoute = { logLevel: 'warn' as const, onRequest: guardWith(checks.ops) }
  // GET /readyz: readiness for probes and load balancers, which may call from anywhere, so its
  // status code and `status` answer every client; the upstreams' names, states, errors and pids
  // only a client that may read /status.
  app.get('/readyz', { logLevel: 'warn' }, async function readyz (request, reply) {
    const upstreams = app.upstreams.status()
    const failing = upstreams.filter(u => u.state !== 'ready').map(u => u.name)
    const ready = failing.length === 0
    const status = ready ? 'ready' : 'not ready'
    reply.code(readinessStatus(ready))
    if (await checks.ops(request) !== undefined) return await reply.send({ status })
    return await reply.send({ status, failing, upstreams })
  })
  app.get('/metrics', opsRoute, async function metrics (_request, reply) {
    const registry = app.mcpxMetrics.registry
    return reply.type(registry.contentType).send(await registry.metrics())
  })
  const source = options.source ?? '(embedded default)'
  const load = options.load ?? (options.source !== undefined && options.source !== '(embedded default)'
    ? () => resolveConfig(options.source).config
    : () => { throw new McpxError('MCPX_ERR_CONFIG', 'mcpx: this daemon was given no config file to read again') })
  const reloader = new Reloader({
    registry: app.upstreams,
    config,
    load,
    source,
    logger: app.log,
    onReload: result => app.mcpxMetrics.configReloaded(result.trigger, result.ok ? 'applied' : 'refused'),
    // policy and servers, and transport.pageSize, apply live, to requests that start after the reload.
    applyAccess: app.mcpx.applyAccess,
    // A restarted upstream's old instance finishes its calls for as long as a SIGTERM would give them.
    drainMs: config.daemon.shutdownTimeout
  })
  app.decorate('mcpxReloader', reloader)
  // GET /status and /status.json: as /metrics.
  const startedAt = new Date()
  const who = async (request: FastifyRequest): Promise<string> => {
    // The status page's forms: a local reader has no credential; they are named by their address.
    if (request.headers.authorization === undefined) return `local:${request.ip}`
    return await adminWho(request.headers.authorization, verifyAdmin, adminOAuth)
  }
  await app.register(statusRoutes, {
    guard: opsRoute.onRequest,
    integrity: () => app.mcpx.integrity,
    who,
    collect: () => collectStatus({
      registry: app.upstreams,
      upstreamConfigs: () => reloader.current.upstreams,
      open: () => app.mcpxMetrics.open(),
      config: () => ({
        source: reloader.source,
        loadedAt: reloader.loadedAt,
        ...(reloader.last !== undefined ? { lastReload: { at: reloader.last.at, trigger: reloader.last.trigger, ok: reloader.last.ok, kept: reloader.last.ok ? reloader.last.kept : [] } } : {})
      }),
      startedAt,
      integrity: () => app.mcpx.integrity
    })
  })
  // POST /admin/reload: an admin credential always (accessChecks).
  app.post('/admin/reload', { logLevel: 'warn', onRequest: guardWith(checks.admin) }, async function adminReload (_request, reply) {
    const result = await reloader.reload('admin')
    if (!result.ok) return await reply.code(reloadStatus(false)).send({ status: 'refused', reason: result.reason })
    const { added, removed, restarted, unchanged, restartToApply, kept } = result
    return await reply.send({ status: 'applied', added, removed, restarted, unchanged, restartToApply, kept })
  })
  // /admin/integrity: an admin credential always, as /admin/reload. Who approved is audited as the admin
  // token's fingerprint (first 12 hex of its SHA-256) or the OAuth principal, never the credential.
  await app.register(integrityRoutes, {
    guard: guardWith(checks.admin),
    integrity: () => app.mcpx.integrity,
    who: async request => await adminWho(request.headers.authorization, verifyAdmin, adminOAuth)
  })
  // The grants of `oauth-user` upstreams (docs/upstreams.md › Upstream identity): listed (never a
  // token) and revoked by an operator; an admin credential always (accessChecks).
  const grants = app.mcpx.grants
  if (grants !== undefined) {
    app.get('/admin/grants', { logLevel: 'warn', onRequest: guardWith(checks.admin) }, async function adminGrants (_request, reply) {
      return await reply.header('cache-control', 'no-store').send({
        grants: (await grants.list()).map(g => ({ principal: g.principal ?? 'unknown', upstream: g.upstream, refreshable: g.refreshable, ...(g.expiresAtMs !== undefined ? { expiresAt: new Date(g.expiresAtMs).toISOString() } : {}) }))
      })
    })
    app.delete('/admin/grants', { logLevel: 'warn', onRequest: guardWith(checks.admin) }, async function adminRevokeGrants (request, reply) {
      const query = request.query as Record<string, unknown>
      if (typeof query.principal !== 'string' || query.principal === '' || (query.upstream !== undefined && typeof query.upstream !== 'string')) {
        return await reply.code(400).send({ error: 'give principal (e.g. token:alice or oauth:<issuer>#<subject>) and optionally upstream, once each' })
      }
      const revoked = await grants.revokePrincipal(query.principal, query.upstream as string | undefined)
      app.log.info({ principal: query.principal, upstream: query.upstream, revoked: revoked.length }, 'upstream grants revoked by an operator')
      return await reply.code(revoked.length > 0 ? 200 : 404).send({ revoked })
    })
  }
  return app
}

/** Who an admin request came from, for the audit trail: `admin-token:<12 hex of SHA-256>`, `oauth:<issuer>#<subject>`, else `admin`. Never throws. */
async function adminWho (authorization: string | undefined, verify: BearerVerifier, oauth: Authenticator | undefined): Promise<string> {
  const token = authorization?.match(/^Bearer\s+(\S+)\s*$/i)?.[1]
  if (token !== undefined && verify(authorization) === 'ok') return `admin-token:${createHash('sha256').update(token).digest('hex').slice(0, 12)}`
  if (oauth !== undefined) {
    const verdict = await oauth.authenticate(authorization)
    if (verdict.kind === 'ok' && verdict.principal.kind === 'oauth') return `oauth:${verdict.principal.issuer}#${verdict.principal.subject}`
  }
  return 'admin'
}

/** Options of {@link buildDaemon} and {@link runDaemon}. */
export interface DaemonOptions {
  logLevel?: string
  logFormat?: string
  source?: string
  load?: () => McpxConfig
  /** runDaemon only: watch the config file and reload on change (`mcpx daemon --watch`). */
  watch?: boolean
}

/**
 * Shuts the daemon down: stop accepting; end GET and listen streams (mcpx-streams, preClose);
 * let in-flight requests finish for up to `shutdownTimeoutMs`, then cut the connections left;
 * stop the upstream children (onClose).
 * @returns 0 when closed cleanly (even if the bound cut some connections), 1 when close failed. Never throws.
 */
export async function shutdown (app: FastifyInstance, shutdownTimeoutMs: number): Promise<number> {
  // A keep-alive connection whose last request just finished would hold server.close() until
  // its keep-alive timeout: close such idle connections as they appear.
  const sweep = setInterval(() => { app.server.closeIdleConnections() }, SHUTDOWN_IDLE_SWEEP_MS)
  sweep.unref()
  const force = setTimeout(() => {
    app.log.warn({ shutdownTimeoutMs }, 'shutdown timeout: closing remaining connections')
    app.server.closeAllConnections()
  }, shutdownTimeoutMs)
  force.unref()
  try {
    await app.close()
    app.log.info('mcpx daemon stopped')
    // The log is batched (lib/telemetry/log.ts batchedDestination): hand the last lines to the fd now,
    // so they are written before the process ends, whatever exit hooks the environment lets pino install.
    await new Promise<void>(resolve => { (app.log as FastifyBaseLogger & { flush: (cb: () => void) => void }).flush(() => { resolve() }) })
    return 0
  } catch (err) {
    app.log.error({ err }, 'shutdown failed')
    return 1
  } finally {
    clearInterval(sweep)
    clearTimeout(force)
  }
}

/**
 * Runs the daemon until SIGTERM/SIGINT, then shuts down (see {@link shutdown}).
 * @param source where the config came from, for the start line
 * @param options log level and format (see {@link buildDaemon})
 * @returns the process exit code
 * @throws McpxError MCPX_ERR_CONFIG when daemon.address is not host:port
 */
export async function runDaemon (config: McpxConfig, source: string, options: DaemonOptions = {}): Promise<number> {
  // Signal handlers go in first: a SIGTERM that arrives while the upstreams are still starting
  // must not kill the process with its children half-started; it shuts down once startup is done.
  // They stay installed (process.on, not once) until shutdown is over: a second SIGTERM/SIGINT
  // during shutdown is logged, never fatal, so the children are always reaped (shutdown is
  // bounded by daemon.shutdownTimeout).
  let signalled: ((signal: string) => void) | undefined
  let early: string | undefined
  const onSignal = (signal: string): void => { if (signalled !== undefined) signalled(signal); else early ??= signal }
  const onSigterm = (): void => onSignal('SIGTERM')
  const onSigint = (): void => onSignal('SIGINT')
  process.on('SIGTERM', onSigterm)
  process.on('SIGINT', onSigint)
  // SIGHUP reloads the config. Installed before the upstreams start: Node's default
  // action for SIGHUP is to exit, which would orphan the children.
  let reloader: Reloader | undefined
  const onSighup = (): void => { if (reloader !== undefined) void reloader.reload('SIGHUP') }
  process.on('SIGHUP', onSighup)
  if (options.watch === true && source === '(embedded default)') {
    process.off('SIGHUP', onSighup)
    process.off('SIGTERM', onSigterm)
    process.off('SIGINT', onSigint)
    throw new McpxError('MCPX_ERR_CONFIG', 'mcpx: --watch needs a config file (--config, MCPX_CONFIG or ./mcpx.config.json)')
  }
  const app = await buildDaemon(config, { ...options, source })
  reloader = app.mcpxReloader
  const unwatch = options.watch === true ? await watchConfig(source, reloader) : undefined
  const address = parseHostPort(config.daemon.address)
  if (address === undefined) {
    await app.close()
    throw new McpxError('MCPX_ERR_CONFIG', `mcpx: daemon.address ${config.daemon.address} is not host:port`)
  }
  const host = address.host.startsWith('[') ? address.host.slice(1, -1) : address.host
  if (early === undefined) {
    try {
      await app.listen({ host, port: address.port })
    } catch (err) {
      // The upstreams are running by now: stop them (app.close kills the children) before exiting.
      unwatch?.()
      await app.close().catch(() => {})
      process.off('SIGTERM', onSigterm)
      process.off('SIGINT', onSigint)
      process.off('SIGHUP', onSighup)
      const code = (err as NodeJS.ErrnoException).code
      const why = code === 'EADDRINUSE' ? 'address in use' : code === 'EACCES' ? 'permission denied' : code === 'EADDRNOTAVAIL' ? 'address not available' : (err as Error).message
      // MCPX_ERR_CONFIG: daemon.address is the config key to change (lib/base/errors.ts has no listen code).
      throw new McpxError('MCPX_ERR_CONFIG', `mcpx: cannot listen on ${config.daemon.address}: ${why}`, { cause: err })
    }
    app.log.info({ config: source, upstreams: app.upstreams.status().map(u => ({ name: u.name, state: u.state, revision: u.revision, pid: u.pid })) }, 'mcpx daemon ready')
  }
  return await new Promise<number>(resolve => {
    let stopping = false
    signalled = (signal: string): void => {
      if (stopping) { app.log.info({ signal }, 'already shutting down'); return }
      stopping = true
      app.log.info({ signal, shutdownTimeoutMs: config.daemon.shutdownTimeout }, 'shutting down')
      unwatch?.()
      void shutdown(app, config.daemon.shutdownTimeout).then(code => {
        process.off('SIGTERM', onSigterm)
        process.off('SIGINT', onSigint)
        process.off('SIGHUP', onSighup)
        resolve(code)
      })
    }
    if (early !== undefined) signalled(early)
  })
}
