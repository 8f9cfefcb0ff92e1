/**
 * The config's JSON Schema, {@link CONFIG_SCHEMA} (STYLE › Config: every key with its default, unit and
 * description). The sections other layers read are declared there and assembled here: `policy` and
 * `servers` (lib/policy/schema.ts), `upstreams` (lib/upstreams/config.ts), `sessions.redis`
 * (lib/base/redis.ts); every duration is lib/base/duration.ts's. lib/config/load.ts compiles it.
 */
import { DURATION_SCHEMA } from '../base/duration.js'
import { REDIS_TARGET_SCHEMA } from '../base/redis.js'
import { UPSTREAMS_SCHEMA } from '../upstreams/config.js'
import { CONFIRMATION_SCHEMA, DISCOVERY_SCHEMA, POLICY_SCHEMA, SERVERS_SCHEMA } from '../policy/schema.js'

/** Largest `transport.pageSize` the config accepts (items per page of the four list methods). */
export const MAX_PAGE_SIZE = 10_000

/** The Redis of `sessions.store: "redis"` when neither sessions.redis nor sessions.redisUrl is given. */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379'

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
        shutdownTimeout: { ...DURATION_SCHEMA, default: '10s', description: 'how long in-flight requests may finish after SIGTERM (ms or duration string)' },
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
        sseKeepAlive: { ...DURATION_SCHEMA, default: '15s', description: 'interval of `:` keep-alive comments on SSE streams (ms)' },
        stdioDrain: { ...DURATION_SCHEMA, default: '5s', description: 'how long in-flight stdio requests may answer after stdin EOF (ms)' },
        sessionIdleTimeout: { ...DURATION_SCHEMA, default: '30m', description: 'a legacy session idle this long expires (ms)' },
        maxBodyBytes: { type: 'integer', minimum: 1, default: 4194304, description: 'largest POST body accepted (bytes)' },
        maxSessions: { type: 'integer', minimum: 1, default: 10000, description: 'most legacy sessions open at once' },
        maxGetStreams: { type: 'integer', minimum: 1, default: 1000, description: 'most long-lived streams open at once: legacy GET notification streams and 2026-07-28 subscriptions/listen streams together (503 above)' },
        maxRequestsPerSession: { type: 'integer', minimum: 1, default: 64, description: 'most requests in flight per legacy session' },
        maxConcurrentRequests: { type: 'integer', minimum: 1, default: 4096, description: 'most requests in flight across the daemon: each POST, and each batch member in progress beside its batch\'s first (503 above; a batch member: its -32603 error in the batch)' },
        maxBatchMembers: { type: 'integer', minimum: 1, default: 1000, description: 'most members one 2025-03-26 batch may hold (a POST /mcp body or a line of mcpx serve; members): a longer batch is refused whole, id-less -32600, before any member runs, so a small body of tiny members cannot ask for a reply many times its size' },
        maxBatchInFlight: { type: 'integer', minimum: 1, default: 64, description: 'most members of one 2025-03-26 batch in progress at once (a POST /mcp batch, with or without a session, and a batch line of mcpx serve; members): the rest wait in batch order, not started, and the replies keep the batch\'s order and ids' },
        stdioMaxInFlight: { type: 'integer', minimum: 1, default: 1024, description: 'mcpx serve: most requests in flight before the next stdin line is read; past it input waits until one answers (requests; listens not counted)' },
        streamBufferBytes: { type: 'integer', minimum: 1, default: 1048576, description: 'high-water mark of every outgoing stream to a client (SSE replies, GET and listen streams, stdout of mcpx serve), bytes waiting to be written: past it progress is coalesced per token and log notifications are dropped (and counted); mcpx serve stops reading stdin until stdout drains. Also each stdio upstream\'s stdin: past it calls wait for the pipe to drain before they are written' },
        streamBufferMaxBytes: { type: 'integer', minimum: 1, default: 8388608, description: 'hard limit of every outgoing stream, bytes (at least streamBufferBytes): past it the stream is ended (a reply stream\'s call is cancelled upstream); a response never ends a stream' },
        headersTimeout: { ...DURATION_SCHEMA, default: '10s', description: 'daemon: a connection that sends no complete request head within this (ms) is closed, with 408 when any byte came (0 disables)' },
        bodyTimeout: { ...DURATION_SCHEMA, default: '30s', description: 'daemon: a request body not complete within this (ms) after the head\'s bound gets 408 (0 disables)' },
        keepAliveTimeout: { ...DURATION_SCHEMA, default: '72s', description: 'daemon: an idle keep-alive connection closes after this (ms); above the 60 s idle timeout of nginx and common load balancers, so the proxy closes first' },
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
                clientSecretFile: { type: 'string', minLength: 1, description: 'file whose first line is the client secret' },
                knowsOnlyThisResource: {
                  type: 'boolean',
                  default: false,
                  description: 'the introspection endpoint knows tokens for this resource only: an active token whose answer has no aud is taken as issued for it. ' +
                    'Default false: such a token is refused (401 invalid_token), since a token must be issued for this resource'
                }
              }
            },
            clockTolerance: { ...DURATION_SCHEMA, default: '30s', description: 'allowed clock skew for exp/nbf (ms or duration string)' },
            jwksCooldown: { ...DURATION_SCHEMA, default: '30s', description: 'least time between two key fetches prompted by an unknown kid (ms)' },
            resourceName: { type: 'string', default: 'mcpx', description: 'resource_name of the metadata' },
            dpop: {
              // No `default` here (nor for dpopSigningAlgs, dpopProofMaxAge): a loaded auth.oauth keeps its
              // earlier shape; lib/auth/authenticate applies the defaults the descriptions state.
              enum: ['off', 'allowed', 'required'],
              description: 'RFC 9449 DPoP: "allowed" (default) checks a DPoP proof on every request made with a DPoP-bound token (cnf.jkt) and refuses such a token sent as Bearer; ' +
                '"required" also refuses OAuth tokens that are not DPoP-bound; "off" treats the DPoP scheme as unsupported'
            },
            dpopSigningAlgs: {
              type: 'array',
              items: { enum: ['ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512', 'EdDSA', 'Ed25519'] },
              minItems: 1,
              uniqueItems: true,
              description: 'JWS algorithms a DPoP proof may use (asymmetric only), listed in the algs of DPoP challenges; default all of these'
            },
            dpopProofMaxAge: { ...DURATION_SCHEMA, description: 'how old a DPoP proof\'s iat may be (ms or duration string; default 60s); one issued more than clockTolerance in the future is refused too' }
          }
        }
      }
    },
    admin: {
      type: 'object',
      additionalProperties: false,
      default: {},
      description: 'operator access: POST /admin/reload, and /status, /status.json, /metrics and the detail of /readyz for a client that is not on loopback',
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
        store: { enum: ['memory', 'redis'], default: 'memory', description: 'where legacy sessions live: this process, or Redis shared by several replicas (docs/replicas.md)' },
        redis: { ...REDIS_TARGET_SCHEMA, description: 'for sessions.store "redis": a URL, { sentinels: ["host:port", …], name }, or { cluster: ["host:port", …] } (lib/base/redis.ts); default redis://127.0.0.1:6379' },
        redisUrl: { type: 'string', description: 'the earlier spelling of sessions.redis (a URL only); not together with it' },
        // No braces: the first {…} of a key is its Cluster hash tag, and the session keys' tag must be the session id.
        keyPrefix: { type: 'string', pattern: '^[^{}]*$', default: 'mcpx:', description: 'prefix of every Redis key and pub/sub channel mcpx uses (no { or })' },
        streamLease: { ...DURATION_SCHEMA, default: '10s', description: 'TTL of the GET-stream owner key, refreshed by its replica; how long a dead replica can block a reopened GET stream (ms)' }
      }
    },
    mrtr: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        stateKey: { type: 'string', pattern: '^[A-Za-z0-9+/_-]{43,}={0,2}$', description: 'base64 key (at least 32 bytes) that seals requestState; default: generated at start (states then do not survive a restart or cross replicas)' },
        parkTimeout: { ...DURATION_SCHEMA, default: '60s', description: 'a call parked on a question for a 2026-07-28 client is cancelled upstream when not resumed within this (ms)' },
        stateTtl: { ...DURATION_SCHEMA, default: '5m', description: 'how long a requestState mcpx issues stays valid (ms)' }
      }
    },
    upstreamTimeout: { ...DURATION_SCHEMA, default: '60s', description: 'default timeout of one upstream call (ms)' },
    policy: POLICY_SCHEMA,
    audit: {
      type: 'object',
      additionalProperties: false,
      required: ['file'],
      description: 'the audit trail (docs/policy.md › Audit): one JSON line per tools/call, prompts/get, resources/read and per denial or rate-limit refusal',
      properties: {
        file: { type: 'string', minLength: 1, description: 'file to append to (directories created), or "-" for stderr; never stdout' },
        arguments: { enum: ['none', 'keys', 'full'], default: 'none', description: 'none: no arguments; keys: their names (argumentKeys); full: the arguments themselves' }
      }
    },
    integrity: {
      type: 'object',
      additionalProperties: false,
      default: {},
      description: 'pinned tool definitions (docs/policy.md › Integrity): a definition that changes after it was first seen is warned about or quarantined',
      properties: {
        pin: { enum: ['off', 'warn', 'quarantine'], default: 'off', description: 'off: nothing is pinned; warn: a changed definition is served, logged, counted and audited; quarantine: it is hidden until an operator approves it (each upstream\'s integrity.pin wins)' },
        store: { type: 'string', minLength: 1, description: 'file holding the pins (written atomically); with sessions.store "redis" the pins live in Redis instead; neither: in memory, until a restart' }
      }
    },
    servers: SERVERS_SCHEMA,
    discovery: DISCOVERY_SCHEMA,
    confirmation: CONFIRMATION_SCHEMA,
    upstreams: UPSTREAMS_SCHEMA
  }
} as const
