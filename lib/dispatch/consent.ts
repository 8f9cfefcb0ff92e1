/**
 * Consent for an `oauth-user` upstream (docs/upstreams.md › Upstream identity): a call into its
 * namespace (`<prefix>__…`) by a caller who holds no grant for it is answered with the consent link,
 * as URL-mode elicitation in the caller's era, and never reaches the upstream:
 * - a 2025-11-25 client that declared `elicitation.url`: the URLElicitationRequired error (-32042,
 *   client/elicitation.mdx) with one `data.elicitations` item (mode `url`, url, message, elicitationId);
 * - a 2026-07-28 client that declared it: the same error thrown into the MRTR bridge, which turns it
 *   into that revision's InputRequiredResult (lib/dispatch/mrtr.ts urlRequired); the retry calls again;
 * - any other client (no `elicitation.url`, or a revision before 2025-11-25): -32603 whose message
 *   names the URL to open.
 */
import { INTERNAL_ERROR, isObject, URL_ELICITATION_REQUIRED, UpstreamRpcError, type JsonObject } from '../protocol/jsonrpc.js'
import type { UpstreamCallOptions, UpstreamRegistry } from '../upstreams/contract.js'
import type { DispatchContext } from './context.js'

/** What the dispatcher needs of the grants (lib/upstreams/user-grants.ts UserGrants). */
export interface ConsentGate {
  /** Whether principal `principalKey` holds a grant for `upstream`. Rejects when the grant store cannot be read. */
  holds: (principalKey: string, upstream: string) => Promise<boolean>
  /** A consent link for (principal, upstream). Rejects (naming the upstream, no secret) when discovery fails. */
  consentLink: (principal: { key: string, id: string }, upstream: string) => Promise<{ url: string, elicitationId: string }>
  /** Told of each consent asked for (the audit trail's `consent_required`). Must not throw. */
  onConsentRequired?: (event: { upstream: string, principal: string, elicitationId: string }) => void
}

/**
 * The error that asks `ctx`'s caller to consent to `upstream`, in the caller's era (module comment).
 * @throws never; rejects with UpstreamRpcError INTERNAL_ERROR when the caller has no identity or the link cannot be made
 */
export async function consentError (gate: ConsentGate, ctx: DispatchContext, upstream: string): Promise<UpstreamRpcError> {
  const caller = ctx.caller as { key?: unknown, id?: unknown } | undefined
  if (caller === undefined || typeof caller.key !== 'string' || typeof caller.id !== 'string') {
    return new UpstreamRpcError(INTERNAL_ERROR, `upstream ${upstream} acts as each caller, and this caller is anonymous`)
  }
  let link: { url: string, elicitationId: string }
  try {
    link = await gate.consentLink({ key: caller.key, id: caller.id }, upstream)
  } catch (error) {
    return new UpstreamRpcError(INTERNAL_ERROR, `upstream ${upstream} needs your consent, and mcpx cannot start it now: ${(error as Error).message}`)
  }
  gate.onConsentRequired?.({ upstream, principal: caller.id, elicitationId: link.elicitationId })
  const message = `Upstream ${upstream} acts as you: sign in and consent at the authorization server, then retry.`
  const declared = isObject(ctx.clientCapabilities.elicitation) && isObject(ctx.clientCapabilities.elicitation.url)
  if (declared && (ctx.era === 'modern' || ctx.revision >= '2025-11-25')) {
    return new UpstreamRpcError(URL_ELICITATION_REQUIRED, 'This request requires more information.', {
      elicitations: [{ mode: 'url', elicitationId: link.elicitationId, url: link.url, message }]
    })
  }
  return new UpstreamRpcError(INTERNAL_ERROR, `Upstream ${upstream} acts as you and needs your consent first: open ${link.url} in a browser, sign in and consent, then retry.`, { url: link.url })
}

/**
 * One call to an `oauth-user` upstream as the caller: consent first when it holds no grant, and
 * again when the grant went during the call (a refused refresh, the upstream's 401 without one).
 * Run inside the MRTR bridge's invoke, so a 2026-07-28 caller gets the consent as input_required.
 * @param params the upstream's own params (unprefixed name)
 * @throws UpstreamRpcError: the consent error, or the upstream's (or its connection's) error
 */
export async function callPersonal (gate: ConsentGate, registry: UpstreamRegistry, ctx: DispatchContext, upstream: string, method: string, params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject> {
  const principal = ctx.principal
  if (principal === undefined || registry.callUpstream === undefined || !await held(gate, principal, upstream)) throw await consentError(gate, ctx, upstream)
  try {
    return await registry.callUpstream(upstream, method, params, options)
  } catch (error) {
    if (!await held(gate, principal, upstream)) throw await consentError(gate, ctx, upstream)
    throw error
  }
}

/** {@link ConsentGate.holds}, its store failure as the call's error (-32603, naming the upstream). */
async function held (gate: ConsentGate, principal: string, upstream: string): Promise<boolean> {
  try {
    return await gate.holds(principal, upstream)
  } catch {
    throw new UpstreamRpcError(INTERNAL_ERROR, `upstream ${upstream}: mcpx cannot read its grants right now; retry later`)
  }
}
