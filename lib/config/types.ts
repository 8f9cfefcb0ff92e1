/**
 * The config's types: {@link McpxConfig} as loaded (lib/config/load.ts) and {@link McpxConfigInput} as
 * a user writes it. The sections other layers read are declared in those layers (lib/auth/config.ts,
 * lib/policy/, lib/upstreams/config.ts) and named here.
 */
import type { AdminConfig, AuthConfig } from '../auth/config.js'
import type { UpstreamConfig } from '../upstreams/config.js'
import type { RedisTarget } from '../base/redis.js'
import type { PolicyConfig } from '../policy/rules.js'
import type { AuditConfig } from '../policy/audit.js'
import type { ServerConfig } from '../policy/endpoints.js'
import type { IntegrityConfig } from '../policy/integrity.js'
import type { DiscoveryConfig } from '../policy/discovery.js'
import type { ConfirmationConfig } from '../policy/confirm.js'

/** mcpx's configuration after validation; durations are ms. */
export interface McpxConfig {
  daemon: {
    address: string
    shutdownTimeout: number
    /** Proxy addresses or CIDRs whose X-Forwarded-For is believed ([] = none); checked by loadConfig (lib/config/load.ts). */
    trustProxy: string[]
  }
  transport: {
    allowedOrigins: string[]
    sseKeepAlive: number
    stdioDrain: number
    sessionIdleTimeout: number
    maxBodyBytes: number
    maxSessions: number
    maxGetStreams: number
    maxRequestsPerSession: number
    maxConcurrentRequests: number
    /** members: most members one batch may hold; a longer one is refused whole (lib/protocol/jsonrpc.ts parseBody). */
    maxBatchMembers: number
    /** members: most members of one batch in progress at once (lib/connection/batch.ts). */
    maxBatchInFlight: number
    /** requests: mcpx serve reads no more input while this many are in flight. */
    stdioMaxInFlight: number
    /** bytes: the high-water mark of every outgoing stream (lib/connection/flow.ts). */
    streamBufferBytes: number
    /** bytes: the hard limit of every outgoing stream, ≥ streamBufferBytes (lib/connection/flow.ts). */
    streamBufferMaxBytes: number
    /** ms; 0 disables. Daemon only (a host app sets its own server options). */
    headersTimeout: number
    /** ms; 0 disables. Daemon only. */
    bodyTimeout: number
    /** ms; 0 disables. Daemon only. */
    keepAliveTimeout: number
    /** items per page of the four list methods, 0…10 000; 0 = no paging (lib/dispatch/paging.ts). */
    pageSize: number
  }
  auth: AuthConfig
  /** Operator tokens for POST /admin/reload and remote /status; read by lib/auth/tokens loadAdminTokens. */
  admin: AdminConfig
  /** After loading, `redis` is always set: from `redisUrl` (its earlier spelling, then removed), else DEFAULT_REDIS_URL (lib/config/schema.ts). */
  sessions: { store: 'memory' | 'redis', redis: RedisTarget, keyPrefix: string, streamLease: number }
  /** The MRTR bridge (lib/dispatch/mrtr.ts): requestState sealing and parked calls. */
  mrtr: { stateKey?: string, parkTimeout: number, stateTtl: number }
  upstreamTimeout: number
  /** Per-caller policy (lib/policy/rules.ts); absent: everything allowed. `rateLimit.per` in ms after loading. */
  policy?: PolicyConfig
  /** The audit trail (lib/policy/audit.ts). */
  audit?: AuditConfig
  /** Pinned definitions (lib/policy/integrity.ts); after loading always set (`pin` default `off`). */
  integrity: IntegrityConfig
  /** Curated endpoints by name (lib/policy/endpoints.ts). */
  servers?: Record<string, ServerConfig>
  /** Tool search for `/mcp` and plain `mcpx serve` (lib/policy/discovery.ts); absent: `"mode": "list"`. Curated endpoints have their own (`servers.<name>.discovery`). */
  discovery?: DiscoveryConfig
  /** How the human confirmation gate asks (lib/policy/confirm.ts); `expiry` in ms after loading. */
  confirmation: ConfirmationConfig
  /** Keyed by upstream name; insertion order is config order. */
  upstreams: Record<string, UpstreamConfig>
}

/** What a user may write: every key optional, durations as ms or strings. */
export type McpxConfigInput = DeepPartial<McpxConfig> & Record<string, unknown>
type DeepPartial<T> = { [K in keyof T]?: NonNullable<T[K]> extends object ? (NonNullable<T[K]> extends unknown[] ? T[K] : DeepPartial<NonNullable<T[K]>> | Record<string, unknown>) : T[K] | string }
