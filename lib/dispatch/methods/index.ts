/**
 * The method table: every method mcpx answers, and its one handler. Each handler reads the caller's
 * view (Visibility.ALL when neither a policy nor a curated endpoint applies), so there is no
 * filtered and unfiltered copy of a method. A method not in the table is -32601.
 */
import { complete } from './completion.js'
import { discover, initialize, ping, setLevel } from './lifecycle.js'
import { listPrompts, listResourceTemplates, listResources, listTools } from './lists.js'
import type { MethodHandler } from './method.js'
import { getPrompt } from './prompts.js'
import { readResource, subscribe, unsubscribe } from './resources.js'
import { getSkill, listSkills, readSkillDirectory } from './skills.js'
import { taskMethod } from './tasks.js'
import { callTool } from './tools.js'

export type { MethodCall, MethodDeps, MethodHandler } from './method.js'

/** Method name → handler. A Map: names come from the wire (`constructor` must not hit Object.prototype). */
export const METHODS: ReadonlyMap<string, MethodHandler> = new Map<string, MethodHandler>([
  ['initialize', initialize],
  ['ping', ping],
  ['server/discover', discover],
  ['logging/setLevel', setLevel],
  ['tools/list', listTools],
  ['prompts/list', listPrompts],
  ['resources/list', listResources],
  ['resources/templates/list', listResourceTemplates],
  ['tools/call', callTool],
  ['tasks/get', taskMethod],
  ['tasks/update', taskMethod],
  ['tasks/cancel', taskMethod],
  ['tasks/result', taskMethod],
  ['tasks/list', taskMethod],
  ['prompts/get', getPrompt],
  ['resources/read', readResource],
  ['completion/complete', complete],
  ['resources/subscribe', subscribe],
  ['resources/unsubscribe', unsubscribe],
  // The Skills extension (SEP-2640; lib/protocol/skills.ts).
  ['skills/list', listSkills],
  ['skills/get', getSkill],
  ['resources/directory/read', readSkillDirectory]
])
