/**
 * `tools/call`: the caller's view routes the exposed name to its catalogue name and fills in the
 * endpoint's defaults; a hidden tool is answered as an absent one; the policy's rate limits count
 * the call before it starts; the confirmation gate (lib/dispatch/confirm-gate.ts) asks a human
 * before a call the view selects is forwarded; the MRTR bridge carries it across eras; Tasks
 * expose a task result. Every way a call arrives (both eras, batches, stdio, a meta-tool that
 * calls a tool) goes through this one handler, so through the gate.
 */
import { REFUSALS } from '../../protocol/http-status.js'
import { requireString } from '../../protocol/params.js'
import { callerKey, type AppliedLimit } from '../../policy/rules.js'
import type { JsonObject } from '../../protocol/jsonrpc.js'
import type { DispatchContext } from '../context.js'
import { RefusedError, hiddenAsAbsent } from '../errors.js'
import { argumentsOf, type MethodCall, type MethodDeps } from './method.js'
import { metaCall } from './discovery.js'
import { callPersonal } from '../consent.js'

/**
 * `tools/call`: also the inner call of a search-mode endpoint's `call_tool` (`call.via`), whose name is
 * always a catalogue tool's. Throws -32602 for a missing name or non-object arguments (and for a refused
 * confirmation state), the registry's error for a hidden or absent tool, RefusedError past a rate limit.
 */
export async function callTool (call: MethodCall): Promise<JsonObject> {
  let { request, params } = call
  const { ctx, view, deps } = call
  const name = requireString(params, 'name')
  // A search-mode endpoint's meta-tools (lib/dispatch/methods/discovery.ts); list mode: one property read.
  if (view.search !== undefined && call.via === undefined) {
    const meta = metaCall(call, name)
    if (meta !== undefined) return meta
  }
  const args = argumentsOf(params)
  // Rate limits count visible tools only (a hidden one is answered as absent below), once per
  // request, before the call starts: a limited call never reaches the upstream.
  const limited = view.tool(name)
  const limits = limited === undefined || view.policy === undefined ? undefined : view.policy.limitsFor(limited)
  if (limits !== undefined && limits.length > 0) await countCall(deps, ctx, name, limited as string, limits)
  // The confirmation gate: a visible tool the view selects waits for a human's yes (docs/policy.md ›
  // Confirmation). Without any `confirm` configured this is two property reads.
  if (limited !== undefined && view.needsConfirmation(name, limited, deps.registry)) {
    const decision = await deps.confirm.check(request, ctx, name, limited, args)
    if (decision.kind === 'answer') return decision.result
    request = decision.request
    params = request.params ?? {}
  }
  const task = deps.tasks.taskParam(params, ctx)
  const personal = deps.consent === undefined ? undefined : deps.registry.personalRoute?.(view.tool(name) ?? name)
  if (personal !== undefined && deps.consent !== undefined) {
    // An `oauth-user` upstream (docs/upstreams.md › Upstream identity): routed by its namespace,
    // listed or not; a caller without a grant is asked to consent (lib/dispatch/consent.ts).
    const gate = deps.consent
    const result = await deps.mrtr.call(request, ctx, name, deps.callOptions(request, ctx), async options => {
      if (view.tool(name) === undefined) throw hiddenAsAbsent(deps.registry, 'tool', name)
      return await callPersonal(gate, deps.registry, ctx, personal.upstream, 'tools/call', args === undefined ? { name: personal.name } : { name: personal.name, arguments: args }, options)
    })
    return deps.tasks.expose(result, name, ctx, false)
  }
  const result = await deps.mrtr.call(request, ctx, name, deps.callOptions(request, ctx), async options => {
    const catalogue = view.tool(name)
    if (catalogue === undefined) throw hiddenAsAbsent(deps.registry, 'tool', name)
    return await deps.registry.callTool(catalogue, view.argumentsFor(catalogue, args), task === undefined ? options : { ...options, task })
  })
  return deps.tasks.expose(result, view.tool(name) ?? name, ctx, task !== undefined)
}

/**
 * Counts one call of `catalogue` (exposed as `exposed`) against its limits (lib/policy/rate-limit.ts).
 * @throws RefusedError rateLimited (-31002, `data.retryAfterMs`) past a limit; rateLimitUnavailable
 *         (-32603) when the shared store cannot be asked (fail closed)
 */
async function countCall (deps: MethodDeps, ctx: DispatchContext, exposed: string, catalogue: string, limits: readonly AppliedLimit[]): Promise<void> {
  const limiter = deps.rateLimiter
  if (limiter === undefined) {
    deps.onRateLimited?.('unavailable')
    throw new RefusedError('rateLimitUnavailable', REFUSALS.rateLimitUnavailable.message)
  }
  const taken = limiter.take(callerKey(ctx.caller), catalogue, limits)
  const decision = taken instanceof Promise ? await taken : taken
  if (decision.kind === 'allowed') return
  deps.onRateLimited?.(decision.kind)
  if (decision.kind === 'unavailable') throw new RefusedError('rateLimitUnavailable', REFUSALS.rateLimitUnavailable.message)
  throw new RefusedError('rateLimited', `Rate limit exceeded: too many calls of ${exposed}; retry after ${decision.retryAfterMs} ms`, { retryAfterMs: decision.retryAfterMs })
}
