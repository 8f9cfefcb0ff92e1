/**
 * The contract between the gateway core (lib/dispatch/dispatcher.ts) and the upstream layer: the
 * registry ({@link UpstreamRegistry}), the options of one call, the questions an upstream asks, the
 * events it reports, and the header-provider seam of HTTP upstreams.
 *
 * Results cross this seam as plain JSON objects, exactly as the upstream sent them (upstream
 * schemas are re-listed verbatim). Shaping a result for the downstream era (adding
 * `resultType`, `ttlMs`, `cacheScope`, `_meta` serverInfo, or removing them for legacy
 * clients) is the dispatcher's job, not the upstream layer's.
 */
import type { EventEmitter } from 'node:events'
import type { Logger } from '../telemetry/log.js'
import type { Era } from '../protocol/revisions.js'
import type { RequestTrace } from '../telemetry/trace.js'
import type { JsonObject, ListKind, UpstreamRpcError } from '../protocol/jsonrpc.js'
import type { CancelSignal } from '../base/cancel.js'
import type { UpstreamConfig } from './config.js'
import type { InstanceEvent, InstanceHome, InstanceOwner } from './isolation.js'
import type { CatalogueCounts, NameCollision, UpstreamCallStats, UpstreamLoad, UpstreamStatus } from './status.js'

/** One upstream's raw lists, exactly as it sent them (every page concatenated). */
export interface UpstreamCatalogue {
  tools: JsonObject[]
  prompts: JsonObject[]
  resources: JsonObject[]
  resourceTemplates: JsonObject[]
  /**
   * Its `skills/list` entries (SEP-2640), when it declares the Skills extension (lib/protocol/skills.ts);
   * absent or empty otherwise. Re-listed with resources on its `resources/list_changed` (the
   * extension's change signal).
   */
  skills?: JsonObject[]
}

/** The registry's four routed calls, as the call-duration metric names them (lib/ops/metrics.ts). */
export type CallOperation = 'callTool' | 'getPrompt' | 'readResource' | 'complete'

/** Told once of each settled call of the registry's four routed ones (see {@link UpstreamRegistry.observeCalls}). Neither may throw. */
export interface CallObserver {
  /**
   * A call upstream `upstream` served settled.
   * @param durationMs from the upstream's taking it to its settling, ms (fractional; its queue wait included)
   * @param rejected it rejected (a JSON-RPC error of its own, or its connection's); a tool result
   *        with `isError` is not a rejection
   */
  settled: (upstream: string, operation: CallOperation, durationMs: number, rejected: boolean) => void
  /**
   * A call was refused before it reached an upstream (an absent tool or prompt, a URI no upstream
   * serves, a malformed ref): `kind` and `name` are what it named (`name` undefined when it named
   * nothing usable).
   */
  refused: (operation: CallOperation, kind: 'tool' | 'prompt' | 'resource', name: string | undefined) => void
}

/** Callbacks the registry gives each upstream. None may throw. */
export interface UpstreamEvents {
  /**
   * The upstream's catalogue changed for `kind`: `announced` true after a re-list the upstream asked
   * for (its list_changed, whether or not the list differs), false when it came up or went down, or
   * after a re-list its own `ttlMs` asked for (docs/upstreams.md › Lists that expire).
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
  /**
   * One of the registry's routed calls (`operation`) settled here, timed by the clock reads the
   * upstream's own call statistics make (call-stats.ts): one timer per call for both. Optional.
   */
  callSettled?: (operation: CallOperation, durationMs: number, rejected: boolean) => void
}

/** A list the registry lets a {@link CatalogueGate} judge: tools, prompts, or resource templates. */
export type GatedList = 'tools' | 'prompts' | 'resourceTemplates'

/**
 * A judge of the merged catalogue (lib/policy/integrity.ts: pinned definitions): on every rebuild of
 * a list, the registry hands it every upstream's own items (unprefixed, as the upstream listed them,
 * config order; `ready` false while it is connecting or down, when it lists nothing) and leaves out of the merged list, the routes and `findTool` every item it returns.
 * A left-out item is absent for every caller, exactly as a name no upstream lists. Must not throw.
 */
export interface CatalogueGate {
  /** The items of `list` to leave out (by identity; empty: none). */
  hidden: (list: GatedList, lists: ReadonlyArray<{ upstream: string, ready: boolean, items: readonly JsonObject[] }>) => ReadonlySet<JsonObject>
  /** Set by the registry: the gate calls it when its decisions may have changed (the lists are then rebuilt and judged again). */
  changed?: () => void
}

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
  /**
   * {@link UpstreamCallOptions.principal} of the call, as the dispatcher passed it; on an isolated
   * instance's own traffic, the latest caller it served (its key is `instanceKey`).
   */
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
  /**
   * The isolated instance whose traffic this is (isolation.ts instanceKeyOf: the principal's key
   * for a per-principal upstream), on an instance's own traffic too: whose credentials to send there.
   */
  instanceKey?: string
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

/**
 * The merged catalogue of every upstream, with names prefixed, and the router for calls.
 *
 * Events (EventEmitter):
 * - `'list_changed'` (kind: 'tools' | 'prompts' | 'resources'): the merged list changed, or an
 *   upstream announced a change of that list (relayed even when the merged list came out the same).
 * - `'resource_updated'` (uri: string): an upstream sent `notifications/resources/updated`
 *   for a URI (downstream form, i.e. as mcpx lists it).
 * - `'upstream_state'` (status: UpstreamStatus): an upstream came up, went down or restarted (only
 *   upstreams in the running set: not a reload's new instance before it takes over, nor the old one after).
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
  /**
   * Adds an observer of the settled calls of {@link callTool}, {@link getPrompt},
   * {@link readResource} and {@link complete} (lib/ops/metrics.ts times them with it): each call is
   * timed once, by the upstream that serves it, not again around the registry. Optional: metrics
   * wrap a registry without it in a timer of their own.
   * @returns the function that removes it (an app closing while a host's registry it was given lives on)
   */
  observeCalls? (observer: CallObserver): () => void
  /**
   * Whether some upstream may answer one caller differently from another (isolated, or reached with the
   * caller's identity): then mcpx's cacheable 2026-07-28 results are `cacheScope: "private"`. Optional for test doubles (false).
   */
  answersDependOnCaller?: () => boolean

  /**
   * Installs (or, undefined, removes) the gate every list rebuild asks (see {@link CatalogueGate});
   * the lists are rebuilt and judged at once, and 'list_changed' emitted where they changed.
   * Optional: a registry without it serves every item.
   */
  setCatalogueGate? (gate: CatalogueGate | undefined): void

  /**
   * One list of the `oauth-user` upstreams as principal `principalKey` sees them (docs/upstreams.md ›
   * Upstream identity): its own instances' catalogues, tool and prompt names prefixed; empty before
   * it consented. Optional.
   */
  personalList? (principalKey: string, kind: ListKind | 'resourceTemplates'): JsonObject[]
  /** The `oauth-user` upstream whose catalogue for `principalKey` lists `uri` (or a template matching it); undefined when none. Optional. */
  personalResourceOwner? (principalKey: string, uri: string): string | undefined
  /**
   * The `oauth-user` upstream whose namespace (`<prefix>__…`) holds `name`, and the name without the
   * prefix; undefined for any other name. Such a name is routed there whether listed or not. Optional.
   */
  personalRoute? (name: string): { upstream: string, name: string } | undefined
  /** Opens principal `principalKey`'s connection to an `oauth-user` upstream (after its consent) and announces its lists. Never rejects. */
  openPersonal? (upstream: string, principalKey: string): Promise<void>
  /** Closes that connection and forgets its catalogue (the grant went). Never rejects. */
  closePersonal? (upstream: string, principalKey: string): Promise<void>
  /** Merged, prefixed lists, in config order. Tool objects are verbatim but for `name`. */
  tools (): JsonObject[]
  prompts (): JsonObject[]
  resources (): JsonObject[]
  resourceTemplates (): JsonObject[]
  /**
   * The merged skills (SEP-2640 `Skill` entries) of the upstreams that declare the Skills extension, in
   * config order, `SKILL.md` and file URIs namespaced by the upstream's prefix (lib/protocol/skills.ts);
   * digests, sizes and frontmatter verbatim. Optional: a registry without it serves no skills.
   */
  skills? (): JsonObject[]
  /**
   * The downstream `SKILL.md` URI of the listed skill `uri` belongs to (the manifest itself, a file
   * or folder under the skill's root, or the root), or undefined. Optional.
   */
  skillOwning? (uri: string): string | undefined
  /**
   * `skills/get` of a listed skill by its downstream `SKILL.md` URI, sent to its upstream under the
   * upstream's own URI; the result's `skill` comes back namespaced. Rejects with UpstreamRpcError:
   * -32602 `No skill is served at <uri>` for a URI no upstream lists, else the upstream's own error. Optional.
   */
  getSkill? (uri: string, options: UpstreamCallOptions): Promise<JsonObject>
  /**
   * `resources/directory/read` of a listed skill's folder (or a folder under it), `cursor` passed to
   * the upstream as is (it serves that folder; mcpx keeps no state). Children's URIs come back
   * namespaced. Rejects with -32602 `<uri> is not a directory resource` for a URI under no listed
   * skill, or whose upstream does not declare `directoryRead`. Optional.
   */
  readSkillDirectory? (uri: string, cursor: string | undefined, options: UpstreamCallOptions): Promise<JsonObject>
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
  reconcile? (config: Record<string, UpstreamConfig>, options?: ReconcileOptions): Promise<ReconcileSummary>
  /** Per upstream, the counts of what it lists now (for the status page). Optional, like reconcile. */
  counts? (): CatalogueCounts[]
  /** Per upstream, its callers' calls, errors and latency window (the status page; call-stats.ts). Optional. */
  callStats? (): UpstreamCallStats[]
  /** Names and resource URIs two upstreams claim now (the status page). Optional. */
  collisions? (): NameCollision[]
}

/** Options of a reconcile. */
export interface ReconcileOptions {
  /**
   * How long a replaced upstream's calls in flight may still finish on it once its new one took
   * over, ms (the face's shutdown bound: `daemon.shutdownTimeout`, `transport.stdioDrain`); past it
   * they fail with UPSTREAM_ERROR "shutting down". Default RELOAD_DRAIN_MS (registry.ts).
   */
  drainMs?: number
}

/** An upstream whose changed config could not start: its running instance kept serving under its old config. */
export interface KeptUpstream {
  name: string
  /** Why the new one did not become ready (redacted, one line: the failed step and, for stdio, how the child exited). */
  reason: string
}

/** What a reconcile changed: upstream names, in config order (removed: in their old order). */
export interface ReconcileSummary {
  added: string[]
  removed: string[]
  /**
   * Config changed, made before break: a new instance was started beside the old one, took over
   * once ready, and the old one was drained and stopped.
   */
  restarted: string[]
  /** Same config: left running, sessions, calls and children untouched. */
  unchanged: string[]
  /**
   * Config changed but the new instance did not become ready: the old one keeps serving under its
   * old config. Optional for a host app's registry; mcpx's always sets it.
   */
  kept?: KeptUpstream[]
}
