/**
 * One upstream MCP server: the facade the registry (registry.ts) calls. It supervises the connection
 * (connect, list, re-list, backoff and restart), routes each call, and routes the upstream's questions
 * and request-scoped notifications to the call they belong to. Design notes: ./README.md.
 * Sources: DIGEST §2e (cancellation, progress), §3a (timeouts), §6a (eras, dual-era), §6b (stdio
 * probe, restart), §6c (HTTP), §6d (mirrored headers), §6f (subscriptions/listen, MRTR).
 */
import { createInterface } from 'node:readline'
import type { Readable } from 'node:stream'
import { ProtocolError, SdkError, SdkErrorCode, type McpSubscription } from '@modelcontextprotocol/client'
import { INTERNAL_ERROR, METHOD_NOT_FOUND, UPSTREAM_ERROR, isObject } from '../jsonrpc.js'
import type { Era, Revision } from '../revisions.js'
import {
  UpstreamRpcError, wantsLegacyConnection, type JsonObject, type ListKind, type UpstreamCallOptions, type UpstreamCatalogue, type UpstreamConfig,
  type UpstreamEvents, type UpstreamLogger, type UpstreamStatus
} from './types.js'
import { PASSTHROUGH, UpstreamClient, callScope, tapSend, type CallScope } from './client.js'
import { KILL_GRACE_MS, UpstreamHttpTransport, UpstreamStdioTransport } from './transports.js'
import { redactText } from './redact.js'

/** First restart delay (ms); doubles per failed attempt. */
export const RESTART_INITIAL_DELAY_MS = 100
/** Longest restart delay (ms). */
export const RESTART_MAX_DELAY_MS = 10_000
/** A connection up this long (ms) resets the backoff. */
export const RESTART_RESET_AFTER_MS = 10_000
/** The requests a legacy-era call sends over the legacy connection of a dual-era upstream (DIGEST §6f: the ones that may ask or log). */
const LEGACY_ROUTED_METHODS = new Set(['tools/call', 'prompts/get', 'resources/read', 'completion/complete'])
/** Longest wait for the `server/discover` probe on stdio before falling back to `initialize` (ms). */
export const STDIO_PROBE_TIMEOUT_MS = 5_000
/**
 * Shortest timeout (ms) of the setup exchanges (connect, lists, subscriptions), which are ours, not
 * a caller's: a short per-call `timeout` must not keep a slow-starting upstream down.
 */
export const SETUP_TIMEOUT_MS = 30_000
/** Most pages read from one list before giving up (a defence against a cursor that never ends). */
export const MAX_LIST_PAGES = 100

/** Options of one upstream connection. */
export interface UpstreamOptions {
  /** Where lifecycle lines and the child's stderr go (each line tagged `{ upstream: name }`). */
  logger: UpstreamLogger
  /** Timeout of one call (ms) when the config has no `timeout`. */
  defaultTimeoutMs: number
  events: UpstreamEvents
}

type SendFn = (client: UpstreamClient, params: JsonObject, requestOptions: Record<string, unknown>) => Promise<unknown>

/** The backoff before restart attempt number `failures + 1`, ms: RESTART_INITIAL_DELAY_MS doubling, capped at RESTART_MAX_DELAY_MS. */
function restartDelayMs (failures: number): number {
  return Math.min(RESTART_INITIAL_DELAY_MS * 2 ** failures, RESTART_MAX_DELAY_MS)
}

/** `send` for a plain request whose raw result we keep. */
function plainRequest (method: string): SendFn {
  return async (client, params, requestOptions) => await client.request({ method, params } as never, PASSTHROUGH, requestOptions)
}

/** `send` for a tools/call without header mirroring (stdio upstreams). */
const PLAIN_TOOLS_CALL = plainRequest('tools/call')

interface InFlight {
  /** The client of the connection the call went over: questions and notifications are routed per connection. */
  client: UpstreamClient
  startedAt: number
  onQuestion?: UpstreamCallOptions['onQuestion']
  onNotification?: UpstreamCallOptions['onNotification']
  signal: AbortSignal
  fail: (error: UpstreamRpcError) => void
}

interface Connection {
  /** `primary`: the negotiated connection (catalogue, subscriptions); `legacy`: the dual-era upstream's second one. */
  role: 'primary' | 'legacy'
  client: UpstreamClient
  transport: UpstreamStdioTransport | UpstreamHttpTransport
  era: Era
  revision: Revision
  capabilities: JsonObject
  listen?: McpSubscription
  listenKey?: string
  upSince: number
}

/** The legacy connection of a dual-era upstream (see module comment), and its own restart state. */
interface LegacySide {
  /** `idle`: never needed yet (it is opened lazily). */
  state: 'idle' | 'connecting' | 'ready' | 'down' | 'unavailable'
  connection?: Connection
  /** The running attempt, or (when down) the scheduled one: resolves with the connection, or undefined when it failed. */
  attempt?: Promise<Connection | undefined>
  restarts: number
  failures: number
  lastError?: string
  restartTimer?: NodeJS.Timeout
  /** Settles a scheduled attempt with undefined (close() cancels it). */
  cancelRestart?: () => void
  stableTimer?: NodeJS.Timeout
}

/** The child process id of a stdio connection, while it has one. */
function pidOf (connection: Connection | undefined): number | undefined {
  const pid = connection?.transport instanceof UpstreamStdioTransport ? connection.transport.pid : null
  return pid === null ? undefined : pid
}

/**
 * Whether a failed legacy `connect` means the upstream refuses legacy sessions (modern-only): it
 * answered `initialize` with a JSON-RPC error (stdio: -32022 with its `supported` list), or an
 * HTTP 4xx. A timeout, an exit or a network error is not a verdict (restart with backoff).
 */
function refusedLegacy (error: unknown): boolean {
  if (error instanceof ProtocolError) return true
  const status = (error as { data?: { status?: unknown } }).data?.status
  return error instanceof SdkError && typeof status === 'number' && status >= 400 && status < 500
}

/** How a stdio child ended (`code 3`, `signal SIGKILL`, `spawn failed: ENOENT`), once it has. */
function exitInfoOf (transport: UpstreamStdioTransport | UpstreamHttpTransport): string | undefined {
  return transport instanceof UpstreamStdioTransport ? transport.exitInfo : undefined
}

/**
 * The reason text of a failed setup step (`lastError`, the 'upstream down' line), redacted by the
 * caller: a timeout says so with its bound (ms); a child that ended says how (exit code or signal).
 */
function setupFailure (step: string, error: unknown, setupTimeoutMs: number, transport: UpstreamStdioTransport | UpstreamHttpTransport): string {
  if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) return `${step}: setup timed out after ${setupTimeoutMs} ms`
  const exit = exitInfoOf(transport)
  const what = `${step} failed: ${(error as Error).message}`
  return exit === undefined ? what : `${what} (child exited: ${exit})`
}

const EMPTY_CATALOGUE: UpstreamCatalogue = Object.freeze({ tools: [], prompts: [], resources: [], resourceTemplates: [] }) as UpstreamCatalogue

/**
 * One upstream: connects, re-lists, restarts with backoff, routes calls. Used by the registry.
 * Calls reject with {@link UpstreamRpcError}: the upstream's own JSON-RPC error unchanged, or
 * `UPSTREAM_ERROR` (-31000) when it is down, exits mid-call, times out or the call is cancelled.
 */
export class Upstream {
  readonly kind: 'stdio' | 'http'
  readonly timeoutMs: number
  private state: UpstreamStatus['state'] = 'connecting'
  private connection: Connection | undefined
  private catalogue: UpstreamCatalogue = EMPTY_CATALOGUE
  private restarts = 0
  private failures = 0
  private lastError: string | undefined
  private restartTimer: NodeJS.Timeout | undefined
  private stableTimer: NodeJS.Timeout | undefined
  private closing = false
  private forceLegacy = false
  /** Config `legacyConnection` (default: HTTP yes, stdio no): whether legacy-era calls may open the second connection. */
  private readonly legacyConnectionEnabled: boolean
  private progressTokens = 0
  private readonly setupTimeoutMs: number
  private readonly inflight = new Set<InFlight>()
  private readonly subscriptions = new Set<string>()
  private firstAttempt: Promise<void> | undefined
  private readonly legacy: LegacySide = { state: 'idle', restarts: 0, failures: 0 }
  /** Aborted by close(): ends every wait for the legacy connection. */
  private readonly closed = new AbortController()
  /**
   * Transports whose connection is still being set up (connect/initialize, before `connection` is
   * set), with their client: their child is already running, so status() reports its pid and
   * close() kills it, whatever the setup is waiting for.
   */
  private readonly settingUp = new Map<UpstreamStdioTransport | UpstreamHttpTransport, { client: UpstreamClient, role: Connection['role'] }>()

  constructor (readonly name: string, readonly config: UpstreamConfig, private readonly options: UpstreamOptions) {
    this.kind = 'command' in config ? 'stdio' : 'http'
    this.timeoutMs = config.timeout ?? options.defaultTimeoutMs
    this.setupTimeoutMs = Math.max(this.timeoutMs, SETUP_TIMEOUT_MS)
    this.legacyConnectionEnabled = wantsLegacyConnection(config)
  }

  /** Connects once; resolves when that attempt ended (ready or down, retrying). Never rejects. */
  async start (): Promise<void> {
    this.firstAttempt ??= this.connect()
    return await this.firstAttempt
  }

  /** What /readyz reports. Never throws. */
  status (): UpstreamStatus {
    const status: UpstreamStatus = { name: this.name, state: this.state, restarts: this.restarts }
    if (this.state === 'ready' && this.connection !== undefined) {
      status.era = this.connection.era
      status.revision = this.connection.revision
    }
    const pid = pidOf(this.connection) ?? this.settingUpPid('primary')
    if (pid !== undefined && this.state !== 'closed') status.pid = pid
    if (this.state === 'down' && this.lastError !== undefined) status.lastError = this.lastError
    const legacy = this.legacy
    const legacyPid = pidOf(legacy.connection) ?? this.settingUpPid('legacy')
    if (this.kind === 'stdio' && this.state !== 'closed') {
      status.pids = [pid, legacyPid].filter((p): p is number => p !== undefined)
    }
    if (legacy.state !== 'idle' && this.state !== 'closed') {
      status.legacy = { state: legacy.state, restarts: legacy.restarts }
      if (legacy.state === 'ready' && legacy.connection !== undefined) status.legacy.revision = legacy.connection.revision
      if (legacyPid !== undefined) status.legacy.pid = legacyPid
      if ((legacy.state === 'down' || legacy.state === 'unavailable') && legacy.lastError !== undefined) status.legacy.lastError = legacy.lastError
    }
    return status
  }

  /** The pid of a child whose connection (of `role`) is still being set up. */
  private settingUpPid (role: Connection['role']): number | undefined {
    for (const [transport, entry] of this.settingUp) {
      if (entry.role === role && transport instanceof UpstreamStdioTransport && transport.runningPid !== undefined) return transport.runningPid
    }
    return undefined
  }

  /** The raw lists; empty unless ready. */
  lists (): UpstreamCatalogue {
    return this.state === 'ready' ? this.catalogue : EMPTY_CATALOGUE
  }

  /** The server capabilities it announced, when ready. */
  serverCapabilities (): JsonObject | undefined {
    return this.state === 'ready' ? this.connection?.capabilities : undefined
  }

  /**
   * Stops retrying, kills every child (SIGTERM, SIGKILL after 2 s), including one spawned by a
   * (re)start whose setup has not finished, and resolves once they have exited. Never rejects.
   */
  async close (): Promise<void> {
    if (this.state === 'closed') return
    this.closing = true
    this.closed.abort()
    clearTimeout(this.restartTimer)
    clearTimeout(this.stableTimer)
    clearTimeout(this.legacy.restartTimer)
    clearTimeout(this.legacy.stableTimer)
    this.legacy.cancelRestart?.()
    const connection = this.connection
    const legacy = this.legacy.connection
    this.failInFlight(new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.name} is shutting down`))
    // A connection still being set up (its child may never answer) is killed here too; its
    // connect() then fails and, seeing `closing`, schedules nothing.
    const settingUp = [...this.settingUp].map(async ([transport, { client }]) => await this.disposeQuietly(client, transport))
    await Promise.all([...[connection, legacy].map(async c => { if (c !== undefined) await this.dispose(c) }), ...settingUp])
    await this.legacy.attempt
    this.setState('closed')
  }

  /**
   * Calls a tool by its upstream (unprefixed) name. `tool` is the upstream's own definition,
   * used for Mcp-Param-* mirroring on a modern HTTP connection (DIGEST §6d).
   * @returns the raw result object. Rejects with UpstreamRpcError.
   */
  async callTool (name: string, args: JsonObject | undefined, options: UpstreamCallOptions, tool?: JsonObject): Promise<JsonObject> {
    const params: JsonObject = { name }
    if (args !== undefined) params.arguments = args
    // Over stdio there are no headers to mirror, and the client's callTool() zod-parses every result
    // (≈6 % of a modern tools/call in the profile, BENCHMARKS.md): send a plain request, keep the raw result.
    if (this.kind === 'stdio') return await this.call('tools/call', params, options, PLAIN_TOOLS_CALL)
    return await this.call('tools/call', params, options, (client, params, requestOptions) => {
      const toolDefinition = tool === undefined ? undefined : { name, inputSchema: tool.inputSchema } as never
      return client.callTool(params as never, { ...requestOptions, toolDefinition })
    })
  }

  /**
   * Sends one request (`prompts/get`, `resources/read`, `completion/complete`, …) and returns
   * the raw result object. Rejects with UpstreamRpcError.
   */
  async request (method: string, params: JsonObject, options: UpstreamCallOptions): Promise<JsonObject> {
    return await this.call(method, params, options, plainRequest(method))
  }

  /**
   * Subscribes upstream to `uri`: `resources/subscribe` on a legacy connection, a
   * `subscriptions/listen` with `resourceSubscriptions` on a modern one (DIGEST §6f).
   * Remembered across restarts. Rejects with UpstreamRpcError when the upstream refuses.
   */
  async subscribe (uri: string): Promise<void> {
    this.subscriptions.add(uri)
    await this.pushSubscription('resources/subscribe', uri)
  }

  /** Drops the upstream subscription to `uri`. Rejects with UpstreamRpcError when the upstream refuses. */
  async unsubscribe (uri: string): Promise<void> {
    if (!this.subscriptions.delete(uri)) return
    await this.pushSubscription('resources/unsubscribe', uri)
  }

  /** Tells a ready upstream about a subscription change: the listen filter (modern) or the method itself (legacy). */
  private async pushSubscription (method: 'resources/subscribe' | 'resources/unsubscribe', uri: string): Promise<void> {
    const connection = this.connection
    if (this.state !== 'ready' || connection === undefined) return
    if (connection.era === 'modern') await this.syncListen(connection)
    else if (isObject(connection.capabilities.resources) && connection.capabilities.resources.subscribe === true) {
      await this.callOn(connection, method, { uri }, { signal: new AbortController().signal }, plainRequest(method), this.setupTimeoutMs)
    }
    await this.legacySubscription(method, uri)
  }

  /**
   * Mirrors a subscription change on the legacy connection, when it is open: a stdio server's
   * second child has its own state, so a resource a legacy-era call changed there is announced
   * there. A refusal is logged, never thrown (the primary connection's answer is the one returned).
   */
  private async legacySubscription (method: 'resources/subscribe' | 'resources/unsubscribe', uri: string, connection = this.legacy.connection): Promise<void> {
    if (connection === undefined || !isObject(connection.capabilities.resources) || connection.capabilities.resources.subscribe !== true) return
    try {
      await this.callOn(connection, method, { uri }, { signal: new AbortController().signal }, plainRequest(method), this.setupTimeoutMs)
    } catch (error) {
      this.options.logger.warn({ upstream: this.name, connection: 'legacy', err: error, uri }, `upstream legacy connection: ${method} failed`)
    }
  }

  // ── calls ──

  private async call (
    method: string,
    params: JsonObject,
    options: UpstreamCallOptions,
    send: SendFn
  ): Promise<JsonObject> {
    const primary = this.connection
    if (this.state !== 'ready' || primary === undefined) {
      throw new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.name} is ${this.state}${this.lastError === undefined ? '' : `: ${this.lastError}`}`)
    }
    let connection = primary
    if (options.era === 'legacy' && primary.era === 'modern' && this.legacyConnectionEnabled && LEGACY_ROUTED_METHODS.has(method)) {
      connection = await this.legacyConnection(method, options.signal) ?? primary
    }
    return await this.callOn(connection, method, params, options, send)
  }

  /**
   * The legacy connection for a legacy-era call: opened on first use, awaited while it (re)connects.
   * @returns it, or undefined when the upstream refused a legacy session (the caller then uses the
   *          primary connection). Rejects with UpstreamRpcError (UPSTREAM_ERROR) when it could not be
   *          opened (it keeps retrying with backoff), or when the call is cancelled or mcpx closes.
   */
  private async legacyConnection (method: string, signal: AbortSignal): Promise<Connection | undefined> {
    const legacy = this.legacy
    if (legacy.state === 'unavailable') return undefined
    if (legacy.state === 'ready' && legacy.connection !== undefined) return legacy.connection
    if (legacy.state === 'idle') legacy.attempt = this.connectLegacy()
    const stopped = AbortSignal.any([signal, this.closed.signal])
    let onStop: () => void = () => {}
    const stop = new Promise<never>((_resolve, reject) => {
      onStop = () => reject(new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.name}: ${method} ${this.closing ? 'failed: shutting down' : 'cancelled'}`))
      if (stopped.aborted) onStop()
      else stopped.addEventListener('abort', onStop, { once: true })
    })
    stop.catch(() => {})
    try {
      await Promise.race([legacy.attempt, stop])
    } finally {
      stopped.removeEventListener('abort', onStop)
    }
    // Read the state again: the attempt may have found the upstream modern-only.
    const state = legacy.state as LegacySide['state']
    if (state === 'unavailable') return undefined
    if (state === 'ready' && legacy.connection !== undefined) return legacy.connection
    throw new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.name}: its legacy connection is ${state}${legacy.lastError === undefined ? '' : `: ${legacy.lastError}`}`)
  }

  /** A request on one given connection (also while it is still being set up). Rejects with UpstreamRpcError. */
  private async callOn (connection: Connection, method: string, params: JsonObject, options: UpstreamCallOptions, send: SendFn, timeoutMs = this.timeoutMs): Promise<JsonObject> {
    if (options.signal.aborted) throw new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.name}: ${method} cancelled`)
    if (options.extraParams !== undefined) params = { ...options.extraParams, ...params }
    if (options.meta !== undefined) params = { ...params, _meta: { ...(isObject(params._meta) ? params._meta : {}), ...options.meta } }

    const abort = new AbortController()
    let failure: UpstreamRpcError | undefined
    const stop = (error: UpstreamRpcError): void => {
      failure ??= error
      abort.abort(error)
    }
    const onCallerAbort = (): void => stop(new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.name}: ${method} cancelled`))
    options.signal.addEventListener('abort', onCallerAbort, { once: true })
    const timer = setTimeout(() => stop(new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.name} timed out after ${timeoutMs} ms (${method})`)), timeoutMs)
    let rejectNow: (error: UpstreamRpcError) => void = () => {}
    const failedAtOnce = new Promise<never>((_resolve, reject) => { rejectNow = reject })
    failedAtOnce.catch(() => {})
    const entry: InFlight = {
      client: connection.client,
      startedAt: performance.now(),
      onQuestion: options.onQuestion,
      onNotification: options.onNotification,
      signal: abort.signal,
      fail: error => { failure ??= error; rejectNow(error); abort.abort(error) }
    }
    this.inflight.add(entry)
    const scope: CallScope = { ids: [] }
    const requestOptions: Record<string, unknown> = {
      signal: abort.signal,
      timeout: timeoutMs + 1_000, // ours fires first; the client's is a backstop
      allowInputRequired: true
    }
    let progressToken: string | undefined
    if (options.onProgress !== undefined) {
      const onProgress = options.onProgress
      progressToken = `mcpx-${++this.progressTokens}`
      params = { ...params, _meta: { ...(isObject(params._meta) ? params._meta : {}), progressToken } }
      connection.client.progress.set(progressToken, p => {
        if (typeof p.progress !== 'number') return
        const progress: { progress: number, total?: number, message?: string } = { progress: p.progress }
        if (typeof p.total === 'number') progress.total = p.total
        if (typeof p.message === 'string') progress.message = p.message
        onProgress(progress)
      })
    }
    try {
      const returned = await Promise.race([callScope.run(scope, () => send(connection.client, params, requestOptions)), failedAtOnce])
      if (scope.raw !== undefined) return scope.raw
      if (!isObject(returned)) throw new UpstreamRpcError(INTERNAL_ERROR, `upstream ${this.name}: ${method} returned no result object`)
      // Fallback (raw capture missed): the client's decoded value; restore the discriminator it consumed.
      return connection.era === 'modern' && returned.resultType === undefined ? { ...returned, resultType: 'complete' } : returned
    } catch (error) {
      if (failure !== undefined) throw failure
      if (error instanceof UpstreamRpcError) throw error
      if (error instanceof ProtocolError) throw new UpstreamRpcError(error.code, error.message, error.data)
      // A result the client refused to decode (schema, output validation) still reached us raw: pass it on.
      if (scope.raw !== undefined && error instanceof SdkError && error.code === SdkErrorCode.InvalidResult) return scope.raw
      throw new UpstreamRpcError(UPSTREAM_ERROR, `upstream ${this.name}: ${method} failed: ${redactText((error as Error).message)}`)
    } finally {
      clearTimeout(timer)
      options.signal.removeEventListener('abort', onCallerAbort)
      this.inflight.delete(entry)
      for (const id of scope.ids) connection.client.scopes.delete(id)
      if (progressToken !== undefined) connection.client.progress.delete(progressToken)
    }
  }

  /** Fails the in-flight calls over one connection (its client), or every call when `client` is undefined. */
  private failInFlight (error: UpstreamRpcError, client?: UpstreamClient): void {
    for (const entry of this.inflight) {
      if (client !== undefined && entry.client !== client) continue
      entry.fail(error)
      this.inflight.delete(entry)
    }
  }

  /** The in-flight call over `client`'s connection that has `key`, most recently started first (see answerQuestion). */
  private latestInFlight (client: UpstreamClient, key: 'onQuestion' | 'onNotification'): InFlight | undefined {
    let target: InFlight | undefined
    for (const entry of this.inflight) {
      if (entry.client === client && entry[key] !== undefined && (target === undefined || entry.startedAt >= target.startedAt)) target = entry
    }
    return target
  }

  /**
   * Routes a request-scoped notification (`notifications/message`) to an in-flight call on the
   * connection it came from, chosen like a question's (see answerQuestion); with none, it is
   * logged at debug and dropped. Never throws.
   */
  private routeNotification (client: UpstreamClient, notification: { method: string, params?: JsonObject }): void {
    const target = this.latestInFlight(client, 'onNotification')
    if (target?.onNotification === undefined) {
      this.options.logger.debug({ upstream: this.name, method: notification.method }, 'upstream notification with no call to take it: dropped')
      return
    }
    try {
      target.onNotification(notification)
    } catch (error) {
      this.options.logger.debug({ upstream: this.name, err: error }, 'onNotification threw')
    }
  }

  /**
   * Routes a server→client question (legacy era) to an in-flight call on the connection that
   * asked. Over stdio nothing on the wire ties a question to a call, so: the one in-flight call
   * with `onQuestion`, or, when there are several, the most recently started one (a guess that is
   * right for sequential use and for the common "one interactive tool at a time" case). None →
   * -32601 upstream.
   */
  private async answerQuestion (client: UpstreamClient, method: string, params: JsonObject | undefined, upstreamSignal: AbortSignal): Promise<JsonObject> {
    const target = this.latestInFlight(client, 'onQuestion')
    if (target?.onQuestion === undefined) {
      // An upstream may ask roots/list at any time (server-everything does right after
      // initialize). With no downstream call to relay it to, mcpx answers for itself: it exposes
      // no roots. Elicitation and sampling need a user, so they keep failing outside a call.
      if (method === 'roots/list') return { roots: [] }
      throw new ProtocolError(METHOD_NOT_FOUND, `mcpx: no request in flight on upstream ${this.name} can relay ${method}`)
    }
    const question = params === undefined ? { method } : { method, params }
    try {
      return await target.onQuestion(question, AbortSignal.any([target.signal, upstreamSignal]))
    } catch (error) {
      const code = (error as { code?: unknown }).code
      if (typeof code === 'number') throw new ProtocolError(code, (error as Error).message, (error as { data?: unknown }).data)
      throw new ProtocolError(INTERNAL_ERROR, `mcpx: ${method} could not be relayed: ${(error as Error).message}`)
    }
  }

  // ── connection lifecycle ──

  private setState (state: UpstreamStatus['state']): void {
    this.state = state
    this.options.events.stateChanged(this.status())
  }

  private buildClient (): UpstreamClient {
    const client = new UpstreamClient({ name: 'mcpx', version: '0.1.0' }, {
      // Declared so legacy upstreams will ask; the questions are relayed to the downstream client.
      capabilities: { elicitation: { form: {} }, sampling: {}, roots: {} },
      versionNegotiation: { mode: 'auto', probe: { timeoutMs: STDIO_PROBE_TIMEOUT_MS } },
      inputRequired: { autoFulfill: false }
    })
    for (const method of ['elicitation/create', 'sampling/createMessage', 'roots/list'] as const) {
      client.setRequestHandler(method, async (request: { params?: unknown }, ctx: { mcpReq: { signal: AbortSignal } }) =>
        await this.answerQuestion(client, method, isObject(request.params) ? request.params : undefined, ctx.mcpReq.signal) as never)
    }
    client.onLogMessage = notification => this.routeNotification(client, notification)
    return client
  }

  private buildTransport (role: Connection['role'] = 'primary'): UpstreamStdioTransport | UpstreamHttpTransport {
    const config = this.config
    if ('command' in config) {
      const transport = new UpstreamStdioTransport({ command: config.command, args: config.args, env: config.env, cwd: config.cwd, stderr: 'pipe' })
      const stderr = transport.stderr as Readable | null
      if (stderr !== null) {
        const lines = createInterface({ input: stderr, crlfDelay: Infinity })
        const fields = role === 'primary' ? { upstream: this.name } : { upstream: this.name, connection: role }
        lines.on('line', line => this.options.logger.info({ ...fields, stderr: line }, 'upstream stderr'))
      }
      return transport
    }
    return new UpstreamHttpTransport(new URL(config.url), { requestInit: { headers: config.headers ?? {} } })
  }

  private async connect (): Promise<void> {
    if (this.closing) return
    this.setState('connecting')
    const client = this.buildClient()
    const transport = this.buildTransport()
    transport.onSend = message => tapSend(client, message)
    this.settingUp.set(transport, { client, role: 'primary' })
    try {
      if (this.forceLegacy) await client.connect(transport, { timeout: this.setupTimeoutMs, prior: { kind: 'legacy' } })
      else await client.connect(transport, { timeout: this.setupTimeoutMs })
    } catch (error) {
      await this.disposeQuietly(client, transport)
      this.settingUp.delete(transport)
      if (this.closing) return
      const message = (error as Error).message
      if (this.kind === 'stdio' && !this.forceLegacy && error instanceof SdkError && error.code === SdkErrorCode.EraNegotiationFailed && /closed/.test(message)) {
        // The child exited on the in-place server/discover probe: a legacy server that dies on
        // unknown pre-initialize requests. Remember it and connect with plain initialize.
        this.options.logger.info({ upstream: this.name, exit: exitInfoOf(transport) }, 'upstream exited on the server/discover probe; using initialize')
        this.forceLegacy = true
        return await this.connect()
      }
      this.onDown(setupFailure('connect', error, this.setupTimeoutMs, transport))
      return
    }
    this.settingUp.delete(transport)
    if (this.closing) { await this.disposeQuietly(client, transport); return }

    const revision = client.getNegotiatedProtocolVersion() ?? 'unknown'
    const connection: Connection = {
      role: 'primary',
      client,
      transport,
      era: client.getProtocolEra() ?? 'legacy',
      revision,
      capabilities: (client.getServerCapabilities() ?? {}) as JsonObject,
      upSince: Date.now()
    }
    this.connection = connection
    client.onerror = err => this.options.logger.debug({ upstream: this.name, reason: redactText(err.message) }, 'upstream client error')
    client.onclose = () => this.onConnectionClosed(connection)
    for (const kind of ['tools', 'prompts', 'resources'] as const) {
      client.setNotificationHandler(`notifications/${kind}/list_changed`, () => { this.refresh(connection, kind) })
    }
    client.setNotificationHandler('notifications/resources/updated', (notification: { params?: { uri?: unknown } }) => {
      const uri = notification.params?.uri
      if (typeof uri === 'string') this.options.events.resourceUpdated(uri)
    })

    try {
      const catalogue = await this.listAll(connection)
      if (this.connection !== connection) return
      this.catalogue = catalogue
    } catch (error) {
      if (this.connection !== connection) return
      await this.dispose(connection)
      this.connection = undefined
      this.onDown(setupFailure('listing', error, this.setupTimeoutMs, connection.transport))
      return
    }
    this.lastError = undefined
    this.setState('ready')
    this.options.logger.info({ upstream: this.name, era: connection.era, revision, pid: this.status().pid }, 'upstream ready')
    for (const kind of ['tools', 'prompts', 'resources'] as const) this.options.events.catalogueChanged(kind, false)
    clearTimeout(this.stableTimer)
    this.stableTimer = setTimeout(() => { this.failures = 0 }, RESTART_RESET_AFTER_MS).unref()
    await this.restoreSubscriptions(connection)
  }

  private onConnectionClosed (connection: Connection): void {
    if (this.connection !== connection || this.closing) return
    this.connection = undefined
    const exitInfo = connection.transport instanceof UpstreamStdioTransport ? connection.transport.exitInfo : undefined
    const reason = this.kind === 'stdio' ? `upstream ${this.name} exited${exitInfo === undefined ? '' : ` (${exitInfo})`}` : `upstream ${this.name} closed the connection`
    this.failInFlight(new UpstreamRpcError(UPSTREAM_ERROR, reason), connection.client)
    const wasReady = this.state === 'ready'
    this.onDown(reason)
    if (wasReady) for (const kind of ['tools', 'prompts', 'resources'] as const) this.options.events.catalogueChanged(kind, false)
    void this.dispose(connection)
  }

  /**
   * Marks the upstream down and schedules the next attempt (backoff). Logs one warn line per
   * call, i.e. at most one per backoff step: at the longest delay, one every RESTART_MAX_DELAY_MS.
   */
  private onDown (reason: string): void {
    if (this.closing) return
    clearTimeout(this.stableTimer)
    reason = redactText(reason)
    this.lastError = reason
    this.setState('down')
    const delayMs = restartDelayMs(this.failures)
    this.failures++
    this.options.logger.warn({ upstream: this.name, reason, failures: this.failures, restartInMs: delayMs }, 'upstream down')
    clearTimeout(this.restartTimer)
    this.restartTimer = setTimeout(() => {
      if (this.closing) return
      this.restarts++
      void this.connect()
    }, delayMs)
    this.restartTimer.unref()
  }

  // ── the legacy connection of a dual-era upstream (see module comment) ──

  /**
   * Opens the legacy connection with a plain `initialize`. Resolves with it once ready, or with
   * undefined when it failed: state `unavailable` when the upstream refused a legacy session (a
   * JSON-RPC error to `initialize`, or an HTTP 4xx), `down` (restarting with backoff) otherwise.
   * Never rejects.
   */
  private async connectLegacy (): Promise<Connection | undefined> {
    const legacy = this.legacy
    if (this.closing) return undefined
    this.setLegacyState('connecting')
    const client = this.buildClient()
    const transport = this.buildTransport('legacy')
    transport.onSend = message => tapSend(client, message)
    this.settingUp.set(transport, { client, role: 'legacy' })
    try {
      await client.connect(transport, { timeout: this.setupTimeoutMs, prior: { kind: 'legacy' } })
    } catch (error) {
      await this.disposeQuietly(client, transport)
      this.settingUp.delete(transport)
      if (this.closing) return undefined
      const message = redactText((error as Error).message)
      if (refusedLegacy(error)) {
        legacy.lastError = `legacy initialize refused: ${message}`
        this.options.logger.info({ upstream: this.name, reason: message }, 'upstream refuses a legacy session; legacy-era calls use its modern connection')
        this.setLegacyState('unavailable')
        return undefined
      }
      this.onLegacyDown(setupFailure('legacy connect', error, this.setupTimeoutMs, transport))
      return undefined
    }
    this.settingUp.delete(transport)
    if (this.closing) { await this.disposeQuietly(client, transport); return undefined }
    const connection: Connection = {
      role: 'legacy',
      client,
      transport,
      era: client.getProtocolEra() ?? 'legacy',
      revision: client.getNegotiatedProtocolVersion() ?? 'unknown',
      capabilities: (client.getServerCapabilities() ?? {}) as JsonObject,
      upSince: Date.now()
    }
    client.onerror = err => this.options.logger.debug({ upstream: this.name, connection: 'legacy', reason: redactText(err.message) }, 'upstream client error')
    client.onclose = () => this.onLegacyClosed(connection)
    // Its own resources/updated (after a legacy-era call changed a resource in that child) is
    // relayed; its list_changed is not: the catalogue is the primary connection's.
    client.setNotificationHandler('notifications/resources/updated', (notification: { params?: { uri?: unknown } }) => {
      const uri = notification.params?.uri
      if (typeof uri === 'string') this.options.events.resourceUpdated(uri)
    })
    legacy.connection = connection
    for (const uri of this.subscriptions) await this.legacySubscription('resources/subscribe', uri, connection)
    if (this.closing) { await this.dispose(connection); return undefined }
    if (legacy.connection !== connection) return undefined // it died meanwhile (onLegacyClosed scheduled a restart)
    // No logging/setLevel: with none, the v2 server SDK sends every level in a legacy session
    // (McpServer.buildContext: no threshold, no filter; Server.isMessageIgnored: false). A legacy
    // client's own logging/setLevel is answered by mcpx (lib/dispatch.ts), never sent here.
    legacy.lastError = undefined
    this.setLegacyState('ready')
    this.options.logger.info({ upstream: this.name, connection: 'legacy', revision: connection.revision, pid: pidOf(connection) }, 'upstream legacy connection ready')
    clearTimeout(legacy.stableTimer)
    legacy.stableTimer = setTimeout(() => { legacy.failures = 0 }, RESTART_RESET_AFTER_MS).unref()
    return connection
  }

  private setLegacyState (state: LegacySide['state']): void {
    this.legacy.state = state
    this.options.events.stateChanged(this.status())
  }

  private onLegacyClosed (connection: Connection): void {
    const legacy = this.legacy
    if (legacy.connection !== connection || this.closing) return
    legacy.connection = undefined
    const exitInfo = connection.transport instanceof UpstreamStdioTransport ? connection.transport.exitInfo : undefined
    const reason = this.kind === 'stdio'
      ? `upstream ${this.name} (legacy connection) exited${exitInfo === undefined ? '' : ` (${exitInfo})`}`
      : `upstream ${this.name} closed the legacy connection`
    this.failInFlight(new UpstreamRpcError(UPSTREAM_ERROR, reason), connection.client)
    this.onLegacyDown(reason)
    void this.dispose(connection)
  }

  /** Schedules the next legacy attempt with the primary's backoff rules; calls arriving meanwhile wait for it. */
  private onLegacyDown (reason: string): void {
    const legacy = this.legacy
    if (this.closing) return
    clearTimeout(legacy.stableTimer)
    reason = redactText(reason)
    legacy.lastError = reason
    this.setLegacyState('down')
    const delayMs = restartDelayMs(legacy.failures)
    legacy.failures++
    this.options.logger.warn({ upstream: this.name, connection: 'legacy', reason, failures: legacy.failures, restartInMs: delayMs }, 'upstream down')
    clearTimeout(legacy.restartTimer)
    legacy.attempt = new Promise(resolve => {
      legacy.cancelRestart = () => resolve(undefined)
      legacy.restartTimer = setTimeout(() => {
        if (this.closing) { resolve(undefined); return }
        legacy.restarts++
        resolve(this.connectLegacy())
      }, delayMs)
      legacy.restartTimer.unref()
    })
  }

  private async dispose (connection: Connection): Promise<void> {
    await this.disposeQuietly(connection.client, connection.transport)
  }

  private async disposeQuietly (client: UpstreamClient, transport: UpstreamStdioTransport | UpstreamHttpTransport): Promise<void> {
    if (transport instanceof UpstreamStdioTransport) await transport.kill(KILL_GRACE_MS)
    try { await client.close() } catch {}
    if (transport instanceof UpstreamStdioTransport) await transport.exited
  }

  // ── lists ──

  private async listAll (connection: Connection): Promise<UpstreamCatalogue> {
    const caps = connection.capabilities
    const [tools, prompts, resources, resourceTemplates] = await Promise.all([
      caps.tools !== undefined ? this.listPages(connection, 'tools/list', 'tools') : [],
      caps.prompts !== undefined ? this.listPages(connection, 'prompts/list', 'prompts') : [],
      caps.resources !== undefined ? this.listPages(connection, 'resources/list', 'resources') : [],
      caps.resources !== undefined ? this.listPages(connection, 'resources/templates/list', 'resourceTemplates') : []
    ])
    return { tools, prompts, resources, resourceTemplates }
  }

  private async listPages (connection: Connection, method: string, key: string): Promise<JsonObject[]> {
    const items: JsonObject[] = []
    let cursor: string | undefined
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      if (this.connection !== connection) throw new Error('connection replaced')
      const result = await this.callOn(connection, method, cursor === undefined ? {} : { cursor }, { signal: new AbortController().signal }, plainRequest(method), this.setupTimeoutMs)
      const list = result[key]
      if (Array.isArray(list)) for (const item of list) if (isObject(item)) items.push(item)
      cursor = typeof result.nextCursor === 'string' && result.nextCursor !== '' ? result.nextCursor : undefined
      if (cursor === undefined) return items
    }
    throw new Error(`${method}: more than ${MAX_LIST_PAGES} pages`)
  }

  /** Re-lists one kind after a list_changed, then tells the registry. Never throws. */
  private refresh (connection: Connection, kind: ListKind): void {
    const work = async (): Promise<void> => {
      if (kind === 'tools') {
        const tools = await this.listPages(connection, 'tools/list', 'tools')
        if (this.connection === connection) this.catalogue = { ...this.catalogue, tools }
      } else if (kind === 'prompts') {
        const prompts = await this.listPages(connection, 'prompts/list', 'prompts')
        if (this.connection === connection) this.catalogue = { ...this.catalogue, prompts }
      } else {
        const [resources, resourceTemplates] = await Promise.all([
          this.listPages(connection, 'resources/list', 'resources'),
          this.listPages(connection, 'resources/templates/list', 'resourceTemplates')
        ])
        if (this.connection === connection) this.catalogue = { ...this.catalogue, resources, resourceTemplates }
      }
      if (this.connection === connection) this.options.events.catalogueChanged(kind, true)
    }
    work().catch(error => this.options.logger.warn({ upstream: this.name, err: error, kind }, 'upstream re-list failed'))
  }

  // ── subscriptions ──

  private async restoreSubscriptions (connection: Connection): Promise<void> {
    try {
      if (connection.era === 'modern') {
        await this.syncListen(connection)
      } else if (isObject(connection.capabilities.resources) && connection.capabilities.resources.subscribe === true) {
        for (const uri of this.subscriptions) await this.callOn(connection, 'resources/subscribe', { uri }, { signal: new AbortController().signal }, plainRequest('resources/subscribe'), this.setupTimeoutMs)
      }
    } catch (error) {
      this.options.logger.warn({ upstream: this.name, err: error }, 'upstream subscriptions could not be restored')
    }
  }

  /**
   * Modern upstreams send change notifications only on a `subscriptions/listen` stream
   * (DIGEST §6f). One listen per connection carries the list-changed kinds the server
   * announces plus every subscribed URI; when the URI set changes a new listen is opened
   * before the old one is closed.
   */
  private async syncListen (connection: Connection): Promise<void> {
    const caps = connection.capabilities
    const listChanged = (key: string): boolean => isObject(caps[key]) && (caps[key] as JsonObject).listChanged === true
    const filter: Record<string, unknown> = {}
    if (listChanged('tools')) filter.toolsListChanged = true
    if (listChanged('prompts')) filter.promptsListChanged = true
    if (listChanged('resources')) filter.resourcesListChanged = true
    if (this.subscriptions.size > 0 && isObject(caps.resources) && caps.resources.subscribe === true) filter.resourceSubscriptions = [...this.subscriptions].sort()
    const key = JSON.stringify(filter)
    if (key === connection.listenKey && connection.listen !== undefined) return
    const previous = connection.listen
    connection.listenKey = key
    connection.listen = undefined
    if (Object.keys(filter).length > 0) {
      const subscription = await connection.client.listen(filter as never)
      connection.listen = subscription
      void subscription.closed.then(cause => {
        if (cause === 'remote' && !this.closing && connection.listen === subscription && this.connection === connection) {
          this.options.logger.warn({ upstream: this.name }, 'upstream subscriptions/listen stream ended; reopening')
          connection.listenKey = undefined
          connection.listen = undefined
          this.syncListen(connection).catch(error => this.options.logger.warn({ upstream: this.name, err: error }, 'upstream listen failed'))
        }
      })
    }
    if (previous !== undefined) await previous.close().catch(() => {})
  }
}
