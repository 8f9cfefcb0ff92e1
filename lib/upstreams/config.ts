/**
 * The `upstreams` section of the config (docs/configuration.md › Configuration; lib/upstreams/README.md): its JSON Schema,
 * which lib/config/schema.ts assembles into the config's, and the types of an upstream as configured,
 * with the defaults of its bounds.
 */
import { DURATION_SCHEMA } from '../base/duration.js'

/**
 * Per-upstream bounds; their defaults live in the code below
 * (`DEFAULT_MAX_*`), not in the schema: ajv's useDefaults does not reach into a `oneOf` branch reliably.
 */
const UPSTREAM_LIMITS = {
  maxInFlight: { type: 'integer', minimum: 1, description: 'default 256. Most calls sent to this upstream at once (both its connections together); the others wait in its queue' },
  maxQueued: { type: 'integer', minimum: 0, description: 'default 1024. Most calls waiting for an in-flight slot (FIFO); past it a call gets JSON-RPC -32603 "Server busy" (HTTP 503 with Retry-After). 0: none wait' },
  maxMessageBytes: { type: 'integer', minimum: 1024, description: 'default 16777216 (16 MiB). Largest single message from this upstream, bytes (a stdio line; an HTTP reply body or SSE event); a larger one is skipped and the call it answered gets an error naming both sizes' }
} as const

/** The token endpoint and client of an HTTP upstream's own credentials (docs/authentication.md › Upstream credentials). */
const UPSTREAM_CLIENT = {
  issuer: { type: 'string', pattern: '^https?://', description: 'authorization server; its token_endpoint is discovered (RFC 8414, then OIDC)' },
  tokenUrl: { type: 'string', pattern: '^https?://', description: 'token endpoint (instead of issuer)' },
  clientId: { type: 'string', minLength: 1 },
  clientSecretEnv: { type: 'string', minLength: 1, description: 'environment variable holding the client secret' },
  clientSecretFile: { type: 'string', minLength: 1, description: 'file whose first line is the client secret' },
  scope: { type: 'string' },
  resource: { type: 'string', pattern: '^https?://', description: 'RFC 8707 resource indicator of the upstream' }
}

/** Keys of every upstream, stdio or HTTP (prefix, progress and timeouts). */
const UPSTREAM_COMMON = {
  prefix: { type: 'string' },
  timeout: DURATION_SCHEMA,
  resetTimeoutOnProgress: { type: 'boolean', description: 'default false. true: restart the call\'s timeout each time the upstream sends progress for it' },
  maxTotalTimeout: { ...DURATION_SCHEMA, description: 'bound of a whole call (ms), however much progress it sends; default none' },
  isolation: {
    type: 'string',
    enum: ['shared', 'per-session', 'per-principal'],
        description: 'shared: one connection for every caller. per-session: one instance (child or HTTP connection) per legacy session, ' +
      'per principal for 2026-07-28 traffic. per-principal: one instance per caller identity'
  },
  maxInstances: { type: 'integer', minimum: 1, description: 'most instances of an isolated upstream at once; past it a call is refused (503 over HTTP)' },
  idleTimeout: { ...DURATION_SCHEMA, description: 'an isolated instance unused this long is stopped (ms)' },
  integrity: {
    type: 'object',
    additionalProperties: false,
    required: ['pin'],
    description: 'this upstream\'s pinned definitions (docs/policy.md › Integrity), over the top-level integrity.pin',
    properties: { pin: { enum: ['off', 'warn', 'quarantine'], description: 'off: not pinned; warn: a changed definition is served, logged and audited; quarantine: it is hidden until approved' } }
  }
} as const

/**
 * `upstreams.<name>.auth` of type `id-jag` (docs/authentication.md › Enterprise-managed authorization (ID-JAG);
 * lib/upstreams/id-jag.ts): `idp` is the enterprise IdP and mcpx's client there; the other keys are the
 * upstream's authorization server and mcpx's client there, as for the other types.
 */
const UPSTREAM_ID_JAG = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'clientId', 'idp'],
  properties: {
    type: { const: 'id-jag' },
    idp: {
      type: 'object',
      additionalProperties: false,
      required: ['clientId'],
      description: 'the enterprise IdP that issues the ID-JAG (RFC 8693 token exchange) and mcpx\'s client there',
      properties: { issuer: UPSTREAM_CLIENT.issuer, tokenUrl: UPSTREAM_CLIENT.tokenUrl, clientId: UPSTREAM_CLIENT.clientId, clientSecretEnv: UPSTREAM_CLIENT.clientSecretEnv, clientSecretFile: UPSTREAM_CLIENT.clientSecretFile }
    },
    audience: { type: 'string', minLength: 1, description: 'the ID-JAG\'s audience: the issuer of the upstream\'s authorization server (default `issuer`)' },
    ...UPSTREAM_CLIENT
  }
}

/** `upstreams.<name>.auth`: mcpx's own credentials to an HTTP upstream. */
const UPSTREAM_AUTH = {
  oneOf: [
    UPSTREAM_ID_JAG,
    { type: 'object', additionalProperties: false, required: ['type', 'clientId'], properties: { type: { const: 'client_credentials' }, ...UPSTREAM_CLIENT } },
    { type: 'object', additionalProperties: false, required: ['type', 'clientId'], properties: { type: { const: 'token_exchange' }, audience: { type: 'string', minLength: 1 }, ...UPSTREAM_CLIENT } },
    {
      // Each caller's own identity toward the upstream (docs/upstreams.md › Upstream identity): authorization code with PKCE.
      type: 'object',
      additionalProperties: false,
      required: ['type', 'clientId'],
      properties: {
        type: { const: 'oauth-user' },
        clientId: { type: 'string', minLength: 1 },
        clientSecretEnv: { type: 'string', minLength: 1, description: 'environment variable holding the client secret (none: a public client)' },
        clientSecretFile: { type: 'string', minLength: 1, description: 'file whose first line is the client secret' },
        scopes: { type: 'array', items: { type: 'string', pattern: '^[\\x21\\x23-\\x5b\\x5d-\\x7e]+$' }, description: 'scopes asked for at consent (RFC 6749 §3.3 scope-tokens)' },
        authorizationServer: { type: 'string', pattern: '^https?://', description: 'issuer of the authorization server; default: discovered from the upstream (RFC 9728, then RFC 8414 / OIDC)' },
        redirectUri: { type: 'string', pattern: '^https?://', description: 'mcpx\'s public /oauth/callback URL; default: beside auth.oauth.resource' }
      }
    }
  ]
}

/** `upstreams`: each upstream by name, a stdio child (`command`) or an HTTP server (`url`). */
export const UPSTREAMS_SCHEMA = {
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
} as const

/** How an upstream's connections are shared among mcpx's callers (docs/upstreams.md › Isolated upstreams). */
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
  /** Pinned definitions of this upstream (lib/policy/integrity.ts); default the top-level `integrity.pin`. */
  integrity?: { pin: 'off' | 'warn' | 'quarantine' }
  /** Default `shared` (one connection for every caller). */
  isolation?: UpstreamIsolation
  /** Most instances of an isolated upstream at once (default 16); past it a call is refused. */
  maxInstances?: number
  /** An isolated instance unused this long (ms) is stopped (default 10 min). */
  idleTimeout?: number
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
  | UpstreamCommonConfig & UpstreamLimitsConfig & { url: string, headers?: Record<string, string>, auth?: UpstreamAuthConfig | UserOAuthConfig | IdJagAuthConfig }

/**
 * Whether a dual-era upstream gets its second, legacy connection for legacy-era calls
 * (`legacyConnection` in the config; see lib/upstreams/README.md): as configured, else true for
 * an HTTP upstream (one server process behind both connections) and false for a stdio upstream
 * (a second child process would not share the first one's state).
 */
export function wantsLegacyConnection (config: UpstreamConfig): boolean {
  return config.legacyConnection ?? !('command' in config)
}

/** mcpx's client at an upstream's authorization server (`issuer` or `tokenUrl`), as every OAuth `auth` type names it. */
export interface UpstreamClientConfig {
  issuer?: string
  tokenUrl?: string
  clientId: string
  clientSecretEnv?: string
  clientSecretFile?: string
  scope?: string
  /** The upstream (RFC 8707). */
  resource?: string
}

/** `auth` of an HTTP upstream, as the config schema accepts it. */
export type UpstreamAuthConfig = UpstreamClientConfig & ({ type: 'client_credentials' } | { type: 'token_exchange', audience?: string })

/**
 * `auth` of type `id-jag` (Enterprise-Managed Authorization): the caller's OAuth access token is
 * exchanged at `idp` for an ID-JAG, redeemed at the upstream's authorization server (`issuer` or
 * `tokenUrl`, `clientId`, the secret) for the upstream's access token. See lib/upstreams/id-jag.ts.
 */
export interface IdJagAuthConfig extends UpstreamClientConfig {
  type: 'id-jag'
  /** The enterprise IdP's token endpoint (`tokenUrl`, or discovered from `issuer`) and mcpx's client there. */
  idp: Pick<UpstreamClientConfig, 'issuer' | 'tokenUrl' | 'clientId' | 'clientSecretEnv' | 'clientSecretFile'>
  /** The ID-JAG's `audience`: the upstream authorization server's issuer; default `issuer`. */
  audience?: string
}

/**
 * `auth` of an HTTP upstream whose callers each consent to it with their own identity
 * (docs/upstreams.md › Upstream identity): OAuth 2.1 authorization code with PKCE (S256) and the
 * RFC 8707 `resource` of the upstream; the tokens are kept per (principal, upstream).
 */
export interface UserOAuthConfig {
  type: 'oauth-user'
  clientId: string
  /** Environment variable holding the client secret; with neither this nor the file, a public client. */
  clientSecretEnv?: string
  clientSecretFile?: string
  /** Scopes asked for at consent; default none (the authorization server's default). */
  scopes?: string[]
  /** Issuer of the authorization server; default discovered from the upstream's 401 (RFC 9728, RFC 8414, OIDC). */
  authorizationServer?: string
  /** mcpx's public `/oauth/callback` URL; default derived from `auth.oauth.resource` (its `/mcp` replaced by `/oauth/callback`). */
  redirectUri?: string
}

/**
 * Whether an upstream acts as each caller (auth type `oauth-user`): no shared
 * connection, a connection and a catalogue per caller.
 */
export function isPersonal (config: UpstreamConfig): boolean {
  return 'url' in config && config.auth?.type === 'oauth-user'
}
