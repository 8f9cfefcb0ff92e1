/**
 * The four list methods: the caller's view of the merged catalogue (filtered and, on a curated
 * endpoint, renamed and overridden), one page at a time (lib/dispatch/paging.ts). The items are
 * filtered before paging, so cursors work the same on /mcp, curated endpoints and stdio.
 */
import type { JsonObject } from '../../protocol/jsonrpc.js'
import { pageOf } from '../paging.js'
import type { MethodCall } from './method.js'

/** `tools/list`. Throws -32602 (UpstreamRpcError) for a malformed or outdated cursor, as every list does. */
export function listTools ({ params, ctx, view, deps }: MethodCall): JsonObject {
  // The tools of the `oauth-user` upstreams the caller consented to follow the shared catalogue
  // (docs/upstreams.md › Upstream identity); none before consent, none for anyone else.
  const personal = ctx.principal === undefined ? undefined : deps.registry.personalTools?.(ctx.principal)
  const tools = personal === undefined || personal.length === 0 ? deps.registry.tools() : [...deps.registry.tools(), ...personal]
  return pageOf('tools', view.tools(tools), deps.pageSize, params.cursor)
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
