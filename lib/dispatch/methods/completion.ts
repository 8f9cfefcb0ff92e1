/** `completion/complete`: a reference to a hidden prompt or resource is answered as the registry answers an unknown one. */
import { isObject, INVALID_PARAMS, type JsonObject } from '../../protocol/jsonrpc.js'
import { stripMeta } from '../../protocol/params.js'
import { HiddenError } from '../errors.js'
import type { MethodCall } from './method.js'

/**
 * `completion/complete`. A hidden reference gets the registry's own error for a prompt or resource
 * it does not route (lib/upstreams/registry.ts `complete`, which has no "upstream down" variant), byte for byte.
 * A `ref/resource` uri is judged as the registry routes it: a catalogue template's text as that
 * template, anything else as a concrete URI (with the templates it expands).
 */
export async function complete ({ request, params, ctx, view, deps }: MethodCall): Promise<JsonObject> {
  const ref = params.ref
  if (isObject(ref) && ref.type === 'ref/prompt' && typeof ref.name === 'string' && !view.prompt(ref.name)) throw new HiddenError(INVALID_PARAMS, `Unknown prompt: ${ref.name}`)
  if (isObject(ref) && ref.type === 'ref/resource' && typeof ref.uri === 'string' && !view.resourceOrTemplate(ref.uri)) {
    throw new HiddenError(INVALID_PARAMS, `Unknown resource or template: ${ref.uri}`)
  }
  return await deps.registry.complete(stripMeta(params), deps.callOptions(request, ctx))
}
