/** The task methods of both eras (lib/dispatch/tasks.ts): the era picks 2025-11-25 tasks or the 2026-07-28 Tasks extension. */
import type { JsonObject } from '../../protocol/jsonrpc.js'
import type { MethodCall } from './method.js'

/** `tasks/get`, `tasks/update`, `tasks/cancel`, `tasks/result`, `tasks/list`, with the request's upstream call options. */
export async function taskMethod ({ request, params, ctx, deps }: MethodCall): Promise<JsonObject> {
  return await deps.tasks.request(request, params, ctx, deps.callOptions(request, ctx))
}
