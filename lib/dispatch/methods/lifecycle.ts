/**
 * The methods mcpx answers itself, without an upstream: legacy `initialize`, `ping` and
 * `logging/setLevel`, and modern `server/discover`.
 */
import { SUPPORTED_REVISIONS, negotiateLegacy } from '../../protocol/revisions.js'
import { isObject, type JsonObject } from '../../protocol/jsonrpc.js'
import { SKILLS_EXTENSION } from '../../protocol/skills.js'
import type { UpstreamRegistry } from '../../upstreams/contract.js'
import type { Tasks } from '../tasks.js'
import type { ServerInfo } from '../context.js'
import type { MethodCall } from './method.js'

/**
 * The capabilities mcpx declares: the merged capabilities of the upstreams, with
 * `listChanged` on tools, prompts and resources and `subscribe` on resources always
 * declared, because mcpx delivers them (seed › Found along the way). Never throws.
 */
export function capabilitiesOf (registry: UpstreamRegistry): JsonObject {
  const merged = registry.capabilities()
  const out: JsonObject = {}
  for (const [key, value] of Object.entries(merged)) {
    if (key === 'tools' || key === 'prompts' || key === 'resources') continue
    out[key] = value
  }
  out.tools = { listChanged: true }
  out.prompts = { listChanged: true }
  out.resources = { subscribe: true, listChanged: true }
  return out
}

/** The `initialize` result for a legacy client (2024-11-05/basic/lifecycle.mdx). Never throws. */
export function initializeResult (deps: { registry: UpstreamRegistry, tasks: Tasks, serverInfo: ServerInfo }, params: JsonObject | undefined): JsonObject {
  const revision = negotiateLegacy(params?.protocolVersion)
  // The Tasks extension is a 2026-07-28 one (SEP-2663): a legacy client is not offered it. A client
  // that negotiated 2025-11-25 is offered that revision's experimental `tasks` instead, when an
  // upstream that negotiated 2025-11-25 declares them (lib/dispatch/tasks.ts; docs/wire.md › Tasks).
  // The Skills extension (SEP-2640) is era-neutral: declared to a legacy client too, under `extensions`
  // as the server SDK declares it in an initialize result (the legacy schemas allow the extra key).
  const { extensions, ...capabilities } = capabilitiesOf(deps.registry)
  const skills = isObject(extensions) ? extensions[SKILLS_EXTENSION] : undefined
  if (skills !== undefined) capabilities.extensions = { [SKILLS_EXTENSION]: skills }
  const tasks = deps.tasks.legacyCapability(revision)
  if (tasks !== undefined) capabilities.tasks = tasks
  return { protocolVersion: revision, capabilities, serverInfo: deps.serverInfo }
}

/** The `server/discover` result (2026-07-28/server/discover.mdx), before modern shaping. Never throws. */
export function discoverResult (registry: UpstreamRegistry): JsonObject {
  return { supportedVersions: [...SUPPORTED_REVISIONS], capabilities: capabilitiesOf(registry) }
}

/** `initialize` (legacy). */
export function initialize ({ params, deps }: MethodCall): JsonObject { return initializeResult(deps, params) }

/** `ping` (legacy): an empty result. */
export function ping (): JsonObject { return {} }

/** `server/discover` (modern). */
export function discover ({ deps }: MethodCall): JsonObject { return discoverResult(deps.registry) }

/** `logging/setLevel` (legacy): accepted; the level travels to the upstreams per call (lib/dispatch/call-options.ts). */
export function setLevel (): JsonObject { return {} }
