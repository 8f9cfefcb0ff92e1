/**
 * The human confirmation gate's data (docs/policy.md › Confirmation): which calls need a human's
 * yes, what the question shows, and the shared ledger of approvals already used. Pure of Fastify
 * and of transports; the gate itself (asking, sealing, deciding) is lib/dispatch/confirm-gate.ts.
 *
 * - Selection: a policy rule or a curated endpoint says `"confirm": ["crm__delete_*"]` (globs, the
 *   same syntax as allow/deny: lib/policy/rules.ts compileGlobs) or `"confirm": { "destructive": true }`
 *   (tools whose `annotations.destructiveHint` is true as the endpoint lists them, after its
 *   `override`), or both (`{ "tools": [...], "destructive": true }`). A glob matches the catalogue
 *   name or the name the endpoint exposes (a rename can never take a tool out of the gate).
 * - The question shows the tool and its arguments as JSON, argument values whose name matches a
 *   `confirmation.redact` glob (case-insensitive, at any depth) replaced by `[redacted]`, cut at
 *   `confirmation.maxArgumentChars` characters.
 * - An approval is single-use: its nonce goes into a ledger when it is spent, until it expires.
 *   In memory the ledger is bounded ({@link MAX_LEDGER_ENTRIES}); past the bound with no entry
 *   expired, a new approval is refused (fail closed: forgetting a live one would allow a replay).
 *   With `sessions.store: "redis"` it is a Redis key per approval (`SET NX PX`), shared by replicas.
 */
import { createHash } from 'node:crypto'
import canonicalize from 'canonicalize'
import { compileGlobs } from './rules.js'
import { createRedisConnection, type RedisConnection, type RedisTarget } from '../base/redis.js'
import type { Logger } from '../telemetry/log.js'
import type { JsonObject } from '../protocol/jsonrpc.js'

/** `confirm` on a policy rule or a curated endpoint: globs, or `{ tools?, destructive? }`. */
export type ConfirmConfig = string[] | { tools?: string[], destructive?: boolean }

/** `confirmation` as loaded (durations in ms). */
export interface ConfirmationConfig {
  /** How long a question (and the approval it yields) stays valid, ms. Default 120 000. */
  expiry: number
  /** Argument-name globs whose values the question never shows (case-insensitive). */
  redact: string[]
  /** Most characters of the arguments' JSON the question shows. Default 1000. */
  maxArgumentChars: number
}

/** The defaults of `confirmation` (lib/policy/schema.ts CONFIRMATION_SCHEMA holds the same). */
export const DEFAULT_REDACT: readonly string[] = Object.freeze(['*password*', '*passwd*', '*secret*', '*token*', '*apikey*', '*api_key*', '*api-key*', 'authorization', '*credential*', '*private_key*'])

/** What a redacted value shows. */
export const REDACTED_VALUE = '[redacted]'

/** Most approvals the in-memory ledger holds while unexpired. */
export const MAX_LEDGER_ENTRIES = 100_000

/** A compiled `confirm`: which tools need a human's yes. Immutable. */
export class ConfirmSelection {
  /** Selects nothing (no `confirm` anywhere): the gate costs one property read. */
  static readonly NONE = new ConfirmSelection(null, false)

  constructor (private readonly globs: RegExp | null, readonly destructive: boolean) {}

  /** Whether any tool can be selected at all. */
  get any (): boolean { return this.globs !== null || this.destructive }

  /**
   * Whether the call of a tool needs confirmation.
   * @param catalogue its catalogue name; @param exposed its name on the endpoint
   * @param tool the tool as the endpoint lists it (annotations after `override`), when known
   */
  selects (catalogue: string, exposed: string, tool: JsonObject | undefined): boolean {
    if (this.globs !== null && (this.globs.test(catalogue) || this.globs.test(exposed))) return true
    if (!this.destructive || tool === undefined) return false
    const annotations = tool.annotations
    return typeof annotations === 'object' && annotations !== null && (annotations as JsonObject).destructiveHint === true
  }

  /** The union of selections (a view's applying rules, an endpoint and the policy). */
  static union (parts: ReadonlyArray<ConfirmConfig | undefined>): ConfirmSelection {
    const globs: string[] = []
    let destructive = false
    for (const part of parts) {
      if (part === undefined) continue
      if (Array.isArray(part)) { globs.push(...part); continue }
      globs.push(...part.tools ?? [])
      if (part.destructive === true) destructive = true
    }
    if (globs.length === 0 && !destructive) return ConfirmSelection.NONE
    return new ConfirmSelection(compileGlobs(globs), destructive)
  }
}

/**
 * The arguments as the question shows them: values under a redacted name replaced (at any depth,
 * in arrays too), then the JSON cut at `maxChars` characters with a note of how much was left out.
 * Never throws.
 */
export function argumentsShown (args: JsonObject | undefined, redact: RegExp | null, maxChars: number): string {
  const shown = JSON.stringify(redactValue(args ?? {}, redact, 0))
  if (shown.length <= maxChars) return shown
  return `${shown.slice(0, maxChars)}… (${shown.length - maxChars} more characters not shown)`
}

function redactValue (value: unknown, redact: RegExp | null, depth: number): unknown {
  if (redact === null || typeof value !== 'object' || value === null) return value
  if (depth > 64) return REDACTED_VALUE // deeper than any honest argument; never shown
  if (Array.isArray(value)) return value.map(item => redactValue(item, redact, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(value)) out[key] = redact.test(key) ? REDACTED_VALUE : redactValue(item, redact, depth + 1)
  return out
}

/** `confirmation.redact` compiled: case-insensitive, anchored. null: nothing redacted. */
export function compileRedact (globs: readonly string[]): RegExp | null {
  const compiled = compileGlobs(globs)
  return compiled === null ? null : new RegExp(compiled.source, 'i')
}

/**
 * What an approval is bound to besides its principal and exposed tool name: SHA-256 (base64url) of
 * `binding` (the endpoint and the catalogue name the call would reach, so a state issued on one
 * endpoint, or before a reload renamed the tool, approves nothing else) and of the arguments as
 * the client sent them, in RFC 8785 canonical JSON (key order does not matter). Never throws.
 */
export function argumentsHash (args: JsonObject | undefined, binding = ''): string {
  return createHash('sha256').update(binding).update('\n').update(canonicalize(args ?? {}) ?? '{}').digest('base64url')
}

/** Whether spending an approval worked: `fresh` (first use), `used` (a replay), `full` or `unavailable` (refused: fail closed). */
export type LedgerOutcome = 'fresh' | 'used' | 'full' | 'unavailable'

/** The set of approvals already spent. */
export interface ApprovalLedger {
  /** Records approval `nonce` as spent until `expiresAtMs` (epoch ms). Never rejects. */
  spend: (nonce: string, expiresAtMs: number) => LedgerOutcome | Promise<LedgerOutcome>
  close: () => Promise<void>
}

/** The in-memory ledger: at most {@link MAX_LEDGER_ENTRIES} unexpired approvals. */
export class MemoryLedger implements ApprovalLedger {
  private readonly spent = new Map<string, number>()
  constructor (private readonly maxEntries = MAX_LEDGER_ENTRIES) {}

  spend (nonce: string, expiresAtMs: number, nowMs = Date.now()): LedgerOutcome {
    const until = this.spent.get(nonce)
    if (until !== undefined && until >= nowMs) return 'used'
    if (this.spent.size >= this.maxEntries) {
      for (const [key, at] of this.spent) if (at < nowMs) this.spent.delete(key)
      if (this.spent.size >= this.maxEntries) return 'full'
    }
    this.spent.set(nonce, expiresAtMs)
    return 'fresh'
  }

  /** Unexpired approvals held (tests). */
  get size (): number { return this.spent.size }

  async close (): Promise<void> { this.spent.clear() }
}

/** The Redis ledger: `<keyPrefix>confirm:<nonce>` set with NX and a PX until the approval expires. */
export class RedisLedger implements ApprovalLedger {
  private readonly redis: RedisConnection
  private readonly connecting: Promise<void>

  constructor (target: RedisTarget, private readonly keyPrefix: string, private readonly log: Logger) {
    this.redis = createRedisConnection(target, { commandTimeoutMs: 1_000 })
    this.redis.on('error', (err: Error) => { this.log.debug({ err }, 'confirmation ledger (Redis) unreachable: approvals are refused until it returns') })
    this.connecting = this.redis.connect().then(() => {}, () => {})
  }

  async spend (nonce: string, expiresAtMs: number): Promise<LedgerOutcome> {
    await this.connecting
    try {
      const ttl = Math.max(1, Math.ceil(expiresAtMs - Date.now()))
      const set = await this.redis.set(`${this.keyPrefix}confirm:${nonce}`, '1', 'PX', ttl, 'NX')
      return set === 'OK' ? 'fresh' : 'used'
    } catch {
      return 'unavailable'
    }
  }

  async close (): Promise<void> {
    if (this.redis.status === 'ready') await Promise.race([this.redis.quit().catch(() => {}), new Promise(resolve => setTimeout(resolve, 500).unref())])
    this.redis.disconnect()
  }
}

/** Where the ledger lives: `sessions` of the config. */
export interface LedgerStoreConfig { store: 'memory' | 'redis', redis: RedisTarget, keyPrefix: string }

/** The ledger for a config: Redis with `sessions.store: "redis"`, else memory. Throws as createRedisConnection. */
export function createLedger (sessions: LedgerStoreConfig, logger: Logger): ApprovalLedger {
  return sessions.store === 'redis' ? new RedisLedger(sessions.redis, sessions.keyPrefix, logger) : new MemoryLedger()
}
