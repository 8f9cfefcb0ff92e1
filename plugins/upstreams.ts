/**
 * mcpx-upstreams: decorates the scope with mcpx's transport-neutral core (`mcp`: the one registry
 * handle of the /mcp scope, the dispatcher and the notification hub, built by lib/core), and stops
 * it when the instance closes (onClose runs after the server stopped accepting). The host app's
 * `upstreams` decorator (app.ts) is the registry itself, for the host's own routes; inside the
 * scope every plugin and route reads `fastify.mcp.registry`, the instrumented one.
 */
import fp from 'fastify-plugin'
import { createCore, type Core } from '../lib/core.js'
import type { UserGrants } from '../lib/upstreams/user-grants.js'
import type { McpxConfig } from '../lib/config/types.js'
import type { UpstreamRegistry } from '../lib/upstreams/contract.js'
import type { McpxMetrics } from '../lib/ops/metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** mcpx's transport-neutral core for this scope (lib/core): registry, dispatcher, hub. */
    mcp: Core
  }
}

export interface UpstreamsPluginOptions {
  /** The registry the scope routes through (app.ts passes the metrics-instrumented one). */
  registry: UpstreamRegistry
  /** The loaded config (`mrtr` for the sealer and the bridge's lifetimes). */
  config: McpxConfig
  /** Close the registry (kill children) when the instance closes. Default true. */
  closeRegistry?: boolean
  /** Counts lost audit lines and rate-limit refusals; default: not counted. */
  metrics?: Pick<McpxMetrics, 'auditFailed' | 'auditLinesLost' | 'rateLimitRefused' | 'integrityChanged'>
  /** The grants of the `oauth-user` upstreams (lib/upstreams/user-grants.ts), when any is configured. */
  grants?: UserGrants
}

export default fp<UpstreamsPluginOptions>(async function mcpxUpstreams (fastify, opts) {
  const metrics = opts.metrics
  const core = createCore(opts.config, opts.registry, fastify.log, {
    ...(metrics !== undefined
      ? {
          onAuditFailure: reason => { metrics.auditFailed(reason) },
          onAuditLinesLost: (reason, lines) => { metrics.auditLinesLost(reason, lines) },
          onRateLimited: reason => { metrics.rateLimitRefused(reason) },
          onIntegrityChange: (upstream, kind, change, action) => { metrics.integrityChanged(upstream, kind, change, action) }
        }
      : {}),
    ...(opts.grants !== undefined ? { grants: opts.grants } : {})
  })
  fastify.decorate('mcp', core)
  fastify.addHook('onClose', async function stopUpstreams () {
    await core.close()
    if (opts.closeRegistry !== false) await opts.registry.close()
  })
}, { name: 'mcpx-upstreams', fastify: '5.x' })
