/**
 * Tasks, both eras, as a gateway passes them through: the `io.modelcontextprotocol/tasks` extension
 * (SEP-2663, 2026-07-28; DIGEST §6f: "Tasks is now the io.modelcontextprotocol/tasks extension")
 * for modern clients and the 2025-11-25 experimental tasks (basic/utilities/tasks.mdx) for legacy
 * ones: which requests declare them, the task ids mcpx shows its clients, the book of 2025-11-25
 * tasks it created, and the task methods themselves ({@link Tasks}, which the dispatcher owns).
 *
 * One module for both eras (one home per rule): the two share the namespaced ids, the
 * caller-bound ownership check and the routing to the upstream an id names, and differ only in what
 * is offered to whom and in the 2025-11-25 extras (tasks/result, tasks/list, the book, status
 * notifications); split by era, each half would need the other's helpers.
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
import { INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, MISSING_REQUIRED_CLIENT_CAPABILITY, isObject, type JsonRpcNotification, type JsonRpcRequest, UpstreamRpcError, type JsonObject } from '../protocol/jsonrpc.js'
import type { UpstreamCallOptions, UpstreamRegistry } from '../upstreams/contract.js'
import type { DispatchContext } from './context.js'
import type { Logger } from '../telemetry/log.js'
import type { StateSealer } from './mrtr.js'
import { callerKey } from '../policy/rules.js'
import { requireString, stripMeta } from '../protocol/params.js'
import { LEGACY_TASKS_REVISION, LEGACY_TASK_METHODS, RELATED_TASK, TASKS_REQUIRED, TASK_METHODS, TASK_STATUS, declaresTasks } from '../protocol/tasks.js'

const PREFIX = 'mcpx1.'
const TAG_CHARS = 22

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
  /** Whose it is (lib/policy/rules.ts `callerKey`: a principal key, or `anonymous`). */
  owner: string
  /** The session (legacy HTTP session id, or `stdio`) whose tools/call created it: its status notifications go there. Undefined: sessionless. */
  session: string | undefined
}

/**
 * The 2025-11-25 tasks mcpx created for its legacy clients, in memory (docs/wire.md › Tasks, in both
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

// ── The task surface of both eras, as the dispatcher serves it ──

/** Most pages of one upstream's tasks/list that a 2025-11-25 tasks/list reads. */
const MAX_TASK_LIST_PAGES = 20

/** What {@link Tasks} needs of the dispatcher (lib/dispatch/dispatcher.ts) that constructs it. */
export interface TasksOptions {
  /** Routes task requests (`taskRequest`) and says which upstreams offer 2025-11-25 tasks (`legacyTasks`, `legacyTaskUpstreams`). */
  registry: UpstreamRegistry
  /** Keys the namespaced task ids ({@link TaskIds}): the MRTR sealer, so replicas sharing `mrtr.stateKey` read each other's ids. */
  sealer: StateSealer
  /** A 2025-11-25 tasks/list's upstream failures are logged here at debug. */
  logger: Logger
}

/**
 * Every task method mcpx serves, in both eras: the Tasks extension's `tasks/get`, `tasks/update`
 * and `tasks/cancel` for modern clients (SEP-2663), the 2025-11-25 experimental `tasks/get`,
 * `tasks/result`, `tasks/list` and `tasks/cancel` for legacy ones (basic/utilities/tasks.mdx),
 * the task a `tools/call` creates as its client sees it, and the relay of an upstream's
 * `notifications/tasks/status`. The dispatcher owns one and hands it those methods; it keeps
 * what a task is not (policy, rate limits, the MRTR bridge).
 */
export class Tasks {
  /** The 2025-11-25 tasks mcpx created for legacy clients (tasks/list, status notifications). */
  readonly book = new TaskBook()
  private readonly ids: TaskIds
  private readonly registry: UpstreamRegistry
  private readonly log: Logger

  constructor (options: TasksOptions) {
    this.registry = options.registry
    this.ids = new TaskIds(options.sealer)
    this.log = options.logger
  }

  /**
   * The experimental `tasks` capability of an `initialize` result that negotiated `revision`:
   * offered only for 2025-11-25, when an upstream that negotiated 2025-11-25 declares tasks
   * (registry.legacyTasks; docs/wire.md › Tasks). Undefined: none. Never throws.
   */
  legacyCapability (revision: string): JsonObject | undefined {
    return revision === LEGACY_TASKS_REVISION ? this.registry.legacyTasks?.() : undefined
  }

  /**
   * The `task` param (TaskMetadata) of a 2025-11-25 task-augmented tools/call, when the request is
   * one: a legacy request of a client that negotiated 2025-11-25 with `params.task` an object.
   * Anything else leaves `task` out, as mcpx always has (older revisions have no such param).
   * @throws UpstreamRpcError -32602 when such a request's `task` is not an object
   */
  taskParam (params: JsonObject, ctx: DispatchContext): JsonObject | undefined {
    if (ctx.era !== 'legacy' || ctx.revision !== LEGACY_TASKS_REVISION || params.task === undefined) return undefined
    if (!isObject(params.task)) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: task must be an object')
    return params.task
  }

  /**
   * A `tools/call` result as the client sees it: a CreateTaskResult (`resultType: "task"`, SEP-2663)
   * gets a namespaced taskId naming the upstream that serves `catalogue` (the catalogue name of the
   * tool) and bound to the caller; so does a 2025-11-25 CreateTaskResult (`{ task: { taskId, … } }`)
   * answering a task-augmented call (`legacyTask`), which is also recorded in the task book (its
   * owner and session: tasks/list, status notifications). Any other result is returned as it is.
   * @throws UpstreamRpcError -32603 when no upstream serves the tool any more (a reload removed it)
   */
  expose (result: JsonObject, catalogue: string, ctx: DispatchContext, legacyTask = false): JsonObject {
    if (legacyTask) return this.exposeLegacy(result, catalogue, ctx)
    if (result.resultType !== 'task' || typeof result.taskId !== 'string') return result
    return { ...result, taskId: this.ids.wrap(this.upstreamOf(catalogue), result.taskId, callerKey(ctx.caller)) }
  }

  /**
   * A `tasks/*` request: a legacy one as the 2025-11-25 experimental tasks ({@link legacyRequest}),
   * a modern `tasks/get`, `tasks/update` or `tasks/cancel` as the Tasks extension
   * ({@link modernRequest}). `tasks/result` and `tasks/list` are 2025-11-25 only (SEP-2663 removed
   * both): a modern request for them gets -32601, as before.
   * @param options the request's upstream call options (lib/dispatch/call-options.ts callOptions),
   *        made for this request alone: a modern tasks/get changes its notification route
   * @throws UpstreamRpcError as those two, or -32601
   */
  async request (request: JsonRpcRequest, params: JsonObject, ctx: DispatchContext, options: UpstreamCallOptions): Promise<JsonObject> {
    if (ctx.era === 'legacy') return await this.legacyRequest(request, params, ctx, options)
    if (TASK_METHODS.has(request.method)) return await this.modernRequest(request, params, ctx, options)
    throw new UpstreamRpcError(METHOD_NOT_FOUND, `Method not found: ${request.method}`)
  }

  /**
   * An upstream's 2025-11-25 `notifications/tasks/status` (the registry's 'task_status') as its
   * task's creator gets it: the session that created the task through mcpx (task book) and the
   * notification with the client's namespaced taskId. Undefined when mcpx did not create that
   * task, or created it for a sessionless request: the caller drops it. Never throws.
   */
  relayStatus (upstream: string, params: JsonObject): { session: string, notification: JsonRpcNotification } | undefined {
    const upstreamId = params.taskId
    const task = typeof upstreamId === 'string' ? this.book.find(upstream, upstreamId) : undefined
    if (task === undefined || task.session === undefined) return undefined
    const taskId = this.ids.wrap(upstream, task.taskId, task.owner)
    return { session: task.session, notification: { jsonrpc: '2.0', method: TASK_STATUS, params: withRelatedTask({ ...params, taskId }, taskId) } }
  }

  /** {@link expose} of a 2025-11-25 task-augmented call's result. */
  private exposeLegacy (result: JsonObject, catalogue: string, ctx: DispatchContext): JsonObject {
    const task = result.task
    if (!isObject(task) || typeof task.taskId !== 'string') return result
    const upstream = this.upstreamOf(catalogue)
    const owner = callerKey(ctx.caller)
    this.book.add({ upstream, taskId: task.taskId, owner, session: ctx.sessionId })
    const taskId = this.ids.wrap(upstream, task.taskId, owner)
    return withRelatedTask({ ...result, task: { ...task, taskId } }, taskId)
  }

  /**
   * The configured name of the upstream serving the tool `catalogue`.
   * @throws UpstreamRpcError -32603 when none does any more (a reload removed it)
   */
  private upstreamOf (catalogue: string): string {
    const upstream = this.registry.ownerOf?.('tool', catalogue)?.upstream
    if (upstream === undefined) throw new UpstreamRpcError(INTERNAL_ERROR, `the task's upstream for ${catalogue} is gone`)
    return upstream
  }

  /**
   * `tasks/get`, `tasks/update` or `tasks/cancel` (the Tasks extension, SEP-2663), routed to the
   * upstream that owns the task, with the upstream's own taskId; a result's taskId is the client's
   * namespaced one again. Only while an upstream declares the extension (otherwise, as before, -32601).
   * A `notifications/tasks/status` the upstream sends for this task while it answers a tasks/get
   * (SEP-2663 › Task Status Notifications: "on an SSE stream associated with a tasks/get request")
   * reaches the client on its tasks/get reply, with its taskId; one for another task is dropped.
   * @throws UpstreamRpcError -32601 (not offered), -32021 with `data.requiredCapabilities` (the
   *         request did not declare the extension), -32602 (taskId not a string, or not a task of
   *         this caller's: unknown, another caller's, malformed), or what the upstream answers
   */
  private async modernRequest (request: JsonRpcRequest, params: JsonObject, ctx: DispatchContext, options: UpstreamCallOptions): Promise<JsonObject> {
    if (this.registry.taskRequest === undefined || !declaresTasks(this.registry.capabilities())) {
      throw new UpstreamRpcError(METHOD_NOT_FOUND, `Method not found: ${request.method}`)
    }
    if (!declaresTasks(ctx.clientCapabilities)) {
      throw new UpstreamRpcError(MISSING_REQUIRED_CLIENT_CAPABILITY, 'Missing required client capability: extensions', { requiredCapabilities: TASKS_REQUIRED })
    }
    const { taskId, owned } = this.ownedTask(params, callerKey(ctx.caller))
    const notify = ctx.notify
    if (request.method === 'tasks/get' && notify !== undefined) {
      const others = options.onNotification
      options.onNotification = (n) => {
        if (n.method !== TASK_STATUS) { others?.(n); return }
        if (n.params?.taskId === owned.taskId) notify({ jsonrpc: '2.0', method: TASK_STATUS, params: { ...n.params, taskId } })
      }
    }
    const result = await this.registry.taskRequest(owned.upstream, request.method, { ...stripMeta(params), taskId: owned.taskId }, options)
    return typeof result.taskId === 'string' ? { ...result, taskId } : result
  }

  /**
   * `tasks/get`, `tasks/result`, `tasks/cancel` or `tasks/list` of the 2025-11-25 experimental tasks
   * (basic/utilities/tasks.mdx) from a legacy client: offered only to a client that negotiated
   * 2025-11-25 while an upstream that negotiated 2025-11-25 declares tasks (registry.legacyTasks;
   * `tasks/list` only when one declares `tasks.list`), else -32601 as before. The client needs
   * no capability of its own (its `tasks` capability is about requests it receives). The first
   * three go to the upstream the namespaced id names, with the upstream's own id; every taskId of
   * the reply (`taskId`, `_meta["io.modelcontextprotocol/related-task"].taskId`) is the client's
   * namespaced one again. `tasks/result` blocks on the upstream until the task is terminal, bounded
   * like any call by the upstream's `timeout` (and `maxTotalTimeout`; the upstream sends no
   * progress for it, so `resetTimeoutOnProgress` has nothing to restart on): past it the client
   * gets -31000 and the upstream a `notifications/cancelled` for that tasks/result request only
   * (the task runs on; the client may ask again). A tasks/get the upstream answers -32602 (the
   * task is gone) drops it from the task book.
   * @throws UpstreamRpcError -32601 (not offered), -32602 (taskId not a string, or not a task of
   *         this caller's: unknown, another caller's, tampered; a tasks/list cursor), or what the upstream answers
   */
  private async legacyRequest (request: JsonRpcRequest, params: JsonObject, ctx: DispatchContext, options: UpstreamCallOptions): Promise<JsonObject> {
    const method = request.method
    const offered = LEGACY_TASK_METHODS.has(method) ? this.legacyCapability(ctx.revision) : undefined
    if (offered === undefined || this.registry.taskRequest === undefined || (method === 'tasks/list' && offered.list === undefined)) {
      throw new UpstreamRpcError(METHOD_NOT_FOUND, `Method not found: ${method}`)
    }
    const owner = callerKey(ctx.caller)
    if (method === 'tasks/list') return await this.listLegacy(params, owner, options)
    const { taskId, owned } = this.ownedTask(params, owner)
    let result: JsonObject
    try {
      result = await this.registry.taskRequest(owned.upstream, method, { ...stripMeta(params), taskId: owned.taskId }, options)
    } catch (err) {
      // Only tasks/get's -32602 surely means "no such task": tasks/cancel's also means "already
      // terminal", and tasks/result answers whatever the tool call would have.
      if (method === 'tasks/get' && err instanceof UpstreamRpcError && err.code === INVALID_PARAMS) this.book.forget(owner, owned.upstream, owned.taskId)
      throw err
    }
    const shown = typeof result.taskId === 'string' ? { ...result, taskId } : result
    return withRelatedTask(shown, taskId)
  }

  /**
   * The request's `taskId` (the client's) and the upstream task it names for `owner`.
   * @throws UpstreamRpcError -32602 when it is not a string, or not a task of this owner's
   */
  private ownedTask (params: JsonObject, owner: string): { taskId: string, owned: OwnedTask } {
    const taskId = requireString(params, 'taskId')
    const owned = this.ids.unwrap(taskId, owner)
    if (owned === undefined) throw new UpstreamRpcError(INVALID_PARAMS, `Unknown task: ${taskId}`)
    return { taskId, owned }
  }

  /**
   * 2025-11-25 `tasks/list`: the caller's tasks only. Each upstream that declares `tasks.list` and
   * holds tasks of this owner in the task book is asked for its list (its own pages followed, at
   * most MAX_TASK_LIST_PAGES); of what it lists, only the owner's tasks are shown, with their
   * namespaced ids; a task it no longer lists (a complete read) leaves the book. One page: no
   * `nextCursor` (the book bounds it: MAX_TASKS_PER_OWNER); a `cursor` is -32602. An upstream
   * that fails is left out of the page (logged at debug). Every page's call takes `options` (the
   * upstream layer only reads them).
   */
  private async listLegacy (params: JsonObject, owner: string, options: UpstreamCallOptions): Promise<JsonObject> {
    if (params.cursor !== undefined) throw new UpstreamRpcError(INVALID_PARAMS, 'Invalid params: unknown cursor (mcpx answers tasks/list in one page)')
    const taskRequest = this.registry.taskRequest
    const tasks: JsonObject[] = []
    if (taskRequest === undefined) return { tasks }
    for (const upstream of this.registry.legacyTaskUpstreams?.('list') ?? []) {
      const mine = this.book.ownedOn(owner, upstream)
      if (mine.size === 0) continue
      const seen = new Set<string>()
      let complete = false
      try {
        let cursor: string | undefined
        for (let page = 0; page < MAX_TASK_LIST_PAGES && !complete; page++) {
          const result = await taskRequest.call(this.registry, upstream, 'tasks/list', cursor === undefined ? {} : { cursor }, options)
          for (const task of Array.isArray(result.tasks) ? result.tasks : []) {
            if (!isObject(task) || typeof task.taskId !== 'string' || !mine.has(task.taskId) || seen.has(task.taskId)) continue
            seen.add(task.taskId)
            tasks.push({ ...task, taskId: this.ids.wrap(upstream, task.taskId, owner) })
          }
          cursor = typeof result.nextCursor === 'string' && result.nextCursor !== '' ? result.nextCursor : undefined
          complete = cursor === undefined
        }
      } catch (err) {
        this.log.debug({ err, upstream }, 'tasks/list: upstream failed; left out')
        continue
      }
      if (complete) for (const id of mine.keys()) if (!seen.has(id)) this.book.forget(owner, upstream, id)
    }
    return { tasks }
  }
}

/** `result` with `_meta["io.modelcontextprotocol/related-task"].taskId`, when it has one, set to `taskId` (the client's). */
function withRelatedTask (result: JsonObject, taskId: string): JsonObject {
  const meta = result._meta
  if (!isObject(meta) || !isObject(meta[RELATED_TASK])) return result
  return { ...result, _meta: { ...meta, [RELATED_TASK]: { ...meta[RELATED_TASK], taskId } } }
}
