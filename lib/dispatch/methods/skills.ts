/**
 * The Skills extension's methods (SEP-2640, `io.modelcontextprotocol/skills`; lib/protocol/skills.ts):
 * `skills/list` (the caller's view of the merged skills, paged with mcpx's own cursors as every list),
 * `skills/get` and `resources/directory/read` (routed to the upstream that lists the skill). A hidden
 * skill is answered exactly as one no upstream lists, and its request never reaches the upstream.
 * While no ready upstream declares the extension, mcpx does not declare it either, and the three
 * methods are -32601 as any method mcpx does not serve (the dispatcher's words).
 */
import { INVALID_PARAMS, METHOD_NOT_FOUND, UpstreamRpcError, type JsonObject } from '../../protocol/jsonrpc.js'
import { skillsCapabilityOf } from '../../protocol/skills.js'
import { requireString } from '../../protocol/params.js'
import { HiddenError } from '../errors.js'
import { pageOf } from '../paging.js'
import type { MethodCall } from './method.js'

const NONE: readonly JsonObject[] = Object.freeze([])

/** @throws UpstreamRpcError -32601 `Method not found: <method>` while no ready upstream declares the extension */
function requireExtension ({ request, deps }: MethodCall): void {
  if (deps.registry.skills === undefined || skillsCapabilityOf(deps.registry.capabilities()) === undefined) {
    throw new UpstreamRpcError(METHOD_NOT_FOUND, `Method not found: ${request.method}`)
  }
}

/** `skills/list`. Throws -32602 for a malformed or outdated cursor (lib/dispatch/paging.ts), -32601 without the extension. */
export function listSkills (call: MethodCall): JsonObject {
  requireExtension(call)
  const { params, view, deps } = call
  return pageOf('skills', view.skills(deps.registry.skills?.() ?? NONE), deps.pageSize, params.cursor)
}

/** `skills/get`. Throws -32602 for a missing uri, and `No skill is served at <uri>` (-32602) for a hidden or unknown skill. */
export async function getSkill (call: MethodCall): Promise<JsonObject> {
  requireExtension(call)
  const { request, params, ctx, view, deps } = call
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
export async function readSkillDirectory (call: MethodCall): Promise<JsonObject> {
  requireExtension(call)
  const { request, params, ctx, view, deps } = call
  const uri = requireString(params, 'uri')
  if (params.cursor !== undefined && typeof params.cursor !== 'string') throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: cursor must be a string')
  const registry = deps.registry
  const skill = registry.skillOwning?.(uri)
  if (skill !== undefined && !view.skill(skill)) throw new HiddenError(INVALID_PARAMS, `${uri} is not a directory resource`)
  if (skill === undefined || registry.readSkillDirectory === undefined) throw new UpstreamRpcError(INVALID_PARAMS, `${uri} is not a directory resource`)
  return await registry.readSkillDirectory(uri, params.cursor, deps.callOptions(request, ctx))
}
