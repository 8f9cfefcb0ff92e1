/**
 * The four list methods: the caller's view of the merged catalogue (filtered and, on a curated
 * endpoint, renamed and overridden), one page at a time (lib/dispatch/paging.ts). The items are
 * filtered before paging, so cursors work the same on /mcp, curated endpoints and stdio.
 */
import type { JsonObject, ListKind } from '../../protocol/jsonrpc.js'
import { pageOf } from '../paging.js'
import type { MethodCall } from './method.js'

/**
 * `tools/list`: on a search-mode endpoint the two meta-tools (lib/policy/discovery.ts ToolSearch.tools).
 * Throws -32602 (UpstreamRpcError) for a malformed or outdated cursor, as every list does.
 */
export function listTools ({ params, ctx, view, deps }: MethodCall): JsonObject {
  return pageOf('tools', view.search !== undefined ? view.search.tools : view.tools(withPersonal(deps.registry.tools(), ctx, deps, 'tools')), deps.pageSize, params.cursor)
}

/** `prompts/list`. */
export function listPrompts ({ params, ctx, view, deps }: MethodCall): JsonObject {
  return pageOf('prompts', view.prompts(withPersonal(deps.registry.prompts(), ctx, deps, 'prompts')), deps.pageSize, params.cursor)
}

/** `resources/list`. */
export function listResources ({ params, ctx, view, deps }: MethodCall): JsonObject {
  return pageOf('resources', view.resources(withPersonal(deps.registry.resources(), ctx, deps, 'resources'), 'uri'), deps.pageSize, params.cursor)
}

/** `resources/templates/list`. */
export function listResourceTemplates ({ params, ctx, view, deps }: MethodCall): JsonObject {
  return pageOf('resourceTemplates', view.resources(withPersonal(deps.registry.resourceTemplates(), ctx, deps, 'resourceTemplates'), 'uriTemplate'), deps.pageSize, params.cursor)
}

/**
 * The shared list, followed by the items of the `oauth-user` upstreams the caller consented to
 * (docs/upstreams.md › Upstream identity): none before consent, and never another caller's. The
 * shared array itself when there are none (no copy).
 */
function withPersonal (shared: JsonObject[], ctx: MethodCall['ctx'], deps: MethodCall['deps'], kind: ListKind | 'resourceTemplates'): JsonObject[] {
  const personal = deps.consent === undefined || ctx.principal === undefined ? undefined : deps.registry.personalList?.(ctx.principal, kind)
  return personal === undefined || personal.length === 0 ? shared : [...shared, ...personal]
}
