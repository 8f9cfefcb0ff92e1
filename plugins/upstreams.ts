/**
 * mcpx-upstreams: decorates the scope with the upstream registry (`upstreams`) and the
 * transport-neutral core built on it (`mcp`: dispatcher and notification hub), and stops the
 * upstreams when the instance closes (onClose runs after the server stopped accepting).
 */
import fp from 'fastify-plugin'
import { Dispatcher, type ServerInfo } from '../lib/dispatch.js'
import { NotificationHub } from '../lib/notify-hub.js'
import { StateSealer } from '../lib/mrtr.js'
import type { UpstreamRegistry } from '../lib/upstreams/types.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The merged upstream catalogue and router (read-only use from a host app's own routes). */
    upstreams: UpstreamRegistry
    /** mcpx's transport-neutral core for this scope. */
    mcp: { dispatcher: Dispatcher, hub: NotificationHub }
  }
}

export interface UpstreamsPluginOptions {
  registry: UpstreamRegistry
  serverInfo: ServerInfo
  /** Close the registry (kill children) when the instance closes. Default true. */
  closeRegistry?: boolean
  /** The MRTR bridge's key and lifetimes (lib/config.ts mrtrOptions). */
  mrtr?: { stateKey?: Buffer, parkTimeoutMs: number, stateTtlMs: number }
}

export default fp<UpstreamsPluginOptions>(async function mcpxUpstreams (fastify, opts) {
  const { registry } = opts
  if (!fastify.hasDecorator('upstreams')) fastify.decorate('upstreams', registry)
  const dispatcher = new Dispatcher({
    registry,
    serverInfo: opts.serverInfo,
    logger: fastify.log,
    sealer: new StateSealer(opts.mrtr?.stateKey),
    ...(opts.mrtr !== undefined ? { parkTimeoutMs: opts.mrtr.parkTimeoutMs, stateTtlMs: opts.mrtr.stateTtlMs } : {})
  })
  const hub = new NotificationHub(registry)
  fastify.decorate('mcp', { dispatcher, hub })
  fastify.addHook('onClose', async function stopUpstreams () {
    hub.close()
    dispatcher.close()
    if (opts.closeRegistry !== false) await registry.close()
  })
}, { name: 'mcpx-upstreams', fastify: '5.x' })
