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

// ── 2025-11-25 experimental tasks (basic/utilities/tasks.mdx), for legacy clients ──

/** The one legacy revision with (experimental) tasks: a client or upstream that negotiated another has none. */
export const LEGACY_TASKS_REVISION = '2025-11-25'

/** The `_meta` key naming the task a message belongs to (RelatedTaskMetadata, 2025-11-25). */
export const RELATED_TASK = 'io.modelcontextprotocol/related-task'

/** The 2025-11-25 client→server task methods mcpx serves a legacy client (tasks/update is 2026-only). */
export const LEGACY_TASK_METHODS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel'])

/** Most tasks {@link TaskBook} keeps per owner (the oldest dropped first). */
export const MAX_TASKS_PER_OWNER = 1_000
/** Most tasks {@link TaskBook} keeps in all (the oldest dropped first, whoever owns it). */
export const MAX_TASKS = 50_000

/** One 2025-11-25 task mcpx created for a client, as {@link TaskBook} keeps it. */
export interface BookedTask {
  /** The upstream's configured name. */
  upstream: string
  /** The upstream's own taskId. */
  taskId: string
  /** Whose it is (`taskOwner`: a principal key, or `anonymous`). */
  owner: string
  /** The session (legacy HTTP session id, or `stdio`) whose tools/call created it: its status notifications go there. Undefined: sessionless. */
  session: string | undefined
}

/**
 * The 2025-11-25 tasks mcpx created for its legacy clients, in memory (issue #18 › Tasks in both
 * eras). `tasks/list` shows a caller only the tasks it holds for that caller's owner key (a shared
 * upstream's own list has every caller's tasks); `notifications/tasks/status` is relayed to the
 * session that created the task. Bounded: {@link MAX_TASKS_PER_OWNER} per owner and
 * {@link MAX_TASKS} in all, the oldest dropped first; an entry also goes when its upstream says
 * the task is unknown. Per process: a replica knows only the tasks created through it.
 */
export class TaskBook {
  /** Every task, oldest first (Map order), by `owner\0upstream\0taskId`. */
  private readonly all = new Map<string, BookedTask>()
  /** Each owner's keys, oldest first. */
  private readonly owners = new Map<string, Set<string>>()
  /**
   * `upstream\0taskId` → the latest key of that upstream task: a shared upstream's ids are unique,
   * but two isolated instances may mint the same one (their status notifications are not relayed).
   */
  private readonly byTask = new Map<string, string>()

  constructor (private readonly perOwner = MAX_TASKS_PER_OWNER, private readonly total = MAX_TASKS) {}

  /** Records a task (again: it moves to the newest place). */
  add (task: BookedTask): void {
    const key = `${task.owner}\0${taskKey(task.upstream, task.taskId)}`
    this.remove(key)
    let keys = this.owners.get(task.owner)
    if (keys === undefined) this.owners.set(task.owner, keys = new Set())
    if (keys.size >= this.perOwner) this.remove(keys.values().next().value as string)
    if (this.all.size >= this.total) this.remove(this.all.keys().next().value as string)
    this.owners.set(task.owner, keys) // it may have gone with its last task just above
    keys.add(key)
    this.all.set(key, task)
    this.byTask.set(taskKey(task.upstream, task.taskId), key)
  }

  /** The task `upstream` calls `taskId`, when mcpx created it (the latest creation, if two owners' instances minted the same id). */
  find (upstream: string, taskId: string): BookedTask | undefined {
    const key = this.byTask.get(taskKey(upstream, taskId))
    return key === undefined ? undefined : this.all.get(key)
  }

  /** The tasks of `owner` on `upstream`, by the upstream's taskId. */
  ownedOn (owner: string, upstream: string): Map<string, BookedTask> {
    const out = new Map<string, BookedTask>()
    for (const key of this.owners.get(owner) ?? []) {
      const task = this.all.get(key)
      if (task !== undefined && task.upstream === upstream) out.set(task.taskId, task)
    }
    return out
  }

  /** Forgets `owner`'s task (its upstream says it is unknown). */
  forget (owner: string, upstream: string, taskId: string): void {
    this.remove(`${owner}\0${taskKey(upstream, taskId)}`)
  }

  /** How many tasks are kept (metrics, tests). */
  get size (): number { return this.all.size }

  private remove (key: string): void {
    const task = this.all.get(key)
    if (task === undefined) return
    this.all.delete(key)
    const keys = this.owners.get(task.owner)
    keys?.delete(key)
    if (keys?.size === 0) this.owners.delete(task.owner)
    const reverse = taskKey(task.upstream, task.taskId)
    if (this.byTask.get(reverse) === key) this.byTask.delete(reverse)
  }
}

function taskKey (upstream: string, taskId: string): string {
  return `${upstream}\0${taskId}`
}
