/**
 * The Skills extension's methods (SEP-2640, `io.modelcontextprotocol/skills`; lib/protocol/skills.ts):
 * `skills/list` (the caller's view of the merged skills, paged with mcpx's own cursors as every list),
 * `skills/get` and `resources/directory/read` (routed to the upstream that lists the skill). A hidden
 * skill is answered exactly as one no upstream lists, and its request never reaches the upstream.
 */
import { INVALID_PARAMS, UpstreamRpcError, type JsonObject } from '../../protocol/jsonrpc.js'
import { requireString } from '../../protocol/params.js'
import { HiddenError } from '../errors.js'
import { pageOf } from '../paging.js'
import type { MethodCall } from './method.js'

const NONE: readonly JsonObject[] = Object.freeze([])

/** `skills/list`. Throws -32602 for a malformed or outdated cursor (lib/dispatch/paging.ts). */
export function listSkills ({ params, view, deps }: MethodCall): JsonObject {
  return pageOf('skills', view.skills(deps.registry.skills?.() ?? NONE), deps.pageSize, params.cursor)
}

/** `skills/get`. Throws -32602 for a missing uri, and `No skill is served at <uri>` (-32602) for a hidden or unknown skill. */
export async function getSkill ({ request, params, ctx, view, deps }: MethodCall): Promise<JsonObject> {
  const uri = requireString(params, 'uri')
  const registry = deps.registry
  if (!view.skill(uri)) throw new HiddenError(INVALID_PARAMS, `No skill is served at ${uri}`)
  if (registry.getSkill === undefined) throw new UpstreamRpcError(INVALID_PARAMS, `No skill is served at ${uri}`)
  return await registry.getSkill(uri, deps.callOptions(request, ctx))
}

/**
 * `resources/directory/read`. Throws -32602 for a missing uri or a non-string cursor, and
 * `<uri> is not a directory resource` (-32602) for a folder of no listed skill or of a hidden one.
 */
export async function readSkillDirectory ({ request, params, ctx, view, deps }: MethodCall): Promise<JsonObject> {
  const uri = requireString(params, 'uri')
  if (params.cursor !== undefined && typeof params.cursor !== 'string') throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: cursor must be a string')
  const registry = deps.registry
  const skill = registry.skillOwning?.(uri)
  if (skill !== undefined && !view.skill(skill)) throw new HiddenError(INVALID_PARAMS, `${uri} is not a directory resource`)
  if (skill === undefined || registry.readSkillDirectory === undefined) throw new UpstreamRpcError(INVALID_PARAMS, `${uri} is not a directory resource`)
  return await registry.readSkillDirectory(uri, params.cursor, deps.callOptions(request, ctx))
}
