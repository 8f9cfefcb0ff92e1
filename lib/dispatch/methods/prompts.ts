/** `prompts/get`: a hidden prompt is answered as an absent one; the MRTR bridge carries the call across eras. */
import { requireString } from '../../protocol/params.js'
import type { JsonObject } from '../../protocol/jsonrpc.js'
import { hiddenAsAbsent } from '../errors.js'
import { argumentsOf, type MethodCall } from './method.js'
import { callPersonal } from '../consent.js'

/** `prompts/get`. Throws -32602 for a missing name or non-object arguments, the registry's error for a hidden or absent prompt. */
export async function getPrompt ({ request, params, ctx, view, deps }: MethodCall): Promise<JsonObject> {
  const name = requireString(params, 'name')
  const args = argumentsOf(params) as Record<string, string> | undefined
  // A name in an `oauth-user` upstream's namespace goes there as the caller (lib/dispatch/consent.ts).
  const personal = deps.consent === undefined ? undefined : deps.registry.personalRoute?.(name)
  return await deps.mrtr.call(request, ctx, name, deps.callOptions(request, ctx), async options => {
    if (!view.prompt(name)) throw hiddenAsAbsent(deps.registry, 'prompt', name)
    if (personal !== undefined && deps.consent !== undefined) {
      return await callPersonal(deps.consent, deps.registry, ctx, personal.upstream, 'prompts/get', args === undefined ? { name: personal.name } : { name: personal.name, arguments: args }, options)
    }
    return await deps.registry.getPrompt(name, args, options)
  })
}
