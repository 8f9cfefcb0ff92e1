/**
 * Each caller's own identity toward an upstream (docs/upstreams.md › Upstream identity): the
 * `oauth-user` auth type. A principal consents once per upstream, through an OAuth 2.1
 * authorization-code flow with PKCE (S256, RFC 7636) and the upstream's RFC 8707 `resource`; the
 * tokens are kept per (principal, upstream) in an encrypted vault and sent as that principal's
 * bearer on its own connection (per-principal isolation), refreshed before they expire.
 *
 * The OAuth client steps are the official v2 SDK's (`@modelcontextprotocol/client`: RFC 9728 /
 * RFC 8414 / OIDC discovery, PKCE, the code and refresh grants), not home-made. What is mcpx's:
 * - `state`: 256 random bits, stored server-side with the principal it was issued to, the
 *   upstream and the PKCE verifier; single use; {@link FLOW_TTL_MS}; at most {@link MAX_FLOWS}.
 * - the vault: AES-256-GCM (node:crypto), the key from `MCPX_VAULT_KEY` (32 bytes, base64) or random
 *   per process; each record's additional data is its (principal, upstream) key, so a record cannot
 *   be replayed under another. At most `maxGrants` records: past it a new consent is refused
 *   (never a silent eviction of someone's grant).
 * Nothing here logs or throws a token, code, verifier or secret.
 */
import { EventEmitter } from 'node:events'
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import {
  discoverAuthorizationServerMetadata, discoverOAuthServerInfo, exchangeAuthorization, extractWWWAuthenticateParams,
  refreshAuthorization, startAuthorization, type AuthorizationServerMetadata, type OAuthTokens
} from '@modelcontextprotocol/client'
import { McpxError } from '../base/errors.js'
import { createRedisConnection, type RedisConnection, type RedisTarget } from '../base/redis.js'
import { readSecret, type Secret } from '../auth/secret.js'
import type { Principal } from '../auth/principal.js'
import type { Logger } from '../telemetry/log.js'
import type { UpstreamConfig, UserOAuthConfig } from './config.js'
import type { UpstreamHeaderProvider, UpstreamHeaderRequest } from './contract.js'

/** How long a consent link stays valid, ms (10 min). */
export const FLOW_TTL_MS = 10 * 60_000
/** Most consent flows waiting for their callback at once; past it the oldest is dropped (its link then fails). */
export const MAX_FLOWS = 10_000
/** Default most grants the vault keeps (all principals and upstreams together). */
export const DEFAULT_MAX_GRANTS = 100_000
/** An access token is refreshed when it has less than this left, ms. */
const REFRESH_AHEAD_MS = 60_000
/** Timeout of one request to the upstream or its authorization server during discovery, ms. */
const DISCOVERY_TIMEOUT_MS = 10_000

/** Thrown (never sent upstream) when a principal holds no usable grant for an upstream: consent is needed. */
export class ConsentRequiredError extends Error {
  readonly code = 'MCPX_ERR_CONSENT_REQUIRED'
  constructor (readonly upstream: string) {
    super(`upstream ${upstream} needs this caller's consent (no grant, or it was revoked or could not be refreshed)`)
  }
}

/** A consent flow to open in a browser. */
export interface ConsentLink {
  /** The authorization server's authorization URL (state, PKCE challenge, resource, redirect_uri). */
  url: string
  /** Identifies the flow toward the client (2025-11-25 `elicitationId`); not a secret. */
  elicitationId: string
}

/** What the callback made of a redirect. */
export type CallbackOutcome =
  | { ok: true, upstream: string, principalKey: string, principalId: string, elicitationId: string }
  | { ok: false, status: 400 | 502 | 503, message: string }

/** Tokens of one grant, as the vault keeps them (encrypted). */
export interface GrantRecord { access: string, refresh?: string, expiresAtMs?: number, principalId: string }

/** A consent flow waiting for its callback (kept under its `state`). */
export interface Flow { principalKey: string, principalId: string, upstream: string, verifier: string, expiresAtMs: number, elicitationId: string }

interface PersonalUpstream {
  name: string
  config: UserOAuthConfig
  url: string
  secret: Secret | undefined
  redirectUri: string
  /** Discovery, once (retried after a failure). */
  server?: Promise<ServerInfo>
}

/** An upstream's authorization server (issuer, RFC 8414 metadata when found) and its RFC 8707 resource. */
interface ServerInfo { issuer: string, metadata: AuthorizationServerMetadata | undefined, resource: string }

/** Seals `plain` with AES-256-GCM under `key`: iv (12 bytes) | tag (16) | ciphertext; `aad` binds it to its place. */
function seal (key: Buffer, aad: string, plain: string): Buffer {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(Buffer.from(aad))
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
  return Buffer.concat([iv, cipher.getAuthTag(), body])
}

/** Opens what {@link seal} made; undefined when it does not authenticate (tampered, another key or place). */
function unseal (key: Buffer, aad: string, sealed: Buffer): string | undefined {
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12))
    decipher.setAAD(Buffer.from(aad))
    decipher.setAuthTag(sealed.subarray(12, 28))
    return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8')
  } catch {
    return undefined
  }
}

/** A grant or consent event another replica saw (Redis store), relayed so every replica acts on it. */
export type GrantEvent =
  | { type: 'granted', upstream: string, principalKey: string, principalId: string, elicitationId: string }
  | { type: 'revoked', upstream: string, principalKey: string, principalId?: string, reason: string }

/**
 * Where grants (encrypted) and pending consent flows live: this process ({@link GrantVault}), or
 * Redis for every replica ({@link RedisGrantVault}). Every method rejects only on a store failure.
 */
export interface GrantStore {
  /** Most grants held at once; past it a new one is refused. */
  readonly maxGrants: number
  get: (principalKey: string, upstream: string) => Promise<GrantRecord | undefined>
  /** @returns false when full and this (principal, upstream) held none */
  set: (principalKey: string, upstream: string, record: GrantRecord) => Promise<boolean>
  /** @returns whether there was one */
  delete: (principalKey: string, upstream: string) => Promise<boolean>
  keys: () => Promise<Array<{ principalKey: string, upstream: string }>>
  /** Keeps a consent flow under its state for `ttlMs`. */
  putFlow: (state: string, flow: Flow, ttlMs: number) => Promise<void>
  /** Takes a flow once (read and deleted); undefined when unknown, taken or expired. */
  takeFlow: (state: string) => Promise<Flow | undefined>
  /** A lock of `ttlMs` around a refresh (one replica refreshes a grant at a time); true when taken. */
  lock: (id: string, ttlMs: number) => Promise<boolean>
  unlock: (id: string) => Promise<void>
  /** Tells the other replicas; `onEvent` gets theirs. Absent: one process. */
  publish?: (event: GrantEvent) => void
  onEvent?: (listener: (event: GrantEvent) => void) => void
  close: () => Promise<void>
}

/**
 * The in-memory store: grants encrypted (AES-256-GCM, 96-bit random IV, 128-bit tag; additional
 * data = the record's key), at most `maxGrants`; flows at most {@link MAX_FLOWS} (the oldest dropped).
 */
export class GrantVault implements GrantStore {
  private readonly records = new Map<string, Buffer>()
  private readonly flows = new Map<string, { flow: Flow, expiresAtMs: number }>()
  private readonly locks = new Set<string>()
  constructor (private readonly key: Buffer, readonly maxGrants = DEFAULT_MAX_GRANTS) {
    if (key.length !== 32) throw new RangeError('mcpx: the vault key must be 32 bytes')
  }

  get size (): number { return this.records.size }

  async get (principalKey: string, upstream: string): Promise<GrantRecord | undefined> {
    const id = recordKey(principalKey, upstream)
    const sealed = this.records.get(id)
    const plain = sealed === undefined ? undefined : unseal(this.key, id, sealed)
    return plain === undefined ? undefined : JSON.parse(plain) as GrantRecord
  }

  async set (principalKey: string, upstream: string, record: GrantRecord): Promise<boolean> {
    const id = recordKey(principalKey, upstream)
    if (!this.records.has(id) && this.records.size >= this.maxGrants) return false
    this.records.set(id, seal(this.key, id, JSON.stringify(record)))
    return true
  }

  async delete (principalKey: string, upstream: string): Promise<boolean> {
    return this.records.delete(recordKey(principalKey, upstream))
  }

  async keys (): Promise<Array<{ principalKey: string, upstream: string }>> {
    return [...this.records.keys()].map(splitKey)
  }

  async putFlow (state: string, flow: Flow, ttlMs: number): Promise<void> {
    const now = Date.now()
    for (const [s, f] of this.flows) if (f.expiresAtMs <= now) this.flows.delete(s)
    if (this.flows.size >= MAX_FLOWS) this.flows.delete(this.flows.keys().next().value as string)
    this.flows.set(state, { flow, expiresAtMs: now + ttlMs })
  }

  async takeFlow (state: string): Promise<Flow | undefined> {
    const entry = this.flows.get(state)
    this.flows.delete(state)
    return entry === undefined || entry.expiresAtMs <= Date.now() ? undefined : entry.flow
  }

  async lock (id: string): Promise<boolean> {
    if (this.locks.has(id)) return false
    this.locks.add(id)
    return true
  }

  async unlock (id: string): Promise<void> { this.locks.delete(id) }
  async close (): Promise<void> {}
}

/**
 * The Redis store (`sessions.store: "redis"`): every replica reads the same grants and flows.
 * Keys under `sessions.keyPrefix`: the hash `<prefix>grants` (field `<principal key>\0<upstream>`,
 * value the sealed record in base64), `<prefix>grant-flow:<state>` (the sealed flow, expiring with
 * it; taken with MULTI GET+DEL, so once), `<prefix>grant-lock:<field>` (SET NX PX around a refresh),
 * and the channel `<prefix>grant-events` (grants given and taken, so each replica opens or closes
 * its connection for that principal). At most `maxGrants` fields (HLEN checked before a new one).
 */
export class RedisGrantVault implements GrantStore {
  private readonly replica = randomBytes(9).toString('base64url')
  private ready: Promise<void> | undefined
  private subscribed: Promise<void> | undefined
  private retry: NodeJS.Timeout | undefined
  private closed = false
  private readonly listeners: Array<(event: GrantEvent) => void> = []

  /** @param redis commands; @param subscriber a second connection, in subscriber mode (lib/base/redis.ts createRedisConnection, both lazy) */
  constructor (private readonly key: Buffer, private readonly redis: RedisConnection, private readonly subscriber: RedisConnection, private readonly prefix: string, readonly maxGrants = DEFAULT_MAX_GRANTS) {
    if (key.length !== 32) throw new RangeError('mcpx: the vault key must be 32 bytes')
  }

  private async conn (): Promise<RedisConnection> {
    this.ready ??= this.redis.connect().catch(err => { this.ready = undefined; throw err })
    await this.ready
    return this.redis
  }

  private get hash (): string { return `${this.prefix}grants` }

  async get (principalKey: string, upstream: string): Promise<GrantRecord | undefined> {
    const id = recordKey(principalKey, upstream)
    const value = await (await this.conn()).hget(this.hash, id)
    const plain = value === null ? undefined : unseal(this.key, id, Buffer.from(value, 'base64'))
    return plain === undefined ? undefined : JSON.parse(plain) as GrantRecord
  }

  async set (principalKey: string, upstream: string, record: GrantRecord): Promise<boolean> {
    const id = recordKey(principalKey, upstream)
    const redis = await this.conn()
    if (await redis.hexists(this.hash, id) === 0 && await redis.hlen(this.hash) >= this.maxGrants) return false
    await redis.hset(this.hash, id, seal(this.key, id, JSON.stringify(record)).toString('base64'))
    return true
  }

  async delete (principalKey: string, upstream: string): Promise<boolean> {
    return await (await this.conn()).hdel(this.hash, recordKey(principalKey, upstream)) > 0
  }

  async keys (): Promise<Array<{ principalKey: string, upstream: string }>> {
    return (await (await this.conn()).hkeys(this.hash)).map(splitKey)
  }

  async putFlow (state: string, flow: Flow, ttlMs: number): Promise<void> {
    await (await this.conn()).set(`${this.prefix}grant-flow:${state}`, seal(this.key, state, JSON.stringify(flow)).toString('base64'), 'PX', ttlMs)
  }

  async takeFlow (state: string): Promise<Flow | undefined> {
    const key = `${this.prefix}grant-flow:${state}`
    const results = await (await this.conn()).multi().get(key).del(key).exec()
    const value = results?.[0]?.[1]
    const plain = typeof value === 'string' ? unseal(this.key, state, Buffer.from(value, 'base64')) : undefined
    return plain === undefined ? undefined : JSON.parse(plain) as Flow
  }

  async lock (id: string, ttlMs: number): Promise<boolean> {
    return await (await this.conn()).set(`${this.prefix}grant-lock:${id}`, this.replica, 'PX', ttlMs, 'NX') === 'OK'
  }

  async unlock (id: string): Promise<void> {
    await (await this.conn()).del(`${this.prefix}grant-lock:${id}`)
  }

  publish (event: GrantEvent): void {
    this.conn().then(async redis => await redis.publish(`${this.prefix}grant-events`, JSON.stringify({ from: this.replica, event })), () => {}).catch(() => {})
  }

  onEvent (listener: (event: GrantEvent) => void): void {
    this.listeners.push(listener)
    if (this.listeners.length > 1) return
    this.subscriber.on('message', (_channel: string, text: string) => {
      try {
        const message = JSON.parse(text) as { from: string, event: GrantEvent }
        if (message.from === this.replica) return
        for (const l of this.listeners) l(message.event)
      } catch {}
    })
    this.subscribe()
  }

  /** Subscribes to the events channel; retried every second until it works (ioredis resubscribes after that). */
  private subscribe (): void {
    if (this.closed) return
    this.subscribed = (async () => {
      if (this.subscriber.status !== 'ready') await this.subscriber.connect()
      await this.subscriber.subscribe(`${this.prefix}grant-events`)
    })().catch(() => { this.retry = setTimeout(() => this.subscribe(), 1_000); this.retry.unref() })
  }

  async close (): Promise<void> {
    this.closed = true
    clearTimeout(this.retry)
    this.redis.disconnect()
    this.subscriber.disconnect()
  }
}

function splitKey (id: string): { principalKey: string, upstream: string } {
  const at = id.indexOf('\0')
  return { principalKey: id.slice(0, at), upstream: id.slice(at + 1) }
}

function recordKey (principalKey: string, upstream: string): string {
  return `${principalKey}\0${upstream}`
}

/**
 * The vault key: `MCPX_VAULT_KEY`, 32 bytes in base64 (or base64url); without it, random (grants then
 * die with the process, as an in-memory vault's do anyway).
 * @throws McpxError MCPX_ERR_CONFIG when the variable is set and is not 32 bytes of base64
 */
export function vaultKeyFrom (env: NodeJS.ProcessEnv = process.env): Buffer {
  const raw = env.MCPX_VAULT_KEY?.trim()
  if (raw === undefined || raw === '') return randomBytes(32)
  const key = Buffer.from(raw, 'base64')
  if (key.length !== 32) throw new McpxError('MCPX_ERR_CONFIG', 'mcpx: MCPX_VAULT_KEY must be 32 bytes in base64 (e.g. `openssl rand -base64 32`)')
  return key
}

/**
 * The grant store a config asks for: in Redis under `sessions.store: "redis"` (every replica uses
 * the same grants), which then needs `MCPX_VAULT_KEY` (replicas must share the key); else in memory.
 * @throws McpxError MCPX_ERR_CONFIG for Redis without MCPX_VAULT_KEY, a bad key, or a bad Redis target
 */
export function createGrantStore (sessions: { store: 'memory' | 'redis', redis: RedisTarget, keyPrefix: string }, env: NodeJS.ProcessEnv = process.env): GrantStore {
  if (sessions.store !== 'redis') return new GrantVault(vaultKeyFrom(env))
  if (env.MCPX_VAULT_KEY === undefined || env.MCPX_VAULT_KEY.trim() === '') {
    throw new McpxError('MCPX_ERR_CONFIG', 'mcpx: invalid config:\n  upstreams: oauth-user grants are kept in Redis under sessions.store "redis", encrypted with MCPX_VAULT_KEY (32 bytes, base64), which is not set')
  }
  return new RedisGrantVault(vaultKeyFrom(env), createRedisConnection(sessions.redis, {}, env), createRedisConnection(sessions.redis, { autoResubscribe: true }, env), sessions.keyPrefix)
}

/** Options of {@link UserGrants}. */
export interface UserGrantsOptions {
  logger: Pick<Logger, 'info' | 'warn'>
  /** `auth.oauth.resource` of the front door, to derive each upstream's default callback URL from. */
  frontDoorResource?: string
  /** Default: in memory ({@link GrantVault}) under {@link vaultKeyFrom}(env). */
  store?: GrantStore
  env?: NodeJS.ProcessEnv
}

/** How long one replica may hold a grant's refresh lock, ms; another waits for it at most this long. */
const REFRESH_LOCK_MS = 10_000

/**
 * The grants of every `oauth-user` upstream. Events (EventEmitter), on every replica when the
 * store is shared (`remote: true` on those another replica saw first):
 * - `'granted'` ({ upstream, principalKey, principalId, elicitationId, remote? }): a consent completed;
 * - `'revoked'` ({ upstream, principalKey, principalId?, reason, remote? }): a grant went
 *   (`operator`, `refresh_failed`, `unauthorized`, `expired`).
 */
export class UserGrants extends EventEmitter {
  private readonly upstreams = new Map<string, PersonalUpstream>()
  /** (principal, upstream) → its pending link here, so retries before consent reuse one (at most MAX_FLOWS). */
  private readonly pending = new Map<string, ConsentLink & { expiresAtMs: number }>()
  private readonly refreshing = new Map<string, Promise<GrantRecord>>()
  readonly store: GrantStore

  /**
   * Reads every `oauth-user` upstream's client secret now.
   * @throws McpxError MCPX_ERR_CONFIG for an unreadable secret source, a missing redirectUri or a bad MCPX_VAULT_KEY
   */
  constructor (upstreams: Record<string, UpstreamConfig>, private readonly options: UserGrantsOptions) {
    super()
    const env = options.env ?? process.env
    this.store = options.store ?? new GrantVault(vaultKeyFrom(env))
    for (const [name, config] of Object.entries(upstreams)) {
      if (!('url' in config) || config.auth?.type !== 'oauth-user') continue
      const auth = config.auth
      const secret = auth.clientSecretEnv === undefined && auth.clientSecretFile === undefined
        ? undefined
        : readSecret({ env: auth.clientSecretEnv, file: auth.clientSecretFile }, `upstreams.${name}.auth`, env)
      const redirectUri = auth.redirectUri ?? callbackBeside(options.frontDoorResource)
      if (redirectUri === undefined) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: upstreams.${name}.auth.redirectUri: required without auth.oauth.resource`)
      this.upstreams.set(name, { name, config: auth, url: config.url, secret, redirectUri })
    }
    this.store.onEvent?.(event => {
      if (event.type === 'revoked') this.pending.delete(recordKey(event.principalKey, event.upstream))
      const { type, ...rest } = event
      this.emit(type, { ...rest, remote: true })
    })
  }

  /** Whether `upstream` acts as each caller (`oauth-user`). */
  has (upstream: string): boolean { return this.upstreams.has(upstream) }

  /**
   * Whether `principalKey` holds a grant for `upstream` (it may still need a refresh). Rejects when the store fails.
   */
  async holds (principalKey: string, upstream: string): Promise<boolean> {
    return await this.store.get(principalKey, upstream) !== undefined
  }

  /**
   * A consent link for (principal, upstream): the pending one made here when it has more than a
   * minute left, else a new flow. Rejects with Error (naming the upstream, never a secret) when
   * discovery or the store fails.
   */
  async consentLink (principal: { key: string, id: string }, upstream: string): Promise<ConsentLink> {
    const personal = this.personal(upstream)
    const now = Date.now()
    const id = recordKey(principal.key, upstream)
    const reuse = this.pending.get(id)
    if (reuse !== undefined && reuse.expiresAtMs > now + 60_000) return { url: reuse.url, elicitationId: reuse.elicitationId }
    const server = await this.server(personal)
    const state = randomBytes(32).toString('base64url')
    const started = await startAuthorization(server.issuer, {
      ...(server.metadata !== undefined ? { metadata: server.metadata } : {}),
      clientInformation: { client_id: personal.config.clientId },
      redirectUrl: personal.redirectUri,
      state,
      resource: new URL(server.resource),
      ...(personal.config.scopes !== undefined && personal.config.scopes.length > 0 ? { scope: personal.config.scopes.join(' ') } : {})
    })
    const flow: Flow = { principalKey: principal.key, principalId: principal.id, upstream, verifier: started.codeVerifier, expiresAtMs: now + FLOW_TTL_MS, elicitationId: `mcpx-consent-${randomBytes(12).toString('base64url')}` }
    await this.store.putFlow(state, flow, FLOW_TTL_MS)
    for (const [key, link] of this.pending) if (link.expiresAtMs <= now) this.pending.delete(key)
    if (this.pending.size >= MAX_FLOWS) this.pending.delete(this.pending.keys().next().value as string)
    const link = { url: started.authorizationUrl.href, elicitationId: flow.elicitationId }
    this.pending.set(id, { ...link, expiresAtMs: flow.expiresAtMs })
    return link
  }

  /**
   * The authorization server's redirect back to mcpx (`/oauth/callback`): takes the flow of `state`
   * (known, unexpired, once: on any replica with a shared store), then redeems `code` with its PKCE
   * verifier. Never rejects; the outcome's message names no secret.
   */
  async callback (query: Record<string, string | undefined>): Promise<CallbackOutcome> {
    const state = query.state
    let flow: Flow | undefined
    try {
      flow = state === undefined || state === '' ? undefined : await this.store.takeFlow(state)
    } catch {
      return { ok: false, status: 503, message: 'mcpx cannot read its pending sign-ins right now. Go back to your client and try again in a moment.' }
    }
    if (flow === undefined || flow.expiresAtMs <= Date.now()) {
      return { ok: false, status: 400, message: 'This sign-in link is unknown, already used or expired. Go back to your client and call the tool again for a new one.' }
    }
    this.pending.delete(recordKey(flow.principalKey, flow.upstream))
    if (query.error !== undefined) return { ok: false, status: 400, message: `The authorization server refused: ${safeCode(query.error)}. Go back to your client and try again.` }
    const code = query.code
    if (code === undefined || code === '') return { ok: false, status: 400, message: 'The redirect carries no code.' }
    const personal = this.upstreams.get(flow.upstream)
    if (personal === undefined) return { ok: false, status: 400, message: 'This sign-in is for an upstream mcpx no longer has.' }
    let tokens: OAuthTokens
    try {
      const server = await this.server(personal)
      tokens = await exchangeAuthorization(server.issuer, {
        ...(server.metadata !== undefined ? { metadata: server.metadata } : {}),
        clientInformation: this.clientInformation(personal),
        authorizationCode: code,
        ...(query.iss !== undefined ? { iss: query.iss } : {}),
        codeVerifier: flow.verifier,
        redirectUri: personal.redirectUri,
        resource: new URL(server.resource)
      })
    } catch (error) {
      this.options.logger.warn({ upstream: flow.upstream, reason: oauthReason(error) }, 'upstream consent: the code exchange failed')
      return { ok: false, status: 502, message: `The authorization server did not accept the sign-in (${oauthReason(error)}). Go back to your client and try again.` }
    }
    let stored: boolean
    try {
      stored = await this.store.set(flow.principalKey, flow.upstream, recordOf(tokens, flow.principalId))
    } catch {
      return { ok: false, status: 503, message: 'mcpx cannot store the sign-in right now. Go back to your client and try again in a moment.' }
    }
    if (!stored) {
      this.options.logger.warn({ upstream: flow.upstream, maxGrants: this.store.maxGrants }, 'upstream consent refused: the grant vault is full (maxGrants)')
      return { ok: false, status: 503, message: 'mcpx holds as many grants as it may; ask the operator to revoke unused ones.' }
    }
    const event = { upstream: flow.upstream, principalKey: flow.principalKey, principalId: flow.principalId, elicitationId: flow.elicitationId }
    this.emit('granted', event)
    this.store.publish?.({ type: 'granted', ...event })
    return { ok: true, ...event }
  }

  /**
   * The access token of (principal, upstream), refreshed first when it expires within a minute
   * (or at once, after the upstream answered 401, `afterUnauthorized`). With a shared store one
   * replica refreshes at a time (a lock); the others wait for its result.
   * @throws ConsentRequiredError when there is no grant, or the refresh failed (the grant is then dropped)
   */
  async token (principalKey: string, upstream: string, afterUnauthorized = false): Promise<string> {
    const record = await this.store.get(principalKey, upstream)
    if (record === undefined) throw new ConsentRequiredError(upstream)
    const due = afterUnauthorized || (record.expiresAtMs !== undefined && record.expiresAtMs - Date.now() < REFRESH_AHEAD_MS)
    if (!due) return record.access
    if (record.refresh === undefined) {
      await this.drop(principalKey, upstream, record.principalId, afterUnauthorized ? 'unauthorized' : 'expired')
      throw new ConsentRequiredError(upstream)
    }
    const id = recordKey(principalKey, upstream)
    let inflight = this.refreshing.get(id)
    if (inflight === undefined) {
      inflight = this.refreshOnce(principalKey, upstream, record).finally(() => this.refreshing.delete(id))
      this.refreshing.set(id, inflight)
    }
    return (await inflight).access
  }

  /**
   * Revokes grants (the operator's word; docs/upstreams.md › Upstream identity): one principal's
   * grant for `upstream`, or all of that principal's grants when `upstream` is undefined.
   * @returns the upstreams whose grant went. Rejects when the store fails.
   */
  async revoke (principalKey: string, upstream?: string): Promise<string[]> {
    const gone: string[] = []
    for (const held of await this.store.keys()) {
      if (held.principalKey !== principalKey || (upstream !== undefined && held.upstream !== upstream)) continue
      const record = await this.store.get(held.principalKey, held.upstream)
      if (await this.drop(held.principalKey, held.upstream, record?.principalId, 'operator')) gone.push(held.upstream)
    }
    return gone
  }

  /**
   * Revokes by the principal's id (`token:alice`, `oauth:<issuer>#<subject>`), as an operator names
   * it: that principal's grant for `upstream`, or all of its grants.
   * @returns what went, `{ principal, upstream }` each. Rejects when the store fails.
   */
  async revokePrincipal (principalId: string, upstream?: string): Promise<Array<{ principal: string, upstream: string }>> {
    const keys = new Set((await this.list()).filter(g => g.principal === principalId && (upstream === undefined || g.upstream === upstream)).map(g => g.principalKey))
    const gone: Array<{ principal: string, upstream: string }> = []
    for (const key of keys) for (const name of await this.revoke(key, upstream)) gone.push({ principal: principalId, upstream: name })
    return gone
  }

  /** Every grant held, without tokens: principal, upstream, when its access token expires (ms since epoch). Rejects when the store fails. */
  async list (): Promise<Array<{ principalKey: string, principal?: string, upstream: string, expiresAtMs?: number, refreshable: boolean }>> {
    const out: Array<{ principalKey: string, principal?: string, upstream: string, expiresAtMs?: number, refreshable: boolean }> = []
    for (const { principalKey, upstream } of await this.store.keys()) {
      const record = await this.store.get(principalKey, upstream)
      out.push({ principalKey, ...(record !== undefined ? { principal: record.principalId } : {}), upstream, ...(record?.expiresAtMs !== undefined ? { expiresAtMs: record.expiresAtMs } : {}), refreshable: record?.refresh !== undefined })
    }
    return out
  }

  /**
   * The header provider of the `oauth-user` upstreams (the registry's `headerProvider` seam): the
   * bearer of the principal a call or an instance's own traffic serves (`instanceKey`), undefined
   * for other upstreams. Rejects with ConsentRequiredError when that principal holds no grant.
   */
  headerProvider (): UpstreamHeaderProvider {
    return async (request: UpstreamHeaderRequest) => {
      if (!this.upstreams.has(request.upstream)) return undefined
      const key = request.instanceKey ?? (request.principal as Principal | undefined)?.key
      if (key === undefined) throw new ConsentRequiredError(request.upstream)
      return { authorization: `Bearer ${await this.token(key, request.upstream, request.afterUnauthorized)}` }
    }
  }

  /** Stops the store's connections (Redis). Never rejects. */
  async close (): Promise<void> {
    await this.store.close().catch(() => {})
  }

  /** One refresh of a grant across replicas: under the lock, else wait for the holder's new token. */
  private async refreshOnce (principalKey: string, upstream: string, record: GrantRecord): Promise<GrantRecord> {
    const id = recordKey(principalKey, upstream)
    if (await this.store.lock(id, REFRESH_LOCK_MS)) {
      try {
        return await this.refresh(principalKey, upstream, record)
      } finally {
        await this.store.unlock(id).catch(() => {})
      }
    }
    // Another replica refreshes this grant now: its result lands in the store.
    const deadline = Date.now() + REFRESH_LOCK_MS
    while (Date.now() < deadline) {
      await new Promise(resolve => setTimeout(resolve, 100))
      const now = await this.store.get(principalKey, upstream)
      if (now === undefined) throw new ConsentRequiredError(upstream)
      if (now.access !== record.access) return now
    }
    return await this.refresh(principalKey, upstream, record)
  }

  private async refresh (principalKey: string, upstream: string, record: GrantRecord): Promise<GrantRecord> {
    const personal = this.personal(upstream)
    let tokens: OAuthTokens
    try {
      const server = await this.server(personal)
      tokens = await refreshAuthorization(server.issuer, {
        ...(server.metadata !== undefined ? { metadata: server.metadata } : {}),
        clientInformation: this.clientInformation(personal),
        refreshToken: record.refresh as string,
        resource: new URL(server.resource)
      })
    } catch (error) {
      this.options.logger.warn({ upstream, principal: record.principalId, reason: oauthReason(error) }, 'upstream token refresh failed: the caller must consent again')
      await this.drop(principalKey, upstream, record.principalId, 'refresh_failed').catch(() => false)
      throw new ConsentRequiredError(upstream)
    }
    const next = recordOf(tokens, record.principalId)
    next.refresh ??= record.refresh
    await this.store.set(principalKey, upstream, next)
    return next
  }

  /** Deletes a grant and tells everyone (here and, through the store, the other replicas). @returns whether there was one */
  private async drop (principalKey: string, upstream: string, principalId: string | undefined, reason: string): Promise<boolean> {
    if (!await this.store.delete(principalKey, upstream)) return false
    const event = { upstream, principalKey, ...(principalId !== undefined ? { principalId } : {}), reason }
    this.emit('revoked', event)
    this.store.publish?.({ type: 'revoked', ...event })
    return true
  }

  private personal (upstream: string): PersonalUpstream {
    const personal = this.upstreams.get(upstream)
    if (personal === undefined) throw new Error(`upstream ${upstream} is not an oauth-user upstream`)
    return personal
  }

  private clientInformation (personal: PersonalUpstream): { client_id: string, client_secret?: string } {
    return { client_id: personal.config.clientId, ...(personal.secret !== undefined ? { client_secret: personal.secret.reveal() } : {}) }
  }

  /**
   * The upstream's authorization server and resource: `authorizationServer` when configured, else
   * as an MCP client finds it (the upstream's 401 `WWW-Authenticate` → RFC 9728 metadata →
   * RFC 8414, then OIDC discovery). Cached; a failure is retried on the next consent.
   */
  private async server (personal: PersonalUpstream): Promise<ServerInfo> {
    personal.server ??= (async () => {
      if (personal.config.authorizationServer !== undefined) {
        const issuer = personal.config.authorizationServer
        return { issuer, metadata: await discoverAuthorizationServerMetadata(issuer), resource: personal.url }
      }
      const probe = await fetch(personal.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'ping' }),
        signal: AbortSignal.timeout(DISCOVERY_TIMEOUT_MS)
      })
      const { resourceMetadataUrl } = probe.status === 401 ? extractWWWAuthenticateParams(probe) : {}
      await probe.body?.cancel()
      const info = await discoverOAuthServerInfo(personal.url, resourceMetadataUrl !== undefined ? { resourceMetadataUrl } : {})
      const resource = typeof info.resourceMetadata?.resource === 'string' ? info.resourceMetadata.resource : personal.url
      return { issuer: info.authorizationServerUrl, metadata: info.authorizationServerMetadata, resource }
    })().catch(error => {
      personal.server = undefined
      throw new Error(`cannot discover the authorization server of upstream ${personal.name}: ${(error as Error).message}`)
    })
    return await personal.server
  }
}

function recordOf (tokens: OAuthTokens, principalId: string): GrantRecord {
  return {
    access: tokens.access_token,
    ...(tokens.refresh_token !== undefined ? { refresh: tokens.refresh_token } : {}),
    ...(typeof tokens.expires_in === 'number' ? { expiresAtMs: Date.now() + tokens.expires_in * 1000 } : {}),
    principalId
  }
}

/**
 * The default callback URL: the front door's resource with its last path segment (`mcp`) replaced
 * by `oauth/callback` (`https://host/tools/mcp` → `https://host/tools/oauth/callback`).
 */
export function callbackBeside (resource: string | undefined): string | undefined {
  if (resource === undefined) return undefined
  const url = new URL(resource)
  url.pathname = url.pathname.replace(/\/[^/]*$/, '') + '/oauth/callback'
  url.search = ''
  url.hash = ''
  return url.href
}

/** An OAuth error code for a message: RFC 6749 §5.2 codes are `[\x20-\x21\x23-\x5B\x5D-\x7E]`; anything else is not echoed. */
function safeCode (code: string): string {
  return /^[a-z_]{1,64}$/.test(code) ? code : 'an error'
}

/** Why an OAuth step failed, without any secret: the OAuth error code, or the error's class. */
function oauthReason (error: unknown): string {
  const e = error as { code?: unknown, error?: unknown, name?: string, message?: string }
  if (typeof e?.error === 'string') return safeCode(e.error)
  if (typeof e?.code === 'string' && /^[a-z_]{1,64}$/.test(e.code)) return e.code
  return e?.name ?? 'error'
}

/**
 * The page the browser gets back from the callback (both faces: routes/oauth/callback.ts and the
 * `mcpx serve` loopback listener): plain HTML, no script, nothing from the query but a vetted OAuth
 * error code. @returns its HTTP status and body. Never throws.
 */
export function consentPage (outcome: CallbackOutcome): { status: number, html: string } {
  const escape = (v: string): string => v.replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`)
  const [status, title, text] = outcome.ok
    ? [200, 'You are signed in', `mcpx now reaches ${outcome.upstream} as you. You can close this page and return to your client.`]
    : [outcome.status, 'Sign-in did not complete', outcome.message]
  return {
    status,
    html: `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title></head>` +
      `<body style="font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto"><h1>${escape(title)}</h1><p>${escape(text)}</p></body></html>`
  }
}

/** Headers of the callback page: never cached, no referrer (the URL held a code), nothing active. */
export const CONSENT_PAGE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
  'content-type': 'text/html; charset=utf-8'
})

/** The callback URLs of the `oauth-user` upstreams (their `redirectUri`s, distinct), for a face that must listen on them itself. */
export function redirectUris (upstreams: Record<string, UpstreamConfig>): string[] {
  return [...new Set(Object.values(upstreams).flatMap(c => 'url' in c && c.auth?.type === 'oauth-user' && c.auth.redirectUri !== undefined ? [c.auth.redirectUri] : []))]
}

