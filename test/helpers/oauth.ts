/**
 * A real authorization server for the tests (real parts, not mocks): `oidc-provider` on
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
import { SignJWT, createLocalJWKSet, exportJWK, generateKeyPair, jwtVerify, type JWK, type JWTPayload } from 'jose'
import Provider from 'oidc-provider'
import type { Teardown } from './app.js'

/** A client registered at the test authorization server. */
export interface TestClient { clientId: string, clientSecret: string }

/** Clients every server knows: two service subjects, an opaque-token client, the introspection client and a public PKCE client. */
export const CLIENTS = {
  alice: { clientId: 'alice', clientSecret: 'alice-secret-0123456789' },
  bob: { clientId: 'bob', clientSecret: 'bob-secret-0123456789' },
  opaque: { clientId: 'opaque', clientSecret: 'opaque-secret-0123456789' },
  mcpx: { clientId: 'mcpx', clientSecret: 'mcpx-introspection-secret-0123456789' },
  /** mcpx's own client towards protected upstreams: client credentials and token exchange. */
  gateway: { clientId: 'gateway', clientSecret: 'gateway-secret-0123456789' }
} as const

/** RFC 8693 grant type and token type. */
export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange'
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token'

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
  /** Tokens issued so far, by grant type (client_credentials, the RFC 8693 URN, …). */
  issued: (grantType: string) => number
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
 * @param options.dpop enable oidc-provider's `features.dPoP` (RFC 9449): a token request that carries a
 *        `DPoP` proof gets a DPoP-bound token (`cnf.jkt`, `token_type: "DPoP"`); others are unchanged
 */
export async function startAuthServer (t: Teardown, options: { ttlSeconds?: number, dpop?: boolean, clients?: Array<Record<string, unknown>> } = {}): Promise<AuthServer> {
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
        { client_id: CLIENTS.gateway.clientId, client_secret: CLIENTS.gateway.clientSecret, grant_types: ['client_credentials', TOKEN_EXCHANGE], redirect_uris: [], response_types: [], scope: SCOPES.join(' ') },
        { client_id: PUBLIC_CLIENT.clientId, token_endpoint_auth_method: 'none', redirect_uris: [PUBLIC_CLIENT.redirectUri], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], scope: ['openid', 'offline_access', ...SCOPES].join(' ') },
        ...(options.clients ?? [])
      ],
      jwks: { keys: keys.map(k => k.privateJwk) },
      scopes: ['openid', 'offline_access', ...SCOPES],
      cookies: { keys: ['mcpx-test-cookie-key'] },
      findAccount: async (_ctx: unknown, id: string) => ({ accountId: id, claims: async () => ({ sub: id }) }),
      features: {
        devInteractions: { enabled: true },
        clientCredentials: { enabled: true },
        introspection: { enabled: true },
        ...(options.dpop === true ? { dPoP: { enabled: true } } : {}),
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
    provider.on('grant.success', (ctx: { oidc: { params: { grant_type: string } } }) => {
      const grant = ctx.oidc.params.grant_type
      issued.set(grant, (issued.get(grant) ?? 0) + 1)
    })
    // RFC 8693 token exchange: oidc-provider has no built-in handler; registerGrantType adds one.
    // The client is authenticated by oidc-provider; the subject token must be one this server
    // signed; the new token names the subject, the requested resource, and mcpx as the actor.
    provider.registerGrantType(TOKEN_EXCHANGE, async function tokenExchange (ctx: { status: number, body: unknown, oidc: { params: Record<string, string | undefined>, client: { clientId: string } } }) {
      const params = ctx.oidc.params
      if (params.subject_token === undefined || params.subject_token_type !== ACCESS_TOKEN_TYPE) {
        ctx.status = 400
        ctx.body = { error: 'invalid_request', error_description: 'subject_token of type access_token required' }
        return
      }
      let subject: JWTPayload
      try {
        subject = (await jwtVerify(params.subject_token, createLocalJWKSet({ keys: keys.map(k => k.publicJwk) }), { issuer })).payload
      } catch {
        ctx.status = 400
        ctx.body = { error: 'invalid_grant', error_description: 'subject_token not accepted' }
        return
      }
      const now = Math.floor(Date.now() / 1000)
      const clientId = ctx.oidc.client.clientId
      const accessToken = await signWith(keys[0], {
        iss: issuer, sub: subject.sub, aud: params.resource ?? params.audience, client_id: clientId, act: { sub: clientId },
        scope: params.scope ?? (typeof subject.scope === 'string' ? subject.scope : undefined), iat: now, exp: now + ttl, jti: randomUUID()
      })
      ctx.body = { access_token: accessToken, issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer', expires_in: ttl }
    }, ['subject_token', 'subject_token_type', 'requested_token_type', 'audience', 'resource', 'scope', 'actor_token', 'actor_token_type'])
    return provider
  }

  async function signWith (key: SigningKey, claims: JWTPayload, extraHeader: Record<string, unknown> = {}): Promise<string> {
    const header = { alg: 'RS256', kid: key.kid, typ: 'at+jwt', ...extraHeader }
    return await new SignJWT(claims).setProtectedHeader(header as { alg: string }).sign({ ...key.privateJwk, alg: header.alg })
  }

  const issued = new Map<string, number>()
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
    issued: grantType => issued.get(grantType) ?? 0,
    clientCredentials,
    async sign (claims, opts = {}) {
      return await signWith(opts.key ?? keys[0], claims, opts.header)
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

/**
 * Plays the user at the authorization server: follows `authorizationUrl` through oidc-provider's
 * dev interactions (sign in as `login`, then consent), carrying its cookies, until the redirect
 * to the client's redirect URI (`redirectUri`, default the public client's).
 * @returns the `code` and `state` of that redirect, and all its parameters (`iss` too, RFC 9207)
 * @throws when the server answers something else (an error page, a loop)
 */
export async function playUser (authorizationUrl: URL | string, login: string, redirectUri: string = PUBLIC_CLIENT.redirectUri): Promise<{ code: string, state: string | null, params: URLSearchParams, location: string }> {
  const cookies = new Map<string, string>()
  let url = new URL(authorizationUrl)
  let method = 'GET'
  let body: string | undefined
  for (let step = 0; step < 20; step++) {
    const response = await fetch(url, {
      method,
      redirect: 'manual',
      headers: {
        cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {})
      },
      ...(body !== undefined ? { body } : {})
    })
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';')
      const eq = pair.indexOf('=')
      cookies.set(pair.slice(0, eq), pair.slice(eq + 1))
    }
    const location = response.headers.get('location')
    if (response.status >= 300 && response.status < 400 && location !== null) {
      await response.body?.cancel()
      const next = new URL(location, url)
      if (next.href.startsWith(redirectUri)) {
        const code = next.searchParams.get('code')
        if (code === null) throw new Error(`redirected without a code: ${next.search}`)
        return { code, state: next.searchParams.get('state'), params: next.searchParams, location: next.href }
      }
      url = next
      method = 'GET'
      body = undefined
      continue
    }
    const html = await response.text()
    const prompt = /name="prompt" value="(\w+)"/.exec(html)?.[1]
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1]
    if (response.status !== 200 || prompt === undefined || action === undefined) throw new Error(`unexpected page ${response.status} at ${url.pathname}: ${html.slice(0, 300)}`)
    url = new URL(action.replaceAll('&amp;', '&'), url)
    method = 'POST'
    body = new URLSearchParams(prompt === 'login' ? { prompt, login, password: 'any' } : { prompt }).toString()
  }
  throw new Error('too many steps at the authorization server')
}

/**
 * An in-memory OAuthClientProvider, as both official SDKs (v1 and v2) define it: the public
 * PKCE client, its tokens and verifier kept in fields; `redirectToAuthorization` only records
 * the URL (the test then plays the user with {@link playUser}).
 */
export class MemoryOAuthProvider {
  authorizationUrl: URL | undefined
  savedTokens: { access_token: string, token_type: string, refresh_token?: string } | undefined
  #verifier = ''
  get redirectUrl (): string { return PUBLIC_CLIENT.redirectUri }
  get clientMetadata (): { redirect_uris: string[], client_name: string, grant_types: string[], response_types: string[], token_endpoint_auth_method: string } {
    return { redirect_uris: [PUBLIC_CLIENT.redirectUri], client_name: 'mcpx test client', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' }
  }
  clientInformation (): { client_id: string } { return { client_id: PUBLIC_CLIENT.clientId } }
  tokens (): MemoryOAuthProvider['savedTokens'] { return this.savedTokens }
  saveTokens (tokens: NonNullable<MemoryOAuthProvider['savedTokens']>): void { this.savedTokens = tokens }
  redirectToAuthorization (url: URL): void { this.authorizationUrl = url }
  saveCodeVerifier (verifier: string): void { this.#verifier = verifier }
  codeVerifier (): string { return this.#verifier }
  #discovery: unknown
  /** v2 (SEP-2352): the discovery state is kept with the verifier, so the callback is checked against the same server. */
  saveDiscoveryState (state: unknown): void { this.#discovery = state }
  discoveryState (): unknown { return this.#discovery }
}
