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
interface GrantRecord { access: string, refresh?: string, expiresAtMs?: number, principalId: string }

interface Flow { principalKey: string, principalId: string, upstream: string, verifier: string, expiresAtMs: number, elicitationId: string }

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

/**
 * The encrypted store of grants (AES-256-GCM, 96-bit random IV, 128-bit tag; additional data = the
 * record's key). In memory; bounded by `maxGrants`.
 */
export class GrantVault {
  private readonly records = new Map<string, Buffer>()
  constructor (private readonly key: Buffer, readonly maxGrants = DEFAULT_MAX_GRANTS) {
    if (key.length !== 32) throw new RangeError('mcpx: the vault key must be 32 bytes')
  }

  get size (): number { return this.records.size }

  /** The record of (principal, upstream), or undefined. A record that fails to decrypt counts as absent. */
  get (principalKey: string, upstream: string): GrantRecord | undefined {
    const id = recordKey(principalKey, upstream)
    const sealed = this.records.get(id)
    if (sealed === undefined) return undefined
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, sealed.subarray(0, 12))
      decipher.setAAD(Buffer.from(id))
      decipher.setAuthTag(sealed.subarray(12, 28))
      return JSON.parse(Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8')) as GrantRecord
    } catch {
      return undefined
    }
  }

  /** Stores a record. @returns false when the vault is full and this (principal, upstream) had none */
  set (principalKey: string, upstream: string, record: GrantRecord): boolean {
    const id = recordKey(principalKey, upstream)
    if (!this.records.has(id) && this.records.size >= this.maxGrants) return false
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.key, iv)
    cipher.setAAD(Buffer.from(id))
    const body = Buffer.concat([cipher.update(JSON.stringify(record), 'utf8'), cipher.final()])
    this.records.set(id, Buffer.concat([iv, cipher.getAuthTag(), body]))
    return true
  }

  /** Deletes one grant. @returns whether there was one */
  delete (principalKey: string, upstream: string): boolean {
    return this.records.delete(recordKey(principalKey, upstream))
  }

  /** Every (principal key, upstream) held. */
  keys (): Array<{ principalKey: string, upstream: string }> {
    return [...this.records.keys()].map(id => { const at = id.indexOf('\0'); return { principalKey: id.slice(0, at), upstream: id.slice(at + 1) } })
  }
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

/** Options of {@link UserGrants}. */
export interface UserGrantsOptions {
  logger: Pick<Logger, 'info' | 'warn'>
  /** `auth.oauth.resource` of the front door, to derive each upstream's default callback URL from. */
  frontDoorResource?: string
  /** Default {@link vaultKeyFrom}(env). */
  vault?: GrantVault
  env?: NodeJS.ProcessEnv
}

/**
 * The grants of every `oauth-user` upstream. Events (EventEmitter):
 * - `'granted'` ({ upstream, principalKey, principalId, elicitationId }): a consent completed;
 * - `'revoked'` ({ upstream, principalKey, principalId?, reason: 'operator' | 'refresh_failed' | 'unauthorized' }): a grant went.
 */
export class UserGrants extends EventEmitter {
  private readonly upstreams = new Map<string, PersonalUpstream>()
  private readonly flows = new Map<string, Flow>()
  /** (principal, upstream) → its pending flow's state, so retries before consent reuse one link. */
  private readonly flowOf = new Map<string, string>()
  private readonly refreshing = new Map<string, Promise<GrantRecord>>()
  readonly vault: GrantVault

  /**
   * Reads every `oauth-user` upstream's client secret now.
   * @throws McpxError MCPX_ERR_CONFIG for an unreadable secret source or a bad MCPX_VAULT_KEY
   */
  constructor (upstreams: Record<string, UpstreamConfig>, private readonly options: UserGrantsOptions) {
    super()
    const env = options.env ?? process.env
    this.vault = options.vault ?? new GrantVault(vaultKeyFrom(env))
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
  }

  /** Whether `upstream` is an `oauth-user` upstream. */
  has (upstream: string): boolean { return this.upstreams.has(upstream) }

  /** Whether `principalKey` holds a grant for `upstream` (it may still need a refresh). */
  holds (principalKey: string, upstream: string): boolean {
    return this.vault.get(principalKey, upstream) !== undefined
  }

  /**
   * A consent link for (principal, upstream): the pending one when there is one, else a new flow.
   * Rejects with Error (naming the upstream, never a secret) when discovery fails.
   */
  async consentLink (principal: { key: string, id: string }, upstream: string): Promise<ConsentLink> {
    const personal = this.personal(upstream)
    const now = Date.now()
    const pendingState = this.flowOf.get(recordKey(principal.key, upstream))
    const pending = pendingState === undefined ? undefined : this.flows.get(pendingState)
    const server = await this.server(personal)
    if (pending !== undefined && pending.expiresAtMs > now + 60_000) {
      return { url: flowUrls.get(pending) as string, elicitationId: pending.elicitationId }
    }
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
    this.sweep(now)
    if (this.flows.size >= MAX_FLOWS) this.dropFlow(this.flows.keys().next().value as string)
    this.flows.set(state, flow)
    this.flowOf.set(recordKey(principal.key, upstream), state)
    flowUrls.set(flow, started.authorizationUrl.href)
    return { url: started.authorizationUrl.href, elicitationId: flow.elicitationId }
  }

  /**
   * The authorization server's redirect back to mcpx (`/oauth/callback`): checks `state` (known,
   * unexpired; consumed now, whatever follows), then redeems `code` with the PKCE verifier.
   * Never rejects; the outcome's message names no secret.
   */
  async callback (query: Record<string, string | undefined>): Promise<CallbackOutcome> {
    const state = query.state
    const flow = state === undefined ? undefined : this.flows.get(state)
    if (state === undefined || flow === undefined || flow.expiresAtMs <= Date.now()) {
      if (state !== undefined) this.dropFlow(state)
      return { ok: false, status: 400, message: 'This sign-in link is unknown, already used or expired. Go back to your client and call the tool again for a new one.' }
    }
    this.dropFlow(state)
    if (query.error !== undefined) return { ok: false, status: 400, message: `The authorization server refused: ${safeCode(query.error)}. Go back to your client and try again.` }
    const code = query.code
    if (code === undefined || code === '') return { ok: false, status: 400, message: 'The redirect carries no code.' }
    const personal = this.personal(flow.upstream)
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
    if (!this.vault.set(flow.principalKey, flow.upstream, recordOf(tokens, flow.principalId))) {
      this.options.logger.warn({ upstream: flow.upstream, maxGrants: this.vault.maxGrants }, 'upstream consent refused: the grant vault is full (maxGrants)')
      return { ok: false, status: 503, message: 'mcpx holds as many grants as it may; ask the operator to revoke unused ones.' }
    }
    const outcome = { ok: true as const, upstream: flow.upstream, principalKey: flow.principalKey, principalId: flow.principalId, elicitationId: flow.elicitationId }
    this.emit('granted', outcome)
    return outcome
  }

  /**
   * The access token of (principal, upstream), refreshed first when it expires within a minute
   * (or at once, after the upstream answered 401, `afterUnauthorized`).
   * @throws ConsentRequiredError when there is no grant, or the refresh failed (the grant is then dropped)
   */
  async token (principalKey: string, upstream: string, afterUnauthorized = false): Promise<string> {
    const record = this.vault.get(principalKey, upstream)
    if (record === undefined) throw new ConsentRequiredError(upstream)
    const due = afterUnauthorized || (record.expiresAtMs !== undefined && record.expiresAtMs - Date.now() < REFRESH_AHEAD_MS)
    if (!due) return record.access
    if (record.refresh === undefined) {
      this.drop(principalKey, upstream, record.principalId, afterUnauthorized ? 'unauthorized' : 'expired')
      throw new ConsentRequiredError(upstream)
    }
    const id = recordKey(principalKey, upstream)
    let inflight = this.refreshing.get(id)
    if (inflight === undefined) {
      inflight = this.refresh(principalKey, upstream, record).finally(() => this.refreshing.delete(id))
      this.refreshing.set(id, inflight)
    }
    return (await inflight).access
  }

  /**
   * Revokes grants (the operator's word; docs/upstreams.md › Upstream identity): one principal's
   * grant for `upstream`, or all of that principal's grants when `upstream` is undefined.
   * @returns the upstreams whose grant went
   */
  revoke (principalKey: string, upstream?: string): string[] {
    const gone: string[] = []
    for (const held of this.vault.keys()) {
      if (held.principalKey !== principalKey || (upstream !== undefined && held.upstream !== upstream)) continue
      const record = this.vault.get(held.principalKey, held.upstream)
      this.drop(held.principalKey, held.upstream, record?.principalId, 'operator')
      gone.push(held.upstream)
    }
    return gone
  }

  /**
   * Revokes by the principal's id (`token:alice`, `oauth:<issuer>#<subject>`), as an operator names
   * it: that principal's grant for `upstream`, or all of its grants.
   * @returns what went, `{ principal, upstream }` each
   */
  revokePrincipal (principalId: string, upstream?: string): Array<{ principal: string, upstream: string }> {
    const keys = new Set(this.list().filter(g => g.principal === principalId && (upstream === undefined || g.upstream === upstream)).map(g => g.principalKey))
    return [...keys].flatMap(key => this.revoke(key, upstream).map(name => ({ principal: principalId, upstream: name })))
  }

  /** Every grant held, without tokens: principal, upstream, when its access token expires (ms since epoch). */
  list (): Array<{ principalKey: string, principal?: string, upstream: string, expiresAtMs?: number, refreshable: boolean }> {
    return this.vault.keys().map(({ principalKey, upstream }) => {
      const record = this.vault.get(principalKey, upstream)
      return { principalKey, ...(record !== undefined ? { principal: record.principalId } : {}), upstream, ...(record?.expiresAtMs !== undefined ? { expiresAtMs: record.expiresAtMs } : {}), refreshable: record?.refresh !== undefined }
    })
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

  private async refresh (principalKey: string, upstream: string, record: GrantRecord): Promise<GrantRecord> {
    const personal = this.personal(upstream)
    try {
      const server = await this.server(personal)
      const tokens = await refreshAuthorization(server.issuer, {
        ...(server.metadata !== undefined ? { metadata: server.metadata } : {}),
        clientInformation: this.clientInformation(personal),
        refreshToken: record.refresh as string,
        resource: new URL(server.resource)
      })
      const next = recordOf(tokens, record.principalId)
      next.refresh ??= record.refresh
      this.vault.set(principalKey, upstream, next)
      return next
    } catch (error) {
      this.options.logger.warn({ upstream, principal: record.principalId, reason: oauthReason(error) }, 'upstream token refresh failed: the caller must consent again')
      this.drop(principalKey, upstream, record.principalId, 'refresh_failed')
      throw new ConsentRequiredError(upstream)
    }
  }

  private drop (principalKey: string, upstream: string, principalId: string | undefined, reason: string): void {
    if (this.vault.delete(principalKey, upstream)) this.emit('revoked', { upstream, principalKey, ...(principalId !== undefined ? { principalId } : {}), reason })
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

  private sweep (now: number): void {
    for (const [state, flow] of this.flows) if (flow.expiresAtMs <= now) this.dropFlow(state)
  }

  private dropFlow (state: string): void {
    const flow = this.flows.get(state)
    if (flow === undefined) return
    this.flows.delete(state)
    const id = recordKey(flow.principalKey, flow.upstream)
    if (this.flowOf.get(id) === state) this.flowOf.delete(id)
  }
}

/** Authorization URLs of pending flows (weakly held: a flow dropped takes its URL with it). */
const flowUrls = new WeakMap<Flow, string>()

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
