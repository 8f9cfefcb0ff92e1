/**
 * The transport-neutral core both faces stand on, built in one place: the daemon (plugins/upstreams,
 * via app.ts) and `mcpx serve` (stdio.ts). Pure of Fastify. The registry's lifetime stays with its
 * owner (the registry is shared with host apps and tests); the core only stops what it made.
 */
import { mrtrOptions, type McpxConfig } from './config.js'
import type { Logger } from './log.js'
import { Dispatcher, type ServerInfo } from './dispatch.js'
import { NotificationHub } from './notify-hub.js'
import { StateSealer } from './mrtr.js'
import { SERVER_INFO } from './version.js'
import { compilePolicy } from './policy.js'
import { Servers } from './servers.js'
import type { UpstreamRegistry } from './upstreams/types.js'

/** What {@link createCore} builds. */
export interface Core {
  /** Answers every method (lib/dispatch). */
  readonly dispatcher: Dispatcher
  /** Fans the registry's change events out to listeners (lib/notify-hub). */
  readonly hub: NotificationHub
  /** Seals mcpx's MRTR requestState (key from `mrtr.stateKey`, else random per process). */
  readonly sealer: StateSealer
  /** mcpx's `serverInfo` (lib/version). */
  readonly serverInfo: ServerInfo
  /** The registry the dispatcher routes through. */
  readonly registry: UpstreamRegistry
  /** Stops the hub and cancels parked calls upstream; the registry is left to its owner. Never throws. */
  close: () => void
}

/**
 * Builds the core for one face.
 * @param config a loaded config (`mrtr`: state key, park timeout and state lifetime, ms; `policy`)
 * @param registry the upstream registry calls are routed through (instrumented or not)
 * @param logger the face's logger (stdio: fd 2)
 * @throws McpxError MCPX_ERR_CONFIG when `mrtr.stateKey` decodes to fewer than 32 bytes
 */
export function createCore (config: McpxConfig, registry: UpstreamRegistry, logger: Logger): Core {
  const mrtr = mrtrOptions(config)
  const sealer = new StateSealer(mrtr.stateKey)
  const dispatcher = new Dispatcher({
    registry,
    serverInfo: SERVER_INFO,
    logger,
    sealer,
    parkTimeoutMs: mrtr.parkTimeoutMs,
    stateTtlMs: mrtr.stateTtlMs,
    // issue #17; a reload swaps both with dispatcher.setAccess
    policy: compilePolicy(config.policy),
    servers: config.servers === undefined ? undefined : new Servers(config.servers)
  })
  const hub = new NotificationHub(registry)
  return {
    dispatcher,
    hub,
    sealer,
    serverInfo: SERVER_INFO,
    registry,
    close () {
      hub.close()
      dispatcher.close()
    }
  }
}
