/**
 * mcpx-upstreams: decorates the /mcp scope with mcpx's transport-neutral core (`mcp`: the one registry
 * handle of the scope, the dispatcher and the notification hub, built by lib/core). app.ts builds the
 * core in its outer plugin and stops it when the instance closes; this plugin only hands it to the
 * scope's plugins and routes (which declare `mcpx-upstreams` among their `dependencies`). The host
 * app's `upstreams` decorator (app.ts) is the registry itself, for the host's own routes; inside the
 * scope every plugin and route reads `fastify.mcp.registry`, the instrumented one.
 */
import fp from 'fastify-plugin'
import type { Core } from '../lib/core.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** mcpx's transport-neutral core for this scope (lib/core): registry, dispatcher, hub. */
    mcp: Core
  }
}

export interface UpstreamsPluginOptions {
  /** The core the scope serves (app.ts builds it on the metrics-instrumented registry, and owns its lifetime). */
  core: Core
}

export default fp<UpstreamsPluginOptions>(async function mcpxUpstreams (fastify, opts) {
  fastify.decorate('mcp', opts.core)
}, { name: 'mcpx-upstreams', fastify: '5.x' })
