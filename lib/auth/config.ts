/**
 * The `auth` and `admin` sections of the config as the auth layer reads them, after loading
 * (lib/config/load.ts validates them against its schema and fills in defaults). Declared here, in
 * the layer that reads them, so that auth imports nothing from the config layer above it.
 */

/** `auth`: how /mcp callers authenticate; no token and no `oauth` means unauthenticated. */
export interface AuthConfig {
  bearerTokens: string[]
  bearerTokensFile?: string
  bearerTokensEnv?: string
  allowUnauthenticated: boolean
  /** Named static tokens. */
  tokens?: Array<{ name: string, tokenEnv?: string, tokenFile?: string, scopes?: string[] }>
  /** mcpx as an OAuth resource server; durations in ms after loading. */
  oauth?: OAuthConfig
}

/** `admin`: operator tokens for POST /admin/reload and remote /status (lib/auth/tokens loadAdminTokens). */
export interface AdminConfig {
  tokens: string[]
  tokensFile?: string
  tokensEnv?: string
  scopes: string[]
}

/** `auth.oauth` after loading: durations are ms; `audience` is filled in from `resource`. */
export interface OAuthConfig {
  issuer: string
  resource: string
  audience: string[]
  jwksUri?: string
  requiredScopes: string[]
  scopesSupported?: string[]
  /** `knowsOnlyThisResource` (default false): an active answer without `aud` is taken as issued for this resource. */
  introspection?: { url: string, clientId: string, clientSecretEnv?: string, clientSecretFile?: string, knowsOnlyThisResource: boolean }
  clockTolerance: number
  jwksCooldown: number
  resourceName: string
  /** RFC 9449 DPoP at the front door (docs/authentication.md › DPoP); undefined: `allowed`. */
  dpop?: 'off' | 'allowed' | 'required'
  /** JWS algorithms a DPoP proof may use (asymmetric only); undefined: lib/auth/dpop DPOP_ALGORITHMS. */
  dpopSigningAlgs?: string[]
  /** How old a DPoP proof's `iat` may be, ms; undefined: 60 000. */
  dpopProofMaxAge?: number
}
