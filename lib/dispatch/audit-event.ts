/**
 * The audit line of one answered request (lib/policy/audit.ts; docs/policy.md › Audit): which methods are
 * audited, the outcome a response stands for, and the names it records.
 */
import { isObject, type JsonRpcRequest, type JsonRpcResponse } from '../protocol/jsonrpc.js'
import { refusedAs } from '../protocol/http-status.js'
import { asPrincipal } from '../policy/rules.js'
import type { AuditEvent, AuditOutcome } from '../policy/audit.js'
import type { Visibility } from '../policy/visibility.js'
import type { UpstreamRegistry } from '../upstreams/contract.js'
import type { DispatchContext } from './context.js'
import type { ConfirmationRecord } from './confirm-gate.js'

/** Methods audited whatever their outcome (docs/policy.md › Audit); any other only when denied or rate-limited. */
const AUDITED = new Set(['tools/call', 'prompts/get', 'resources/read'])

/**
 * The audit event of `request` answered by `response` in `ms` milliseconds, or undefined when
 * neither its method nor its outcome is audited. Never throws.
 * @param view the caller's view the request was answered under: a tool's upstream is named through the endpoint's rename
 * @param denied whether the response answered a hidden thing (outcome `denied`)
 * @param via `'call_tool'` when `request` is the inner tools/call of a tool-search `call_tool` (docs/discovery.md): recorded as `via`
 * @param confirmation what the confirmation gate decided for it (lib/dispatch/confirm-gate.ts); a
 *        declined call's outcome is `declined`, and the line carries `confirmation` and `confirmMs`
 */
export function auditEventOf (registry: UpstreamRegistry, request: JsonRpcRequest, ctx: DispatchContext, view: Visibility, response: JsonRpcResponse, denied: boolean, ms: number, via?: 'call_tool', confirmation?: ConfirmationRecord): AuditEvent | undefined {
  const method = request.method
  let outcome: AuditOutcome
  let code: number | undefined
  if ('error' in response) {
    outcome = denied ? 'denied' : refusedAs(response) === 'rateLimited' ? 'rate_limited' : 'error'
    if (outcome === 'error') code = response.error.code
  } else {
    outcome = confirmation?.outcome === 'declined' ? 'declined' : response.result.isError === true ? 'tool_error' : 'ok'
  }
  if (!AUDITED.has(method) && outcome !== 'denied' && outcome !== 'rate_limited') return undefined
  const params = isObject(request.params) ? request.params : {}
  const ref = isObject(params.ref) ? params.ref : undefined
  const name = typeof params.name === 'string' ? params.name : typeof params.uri === 'string' ? params.uri : typeof ref?.name === 'string' ? ref.name : typeof ref?.uri === 'string' ? ref.uri : undefined
  const kind = method === 'tools/call' ? 'tool' : method === 'prompts/get' || ref?.type === 'ref/prompt' ? 'prompt' : 'resource'
  // The upstream's own name: through the endpoint's rename for a tool (the view), the catalogue name otherwise.
  const catalogue = name !== undefined && kind === 'tool' ? (view.server?.catalogueTool(name) ?? name) : name
  const owner = catalogue === undefined ? undefined : registry.ownerOf?.(kind, catalogue)
  const args = isObject(params.arguments) ? params.arguments : undefined
  return {
    principal: asPrincipal(ctx.caller)?.id ?? 'anonymous',
    endpoint: ctx.endpoint === undefined ? '/mcp' : `/mcp/${ctx.endpoint}`,
    era: ctx.era,
    revision: ctx.revision,
    ...(ctx.sessionId !== undefined ? { sessionId: ctx.sessionId } : {}),
    method,
    ...(name !== undefined ? { name } : {}),
    ...(via !== undefined ? { via } : {}),
    ...(owner !== undefined ? { upstream: owner.upstream, upstreamName: owner.name } : {}),
    outcome,
    ...(code !== undefined ? { code } : {}),
    durationMs: Math.round(ms * 1000) / 1000,
    ...(confirmation !== undefined ? { confirmation: confirmation.outcome } : {}),
    ...(confirmation?.ms !== undefined ? { confirmMs: confirmation.ms } : {}),
    requestId: request.id,
    ...(args !== undefined ? { arguments: args } : {})
  }
}
