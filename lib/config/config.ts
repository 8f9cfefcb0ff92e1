/**
 * mcpx configuration: one JSON document, validated with ajv against {@link CONFIG_SCHEMA}
 * (compiled once, `allErrors`, `useDefaults`). The same validator checks the options a host app
 * passes to the Fastify plugin. Durations are a number of ms or a string such as "15s", "500ms",
 * "2m", "1h"; after loading they are numbers of ms.
 *
 * Resolution (docs: Configuration): `--config PATH`, else `MCPX_CONFIG`, else `./mcpx.config.json`,
 * else the embedded default ({@link defaultConfig}).
 *
 * Over ~500 lines on purpose: the schema is one literal (every key with its default, unit and
 * description beside it, as STYLE › Config asks), and splitting it would scatter the one contract.
 */
import { readFileSync, existsSync } from 'node:fs'
import { resolve as resolvePath } from 'node:path'
import { isIP } from 'node:net'
import { createRequire } from 'node:module'
import { Ajv, type ErrorObject } from 'ajv'
import { McpxError } from '../base/errors.js'
import type { AdminConfig, AuthConfig } from '../auth/config.js'
import type { UpstreamConfig } from '../upstreams/types.js'
import { issuerProblem, resourceProblem } from '../auth/oauth-metadata.js'
import { REDIS_TARGET_SCHEMA, type RedisTarget } from '../base/redis.js'
import type { PolicyConfig } from '../policy/rules.js'
import type { AuditConfig } from '../policy/audit.js'
import { serversProblems, type ServerConfig } from '../policy/endpoints.js'

/** Largest `transport.pageSize` the config accepts (items per page of the four list methods). */
export const MAX_PAGE_SIZE = 10_000

/** The Redis of `sessions.store: "redis"` when neither sessions.redis nor sessions.redisUrl is given. */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379'

const DURATION = { anyOf: [{ type: 'number', minimum: 0 }, { type: 'string', pattern: '^\\s*\\d+(\\.\\d+)?\\s*(ms|s|m|h)?\\s*$' }] }

/**
 * Per-upstream bounds; their defaults live in lib/upstreams/types.ts
 * (`DEFAULT_MAX_*`), not here: ajv's useDefaults does not reach into a `oneOf` branch reliably.
 */
const UPSTREAM_LIMITS = {
  maxInFlight: { type: 'integer', minimum: 1, description: 'default 256. Most calls sent to this upstream at once (both its connections together); the others wait in its queue' },
  maxQueued: { type: 'integer', minimum: 0, description: 'default 1024. Most calls waiting for an in-flight slot (FIFO); past it a call gets JSON-RPC -32603 "Server busy" (HTTP 503 with Retry-After). 0: none wait' },
  maxMessageBytes: { type: 'integer', minimum: 1024, description: 'default 16777216 (16 MiB). Largest single message from this upstream, bytes (a stdio line; an HTTP reply body or SSE event); a larger one is skipped and the call it answered gets an error naming both sizes' }
} as const

/** The token endpoint and client of an HTTP upstream's own credentials (docs: Authentication › Upstream credentials). */
const UPSTREAM_CLIENT = {
  issuer: { type: 'string', pattern: '^https?://', description: 'authorization server; its token_endpoint is discovered (RFC 8414, then OIDC)' },
  tokenUrl: { type: 'string', pattern: '^https?://', description: 'token endpoint (instead of issuer)' },
  clientId: { type: 'string', minLength: 1 },
  clientSecretEnv: { type: 'string', minLength: 1, description: 'environment variable holding the client secret' },
  clientSecretFile: { type: 'string', minLength: 1, description: 'file whose first line is the client secret' },
  scope: { type: 'string' },
  resource: { type: 'string', pattern: '^https?://', description: 'RFC 8707 resource indicator of the upstream' }
}

/** Keys of every upstream, stdio or HTTP (progress and timeouts). */
const UPSTREAM_COMMON = {
  resetTimeoutOnProgress: { type: 'boolean', description: 'default false. true: restart the call\'s timeout each time the upstream sends progress for it' },
  maxTotalTimeout: { ...DURATION, description: 'bound of a whole call (ms), however much progress it sends; default none' },
  isolation: {
    type: 'string',
    enum: ['shared', 'per-session', 'per-principal'],
        description: 'shared: one connection for every caller. per-session: one instance (child or HTTP connection) per legacy session, ' +
      'per principal for 2026-07-28 traffic. per-principal: one instance per caller identity'
  },
  maxInstances: { type: 'integer', minimum: 1, description: 'most instances of an isolated upstream at once; past it a call is refused (503 over HTTP)' },
  idleTimeout: { ...DURATION, description: 'an isolated instance unused this long is stopped (ms)' }
} as const

/** `upstreams.<name>.auth`: mcpx's own credentials to an HTTP upstream. */
const UPSTREAM_AUTH = {
  oneOf: [
    { type: 'object', additionalProperties: false, required: ['type', 'clientId'], properties: { type: { const: 'client_credentials' }, ...UPSTREAM_CLIENT } },
    { type: 'object', additionalProperties: false, required: ['type', 'clientId'], properties: { type: { const: 'token_exchange' }, audience: { type: 'string', minLength: 1 }, ...UPSTREAM_CLIENT } }
  ]
}

/** Globs per kind, for `policy` rules. */
const KIND_GLOBS = {
  type: 'object',
  additionalProperties: false,
  properties: {
    tools: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'globs of catalogue tool names (`*` any run of characters, `?` one)' },
    prompts: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'globs of catalogue prompt names' },
    resources: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'globs of resource URIs (and resource template uriTemplates)' }
  }
}

/** `policy` (docs: Policy). */
const POLICY = {
  type: 'object',
  additionalProperties: false,
  description: 'who may see and call what; absent: everything is allowed to every caller',
  properties: {
    default: { enum: ['allow', 'deny'], default: 'deny', description: '"allow": everything is visible unless a rule denies it; "deny": only what a rule allows' },
    rules: {
      type: 'array',
      default: [],
      items: {
        type: 'object',
        additionalProperties: false,
        properties: {
          principals: {
            type: 'object',
            additionalProperties: false,
            description: 'who the rule is for; every key given must match; absent: every caller',
            properties: {
              tokens: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'names of static tokens (auth.tokens[].name)' },
              subjects: {
                type: 'array',
                items: { type: 'object', additionalProperties: false, required: ['issuer', 'subject'], properties: { issuer: { type: 'string', minLength: 1 }, subject: { type: 'string', minLength: 1 } } },
                description: 'OAuth callers by issuer and subject'
              },
              scopes: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'every scope listed must be held (a static token\'s scopes count)' },
              claims: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] }, description: 'each value equal to the claim, or contained in it (array claims)' },
              local: { type: 'boolean', description: 'true: the stdio caller (mcpx serve)' }
            }
          },
          servers: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'curated endpoints it applies on; absent: every endpoint, /mcp included' },
          allow: KIND_GLOBS,
          deny: KIND_GLOBS,
          rateLimit: {
            type: 'object',
            additionalProperties: false,
            required: ['calls', 'per'],
            description: 'calls per window, counted per (principal, tool) for the tools this rule allows',
            properties: { calls: { type: 'integer', minimum: 1 }, per: { ...DURATION, description: 'window (ms or duration string)' } }
          }
        }
      }
    }
  }
}

/** allow/deny globs of one kind, for a curated endpoint. */
const SERVER_GLOBS = {
  type: 'object',
  additionalProperties: false,
  properties: {
    allow: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'globs of catalogue names (resources: URIs); absent: nothing of this kind' },
    deny: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'globs that win over allow' }
  }
}

/** `servers` (docs: Curated endpoints). */
const SERVERS = {
  type: 'object',
  description: 'curated endpoints, served at <prefix>/mcp/<name> and by mcpx serve --server <name>',
  propertyNames: { pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' },
  additionalProperties: {
    type: 'object',
    additionalProperties: false,
    properties: {
      tools: SERVER_GLOBS,
      prompts: SERVER_GLOBS,
      resources: SERVER_GLOBS,
      rename: { type: 'object', additionalProperties: { type: 'string', minLength: 1 }, description: 'catalogue tool name → the name this endpoint exposes' },
      override: {
        type: 'object',
        description: 'per catalogue tool name: description, title and annotations to list instead of the upstream\'s',
        additionalProperties: {
          type: 'object',
          additionalProperties: false,
          properties: { description: { type: 'string' }, title: { type: 'string' }, annotations: { type: 'object' } }
        }
      },
      defaults: { type: 'object', additionalProperties: { type: 'object' }, description: 'per catalogue tool name: arguments filled in when the client leaves them out (and dropped from required)' }
    }
  }
}

/** The config JSON Schema. Every numeric field's description states its unit. */
export const CONFIG_SCHEMA = {
  $id: 'https://mcpx.dev/config.schema.json',
  type: 'object',
  additionalProperties: false,
  properties: {
    $schema: { type: 'string' },
    daemon: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        address: { type: 'string', pattern: '^(\\[[0-9a-fA-F:.]+\\]|[^:\\s]+):\\d{1,5}$', default: '127.0.0.1:3939', description: 'host:port the daemon listens on' },
        shutdownTimeout: { ...DURATION, default: '10s', description: 'how long in-flight requests may finish after SIGTERM (ms or duration string)' },
        trustProxy: {
          type: 'array',
          items: { type: 'string', minLength: 1 },
          default: [],
          description: 'addresses or CIDRs of the reverse proxies in front (e.g. "127.0.0.1", "10.0.0.0/8"): a request arriving from one of them is ' +
            'logged with the client address from X-Forwarded-For (Fastify trustProxy). Empty (default): the socket address, X-Forwarded-For ignored'
        }
      }
    },
    transport: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        allowedOrigins: { type: 'array', items: { type: 'string' }, default: [], description: 'exact origins allowed besides loopback and daemon.address' },
        sseKeepAlive: { ...DURATION, default: '15s', description: 'interval of `:` keep-alive comments on SSE streams (ms)' },
        stdioDrain: { ...DURATION, default: '5s', description: 'how long in-flight stdio requests may answer after stdin EOF (ms)' },
        sessionIdleTimeout: { ...DURATION, default: '30m', description: 'a legacy session idle this long expires (ms)' },
        maxBodyBytes: { type: 'integer', minimum: 1, default: 4194304, description: 'largest POST body accepted (bytes)' },
        maxSessions: { type: 'integer', minimum: 1, default: 10000, description: 'most legacy sessions open at once' },
        maxGetStreams: { type: 'integer', minimum: 1, default: 1000, description: 'most long-lived streams open at once: legacy GET notification streams and 2026-07-28 subscriptions/listen streams together (503 above)' },
        maxRequestsPerSession: { type: 'integer', minimum: 1, default: 64, description: 'most requests in flight per legacy session' },
        maxConcurrentRequests: { type: 'integer', minimum: 1, default: 4096, description: 'most requests in flight across the daemon' },
        stdioMaxInFlight: { type: 'integer', minimum: 1, default: 1024, description: 'mcpx serve: most requests in flight before the next stdin line is read; past it input waits until one answers (requests; listens not counted)' },
        streamBufferBytes: { type: 'integer', minimum: 1, default: 1048576, description: 'high-water mark of every outgoing stream to a client (SSE replies, GET and listen streams, stdout of mcpx serve), bytes waiting to be written: past it progress is coalesced per token and log notifications are dropped (and counted); mcpx serve stops reading stdin until stdout drains. Also each stdio upstream\'s stdin: past it calls wait for the pipe to drain before they are written' },
        streamBufferMaxBytes: { type: 'integer', minimum: 1, default: 8388608, description: 'hard limit of every outgoing stream, bytes (at least streamBufferBytes): past it the stream is ended (a reply stream\'s call is cancelled upstream); a response never ends a stream' },
        headersTimeout: { ...DURATION, default: '10s', description: 'daemon: a connection that sends no complete request head within this (ms) is closed, with 408 when any byte came (0 disables)' },
        bodyTimeout: { ...DURATION, default: '30s', description: 'daemon: a request body not complete within this (ms) after the head\'s bound gets 408 (0 disables)' },
        keepAliveTimeout: { ...DURATION, default: '72s', description: 'daemon: an idle keep-alive connection closes after this (ms); above the 60 s idle timeout of nginx and common load balancers, so the proxy closes first' },
        pageSize: { type: 'integer', minimum: 0, maximum: MAX_PAGE_SIZE, default: 0, description: 'items per page of tools/list, prompts/list, resources/list and resources/templates/list (0, the default: no paging, whole lists); cursors are opaque, valid on every replica, and survive catalogue changes unless the last item they served is gone (then -32602: list again)' }
      }
    },
    auth: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        bearerTokens: { type: 'array', items: { type: 'string', minLength: 1 }, default: [], description: 'accepted bearer tokens' },
        bearerTokensFile: { type: 'string', description: 'a file with one accepted bearer token per line' },
        bearerTokensEnv: { type: 'string', description: 'an environment variable holding comma-separated accepted tokens' },
        allowUnauthenticated: { type: 'boolean', default: false, description: 'serve a non-loopback address without authentication' },
        tokens: {
          type: 'array',
          description: 'named static bearer tokens (a policy can refer to them by name); each read from an environment variable or a file',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['name'],
            oneOf: [{ required: ['tokenEnv'] }, { required: ['tokenFile'] }],
            properties: {
              name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.:-]*$', description: 'the principal is token:<name>' },
              tokenEnv: { type: 'string', minLength: 1, description: 'environment variable holding the token' },
              tokenFile: { type: 'string', minLength: 1, description: 'file whose first line is the token' },
              scopes: { type: 'array', items: { type: 'string' }, default: [], description: 'scopes granted to this token' }
            }
          }
        },
        oauth: {
          type: 'object',
          additionalProperties: false,
          required: ['issuer', 'resource'],
          description: 'mcpx as an OAuth 2.1 resource server (MCP authorization; RFC 9728, RFC 8707, RFC 6750)',
          properties: {
            issuer: { type: 'string', minLength: 1, description: 'the authorization server\'s issuer, exactly as its tokens carry it; https (http only on a loopback host)' },
            resource: { type: 'string', minLength: 1, description: 'canonical URL clients use for this /mcp (never guessed from Host)' },
            audience: { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1, description: 'accepted token audiences; default [resource]' },
            jwksUri: { type: 'string', minLength: 1, description: 'JWKS URL; default: jwks_uri of the issuer\'s RFC 8414, then OIDC, metadata' },
            requiredScopes: { type: 'array', items: { type: 'string', pattern: '^[\\x21\\x23-\\x5b\\x5d-\\x7e]+$' }, default: [], description: 'scopes every token must carry (else 403 insufficient_scope)' },
            scopesSupported: { type: 'array', items: { type: 'string' }, description: 'scopes_supported of the metadata; default requiredScopes' },
            introspection: {
              type: 'object',
              additionalProperties: false,
              required: ['url', 'clientId'],
              description: 'RFC 7662 introspection for opaque tokens',
              properties: {
                url: { type: 'string', pattern: '^https?://' },
                clientId: { type: 'string', minLength: 1 },
                clientSecretEnv: { type: 'string', minLength: 1, description: 'environment variable holding the client secret' },
                clientSecretFile: { type: 'string', minLength: 1, description: 'file whose first line is the client secret' }
              }
            },
            clockTolerance: { ...DURATION, default: '30s', description: 'allowed clock skew for exp/nbf (ms or duration string)' },
            jwksCooldown: { ...DURATION, default: '30s', description: 'least time between two key fetches prompted by an unknown kid (ms)' },
            resourceName: { type: 'string', default: 'mcpx', description: 'resource_name of the metadata' }
          }
        }
      }
    },
    admin: {
      type: 'object',
      additionalProperties: false,
      default: {},
      description: 'operator access: POST /admin/reload, and /status and /status.json from a non-loopback Host',
      properties: {
        tokens: { type: 'array', items: { type: 'string', minLength: 1 }, default: [], description: 'accepted admin bearer tokens' },
        tokensFile: { type: 'string', description: 'a file with one admin token per line' },
        tokensEnv: { type: 'string', description: 'an environment variable holding comma-separated admin tokens' },
        scopes: {
          type: 'array',
          items: { type: 'string', minLength: 1 },
          default: [],
          description: 'with auth.oauth: an OAuth access token for auth.oauth.resource that holds all these scopes opens the admin endpoints too (empty: only admin tokens do)'
        }
      }
    },
    sessions: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        store: { enum: ['memory', 'redis'], default: 'memory', description: 'where legacy sessions live: this process, or Redis shared by several replicas (README › Running several replicas)' },
        redis: { ...REDIS_TARGET_SCHEMA, description: 'for sessions.store "redis": a URL, { sentinels: ["host:port", …], name }, or { cluster: ["host:port", …] } (lib/base/redis.ts); default redis://127.0.0.1:6379' },
        redisUrl: { type: 'string', description: 'the earlier spelling of sessions.redis (a URL only); not together with it' },
        // No braces: the first {…} of a key is its Cluster hash tag, and the session keys' tag must be the session id.
        keyPrefix: { type: 'string', pattern: '^[^{}]*$', default: 'mcpx:', description: 'prefix of every Redis key and pub/sub channel mcpx uses (no { or })' },
        streamLease: { ...DURATION, default: '10s', description: 'TTL of the GET-stream owner key, refreshed by its replica; how long a dead replica can block a reopened GET stream (ms)' }
      }
    },
    mrtr: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        stateKey: { type: 'string', pattern: '^[A-Za-z0-9+/_-]{43,}={0,2}$', description: 'base64 key (at least 32 bytes) that seals requestState; default: generated at start (states then do not survive a restart or cross replicas)' },
        parkTimeout: { ...DURATION, default: '60s', description: 'a call parked on a question for a 2026-07-28 client is cancelled upstream when not resumed within this (ms)' },
        stateTtl: { ...DURATION, default: '5m', description: 'how long a requestState mcpx issues stays valid (ms)' }
      }
    },
    upstreamTimeout: { ...DURATION, default: '60s', description: 'default timeout of one upstream call (ms)' },
    policy: POLICY,
    audit: {
      type: 'object',
      additionalProperties: false,
      required: ['file'],
      description: 'the audit trail (README › Audit): one JSON line per tools/call, prompts/get, resources/read and per denial or rate-limit refusal',
      properties: {
        file: { type: 'string', minLength: 1, description: 'file to append to (directories created), or "-" for stderr; never stdout' },
        arguments: { enum: ['none', 'keys', 'full'], default: 'none', description: 'none: no arguments; keys: their names (argumentKeys); full: the arguments themselves' }
      }
    },
    servers: SERVERS,
    upstreams: {
      type: 'object',
      default: {},
      propertyNames: { pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' },
      additionalProperties: {
        oneOf: [
          {
            type: 'object',
            additionalProperties: false,
            required: ['command'],
            properties: {
              command: { type: 'string', minLength: 1 },
              args: { type: 'array', items: { type: 'string' } },
              env: { type: 'object', additionalProperties: { type: 'string' } },
              cwd: { type: 'string' },
              prefix: { type: 'string' },
              timeout: DURATION,
              ...UPSTREAM_COMMON,
              ...UPSTREAM_LIMITS,
              legacyConnection: {
                type: 'boolean',
                description: 'default false. true: legacy-era calls (tools/call, prompts/get, resources/read, completion/complete) of a ' +
                  'dual-era upstream that negotiated 2026-07-28 go over a second, legacy-initialized connection, i.e. a SECOND CHILD ' +
                  'PROCESS with its own state (a tool added or a counter bumped there is not seen by the first). false: over the one ' +
                  'connection; mcpx turns the upstream\'s input_required into questions and asks it for log lines per request'
              }
            }
          },
          {
            type: 'object',
            additionalProperties: false,
            required: ['url'],
            properties: {
              // No userinfo (`user:pass@`): the fetch API refuses such a URL ("Request cannot be
              // constructed from a URL that includes credentials"); put credentials in `headers`.
              url: { type: 'string', pattern: '^https?://[^/?#@]+([/?#].*)?$', description: 'http(s) URL of the upstream, without user:password@ (use headers)' },
              // Header values: HTAB, SP and visible ASCII only (lib/protocol/header-values.ts's set; no CR/LF, no obs-text).
              headers: { type: 'object', additionalProperties: { type: 'string', pattern: '^[\\t\\x20-\\x7e]*$' } },
              auth: UPSTREAM_AUTH,
              prefix: { type: 'string' },
              timeout: DURATION,
              ...UPSTREAM_COMMON,
              ...UPSTREAM_LIMITS,
              legacyConnection: {
                type: 'boolean',
                description: 'default true. Legacy-era calls of a dual-era upstream that negotiated 2026-07-28 go over a second client ' +
                  'on the same URL, opened with a legacy initialize (one server behind both: state is shared), so the upstream can ask ' +
                  'legacy clients questions and send them log lines in its legacy way. false: over the one connection, as for stdio'
              }
            }
          }
        ]
      }
    }
  }
} as const

/** mcpx's configuration after validation; durations are ms. */
export interface McpxConfig {
  daemon: {
    address: string
    shutdownTimeout: number
    /** Proxy addresses or CIDRs whose X-Forwarded-For is believed ([] = none); checked by {@link loadConfig}. */
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
  /** After loading, `redis` is always set: from `redisUrl` (its earlier spelling, then removed), else {@link DEFAULT_REDIS_URL}. */
  sessions: { store: 'memory' | 'redis', redis: RedisTarget, keyPrefix: string, streamLease: number }
  /** The MRTR bridge (lib/dispatch/mrtr.ts): requestState sealing and parked calls. */
  mrtr: { stateKey?: string, parkTimeout: number, stateTtl: number }
  upstreamTimeout: number
  /** Per-caller policy (lib/policy/rules.ts); absent: everything allowed. `rateLimit.per` in ms after loading. */
  policy?: PolicyConfig
  /** The audit trail (lib/policy/audit.ts). */
  audit?: AuditConfig
  /** Curated endpoints by name (lib/policy/endpoints.ts). */
  servers?: Record<string, ServerConfig>
  /** Keyed by upstream name; insertion order is config order. */
  upstreams: Record<string, UpstreamConfig>
}

/** What a user may write: every key optional, durations as ms or strings. */
export type McpxConfigInput = DeepPartial<McpxConfig> & Record<string, unknown>
type DeepPartial<T> = { [K in keyof T]?: NonNullable<T[K]> extends object ? (NonNullable<T[K]> extends unknown[] ? T[K] : DeepPartial<NonNullable<T[K]>> | Record<string, unknown>) : T[K] | string }

const ajv = new Ajv({ allErrors: true, useDefaults: true, allowUnionTypes: true, strict: false })
const validate = ajv.compile(CONFIG_SCHEMA)

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/** The longest duration a Node timer can hold, ms (2^31 - 1). */
export const MAX_DURATION_MS = 2_147_483_647

/** Node http.Server timeouts of the daemon, all ms (0 = off), as {@link httpServerTimeouts} derives them. */
export interface HttpServerTimeouts {
  /** The request head must be complete within this, from the connection's or the message's first moment. */
  headersTimeout: number
  /** The whole request (head and body) must be complete within this; headersTimeout + bodyTimeout. */
  requestTimeout: number
  /** An idle keep-alive connection closes after this. */
  keepAliveTimeout: number
  /** How often Node looks for connections past headersTimeout or requestTimeout. */
  connectionsCheckingInterval: number
}

/** Bounds of the expiry sweep's interval, ms: often enough to close late peers promptly, rarely enough to cost nothing. */
const CHECK_INTERVAL_MIN_MS = 100
const CHECK_INTERVAL_MAX_MS = 1_000

/**
 * The daemon's Node http.Server timeouts from transport.headersTimeout, bodyTimeout and
 * keepAliveTimeout (docs: Security › Limits). Node 20 counts requestTimeout from the
 * message's first byte (or the connection's start) until the request is fully read, never while
 * the answer is written: so it bounds sending a request (head and body) and leaves long SSE
 * replies, GET streams and long-running calls alone. requestTimeout is headersTimeout + bodyTimeout
 * so that a request that meets both bounds is never cut (Node also requires headersTimeout ≤
 * requestTimeout). A connection past either bound is found by a sweep every quarter of the
 * shortest bound, between 100 ms and 1 s. Never throws.
 */
export function httpServerTimeouts (transport: Pick<McpxConfig['transport'], 'headersTimeout' | 'bodyTimeout' | 'keepAliveTimeout'>): HttpServerTimeouts {
  const { headersTimeout, bodyTimeout, keepAliveTimeout } = transport
  const requestTimeout = bodyTimeout > 0 ? Math.min(MAX_DURATION_MS, headersTimeout + bodyTimeout) : 0
  const bounds = [headersTimeout, requestTimeout].filter(ms => ms > 0)
  const shortest = bounds.length > 0 ? Math.min(...bounds) : CHECK_INTERVAL_MAX_MS * 4
  const connectionsCheckingInterval = Math.min(CHECK_INTERVAL_MAX_MS, Math.max(CHECK_INTERVAL_MIN_MS, Math.floor(shortest / 4)))
  return { headersTimeout, requestTimeout, keepAliveTimeout, connectionsCheckingInterval }
}

/**
 * The Dispatcher's MRTR options from config: the sealing key (base64, at least 32 bytes) and the
 * parked-call and state lifetimes in ms. Throws McpxError MCPX_ERR_CONFIG for a short key.
 */
export function mrtrOptions (config: McpxConfig): { stateKey?: Buffer, parkTimeoutMs: number, stateTtlMs: number } {
  const { stateKey, parkTimeout, stateTtl } = config.mrtr
  let key: Buffer | undefined
  if (stateKey !== undefined) {
    key = Buffer.from(stateKey, stateKey.includes('-') || stateKey.includes('_') ? 'base64url' : 'base64')
    if (key.length < 32) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: mrtr.stateKey must decode to at least 32 bytes (got ${key.length})`)
  }
  return { ...(key !== undefined ? { stateKey: key } : {}), parkTimeoutMs: parkTimeout, stateTtlMs: stateTtl }
}

/**
 * Checks one `daemon.trustProxy` entry: an IPv4 or IPv6 address, or a CIDR `address/prefix`
 * (prefix 1…32 for IPv4, 1…128 for IPv6). A /0 is refused: it trusts every peer, so any client
 * could write the address mcpx logs (and, later, audits and rate-limits by) into X-Forwarded-For.
 * @throws McpxError MCPX_ERR_CONFIG naming `daemon.trustProxy[index]`
 */
function checkTrustedProxy (entry: string, index: number): void {
  const slash = entry.indexOf('/')
  const address = slash < 0 ? entry : entry.slice(0, slash)
  const family = isIP(address)
  const prefixText = slash < 0 ? undefined : entry.slice(slash + 1)
  const prefix = prefixText !== undefined && /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : undefined
  const where = `mcpx: daemon.trustProxy[${index}]`
  if (family === 0 || (prefixText !== undefined && (prefix === undefined || prefix > (family === 4 ? 32 : 128)))) {
    throw new McpxError('MCPX_ERR_CONFIG', `${where} must be an IP address or a CIDR such as "10.0.0.0/8", got ${JSON.stringify(entry)}`)
  }
  if (prefix === 0) {
    throw new McpxError('MCPX_ERR_CONFIG', `${where} ${JSON.stringify(entry)} trusts every address: any client could forge X-Forwarded-For; list your proxies' addresses`)
  }
}

/**
 * A duration as ms. @param value a number of ms or a string like "15s", "500ms", "2m", "1h"
 * (a bare number string is ms). Throws McpxError MCPX_ERR_CONFIG for any other shape.
 */
export function parseDuration (value: unknown, path = 'duration'): number {
  let ms: number | undefined
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) ms = value
  if (typeof value === 'string') {
    const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(value)
    if (match !== null) ms = Math.round(Number(match[1]) * UNIT_MS[match[2] ?? 'ms'])
  }
  if (ms === undefined) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: ${path} must be a duration (ms, or a string such as "15s"), got ${JSON.stringify(value)}`)
  // Node's timers hold at most 2^31-1 ms (about 24.8 days); a longer one silently becomes 1 ms.
  if (ms > MAX_DURATION_MS) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: ${path} must be at most ${MAX_DURATION_MS} ms (about 24 days), got ${JSON.stringify(value)}`)
  return ms
}

/** The JSON value at a JSON Pointer (ajv's `instancePath` or the part of a `schemaPath` after `#`); undefined when absent. */
function atPointer (root: unknown, pointer: string): unknown {
  let value = root
  for (const raw of pointer.split('/').slice(1)) {
    if (value === null || typeof value !== 'object') return undefined
    value = (value as Record<string, unknown>)[raw.replaceAll('~1', '/').replaceAll('~0', '~')]
  }
  return value
}

function jsonType (value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value
}

/** True when `value` has the schema's `type` (or the schema names none). */
function typeMatches (schema: Record<string, unknown>, value: unknown): boolean {
  const types = schema.type === undefined ? undefined : ([] as unknown[]).concat(schema.type)
  if (types === undefined) return true
  const actual = jsonType(value)
  return types.includes(actual) || (actual === 'integer' && types.includes('number'))
}

/**
 * The branches of a failed oneOf/anyOf the value meant: those whose `type` it has, then, among
 * them, those one of whose `required` keys it has (an upstream with `command` meant the stdio
 * branch, one with `url` the HTTP branch). `undefined` when no branch is singled out.
 */
function meantBranches (branches: Array<Record<string, unknown>>, value: unknown): Set<number> | undefined {
  let meant = branches.map((_, i) => i)
  const typed = meant.filter(i => typeMatches(branches[i], value))
  if (typed.length > 0) meant = typed
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const keyed = meant.filter(i => Array.isArray(branches[i].required) && (branches[i].required as string[]).some(k => Object.hasOwn(value, k)))
    if (keyed.length > 0) meant = keyed
  }
  return meant.length === branches.length ? undefined : new Set(meant)
}

/**
 * One line per config issue, each with its path. Only the branch of a oneOf/anyOf that the value
 * meant is reported: ajv (allErrors) reports every branch, so a bad stdio upstream also printed
 * the HTTP branch's `required property 'url'` and `additional properties (command)`, and a bad
 * duration string `must be number`. A propertyNames error names the offending key.
 * @param data the config as validated (defaults applied)
 */
function formatIssues (errors: ErrorObject[] | null | undefined, data: unknown): string {
  const all = errors ?? []
  // Each failed combinator, by its schema path and the instance it applied to.
  const combinators = all.filter(e => e.keyword === 'oneOf' || e.keyword === 'anyOf')
  function isMeant (e: ErrorObject): boolean {
    for (const c of combinators) {
      const prefix = c.schemaPath + '/'
      if (!e.schemaPath.startsWith(prefix)) continue
      if (e.instancePath !== c.instancePath && !e.instancePath.startsWith(c.instancePath + '/')) continue
      const branches = atPointer(CONFIG_SCHEMA, c.schemaPath.slice(1)) as Array<Record<string, unknown>> | undefined
      if (!Array.isArray(branches)) continue
      const meant = meantBranches(branches, atPointer(data, c.instancePath))
      const branch = Number(e.schemaPath.slice(prefix.length).split('/')[0])
      if (meant !== undefined && !meant.has(branch)) return false
    }
    return true
  }
  const lines = all
    .filter(e => e.keyword !== 'oneOf' && e.keyword !== 'anyOf' && e.keyword !== 'propertyNames' && isMeant(e))
    .map(e => {
      const at = e.instancePath === '' ? '(root)' : e.instancePath.slice(1).replaceAll('/', '.')
      const extra = e.keyword === 'additionalProperties' ? ` (${String((e.params as { additionalProperty: string }).additionalProperty)})` : ''
      // propertyNames: ajv puts the offending key in `propertyName`; the summary error is dropped above.
      const key = e.propertyName !== undefined ? ` key ${JSON.stringify(e.propertyName)}` : ''
      return `  ${at}:${key} ${e.message ?? 'is invalid'}${extra}`
    })
  return [...new Set(lines)].join('\n')
}

/**
 * Validates a raw config object and fills in defaults.
 * @param raw parsed JSON (not mutated)
 * @returns the config with durations in ms
 * @throws McpxError MCPX_ERR_CONFIG naming every bad field by its path
 */
export function loadConfig (raw: unknown): McpxConfig {
  const config = structuredClone(raw ?? {}) as Record<string, unknown>
  if (!validate(config)) {
    throw new McpxError('MCPX_ERR_CONFIG', `mcpx: invalid config:\n${formatIssues(validate.errors, config)}`)
  }
  const c = config as unknown as McpxConfig
  c.daemon.shutdownTimeout = parseDuration(c.daemon.shutdownTimeout, 'daemon.shutdownTimeout')
  c.daemon.trustProxy.forEach(checkTrustedProxy)
  c.transport.sseKeepAlive = parseDuration(c.transport.sseKeepAlive, 'transport.sseKeepAlive')
  c.transport.stdioDrain = parseDuration(c.transport.stdioDrain, 'transport.stdioDrain')
  c.transport.sessionIdleTimeout = parseDuration(c.transport.sessionIdleTimeout, 'transport.sessionIdleTimeout')
  c.transport.headersTimeout = parseDuration(c.transport.headersTimeout, 'transport.headersTimeout')
  c.transport.bodyTimeout = parseDuration(c.transport.bodyTimeout, 'transport.bodyTimeout')
  c.transport.keepAliveTimeout = parseDuration(c.transport.keepAliveTimeout, 'transport.keepAliveTimeout')
  if (c.transport.streamBufferMaxBytes < c.transport.streamBufferBytes) {
    throw new McpxError('MCPX_ERR_CONFIG', `mcpx: invalid config:\n  transport.streamBufferMaxBytes: must be at least transport.streamBufferBytes (${c.transport.streamBufferBytes})`)
  }
  c.sessions.streamLease = parseDuration(c.sessions.streamLease, 'sessions.streamLease')
  const sessions = c.sessions as McpxConfig['sessions'] & { redis?: RedisTarget, redisUrl?: string }
  if (sessions.redis !== undefined && sessions.redisUrl !== undefined) {
    throw new McpxError('MCPX_ERR_CONFIG', 'mcpx: invalid config:\n  sessions: give sessions.redis or sessions.redisUrl (its earlier spelling), not both')
  }
  sessions.redis ??= sessions.redisUrl ?? DEFAULT_REDIS_URL
  delete sessions.redisUrl // loading a loaded config again (the daemon, then the plugin) is then a no-op
  c.upstreamTimeout = parseDuration(c.upstreamTimeout, 'upstreamTimeout')
  c.mrtr.parkTimeout = parseDuration(c.mrtr.parkTimeout, 'mrtr.parkTimeout')
  c.mrtr.stateTtl = parseDuration(c.mrtr.stateTtl, 'mrtr.stateTtl')
  const oauth = c.auth.oauth
  if (oauth !== undefined) {
    const issues = [['issuer', issuerProblem(oauth.issuer)], ['resource', resourceProblem(oauth.resource)]].filter(([, p]) => p !== undefined)
    if (issues.length > 0) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: invalid config:\n${issues.map(([k, p]) => `  auth.oauth.${k ?? ''}: ${p ?? ''}`).join('\n')}`)
    oauth.audience ??= [oauth.resource]
    oauth.clockTolerance = parseDuration(oauth.clockTolerance, 'auth.oauth.clockTolerance')
    oauth.jwksCooldown = parseDuration(oauth.jwksCooldown, 'auth.oauth.jwksCooldown')
  }
  if (c.admin.scopes.length > 0 && oauth === undefined) {
    throw new McpxError('MCPX_ERR_CONFIG', 'mcpx: invalid config:\n  admin.scopes: needs auth.oauth (the scopes are those of an OAuth access token)')
  }
  const serverIssues = serversProblems(c.servers ?? {})
  if (serverIssues.length > 0) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: invalid config:\n${serverIssues.map(p => '  ' + p).join('\n')}`)
  c.policy?.rules.forEach((rule, i) => {
    if (rule.rateLimit === undefined) return
    rule.rateLimit.per = parseDuration(rule.rateLimit.per, `policy.rules[${i}].rateLimit.per`)
    if (rule.rateLimit.per <= 0) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: invalid config:\n  policy.rules[${i}].rateLimit.per: must be more than 0 ms`)
  })
  for (const [name, upstream] of Object.entries(c.upstreams)) {
    if (upstream.timeout !== undefined) upstream.timeout = parseDuration(upstream.timeout, `upstreams.${name}.timeout`)
    if (upstream.maxTotalTimeout !== undefined) upstream.maxTotalTimeout = parseDuration(upstream.maxTotalTimeout, `upstreams.${name}.maxTotalTimeout`)
    if (upstream.idleTimeout !== undefined) upstream.idleTimeout = parseDuration(upstream.idleTimeout, `upstreams.${name}.idleTimeout`)
  }
  return c
}

const require = createRequire(import.meta.url)

/**
 * The embedded default: one real upstream, `@modelcontextprotocol/server-everything` over stdio,
 * which ships as a dependency, so `npm start` on a fresh clone serves something real offline.
 */
export function defaultConfig (): McpxConfig {
  const everything = require.resolve('@modelcontextprotocol/server-everything/dist/index.js')
  return loadConfig({ upstreams: { everything: { command: process.execPath, args: [everything, 'stdio'] } } })
}

/**
 * Finds and loads the config (docs: Configuration).
 * @param explicitPath `--config PATH`, if given
 * @throws McpxError MCPX_ERR_CONFIG when a named file is missing, is not JSON, or is invalid
 */
export function resolveConfig (explicitPath?: string, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): { config: McpxConfig, source: string } {
  const path = explicitPath ?? env.MCPX_CONFIG ?? (existsSync(resolvePath(cwd, 'mcpx.config.json')) ? 'mcpx.config.json' : undefined)
  if (path === undefined) return { config: defaultConfig(), source: '(embedded default)' }
  const full = resolvePath(cwd, path)
  let text: string
  try {
    text = readFileSync(full, 'utf8')
  } catch (cause) {
    throw new McpxError('MCPX_ERR_CONFIG', `mcpx: cannot read config file ${full}: ${(cause as Error).message}`, { cause })
  }
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (cause) {
    throw new McpxError('MCPX_ERR_CONFIG', `mcpx: config file ${full} is not JSON: ${(cause as Error).message}`, { cause })
  }
  return { config: loadConfig(raw), source: full }
}
