/**
 * The `io.modelcontextprotocol/tasks` extension (SEP-2663, 2026-07-28; DIGEST §6f: "Tasks is now
 * the io.modelcontextprotocol/tasks extension") as a gateway passes it through: which requests
 * declare it, and the task ids mcpx shows its clients.
 *
 * Task ids are namespaced: an upstream's own `taskId` never reaches a client as it is, because two
 * upstreams may mint the same one (and a client must not reach another client's task by guessing).
 * The id a client sees is opaque:
 *
 *   `mcpx1.<base64url(JSON [upstream, taskId])>.<tag>`
 *
 * where `tag` is the first 22 characters (128 bits) of HMAC-SHA-256 over `task|<owner>|<body>`
 * under the MRTR sealer's key (`mrtr.stateKey`; replicas sharing it read each other's ids) and
 * `owner` is the caller's principal key (`anonymous` without auth, shared like rate limits). An id
 * that does not open, or opens for another owner, is an unknown task: -32602 (SEP-2663: unknown
 * taskId on tasks/get, tasks/update and tasks/cancel).
 */
import { timingSafeEqual } from 'node:crypto'
import { isObject } from './jsonrpc.js'
import type { JsonObject } from './upstreams/types.js'
import type { StateSealer } from './mrtr.js'

/** The extension's identifier under `capabilities.extensions` (SEP-2663). */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks'

/** The extension's client→server methods on a task (SEP-2663); `tasks/result` and `tasks/list` were removed. */
export const TASK_METHODS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/update', 'tasks/cancel'])

/** The `data.requiredCapabilities` of a -32021 for a client that did not declare the extension. */
export const TASKS_REQUIRED: JsonObject = { extensions: { [TASKS_EXTENSION]: {} } }

const PREFIX = 'mcpx1.'
const TAG_CHARS = 22

/**
 * Whether a capabilities object (a server's, or a client's `_meta` clientCapabilities) declares
 * the extension: `extensions["io.modelcontextprotocol/tasks"]` is an object. Never throws.
 */
export function declaresTasks (capabilities: unknown): boolean {
  return isObject(capabilities) && isObject(capabilities.extensions) && isObject(capabilities.extensions[TASKS_EXTENSION])
}

/** An upstream's task, as a namespaced id names it. */
export interface OwnedTask {
  /** The upstream's configured name. */
  upstream: string
  /** The upstream's own taskId. */
  taskId: string
}

/** Mints and opens namespaced task ids (see the module comment for the format). */
export class TaskIds {
  constructor (private readonly sealer: StateSealer) {}

  /** The id a client sees for `upstream`'s task `taskId`, bound to `owner` (a principal key, or `anonymous`). */
  wrap (upstream: string, taskId: string, owner: string): string {
    const body = Buffer.from(JSON.stringify([upstream, taskId])).toString('base64url')
    return `${PREFIX}${body}.${this.tag(owner, body)}`
  }

  /**
   * The upstream task a client's id names, or undefined when it is not one mcpx minted for this
   * `owner` (malformed, another owner's, another key's). Never throws.
   */
  unwrap (id: unknown, owner: string): OwnedTask | undefined {
    if (typeof id !== 'string' || !id.startsWith(PREFIX)) return undefined
    const dot = id.indexOf('.', PREFIX.length)
    if (dot < 0) return undefined
    const body = id.slice(PREFIX.length, dot)
    const given = Buffer.from(id.slice(dot + 1))
    const expected = Buffer.from(this.tag(owner, body))
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined
    try {
      const pair = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as unknown
      if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string' || typeof pair[1] !== 'string') return undefined
      return { upstream: pair[0], taskId: pair[1] }
    } catch {
      return undefined
    }
  }

  private tag (owner: string, body: string): string {
    return this.sealer.sign(`task|${owner}|${body}`).slice(0, TAG_CHARS)
  }
}
