/**
 * The upstream layer's refusals of a call, each a JSON-RPC error (UpstreamRpcError) that names the
 * lib/protocol/http-status.ts refusal row it is answered with over HTTP: the upstream's queue is full
 * ({@link UpstreamBusyError}), its isolated instances are exhausted ({@link InstancesExhaustedError}),
 * or a call could not be forwarded to the replica holding its session's instance ({@link InstanceForwardError}).
 */
import { INSTANCES_EXHAUSTED, INTERNAL_ERROR, UpstreamRpcError } from '../protocol/jsonrpc.js'

/**
 * A call refused because its upstream has `maxInFlight` calls in flight and `maxQueued` waiting
 * (config maxInFlight, maxQueued). JSON-RPC -32603 like mcpx's other "server busy" refusals (lib/protocol/http-status.ts
 * `tooManyConcurrentRequests`); the dispatcher marks its response so that over HTTP it is the
 * refusal row `upstreamBusy` (503 with `Retry-After`). It never reached the upstream.
 */
export class UpstreamBusyError extends UpstreamRpcError {
  /** The lib/protocol/http-status.ts refusal row this error is answered with over HTTP. */
  readonly refusal = 'upstreamBusy' as const
  constructor (message: string) {
    super(INTERNAL_ERROR, message)
    this.name = 'UpstreamBusyError'
  }
}

/**
 * An isolated upstream has `maxInstances` instances running and the call's session or
 * principal has none: -31001 INSTANCES_EXHAUSTED, answered over HTTP by the lib/protocol/http-status.ts refusal
 * row `instancesExhausted` (503 with `Retry-After`). It never reached the upstream.
 */
export class InstancesExhaustedError extends UpstreamRpcError {
  /** The lib/protocol/http-status.ts refusal row this error is answered with over HTTP. */
  readonly refusal = 'instancesExhausted' as const
  constructor (message: string) {
    super(INSTANCES_EXHAUSTED, message)
    this.name = 'InstancesExhaustedError'
  }
}

/**
 * A call that could not be forwarded to, or answered by, the replica holding its session's isolated
 * instance (under Redis; lib/sessions/instances.ts). `refusal` names the lib/protocol/http-status.ts row it
 * is answered with over HTTP (`forwardBusy`, `sessionInstanceLost`, `storeUnavailable`,
 * `unknownSession`); undefined: an in-band JSON-RPC error (a timeout).
 */
export class InstanceForwardError extends UpstreamRpcError {
  constructor (readonly refusal: 'forwardBusy' | 'sessionInstanceLost' | 'storeUnavailable' | 'unknownSession' | undefined, code: number, message: string) {
    super(code, message)
    this.name = 'InstanceForwardError'
  }
}
