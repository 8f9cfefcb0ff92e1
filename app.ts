/**
 * mcpx as a Fastify plugin: the package's main export.
 *
 * ```ts
 * import Fastify from 'fastify'
 * import mcpx from 'mcpx'
 * const app = Fastify({ logger: true })
 * await app.register(mcpx, { prefix: '/tools', upstreams: { files: { command: 'mcp-files' } } })
 * // serves POST/GET/DELETE /tools/mcp; app.upstreams is the merged catalogue
 * ```
 *
 * The outer plugin is `fp`-wrapped so that `upstreams` decorates the host instance (a team's own
 * routes can read the catalogue). Everything else — mcpx's hooks, JSON parser, CORS and error
 * handler — lives in an inner, un-wrapped scope, so it applies to `/mcp` only and never leaks
 * into the host app (STYLE › Layout). Options carry the same keys as the config file and are
 * validated by the same schema (lib/config/schema.ts, loaded by lib/config/load.ts).
 */
import fp from 'fastify-plugin'
import type { FastifyPluginAsync } from 'fastify'
import { loadConfig } from './lib/config/load.js'
import type { McpxConfig, McpxConfigInput } from './lib/config/types.js'
import { originPolicyFromConfig } from './lib/http/origin.js'
import { createAuthenticator, type Authenticator } from './lib/auth/authenticate.js'
import { createDpopReplayCache, type DpopReplayCache } from './lib/auth/dpop.js'
import { PRM_WELL_KNOWN } from './lib/auth/oauth-metadata.js'
import { createUpstreamHeaderProvider } from './lib/upstreams/credentials.js'
import protectedResourceRoutes from './routes/oauth/protected-resource.js'
import oauthCallbackRoutes from './routes/oauth/callback.js'
import { UserGrants, createGrantStore } from './lib/upstreams/user-grants.js'
import { isPersonal } from './lib/upstreams/config.js'
import type { UpstreamHeaderProvider } from './lib/upstreams/contract.js'
import { createRegistry, startUpstreams } from './lib/upstreams/registry.js'
import type { UpstreamRegistry } from './lib/upstreams/contract.js'
import type { Integrity } from './lib/policy/integrity.js'
import { createMetrics, type McpxMetrics } from './lib/ops/metrics.js'
import { createCore, type Core, type CoreOptions } from './lib/core.js'
import originPlugin from './plugins/origin.js'
import corsPlugin from './plugins/cors.js'
import authPlugin from './plugins/auth.js'
import eraPlugin from './plugins/era.js'
import upstreamsPlugin from './plugins/upstreams.js'
import modernHeadersPlugin from './plugins/modern-headers.js'
import legacySessionsPlugin from './plugins/legacy-sessions.js'
import mcpRoutes from './routes/mcp/index.js'
import requestLogPlugin from './plugins/request-log.js'
import streamsPlugin from './plugins/streams.js'
import sendRefusalPlugin from './plugins/send-refusal.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The merged upstream catalogue and router (read it from your own routes: `app.upstreams.tools()`). */
    upstreams: UpstreamRegistry
    /** mcpx's Prometheus metrics (`await app.mcpxMetrics.registry.metrics()`); the daemon serves them at /metrics. */
    mcpxMetrics: McpxMetrics
    /**
     * What the daemon (server.ts) reaches this mcpx through: the reload, the admin API and the admin
     * checks. Not needed to embed mcpx; `upstreams` and `mcpxMetrics` are the embedder's decorators.
     */
    mcpx: McpxHandle
  }
}

/** The host decorator `mcpx`: parts of this mcpx's core (lib/core.ts) and front door that the daemon drives. */
export interface McpxHandle {
  /**
   * Applies a reloaded config's `policy`, `servers`, `discovery`, `integrity` modes, `confirmation` and
   * `transport.pageSize` to requests that start from now (lib/core.ts Core.applyAccess; the daemon's
   * reload calls it). @returns the keys it could not apply live. Throws only for a config that did not pass loadConfig.
   */
  readonly applyAccess: (next: McpxConfig) => string[]
  /** Pinned definitions (lib/policy/integrity.ts), when any upstream is pinned; the daemon's admin API approves through it. */
  readonly integrity: Integrity | undefined
  /** The authenticator of `/mcp` (lib/auth/authenticate.ts); the daemon's admin check reuses its OAuth verifier. */
  readonly authenticator: Authenticator
  /** The grants of the `oauth-user` upstreams (lib/upstreams/user-grants.ts), when one is configured; the daemon's admin API lists and revokes through them. */
  readonly grants: UserGrants | undefined
}

/** mcpx's own name and version, as `serverInfo` (read once, lib/base/version). */
export { SERVER_INFO } from './lib/base/version.js'

/** Options of the plugin: the config file's keys, plus a ready registry to share (tests, host apps). */
export type McpxOptions = McpxConfigInput & {
  /** Mount point: `/tools` serves `/tools/mcp`. */
  prefix?: string
  /** Use this registry instead of starting one from `upstreams` (the caller then owns its lifetime). */
  registry?: UpstreamRegistry
}

/** Keys Fastify itself puts into register options; they are not mcpx config. */
const FASTIFY_KEYS = new Set(['prefix', 'logLevel', 'logSerializers', 'registry'])

interface ScopeOptions { config: McpxConfig, core: Core, metrics: McpxMetrics, authenticator: Authenticator }

/**
 * The encapsulated scope: request log and stream tracking first (so refused requests are logged
 * too), then plugins in wire order (origin, CORS, era, auth, modern headers, legacy sessions), then routes.
 * The core is built by the outer plugin (it is Fastify-free): the scope only serves it.
 */
const mcpxScope: FastifyPluginAsync<ScopeOptions> = async function mcpxScope (fastify, { config, core, metrics, authenticator }) {
  const policy = originPolicyFromConfig(config)
  // reply.sendRefusal, for every refusal below; in this scope, so a host app's replies are not decorated.
  await fastify.register(sendRefusalPlugin)
  await fastify.register(requestLogPlugin, { metrics })
  await fastify.register(streamsPlugin, { maxStreams: config.transport.maxGetStreams })
  await fastify.register(originPlugin, { policy })
  await fastify.register(corsPlugin, { policy })
  // Before mcpx-auth: its onRequest hook reads the endpoint mcpx-era's onRequest hook works out.
  await fastify.register(eraPlugin)
  await fastify.register(authPlugin, { authenticator, hasEndpoint: name => core.dispatcher.hasEndpoint(name) })
  // The one registry handle of this scope: fastify.mcp.registry (instrumented), read by every plugin and route below.
  await fastify.register(upstreamsPlugin, { core })
  await fastify.register(modernHeadersPlugin)
  await fastify.register(legacySessionsPlugin, { idleTimeoutMs: config.transport.sessionIdleTimeout, maxSessions: config.transport.maxSessions, sessions: config.sessions })
  await fastify.register(mcpRoutes, {
    maxBodyBytes: config.transport.maxBodyBytes,
    // The 413's drain is bounded by transport.bodyTimeout (30 s when that is off).
    drainTimeoutMs: config.transport.bodyTimeout > 0 ? config.transport.bodyTimeout : 30_000,
    keepAliveMs: config.transport.sseKeepAlive,
    maxRequestsPerSession: config.transport.maxRequestsPerSession,
    maxBatchMembers: config.transport.maxBatchMembers,
    maxBatchInFlight: config.transport.maxBatchInFlight,
    maxGetStreams: config.transport.maxGetStreams,
    maxConcurrentRequests: config.transport.maxConcurrentRequests,
    // Every outgoing SSE stream's limits (lib/connection/flow.ts), counted on this instance's metrics.
    flow: {
      highWaterBytes: config.transport.streamBufferBytes,
      maxBytes: config.transport.streamBufferMaxBytes,
      dropped: metrics.streamDropped,
      overflowed: metrics.streamOverflowed,
      logger: fastify.log
    }
  })
  metrics.bindScope({ sessions: () => fastify.sessions.size, streams: kind => fastify.mcpStreams.count(kind) })
}

/**
 * The mcpx plugin. Validates its options (throws McpxError MCPX_ERR_CONFIG at registration,
 * naming the bad field), starts the upstreams (unless a registry is given), decorates the host
 * with `upstreams`, and serves `<prefix>/mcp`. onClose stops the upstreams and closes streams.
 */
const mcpx = fp<McpxOptions>(async function mcpx (fastify, opts) {
  const raw: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(opts ?? {})) if (!FASTIFY_KEYS.has(key)) raw[key] = value
  const config = loadConfig(raw)
  // Tokens and secrets are read here, before any upstream starts: a bad source fails registration.
  const authLog = fastify.log.child({ component: 'auth' })
  // DPoP proofs' jti (docs/authentication.md › DPoP): in Redis under sessions.store "redis", so a proof
  // accepted by one replica is refused by all; made on the first proof to check, closed with the app.
  let dpopReplay: DpopReplayCache | undefined
  const authenticator = createAuthenticator(config.auth, { logger: authLog, dpopReplay: () => (dpopReplay ??= createDpopReplayCache(config.sessions, authLog)) })
  fastify.addHook('onClose', async function closeDpopReplay () { await dpopReplay?.close() })
  const mountPath = `${opts.prefix ?? ''}/mcp`
  let registry = opts.registry
  // Each caller's own identity toward `oauth-user` upstreams (docs/upstreams.md › Upstream identity).
  const grants = Object.values(config.upstreams).some(isPersonal)
    ? new UserGrants(config.upstreams, { logger: fastify.log.child({ component: 'upstream-identity' }), store: createGrantStore(config.sessions), ...(config.auth.oauth !== undefined ? { frontDoorResource: config.auth.oauth.resource } : {}) })
    : undefined
  if (grants !== undefined) fastify.addHook('onClose', async function closeGrants () { await grants.close() })
  if (registry === undefined) {
    const upstreamLog = fastify.log.child({ component: 'upstreams' })
    // mcpx's own credentials to HTTP upstreams with an `auth` (docs/authentication.md › Upstream credentials), through the registry's header seam.
    const headerProvider = withGrants(createUpstreamHeaderProvider(config.upstreams, upstreamLog), grants)
    const owned = createRegistry(config.upstreams, { logger: upstreamLog, defaultTimeoutMs: config.upstreamTimeout, streamBufferBytes: config.transport.streamBufferBytes, ...(headerProvider !== undefined ? { headerProvider } : {}) })
    registry = owned
    fastify.addHook('onClose', async function closeUpstreams () { await owned.close() })
    // Bounded (well under Fastify's 10 s pluginTimeout): a silent or slow upstream must not keep
    // the gateway from serving; it stays `connecting` in /readyz and comes up when it can.
    await startUpstreams(owned, upstreamLog)
  }
  fastify.decorate('upstreams', registry)
  const metrics = createMetrics(registry)
  fastify.decorate('mcpxMetrics', metrics)
  // metrics.instrument (below) observes the registry's calls: a host's registry outlives this app.
  fastify.addHook('onClose', async function releaseMetrics () { metrics.release() })
  // The transport-neutral core of /mcp (lib/core.ts), on the metrics-instrumented registry, built here
  // (after the upstreams started, as before the scope) so that the host's `mcpx` decorator holds its own methods.
  // It stops before the registry it routes through (onClose hooks run last-added first).
  const core = createCore(config, metrics.instrument(registry), fastify.log, coreOptions(metrics, grants))
  fastify.addHook('onClose', async function stopCore () { await core.close() })
  const handle: McpxHandle = { applyAccess: core.applyAccess, integrity: core.integrity, authenticator, grants }
  fastify.decorate('mcpx', handle)
  // The scope's own prefix is `<prefix>/mcp`: @fastify/cors adds an `OPTIONS <prefix>*` route, and
  // this keeps it (and every mcpx hook) off the host app's other routes.
  await fastify.register(mcpxScope, { prefix: mountPath, config, core, metrics, authenticator })
  if (grants !== undefined) await fastify.register(oauthCallbackRoutes, { prefix: opts.prefix ?? '', grants })
  if (authenticator.oauth !== undefined) {
    // RFC 9728 metadata, outside the /mcp scope (no token, no MCP hooks), in its own scope.
    await fastify.register(protectedResourceRoutes, { prefix: PRM_WELL_KNOWN, oauth: authenticator.oauth, mountPath, policy: originPolicyFromConfig(config), hasEndpoint: name => core.dispatcher.hasEndpoint(name) })
  }
}, { name: 'mcpx', fastify: '5.x' })

/** The core's counters on this instance's metrics, and the `oauth-user` grants when any is configured. */
function coreOptions (metrics: McpxMetrics, grants: UserGrants | undefined): CoreOptions {
  return {
    onAuditFailure: reason => { metrics.auditFailed(reason) },
    onAuditLinesLost: (reason, lines) => { metrics.auditLinesLost(reason, lines) },
    onRateLimited: reason => { metrics.rateLimitRefused(reason) },
    onIntegrityChange: (upstream, kind, change, action) => { metrics.integrityChanged(upstream, kind, change, action) },
    ...(grants !== undefined ? { grants } : {})
  }
}

/** The header seam with the `oauth-user` upstreams' bearers beside mcpx's own credentials (each answers for its own upstreams). */
function withGrants (own: UpstreamHeaderProvider | undefined, grants: UserGrants | undefined): UpstreamHeaderProvider | undefined {
  if (grants === undefined) return own
  const personal = grants.headerProvider()
  if (own === undefined) return personal
  return async request => grants.has(request.upstream) ? await personal(request) : await own(request)
}

export default mcpx
export { mcpx }
export type { McpxConfig, McpxConfigInput } from './lib/config/types.js'
export type { UpstreamRegistry } from './lib/upstreams/contract.js'
export type { UpstreamStatus } from './lib/upstreams/status.js'
export type { McpxMetrics } from './lib/ops/metrics.js'
