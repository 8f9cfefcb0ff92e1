/**
 * The dispatcher's own errors, raised by the method handlers and told apart only by the
 * dispatcher's error mapping: a hidden thing (answered as an absent one, audited as `denied`) and
 * a refusal (a rate limit, answered over HTTP by its lib/protocol/http-status.ts row).
 */
import { REFUSALS, type RefusalReason } from '../protocol/http-status.js'
import { UpstreamRpcError } from '../protocol/jsonrpc.js'
import type { UpstreamRegistry } from '../upstreams/contract.js'

/**
 * A hidden thing's error: the same code, message and data as an absent one, so the
 * reply is the same bytes; the class only lets the audit trail record the request as `denied`.
 */
export class HiddenError extends UpstreamRpcError {}

/** A refusal raised inside the dispatcher (a rate limit): answered over HTTP by its lib/protocol/http-status.ts row. */
export class RefusedError extends UpstreamRpcError {
  constructor (readonly refusal: RefusalReason, message: string, data?: unknown) {
    super(REFUSALS[refusal].code, message, data)
  }
}

/**
 * The error for a hidden tool or prompt: the registry's answer for that name were it absent
 * (hidden things look absent), so it is the same bytes as an absent name's while the
 * upstream the name would belong to is down or connecting too; marked hidden for the audit.
 * Returns the error (the caller throws it); never throws itself.
 */
export function hiddenAsAbsent (registry: UpstreamRegistry, kind: 'tool' | 'prompt', name: string): HiddenError {
  const absent = registry.absent(kind, name)
  return new HiddenError(absent.code, absent.message, absent.data)
}
