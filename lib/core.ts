/**
 * The transport-neutral core both faces stand on, built in one place: the daemon (app.ts, which hands
 * it to the /mcp scope through plugins/upstreams) and `mcpx serve` (stdio.ts). Pure of Fastify. The
 * registry's lifetime stays with its owner (the registry is shared with host apps and tests); the core
 * only stops what it made.
 */
import { mrtrOptions } from './config/derive.js'
import type { McpxConfig } from './config/types.js'
import type { Logger } from './telemetry/log.js'
import { Dispatcher, type ServerInfo } from './dispatch/dispatcher.js'
import { NotificationHub } from './connection/notify-hub.js'
import { ELICITATION_COMPLETE, StateSealer } from './dispatch/mrtr.js'
import type { ConsentGate } from './dispatch/consent.js'
import type { UserGrants } from './upstreams/user-grants.js'
import { SERVER_INFO } from './base/version.js'
import { compilePolicy } from './policy/rules.js'
import { Servers } from './policy/endpoints.js'
import { toolSearchOf } from './policy/discovery.js'
import { createAuditTrail, type AuditFailure, type AuditTrail } from './policy/audit.js'
import { createRateLimiter, type RateLimiter } from './policy/rate-limit.js'
import { createLedger } from './policy/confirm.js'
import type { JsonObject } from './protocol/jsonrpc.js'
import { Integrity, modesOf, pinsAnything } from './policy/integrity.js'
import { createPinStore } from './policy/pin-store.js'
import type { ChangeKind, PinnedKind } from './policy/pin-store.js'
import type { UpstreamRegistry } from './upstreams/contract.js'

/** What {@link createCore} builds. */
export interface Core {
  /** Answers every method (lib/dispatch/dispatcher). */
  readonly dispatcher: Dispatcher
  /** Fans the registry's change events out to listeners (lib/connection/notify-hub). */
  readonly hub: NotificationHub
  /** Seals mcpx's MRTR requestState (key from `mrtr.stateKey`, else random per process). */
  readonly sealer: StateSealer
  /** mcpx's `serverInfo` (lib/base/version). */
  readonly serverInfo: ServerInfo
  /** The registry the dispatcher routes through. */
  readonly registry: UpstreamRegistry
  /** The audit trail, when `audit` is configured. */
  readonly audit: AuditTrail | undefined
  /**
   * Pinned definitions (lib/policy/integrity.ts), when `integrity.pin` or an upstream's is not `off`:
   * the registry's catalogue gate, and what the admin API approves through.
   */
  readonly integrity: Integrity | undefined
  /** The rate limiter, when a policy rule has a `rateLimit`: in memory, or Redis when `sessions.store` is `redis`. */
  readonly rateLimiter: RateLimiter | undefined
  /**
   * A reload's `policy`, `servers` and `discovery` (hot reload of per-caller policy and curated endpoints): compiled and swapped in
   * (dispatcher.setAccess) for requests that start from now; then list_changed is offered for every
   * list, so a client whose view changed is told (the hub sends it where the view's list changed).
   * A policy that needs a rate limiter this core was built without (its first `rateLimit`) is not
   * applied: its key comes back, to be applied by a restart. `transport.pageSize` (paged
   * catalogues) is applied too (dispatcher.setPageSize): the next list answers in pages of it.
   * @returns the config keys not applied (empty: both applied). Throws only for a config that did not pass loadConfig.
   */
  applyAccess: (next: McpxConfig) => string[]
  /** Stops the hub, cancels parked calls upstream and flushes the audit trail; the registry is left to its owner. Never rejects. */
  close: () => Promise<void>
}

/** Options of {@link createCore}. */
export interface CoreOptions {
  /** Counts a refused open or write of the audit file, or a dropped line (lib/ops/metrics auditFailed). */
  onAuditFailure?: (reason: AuditFailure) => void
  /** Counts audit lines lost for good (lib/ops/metrics auditLinesLost). */
  onAuditLinesLost?: (reason: AuditFailure, lines: number) => void
  /** stdio face: an audit file that is stdout is refused. */
  stdio?: boolean
  /** Counts a call refused by a rate limit, or for want of its store (lib/ops/metrics rateLimitRefused). */
  onRateLimited?: (reason: 'limited' | 'unavailable') => void
  /** Counts a changed definition (lib/ops/metrics integrityChanged). */
  onIntegrityChange?: (upstream: string, kind: PinnedKind, change: ChangeKind, action: 'served' | 'hidden') => void
  /** The grants of the `oauth-user` upstreams (lib/upstreams/user-grants.ts), when any is configured. */
  grants?: UserGrants
}

/**
 * Builds the core for one face.
 * @param config a loaded config (`mrtr`: state key, park timeout and state lifetime, ms; `policy`)
 * @param registry the upstream registry calls are routed through (instrumented or not)
 * @param logger the face's logger (stdio: fd 2)
 * @param options audit failure and lost-line counters (metrics), stdio face
 * @throws McpxError MCPX_ERR_CONFIG when `mrtr.stateKey` decodes to fewer than 32 bytes, (stdio) `audit.file` is stdout,
 *         or a Redis password variable for the shared rate limits is unset
 */
export function createCore (config: McpxConfig, registry: UpstreamRegistry, logger: Logger, options: CoreOptions = {}): Core {
  const mrtr = mrtrOptions(config)
  const audit = createAuditTrail(config.audit, {
    logger,
    ...(options.onAuditFailure !== undefined ? { onFailure: options.onAuditFailure } : {}),
    ...(options.onAuditLinesLost !== undefined ? { onLinesLost: options.onAuditLinesLost } : {}),
    ...(options.stdio === true ? { stdio: true } : {})
  })
  const sealer = new StateSealer(mrtr.stateKey)
  const policy = compilePolicy(config.policy)
  const rateLimiter = createRateLimiter(policy?.hasLimits === true, config.sessions, logger)
  const dispatcher = new Dispatcher({
    registry,
    serverInfo: SERVER_INFO,
    logger,
    sealer,
    parkTimeoutMs: mrtr.parkTimeoutMs,
    stateTtlMs: mrtr.stateTtlMs,
    // policy and curated endpoints; a reload swaps both with dispatcher.setAccess
    policy,
    servers: config.servers === undefined ? undefined : new Servers(config.servers),
    discovery: toolSearchOf(config.discovery), // tool search on /mcp and plain mcpx serve (docs/discovery.md)
    audit,
    pageSize: config.transport.pageSize, // paged catalogues (lib/dispatch/paging.ts)
    listTtlMs: config.transport.catalogueTtl, // ttlMs of the modern results a client may cache (lib/dispatch/shape.ts)
    ...(rateLimiter !== undefined ? { rateLimiter } : {}),
    ...(options.onRateLimited !== undefined ? { onRateLimited: options.onRateLimited } : {}),
    // the human confirmation gate: its settings, and the ledger of spent approvals (made on first use: Redis with sessions.store "redis")
    confirmation: config.confirmation,
    ledger: () => createLedger(config.sessions, logger),
    ...(options.grants !== undefined ? { consent: consentGate(options.grants, audit) } : {})
  })
  // Pinned definitions: the registry's gate, installed before the hub listens (the first judgement's
  // list_changed concerns nobody yet). Without any pinned upstream there is no gate and no cost.
  const modes = modesOf(config)
  const integrity = pinsAnything(modes)
    ? new Integrity({
      logger,
      store: createPinStore(config, logger),
      modes,
      ...(audit !== undefined ? { audit: event => { audit.recordIntegrity(event) } } : {}),
      ...(options.onIntegrityChange !== undefined ? { onChange: options.onIntegrityChange } : {})
    })
    : undefined
  if (integrity !== undefined) registry.setCatalogueGate?.(integrity)
  const hub = new NotificationHub(registry)
  const unwireGrants = options.grants === undefined ? () => {} : wireGrants(options.grants, registry, hub, audit)
  // 2025-11-25 task status (docs/wire.md › Tasks): to the session that created the task through mcpx,
  // and no other; one mcpx did not create (or created for a sessionless POST, or whose session has
  // no stream here) is dropped and counted (mcpx_upstream_unrouted_total{kind="task"}).
  const onTaskStatus = (upstream: string, params: JsonObject): void => {
    const relay = dispatcher.tasks.relayStatus(upstream, params)
    if (relay === undefined || !hub.toSession(relay.session, relay.notification)) registry.emit('unrouted', upstream, 'task')
  }
  registry.on('task_status', onTaskStatus)
  let runningPolicy = policy
  return {
    dispatcher,
    hub,
    sealer,
    serverInfo: SERVER_INFO,
    registry,
    audit,
    integrity,
    rateLimiter,
    applyAccess (next) {
      const nextPolicy = compilePolicy(next.policy)
      const notApplied: string[] = []
      // Modes apply live; a first pinned upstream (no gate yet) or another store needs a restart.
      const nextModes = modesOf(next)
      if (integrity !== undefined) integrity.configure(nextModes)
      else if (pinsAnything(nextModes)) notApplied.push('integrity')
      if (next.integrity.store !== config.integrity.store && integrity !== undefined) notApplied.push('integrity.store')
      if (nextPolicy?.hasLimits === true && rateLimiter === undefined) notApplied.push('policy')
      else runningPolicy = nextPolicy
      dispatcher.setAccess(runningPolicy, next.servers === undefined ? undefined : new Servers(next.servers), toolSearchOf(next.discovery))
      dispatcher.setPageSize(next.transport.pageSize)
      dispatcher.confirm.setSettings(next.confirmation)
      // Open streams follow the new access rules too; the list_changed below then reaches each one whose view changed.
      hub.refreshViews()
      for (const kind of ['tools', 'prompts', 'resources'] as const) registry.emit('list_changed', kind)
      return notApplied
    },
    async close () {
      registry.off('task_status', onTaskStatus)
      unwireGrants()
      hub.close()
      if (integrity !== undefined) registry.setCatalogueGate?.(undefined)
      dispatcher.close()
      await Promise.all([audit?.close(), rateLimiter?.close(), dispatcher.confirm.close(), integrity?.close()])
    }
  }
}

/** The dispatcher's view of the grants: UserGrants, plus the audit trail's `consent_required`. */
function consentGate (grants: UserGrants, audit: AuditTrail | undefined): ConsentGate {
  return {
    holds: async (principalKey, upstream) => await grants.holds(principalKey, upstream),
    consentLink: async (principal, upstream) => await grants.consentLink(principal, upstream),
    onConsentRequired: event => audit?.record({ event: 'consent_required', principal: event.principal, upstream: event.upstream })
  }
}

/**
 * What a grant given or taken changes (docs/upstreams.md › Upstream identity): granted, the
 * principal's connection opens and its listeners get list_changed, and its legacy listeners
 * `notifications/elicitation/complete`; taken, that connection closes. Both audited.
 * @returns the function that unwires it
 */
function wireGrants (grants: UserGrants, registry: UpstreamRegistry, hub: NotificationHub, audit: AuditTrail | undefined): () => void {
  // Events another replica saw (`remote`, a shared Redis store) were audited there; here they open or
  // close this replica's connection for that principal and reach its listeners on this replica.
  const granted = (event: { upstream: string, principalKey: string, principalId: string, elicitationId: string, remote?: boolean }): void => {
    if (event.remote !== true) audit?.record({ event: 'consent_granted', principal: event.principalId, upstream: event.upstream })
    // The connection first (its lists reach the caller with list_changed), then the completion: a
    // client that lists or retries on it sees the upstream's items.
    void Promise.resolve(registry.openPersonal?.(event.upstream, event.principalKey)).then(() => {
      hub.toPrincipal(event.principalKey, { jsonrpc: '2.0', method: ELICITATION_COMPLETE, params: { elicitationId: event.elicitationId } })
    })
  }
  const revoked = (event: { upstream: string, principalKey: string, principalId?: string, reason: string, remote?: boolean }): void => {
    if (event.remote !== true) audit?.record({ event: 'consent_revoked', principal: event.principalId ?? 'unknown', upstream: event.upstream, reason: event.reason })
    void registry.closePersonal?.(event.upstream, event.principalKey)
  }
  grants.on('granted', granted)
  grants.on('revoked', revoked)
  return () => { grants.off('granted', granted); grants.off('revoked', revoked) }
}
