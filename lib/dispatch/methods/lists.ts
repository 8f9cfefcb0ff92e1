/**
 * The four list methods: the caller's view of the merged catalogue (filtered and, on a curated
 * endpoint, renamed and overridden), one page at a time (lib/dispatch/paging.ts). The items are
 * filtered before paging, so cursors work the same on /mcp, curated endpoints and stdio.
 */
import type { JsonObject } from '../../protocol/jsonrpc.js'
import { pageOf } from '../paging.js'
import type { MethodCall } from './method.js'

/**
 * `tools/list`: on a search-mode endpoint the two meta-tools (lib/policy/discovery.ts ToolSearch.tools).
 * Throws -32602 (UpstreamRpcError) for a malformed or outdated cursor, as every list does.
 */
export function listTools ({ params, view, deps }: MethodCall): JsonObject {
  return pageOf('tools', view.search !== undefined ? view.search.tools : view.tools(deps.registry.tools()), deps.pageSize, params.cursor)
}

/** `prompts/list`. */
export function listPrompts ({ params, view, deps }: MethodCall): JsonObject {
  return pageOf('prompts', view.prompts(deps.registry.prompts()), deps.pageSize, params.cursor)
}

/** `resources/list`. */
export function listResources ({ params, view, deps }: MethodCall): JsonObject {
  return pageOf('resources', view.resources(deps.registry.resources(), 'uri'), deps.pageSize, params.cursor)
}

/** `resources/templates/list`. */
export function listResourceTemplates ({ params, view, deps }: MethodCall): JsonObject {
  return pageOf('resourceTemplates', view.resources(deps.registry.resourceTemplates(), 'uriTemplate'), deps.pageSize, params.cursor)
}
