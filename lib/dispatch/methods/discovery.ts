/**
 * The tool-search meta-tools of an endpoint in `"mode": "search"` (docs/discovery.md › Tool search;
 * the index and ranking: lib/policy/discovery.ts). `search_tools` is answered here, from the
 * caller's view. `call_tool` is not a second tools/call: the dispatcher turns a well-formed one into
 * the `tools/call` of its inner tool before anything else runs ({@link innerCallOf}), so the one
 * tools/call path (lib/dispatch/methods/tools.ts: visibility, rate limits, MRTR, Tasks; the audit
 * and trace steps of lib/dispatch/dispatcher.ts) answers it. Only a malformed `call_tool` reaches
 * {@link metaCall}.
 *
 * Invalid arguments to a meta-tool are a tool error (`isError: true`, "Input validation error: …"),
 * as the official SDK's McpServer answers a tool's invalid arguments and as 2025-11-25
 * server/tools.mdx › Error Handling asks for input validation errors (the model can correct them).
 */
import { isObject, type JsonObject, type JsonRpcRequest } from '../../protocol/jsonrpc.js'
import { CALL_TOOL, LIMIT_MAX, LIMIT_MIN, MAX_QUERY_CHARS, SEARCH_TOOLS } from '../../policy/discovery.js'
import { argumentsOf, type MethodCall } from './method.js'

/** How a `tools/call` reached the tools/call path, when not directly (the audit line's `via`). */
export type Via = 'call_tool'

/**
 * The `tools/call` that a `tools/call` of `call_tool` stands for: the same jsonrpc, id and method;
 * params as sent minus `name` and `arguments` (so `_meta`, `task`, `inputResponses` and
 * `requestState` carry over), plus the inner `name` and, when given, the inner `arguments`.
 * @returns undefined when `request` is not a `call_tool` call or its arguments are malformed (not an
 *          object with a string `name` and, when present, an object `arguments`): the handler answers those.
 *          Never throws.
 */
export function innerCallOf (request: JsonRpcRequest): JsonRpcRequest | undefined {
  const params = request.params
  if (params === undefined || params.name !== CALL_TOOL) return undefined
  const args = params.arguments
  if (!isObject(args) || typeof args.name !== 'string' || (args.arguments !== undefined && !isObject(args.arguments))) return undefined
  const { name: _name, arguments: _arguments, ...rest } = params
  const inner: JsonObject = { ...rest, name: args.name }
  if (args.arguments !== undefined) inner.arguments = args.arguments
  return { ...request, params: inner }
}

/** A meta-tool's answer to invalid arguments: a tool error, as the official SDK words it. */
function invalidArguments (tool: string, reason: string): JsonObject {
  return { content: [{ type: 'text', text: `Input validation error: Invalid arguments for tool ${tool}: ${reason}` }], isError: true }
}

/**
 * A direct `tools/call` of a meta-tool on a search-mode endpoint (`call.view.search` set, `call.via` unset).
 * @param name the called name
 * @returns the result, or undefined when `name` is no meta-tool (the tools/call path goes on with it)
 * @throws UpstreamRpcError -32602 when `arguments` is present and not an object (as for any tools/call)
 */
export function metaCall (call: MethodCall, name: string): JsonObject | undefined {
  if (name === SEARCH_TOOLS) return searchTools(call)
  if (name !== CALL_TOOL) return undefined
  argumentsOf(call.params)
  // A well-formed call_tool never gets here (the dispatcher made it the inner tool's tools/call).
  const args = call.params.arguments as JsonObject | undefined
  if (args === undefined || typeof args.name !== 'string') return invalidArguments(CALL_TOOL, 'name must be a string')
  return invalidArguments(CALL_TOOL, 'arguments must be an object')
}

/** `search_tools`: the caller's tools on this endpoint that match `query`, best first (lib/policy/discovery.ts). */
function searchTools ({ params, view, deps }: MethodCall): JsonObject {
  const args = argumentsOf(params) ?? {}
  const { query, limit } = args
  if (typeof query !== 'string') return invalidArguments(SEARCH_TOOLS, 'query must be a string')
  if (query.length > MAX_QUERY_CHARS) return invalidArguments(SEARCH_TOOLS, `query must be at most ${MAX_QUERY_CHARS} characters`)
  if (limit !== undefined && (typeof limit !== 'number' || !Number.isInteger(limit) || limit < LIMIT_MIN || limit > LIMIT_MAX)) {
    return invalidArguments(SEARCH_TOOLS, `limit must be an integer from ${LIMIT_MIN} to ${LIMIT_MAX}`)
  }
  const search = view.search
  if (search === undefined) return invalidArguments(SEARCH_TOOLS, 'this endpoint is not in search mode') // not reached: callers check view.search
  // The view's policy view and endpoint name its index's lineage: its next list updates that index in place.
  const tools = search.search(view.tools(deps.registry.tools()), query, limit, { policy: view.policy, server: view.server })
  return { content: [{ type: 'text', text: JSON.stringify({ tools }) }], structuredContent: { tools } }
}
