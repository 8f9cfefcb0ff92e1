/**
 * The contract between the gateway core (lib/dispatch/dispatcher.ts) and the upstream layer.
 *
 * Results cross this seam as plain JSON objects, exactly as the upstream sent them (upstream
 * schemas are re-listed verbatim). Shaping a result for the downstream era (adding
 * `resultType`, `ttlMs`, `cacheScope`, `_meta` serverInfo, or removing them for legacy
 * clients) is the dispatcher's job, not the upstream layer's.
 *
 * Over ~500 lines on purpose: it is types and their docstrings only (no code to speak of), the one
 * place a reader learns the whole seam.
 */
import type { EventEmitter } from 'node:events'
import type { Logger } from '../telemetry/log.js'
import type { Era, Revision } from '../protocol/revisions.js'
import type { UpstreamAuthConfig } from './credentials.js'
import type { RequestTrace } from '../telemetry/trace.js'
import { INSTANCES_EXHAUSTED, INTERNAL_ERROR, UpstreamRpcError, type JsonObject, type ListKind } from '../protocol/jsonrpc.js'
import type { CallStatsSnapshot } from './call-stats.js'
import type { CancelSignal } from '../base/cancel.js'

// The wire's own types live with the JSON-RPC rules; re-exported here because every side of this seam names them.
export type { JsonObject, ListKind } from '../protocol/jsonrpc.js'
export { UpstreamRpcError } from '../protocol/jsonrpc.js'

/** One upstream's raw lists, exactly as it sent them (every page concatenated). */
export interface UpstreamCatalogue {
  tools: JsonObject[]
  prompts: JsonObject[]
  resources: JsonObject[]
  resourceTemplates: JsonObject[]
}

/** Callbacks the registry gives each upstream. None may throw. */
export interface UpstreamEvents {
  /**
   * The upstream's catalogue changed for `kind`: `announced` true after a re-list the upstream asked
   * for (its list_changed, whether or not the list differs), false when it came up or went down.
   */
  catalogueChanged: (kind: ListKind, announced: boolean) => void
  /** The upstream sent `notifications/resources/updated` for `uri` (upstream form = downstream form). */
  resourceUpdated: (uri: string) => void
  /** State changed (connecting, ready, down, closed). */
  stateChanged: (status: UpstreamStatus) => void
  /**
   * A question it asked was refused (`question`), or a log line (`log`) or a 2026-07-28 task
   * status (`task`) it sent was dropped, because it could not be tied to exactly one call.
   */
  unrouted: (kind: 'question' | 'log' | 'task') => void
  /**
   * The upstream sent `notifications/tasks/status` (2025-11-25 experimental tasks) on its primary
   * connection: its params (a Task, with the upstream's own taskId). The registry emits
   * 'task_status'; the dispatcher relays it to the task's creator (lib/dispatch/dispatcher.ts). Optional.
   */
  taskStatus?: (params: JsonObject) => void
  /**
   * An isolated instance announced a list change (after its re-list) or sent
   * `notifications/resources/updated`: for its owner only (the registry's 'instance_event').
   * Optional for test doubles.
   */
  instanceEvent?: (event: InstanceEvent) => void
}

/**
 * Whom a call, a subscription or a notification listener serves, in the terms an isolated
 * upstream picks its instance by (docs: Isolated upstreams): the call's `owner` (a legacy
 * session id, the stdio client) and its `principalKey` (lib/auth/principal.ts Principal.key).
 */
export interface InstanceOwner {
  owner?: string
  principalKey?: string
  /**
   * Where the `owner` session's per-session instances live when replicas share sessions (Redis
   * store). When set, the subscriptions of that session's own instance are not counted here: the
   * store applies the session's stored set on the replica running it (lib/sessions/redis-store.ts).
   */
  home?: InstanceHome
}

/**
 * The key of the isolated instance that serves `who` (the one rule; upstream.ts and the
 * notification hub both use it): per-session, the owner, else the principal (2026-07-28
 * traffic has no session); per-principal, the principal; `anonymous` when neither is known.
 * @returns undefined for a shared upstream (no instance)
 */
export function instanceKeyOf (isolation: UpstreamIsolation | undefined, who: InstanceOwner): string | undefined {
  if (isolation === undefined || isolation === 'shared') return undefined
  if (isolation === 'per-session') return who.owner ?? who.principalKey ?? 'anonymous'
  return who.principalKey ?? 'anonymous'
}

/**
 * What an isolated instance sent that belongs to its owner alone: a list change it
 * announced (`kind`, after re-listing it) or a `notifications/resources/updated` (`uri`). `key` is
 * the instance's ({@link instanceKeyOf}); the hub delivers it only to listeners of that key.
 */
export type InstanceEvent = { upstream: string, isolation: 'per-session' | 'per-principal', key: string } & ({ kind: ListKind } | { uri: string })

/** The logger methods the upstream layer uses: a pino Logger, or Fastify's `log`, fits. */
export type UpstreamLogger = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>

/** A question an upstream asks its client (legacy server→client request), or one item of an MRTR `inputRequests`. */
export interface UpstreamQuestion {
  /** `elicitation/create`, `sampling/createMessage` or `roots/list`. */
  method: string
  params?: JsonObject
}

/** Options for one call routed to an upstream. */
export interface UpstreamCallOptions {
  /** Aborting it cancels the upstream call (`notifications/cancelled` upstream). Required: every call is cancellable. A real AbortSignal or a lib/base/cancel Cancellation. */
  signal: CancelSignal
  /**
   * Called for each `notifications/progress` the upstream sends for this call, with the
   * upstream's progress fields (`progress`, `total?`, `message?`). The dispatcher maps them
   * back to the downstream progress token. When undefined, no progress token is sent upstream.
   */
  onProgress?: (progress: { progress: number, total?: number, message?: string }) => void
  /**
   * Called when the upstream asks its client a question while serving this call. Resolves
   * to the client's result; rejects (with an Error carrying `code`, a JSON-RPC code) when the
   * question cannot be relayed, so the upstream gets an error response.
   * When undefined, questions get a -32601-style error response upstream.
   */
  onQuestion?: (question: UpstreamQuestion, signal: CancelSignal) => Promise<JsonObject>
  /** Extra `_meta` keys to pass upstream (e.g. a modern client's logLevel). */
  meta?: JsonObject
  /**
   * The downstream request's span (lib/telemetry/trace.ts), only when tracing is on: the call gets a child
   * span, carried upstream as `traceparent` (HTTP header; stdio `_meta`). Opaque here.
   */
  trace?: RequestTrace
  /**
   * Extra top-level params for the upstream request, e.g. an MRTR retry's `inputResponses` and
   * `requestState` (DIGEST §6f). Never `name`/`arguments`/`uri`, which the call itself sets.
   */
  extraParams?: JsonObject
  /**
   * Called for request-scoped notifications the upstream sends while serving this call
   * (`notifications/message` log lines). Routed like questions (see `owner`).
   */
  onNotification?: (notification: { method: string, params?: JsonObject }) => void
  /**
   * Whom the call serves (one legacy session, one stdio client; opaque). A question or log line
   * the upstream sends is delivered only when it can be tied to one call: the call whose HTTP
   * reply stream carried it, else the calls in flight on that connection when they all have this
   * same owner (then the latest that can take it). Calls of several owners, or several without
   * one, in flight: the question is refused upstream and the log line dropped (mcpx never guesses whose message it holds).
   */
  owner?: string
  /** The caller's principal key (lib/auth/principal.ts Principal.key), for per-principal isolation. */
  principalKey?: string
  /**
   * Where the `owner` session's per-session isolated instances live, when replicas share sessions
   * (`sessions.store: "redis"`; lib/sessions/instances.ts). Undefined: on this process, always.
   */
  home?: InstanceHome
  /**
   * The era of the downstream client this call serves. A dual-era upstream serves server→client
   * questions and log notifications only in a legacy session (its SDK pins the era per
   * connection), so a `'legacy'` call uses the upstream's legacy connection when it has one
   * (config `legacyConnection`: default for HTTP upstreams, opt-in for stdio ones). Otherwise,
   * and by default, the upstream's primary (negotiated) connection.
   */
  era?: Era
  /**
   * The caller's identity, opaque to the upstream layer (lib/auth/principal.ts builds it): handed as is to the
   * registry's {@link UpstreamHeaderProvider} for calls to HTTP upstreams. Undefined: no caller identity.
   */
  principal?: unknown
  /**
   * The `task` param of a 2025-11-25 task-augmented `tools/call` (TaskMetadata, `{ ttl? }`;
   * basic/utilities/tasks.mdx), from a legacy client that negotiated 2025-11-25. Sent upstream
   * only when the upstream's connection negotiated 2025-11-25 and declared
   * `capabilities.tasks.requests.tools.call`; otherwise dropped, as the spec has a receiver that
   * did not declare it ignore it ("MUST process requests of that type normally").
   */
  task?: JsonObject
}

/** What an {@link UpstreamHeaderProvider} is asked for one HTTP upstream request. */
export interface UpstreamHeaderRequest {
  /** The upstream's configured name. */
  upstream: string
  /** {@link UpstreamCallOptions.principal} of the call, as the dispatcher passed it. */
  principal: unknown
  /** true on the one retry after the upstream answered 401 to the headers of the first try. */
  afterUnauthorized: boolean
  /**
   * true for the connection's own traffic (handshake, lists, subscriptions, the GET and listen
   * streams), where `principal` is undefined: the provider answers for mcpx itself, or nothing.
   */
  own?: boolean
  /** On that retry: the 401's `WWW-Authenticate` value, when it had one. */
  challenge?: string
}

/**
 * Supplies extra request headers (e.g. `authorization`) for each call sent to an HTTP upstream,
 * given the caller's principal (the seam for per-caller upstream credentials).
 * Asked once per call; when the upstream answers 401 it is asked once more with
 * `afterUnauthorized: true` and the call is retried once with what it returns (a second 401 is the
 * call's error). Its headers go after the config's `headers` and before the ones mcpx owns
 * (`content-type`, `accept`, `mcp-session-id`, `mcp-protocol-version`, `mcp-method`, `mcp-name`,
 * `mcp-param-*`), which it cannot override. Undefined or `{}`: nothing added. A rejection fails the
 * call with UPSTREAM_ERROR (-31000). Also asked, with `own: true` and no principal, for the
 * connection's own traffic (lists and subscriptions on the call path; the handshake and streams
 * through the SDK transport, whose `authProvider` takes the `authorization` it returns), so an
 * upstream that demands mcpx's own token (client_credentials) can be connected at all.
 */
export type UpstreamHeaderProvider = (request: UpstreamHeaderRequest) => Promise<Record<string, string> | undefined>

/** How an upstream's connections are shared among mcpx's callers (docs: Isolated upstreams). */
export type UpstreamIsolation = 'shared' | 'per-session' | 'per-principal'

/** The keys every upstream has, stdio or HTTP; durations in ms after loading. */
export interface UpstreamCommonConfig {
  prefix?: string
  /** Bound of one call (ms); default the config's upstreamTimeout. */
  timeout?: number
  legacyConnection?: boolean
  /** Restart the call's `timeout` each time the upstream sends progress for it (default false). */
  resetTimeoutOnProgress?: boolean
  /** Bound of a whole call (ms), progress or not; default none. */
  maxTotalTimeout?: number
  /** Default `shared` (one connection for every caller). */
  isolation?: UpstreamIsolation
  /** Most instances of an isolated upstream at once (default 16); past it a call is refused. */
  maxInstances?: number
  /** An isolated instance unused this long (ms) is stopped (default 10 min). */
  idleTimeout?: number
}

/**
 * A call refused because its upstream has `maxInFlight` calls in flight and `maxQueued` waiting
 * (config maxInFlight, maxQueued). JSON-RPC -32603 like mcpx's other "server busy" refusals (lib/protocol/http-status.ts
 * `tooManyConcurrentRequests`); the dispatcher marks its response so that over HTTP it is the
 * refusal row `upstreamBusy` (503 with `Retry-After`). It never reached the upstream.
 */
export class UpstreamBusyError extends UpstreamRpcError {
  /** The lib/protocol/http-status.ts refusal row this error is answered with over HTTP. */
  readonly refusal = 'upstreamBusy' as const
  constructor (message: string) {
    super(INTERNAL_ERROR, message)
    this.name = 'UpstreamBusyError'
  }
}

/**
 * An isolated upstream has `maxInstances` instances running and the call's session or
 * principal has none: -31001 INSTANCES_EXHAUSTED, answered over HTTP by the lib/protocol/http-status.ts refusal
 * row `instancesExhausted` (503 with `Retry-After`). It never reached the upstream.
 */
export class InstancesExhaustedError extends UpstreamRpcError {
  /** The lib/protocol/http-status.ts refusal row this error is answered with over HTTP. */
  readonly refusal = 'instancesExhausted' as const
  constructor (message: string) {
    super(INSTANCES_EXHAUSTED, message)
    this.name = 'InstancesExhaustedError'
  }
}

/**
 * Where one legacy session's per-session isolated instances live when several replicas serve it
 * (under `sessions.store: "redis"`): on the replica that started the first of them, for
 * every isolated upstream. Another replica forwards the session's calls there.
 */
export interface InstanceHome {
  /**
   * true when they live on this replica: the first asker claims them (one Redis round trip per
   * session; later answers are synchronous). Rejects with {@link InstanceForwardError} when that
   * cannot be told (the store is down, the session is gone).
   */
  isHere: () => boolean | Promise<boolean>
  /**
   * Runs `method` on the owner replica's instance of `upstream` and resolves with its raw result;
   * progress, log lines and questions come back to `options`' callbacks, `options.signal` cancels it.
   * Rejects with UpstreamRpcError (the upstream's error, or the owner's refusal) or
   * {@link InstanceForwardError} (too many forwarded calls, the owner is gone, no answer in time).
   * @param timeoutMs the upstream's call timeout, ms: with no word from the owner for this long plus a grace, the call fails
   */
  forward: (upstream: string, method: string, params: JsonObject, options: UpstreamCallOptions, timeoutMs: number) => Promise<JsonObject>
}

/**
 * A call that could not be forwarded to, or answered by, the replica holding its session's isolated
 * instance (under Redis; lib/sessions/instances.ts). `refusal` names the lib/protocol/http-status.ts row it
 * is answered with over HTTP (`forwardBusy`, `sessionInstanceLost`, `storeUnavailable`,
 * `unknownSession`); undefined: an in-band JSON-RPC error (a timeout).
 */
export class InstanceForwardError extends UpstreamRpcError {
  constructor (readonly refusal: 'forwardBusy' | 'sessionInstanceLost' | 'storeUnavailable' | 'unknownSession' | undefined, code: number, message: string) {
    super(code, message)
    this.name = 'InstanceForwardError'
  }
}

/** Default `maxInFlight`: most calls sent to one upstream at once. */
export const DEFAULT_MAX_IN_FLIGHT = 256
/** Default `maxQueued`: most calls waiting for one of an upstream's `maxInFlight` slots. */
export const DEFAULT_MAX_QUEUED = 1024
/** Default `maxMessageBytes`: the largest single message accepted from an upstream, bytes (16 MiB). */
export const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024

/**
 * Default high-water mark of an upstream's stdin, bytes (1 MiB, as `transport.streamBufferBytes`,
 * the mark of every outgoing stream): past it calls wait for 'drain' before being written.
 */
export const DEFAULT_STREAM_BUFFER_BYTES = 1024 * 1024

/** The bounds every upstream config may set; defaults above. */
export interface UpstreamLimitsConfig {
  /** Most calls in flight to this upstream at once (both its connections together). */
  maxInFlight?: number
  /** Most calls waiting for a slot, FIFO; past it a call is refused (UpstreamBusyError). 0: no queue. */
  maxQueued?: number
  /** Largest single message from this upstream, bytes (a stdio line; an HTTP body or SSE event). */
  maxMessageBytes?: number
}

/** One upstream as configured. */
export type UpstreamConfig =
  | UpstreamCommonConfig & UpstreamLimitsConfig & { command: string, args?: string[], env?: Record<string, string>, cwd?: string }
  | UpstreamCommonConfig & UpstreamLimitsConfig & { url: string, headers?: Record<string, string>, auth?: UpstreamAuthConfig }

/**
 * Whether a dual-era upstream gets its second, legacy connection for legacy-era calls
 * (`legacyConnection` in the config; see lib/upstreams/README.md): as configured, else true for
 * an HTTP upstream (one server process behind both connections) and false for a stdio upstream
 * (a second child process would not share the first one's state).
 */
export function wantsLegacyConnection (config: UpstreamConfig): boolean {
  return config.legacyConnection ?? !('command' in config)
}

/** What `status()` reports per upstream, for /readyz and logs. */
export interface UpstreamStatus {
  name: string
  /** 'connecting' | 'ready' | 'down' (restarting with backoff) | 'closed' */
  state: 'connecting' | 'ready' | 'down' | 'closed'
  /** The era and revision negotiated with it, once ready. */
  era?: Era
  revision?: Revision
  /** Child process id for a stdio upstream, while running. */
  pid?: number
  /** How many times it was restarted. */
  restarts: number
  /** The last error, as text, when state is 'down'. */
  lastError?: string
  /**
   * Every child process id of a stdio upstream while running: the primary connection's and, once
   * opened, the legacy connection's (so a test or an operator can check that none is orphaned).
   */
  pids?: number[]
  /**
   * The second, legacy-era connection of a dual-era upstream (see UpstreamCallOptions.era),
   * opened on the first legacy-era call. Absent until then, when the config's `legacyConnection`
   * is false (the default for stdio upstreams), and for an upstream that negotiated a legacy
   * revision (one connection serves every call). `'unavailable'`: the upstream refused a
   * legacy `initialize` (modern-only), so legacy-era calls use the primary connection.
   */
  legacy?: UpstreamLegacyStatus
}

/** The legacy connection's part of {@link UpstreamStatus}. */
export interface UpstreamLegacyStatus {
  state: 'connecting' | 'ready' | 'down' | 'unavailable'
  /** The revision it negotiated, once ready. */
  revision?: Revision
  /** Its child process id (stdio), while running. */
  pid?: number
  /** How many times it was restarted after dying (not counting the first, lazy, open). */
  restarts: number
  /** The last error, as text, when state is 'down' or 'unavailable'. */
  lastError?: string
}

/** One upstream's load and what its bounds refused, for metrics (read at scrape time). */
export interface UpstreamLoad {
  name: string
  /** Calls holding one of its `maxInFlight` slots now. */
  inFlight: number
  /** Calls waiting in its queue now. */
  queued: number
  /** Calls refused since start because its queue was full (UpstreamBusyError). */
  refused: number
  /** Messages from it skipped since start for being over `maxMessageBytes`. */
  oversized: number
  /** Bytes waiting in mcpx for its children's stdin pipes now (stdio; at most about the high-water mark plus one frame). */
  stdinBuffered: number
}

/**
 * The merged catalogue of every upstream, with names prefixed, and the router for calls.
 *
 * Events (EventEmitter):
 * - `'list_changed'` (kind: 'tools' | 'prompts' | 'resources'): the merged list changed, or an
 *   upstream announced a change of that list (relayed even when the merged list came out the same).
 * - `'resource_updated'` (uri: string): an upstream sent `notifications/resources/updated`
 *   for a URI (downstream form, i.e. as mcpx lists it).
 * - `'upstream_state'` (status: UpstreamStatus): an upstream came up, went down or restarted.
 * - `'unrouted'` (upstream: string, kind: 'question' | 'log' | 'task'): a question of that upstream was
 *   refused, or a log line dropped, because it could not be tied to exactly one call;
 *   `task`: a task status notification with no one to relay it to (2025-11-25: no creator,
 *   lib/core.ts; 2026-07-28: not tied to one call in flight, link.ts).
 * - `'instance_event'` (event: InstanceEvent): an isolated instance announced a list change or a
 *   resource update; for its owner alone (lib/connection/notify-hub.ts delivers it by `key`).
 * - `'task_status'` (upstream: string, params: JsonObject): an upstream sent
 *   `notifications/tasks/status` (2025-11-25) on its primary connection; lib/core.ts hands it to
 *   the dispatcher, which names the task's creator (or drops it: 'unrouted' kind `task`).
 */
export interface UpstreamRegistry extends EventEmitter {
  /** Connects every upstream (failures leave it 'down' and retrying; never rejects for one upstream). */
  start (): Promise<void>
  /** Stops every upstream and kills every child; resolves once all child processes have exited. */
  close (): Promise<void>
  /** Resolves once every upstream has been tried once (ready or down). */
  ready (): Promise<void>
  /**
   * Stops the isolated instances keyed by `key` (a session id, or a principal key) on
   * every upstream; resolves once their children exited. Never rejects.
   */
  endSession (key: string): Promise<void>
  /** Process ids of an isolated upstream's running stdio instances. */
  instancePids (name: string): number[]
  /**
   * Subscribes (`add`) or unsubscribes session `sid`'s own instance of the `per-session` upstream
   * serving `uri` (now if it runs, else when it starts), leaving the shared connection's counts
   * alone: the Redis store's end of a session's `resources/subscribe` made on any replica (issue
   * #18). Idempotent; nothing for a URI of another kind of upstream, or of none. Never rejects.
   * Optional for test doubles.
   */
  instanceSubscription? (uri: string, sid: string, add: boolean): Promise<void>
  /**
   * Sends one request to the upstream configured as `upstream` (its own, unprefixed names), as a
   * caller's call: the owner replica's end of a forwarded call (lib/sessions/instances.ts). Rejects
   * with UpstreamRpcError (UPSTREAM_ERROR when no upstream has that name here). Optional for test doubles.
   */
  callUpstream?: (upstream: string, method: string, params: JsonObject, options: UpstreamCallOptions) => Promise<JsonObject>
  status (): UpstreamStatus[]
  /**
   * The configured upstreams' names, in config order: what {@link status} names, without building
   * a status per upstream (the request log and the call metrics read it per call). The
   * array is shared: never modify it. Optional for test doubles (status() is read instead).
   */
  upstreamNames?: () => readonly string[]
  /** Each upstream's calls in flight and queued, and what its bounds refused (metrics). Optional for test doubles. */
  loads?: () => UpstreamLoad[]

  /** Merged, prefixed lists, in config order. Tool objects are verbatim but for `name`. */
  tools (): JsonObject[]
  prompts (): JsonObject[]
  resources (): JsonObject[]
  resourceTemplates (): JsonObject[]
  /** The merged tool by downstream (prefixed) name, for the Mcp-Param-* checks. */
  findTool (name: string): JsonObject | undefined
  /**
   * Which upstream serves a tool or prompt (downstream, prefixed name) or a resource URI, and its
   * own name for it: for the audit trail. Undefined when none does. Optional: a
   * registry without it audits no upstream.
   */
  ownerOf? (kind: 'tool' | 'prompt' | 'resource', name: string): { upstream: string, name: string } | undefined
  /**
   * Merged server capabilities of the upstreams that are ready: the union of their keys,
   * `listChanged`/`subscribe` true when any upstream has them, and
   * `extensions["io.modelcontextprotocol/tasks"]` when any declares that extension (lib/dispatch/tasks.ts).
   */
  capabilities (): JsonObject
  /**
   * Sends a Tasks-extension request (`tasks/get`, `tasks/update`, `tasks/cancel`; SEP-2663) to the
   * upstream named `upstream` (its configured name), `params.taskId` already the upstream's own.
   * Returns the raw result. Rejects with UpstreamRpcError: -32602 when no such upstream is
   * configured (a reload removed it), else what the upstream or its connection answers.
   * Optional: a registry without it serves no tasks.
   */
  taskRequest? (upstream: string, method: string, params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject>
  /**
   * The 2025-11-25 experimental `tasks` server capability (basic/utilities/tasks.mdx) mcpx offers a
   * legacy client that negotiated 2025-11-25: merged over the ready upstreams whose primary
   * connection negotiated 2025-11-25 and declared `capabilities.tasks` with
   * `requests.tools.call`: `list` and `cancel` when at least one of those offers them, and
   * `requests.tools.call`. Undefined when none does. Optional: a registry without it offers none.
   */
  legacyTasks? (): JsonObject | undefined
  /**
   * The configured names of the upstreams whose 2025-11-25 `tasks` capability (as in
   * {@link legacyTasks}) has `key` (`list` or `cancel`), in config order. Optional.
   */
  legacyTaskUpstreams? (key: 'list' | 'cancel'): string[]

  /**
   * The error {@link callTool} (`kind` 'tool') or {@link getPrompt} ('prompt') rejects with for a
   * name no ready upstream lists: -32602 `Unknown <kind>: <name>`, or a transient UPSTREAM_ERROR
   * while the upstream the name would belong to is down or connecting. The dispatcher answers a
   * hidden name with exactly this (hidden things look absent). Never throws.
   */
  absent (kind: 'tool' | 'prompt', name: string): UpstreamRpcError
  /** Rejects with UpstreamRpcError: -32602 for an unknown tool, the upstream's own error otherwise. */
  callTool (name: string, args: JsonObject | undefined, options: UpstreamCallOptions): Promise<JsonObject>
  /** Rejects with UpstreamRpcError: -32602 for an unknown prompt. */
  getPrompt (name: string, args: Record<string, string> | undefined, options: UpstreamCallOptions): Promise<JsonObject>
  /** Rejects with UpstreamRpcError: RESOURCE_NOT_FOUND (-32002) for a URI no upstream listed or templates. */
  readResource (uri: string, options: UpstreamCallOptions): Promise<JsonObject>
  /** `completion/complete`: routed by `ref` (prompt name or resource URI/template). */
  complete (params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject>
  /**
   * Subscribes upstream to a resource (reference counted); rejects with -32002 for an unknown URI.
   * `who`: whose subscription it is; when the URI's upstream is isolated, that caller's instance
   * is subscribed too (now, or when it starts), so its `resources/updated` reach them.
   */
  subscribe (uri: string, who?: InstanceOwner): Promise<void>
  /** Drops one reference (and `who`'s on its instance); unsubscribes upstream when none is left. */
  unsubscribe (uri: string, who?: InstanceOwner): Promise<void>
  /**
   * Hot reload: makes the running upstreams match `config` (see registry.ts). Optional: a registry a
   * host app supplies may not support it (then reload is refused).
   */
  reconcile? (config: Record<string, UpstreamConfig>): Promise<ReconcileSummary>
  /** Per upstream, the counts of what it lists now (for the status page). Optional, like reconcile. */
  counts? (): CatalogueCounts[]
  /** Per upstream, its callers' calls, errors and latency window (the status page; call-stats.ts). Optional. */
  callStats? (): UpstreamCallStats[]
  /** Names and resource URIs two upstreams claim now (the status page). Optional. */
  collisions? (): NameCollision[]
}

/** One upstream's call statistics (lib/upstreams/call-stats.ts). */
export type UpstreamCallStats = { name: string } & CallStatsSnapshot

/**
 * A tool or prompt name (prefixed), resource URI or resource template claimed by two upstreams:
 * the first in config order (`kept`) serves it, the other's (`dropped`) is left out of the catalogue.
 */
export interface NameCollision {
  kind: 'tool' | 'prompt' | 'resource' | 'template'
  /** The downstream name, the URI, or the URI template. */
  name: string
  kept: string
  dropped: string
}

/** What a reconcile changed: upstream names, in config order (removed: in their old order). */
export interface ReconcileSummary {
  added: string[]
  removed: string[]
  /** Config changed: the old one was stopped, a fresh one started. */
  restarted: string[]
  /** Same config: left running, sessions, calls and children untouched. */
  unchanged: string[]
}

/** One upstream's list sizes (0 while it is not ready). */
export interface CatalogueCounts {
  name: string
  tools: number
  prompts: number
  resources: number
  resourceTemplates: number
}
