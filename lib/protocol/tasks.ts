/**
 * The tasks vocabulary of both eras, as the wire spells it: the `io.modelcontextprotocol/tasks`
 * extension (SEP-2663, 2026-07-28; DIGEST §6f) and the 2025-11-25 experimental tasks
 * (basic/utilities/tasks.mdx). Constants and one predicate, no state: the upstream layer reads them
 * to merge capabilities, lib/dispatch/tasks.ts to serve the task methods.
 */
import { isObject, type JsonObject } from './jsonrpc.js'

/** The extension's identifier under `capabilities.extensions` (SEP-2663). */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks'

/** The extension's client→server methods on a task (SEP-2663); `tasks/result` and `tasks/list` were removed. */
export const TASK_METHODS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/update', 'tasks/cancel'])

/** The `data.requiredCapabilities` of a -32021 for a client that did not declare the extension. */
export const TASKS_REQUIRED: JsonObject = { extensions: { [TASKS_EXTENSION]: {} } }

/** A task's status pushed by its server: 2025-11-25 (basic/utilities/tasks.mdx) and SEP-2663 alike. */
export const TASK_STATUS = 'notifications/tasks/status'

/**
 * Whether a capabilities object (a server's, or a client's `_meta` clientCapabilities) declares
 * the extension: `extensions["io.modelcontextprotocol/tasks"]` is an object. Never throws.
 */
export function declaresTasks (capabilities: unknown): boolean {
  return isObject(capabilities) && isObject(capabilities.extensions) && isObject(capabilities.extensions[TASKS_EXTENSION])
}

// ── 2025-11-25 experimental tasks (basic/utilities/tasks.mdx) ──

/** The one legacy revision with (experimental) tasks: a client or upstream that negotiated another has none. */
export const LEGACY_TASKS_REVISION = '2025-11-25'

/** The `_meta` key naming the task a message belongs to (RelatedTaskMetadata, 2025-11-25). */
export const RELATED_TASK = 'io.modelcontextprotocol/related-task'

/** The 2025-11-25 client→server task methods mcpx serves a legacy client (tasks/update is 2026-only). */
export const LEGACY_TASK_METHODS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel'])
