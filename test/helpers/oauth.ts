/**
 * A real authorization server for the tests (issue #16 › Real parts): `oidc-provider` on
 * 127.0.0.1:0, in process, configured for client credentials, authorization code with PKCE,
 * resource indicators with JWT (or opaque) access tokens, introspection, and key rotation. The
 * listening socket stays while the provider behind it can be swapped (new keys) or taken down.
 *
 * Also: `sign()` crafts tokens with the server's own key (or a foreign one) for the invalid-token
 * cases that a conforming server would never issue (expired, wrong issuer, alg none, …).
 */
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http'
import { once } from 'node:events'
import { randomUUID } from 'node:crypto'
import { SignJWT, exportJWK, generateKeyPair, type JWK, type JWTPayload } from 'jose'
import Provider from 'oidc-provider'
import type { Teardown } from './app.js'

/** A client registered at the test authorization server. */
export interface TestClient { clientId: string, clientSecret: string }

/** Clients every server knows: two service subjects, an opaque-token client, the introspection client and a public PKCE client. */
export const CLIENTS = {
  alice: { clientId: 'alice', clientSecret: 'alice-secret-0123456789' },
  bob: { clientId: 'bob', clientSecret: 'bob-secret-0123456789' },
  opaque: { clientId: 'opaque', clientSecret: 'opaque-secret-0123456789' },
  mcpx: { clientId: 'mcpx', clientSecret: 'mcpx-introspection-secret-0123456789' }
} as const

/** The public client of the authorization-code tests, and its redirect URI. */
export const PUBLIC_CLIENT = { clientId: 'mcp-app', redirectUri: 'http://127.0.0.1/callback' }

/** Scopes the server knows. */
export const SCOPES = ['mcp:tools', 'mcp:admin']

export interface SigningKey { privateJwk: JWK, publicJwk: JWK, kid: string }

export interface AuthServer {
  /** `http://127.0.0.1:<port>`, the issuer. */
  issuer: string
  /** The key tokens are signed with now. */
  key: SigningKey
  /** GET requests to the JWKS endpoint so far. */
  jwksFetches: () => number
  /** A client-credentials access token for `resource` (JWT unless the client is `opaque`). */
  clientCredentials: (client: TestClient, options: { resource: string, scope?: string }) => Promise<string>
  /** Signs a token with the current key (or `key`), `typ: at+jwt` unless `header.typ` says otherwise. */
  sign: (claims: JWTPayload, options?: { key?: SigningKey, header?: Record<string, unknown> }) => Promise<string>
  /** A new key that signs from now on; the old one stays published when `keepOld`. */
  rotate: (keepOld?: boolean) => Promise<SigningKey>
  /** Every request is cut (connection destroyed) until `up()`. */
  down: () => void
  up: () => void
}

/** A fresh RS256 signing key with a random kid. */
export async function newSigningKey (): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  const kid = randomUUID()
  const privateJwk = { ...await exportJWK(privateKey), kid, alg: 'RS256', use: 'sig' }
  const publicJwk = { ...await exportJWK(publicKey), kid, alg: 'RS256', use: 'sig' }
  return { privateJwk, publicJwk, kid }
}

/**
 * Starts the authorization server; closed at teardown.
 * @param options.ttlSeconds access-token lifetime (default 600 s)
 */
export async function startAuthServer (t: Teardown, options: { ttlSeconds?: number } = {}): Promise<AuthServer> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined
  let isDown = false
  let jwksFetches = 0
  const server: Server = createServer((req, res) => {
    if (isDown) { req.socket.destroy(); return }
    if (req.method === 'GET' && req.url?.startsWith('/jwks') === true) jwksFetches++
    handler?.(req, res)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(async () => { server.closeAllConnections(); server.close() })
  const issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  const ttl = options.ttlSeconds ?? 600

  function makeProvider (keys: SigningKey[]): { callback: () => (req: IncomingMessage, res: ServerResponse) => void } {
    const provider = new Provider(issuer, {
      clients: [
        ...[CLIENTS.alice, CLIENTS.bob, CLIENTS.opaque].map(c => ({
          client_id: c.clientId, client_secret: c.clientSecret, grant_types: ['client_credentials'], redirect_uris: [], response_types: [], scope: SCOPES.join(' ')
        })),
        { client_id: CLIENTS.mcpx.clientId, client_secret: CLIENTS.mcpx.clientSecret, grant_types: [], redirect_uris: [], response_types: [] },
        { client_id: PUBLIC_CLIENT.clientId, token_endpoint_auth_method: 'none', redirect_uris: [PUBLIC_CLIENT.redirectUri], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], scope: ['openid', 'offline_access', ...SCOPES].join(' ') }
      ],
      jwks: { keys: keys.map(k => k.privateJwk) },
      scopes: ['openid', 'offline_access', ...SCOPES],
      cookies: { keys: ['mcpx-test-cookie-key'] },
      findAccount: async (_ctx: unknown, id: string) => ({ accountId: id, claims: async () => ({ sub: id }) }),
      features: {
        devInteractions: { enabled: true },
        clientCredentials: { enabled: true },
        introspection: { enabled: true },
        registration: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: async (_ctx: unknown, _client: unknown, oneOf?: string | string[]) => oneOf,
          useGrantedResource: async () => true,
          getResourceServerInfo: async (_ctx: unknown, resourceIndicator: string, client: { clientId: string }) => ({
            scope: SCOPES.join(' '),
            audience: resourceIndicator,
            accessTokenTTL: ttl,
            accessTokenFormat: client.clientId === CLIENTS.opaque.clientId ? 'opaque' : 'jwt',
            jwt: { sign: { alg: 'RS256' } }
          })
        }
      },
      pkce: { required: () => true },
      ttl: { AccessToken: ttl, ClientCredentials: ttl }
    })
    return provider
  }

  let keys = [await newSigningKey()]
  handler = makeProvider(keys).callback()

  async function clientCredentials (client: TestClient, opts: { resource: string, scope?: string }): Promise<string> {
    const body = new URLSearchParams({ grant_type: 'client_credentials', resource: opts.resource, scope: opts.scope ?? SCOPES.join(' ') })
    const response = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}` },
      body
    })
    const json = await response.json() as { access_token?: string, error?: string, error_description?: string }
    if (json.access_token === undefined) throw new Error(`token endpoint: ${response.status} ${json.error ?? ''} ${json.error_description ?? ''}`)
    return json.access_token
  }

  return {
    issuer,
    get key () { return keys[0] },
    jwksFetches: () => jwksFetches,
    clientCredentials,
    async sign (claims, opts = {}) {
      const key = opts.key ?? keys[0]
      const header = { alg: 'RS256', kid: key.kid, typ: 'at+jwt', ...opts.header }
      return await new SignJWT(claims).setProtectedHeader(header as { alg: string }).sign({ ...key.privateJwk, alg: header.alg })
    },
    async rotate (keepOld = true) {
      const fresh = await newSigningKey()
      keys = keepOld ? [fresh, ...keys] : [fresh]
      handler = makeProvider(keys).callback()
      return fresh
    },
    down () { isDown = true },
    up () { isDown = false }
  }
}
