/**
 * `resources/read`, `resources/subscribe` and `resources/unsubscribe`. A hidden resource (by its
 * URI, or as an expansion of a hidden template: Visibility.resource) is answered as one no upstream
 * serves; a legacy connection subscribes upstream once per URI (DispatchContext.subscriptions).
 */
import { RESOURCE_NOT_FOUND, type JsonObject, type UpstreamRpcError } from '../../protocol/jsonrpc.js'
import { requireString } from '../../protocol/params.js'
import { instanceOwnerOf } from '../call-options.js'
import { HiddenError } from '../errors.js'
import type { MethodCall } from './method.js'
import { callPersonal } from '../consent.js'

/** The error for a hidden resource: the registry's answer for a URI no upstream serves. */
function hiddenResource (uri: string): UpstreamRpcError {
  return new HiddenError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}`, { uri })
}

/** `resources/read`. Throws -32602 for a missing uri, -32002 (modern: -32602, by the dispatcher) for a hidden or absent one. */
export async function readResource ({ request, params, ctx, view, deps }: MethodCall): Promise<JsonObject> {
  const uri = requireString(params, 'uri')
  // A URI the caller's own catalogue of an `oauth-user` upstream lists (lib/dispatch/consent.ts);
  // before consent such a URI is not known (resources carry no namespace).
  const personal = deps.consent === undefined || ctx.principal === undefined ? undefined : deps.registry.personalResourceOwner?.(ctx.principal, uri)
  return await deps.mrtr.call(request, ctx, uri, deps.callOptions(request, ctx), async options => {
    if (!view.resource(uri)) throw hiddenResource(uri)
    if (personal !== undefined && deps.consent !== undefined) return await callPersonal(deps.consent, deps.registry, ctx, personal, 'resources/read', { uri }, options)
    return await deps.registry.readResource(uri, options)
  })
}

/** `resources/subscribe` (legacy): once upstream per connection and URI, as the caller's owner. */
export async function subscribe ({ params, ctx, view, deps }: MethodCall): Promise<JsonObject> {
  const uri = requireString(params, 'uri')
  if (!view.resource(uri)) throw hiddenResource(uri)
  if (ctx.subscriptions?.has(uri) !== true) {
    await deps.registry.subscribe(uri, instanceOwnerOf(ctx))
    await ctx.subscriptions?.add(uri) // the Redis session store records it there (async)
  }
  return {}
}

/**
 * `resources/unsubscribe` (legacy): released upstream when the connection's last subscription to the URI goes.
 * `{}` for any URI, hidden or absent alike. A hidden URI is never subscribed (see {@link subscribe}); one that
 * became hidden after it was subscribed (a reload, a new template) is still released: that call is
 * mcpx's own bookkeeping, and its updates already stopped reaching the caller (Visibility.seesUri).
 */
export async function unsubscribe ({ params, ctx, deps }: MethodCall): Promise<JsonObject> {
  const uri = requireString(params, 'uri')
  if ((await ctx.subscriptions?.delete(uri)) === true) await deps.registry.unsubscribe(uri, instanceOwnerOf(ctx))
  return {}
}
