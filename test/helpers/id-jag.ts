/**
 * Enterprise-Managed Authorization for the tests (docs/authentication.md › Enterprise-managed authorization (ID-JAG)):
 * two real oidc-provider instances on 127.0.0.1:0, taught the two grants of the Identity Assertion JWT
 * Authorization Grant (draft-ietf-oauth-identity-assertion-authz-grant) through `registerGrantType`:
 *
 * - the enterprise IdP: issues callers' access tokens (client credentials, JWT, for mcpx's front door)
 *   and answers an RFC 8693 token exchange whose `requested_token_type` is the id-jag URN with an
 *   ID-JAG: a JWT signed by the IdP, `typ` `oauth-id-jag+jwt`, claims iss, sub, aud (the requested
 *   `audience`), client_id (mcpx's client at the upstream's AS), resource, scope, jti, iat, exp;
 * - the upstream's authorization server (AS): redeems an ID-JAG with the RFC 7523 JWT bearer grant
 *   (signature by the IdP's key, typ, iss, aud = its own issuer, client_id = the authenticated client)
 *   and issues a JWT access token for the ID-JAG's `resource`; also client credentials (mcpx's own
 *   traffic). Its `/jwks` serves test/helpers/protected-upstream.ts's bearer check.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { once } from 'node:events'
import { randomUUID } from 'node:crypto'
import { SignJWT, createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose'
import Provider from 'oidc-provider'
import type { Teardown } from './app.js'
import { newSigningKey, type SigningKey, type TestClient } from './oauth.js'

export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange'
export const ID_JAG = 'urn:ietf:params:oauth:token-type:id-jag'
export const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer'
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token'

/** Callers at the IdP (client credentials: `sub` is the client id), and mcpx's clients at both servers. */
export const ID_JAG_CLIENTS = {
  alice: { clientId: 'alice', clientSecret: 'alice-idp-secret-0123456789' },
  bob: { clientId: 'bob', clientSecret: 'bob-idp-secret-0123456789' },
  /** The IdP refuses this subject an ID-JAG (policy), with invalid_grant. */
  mallory: { clientId: 'mallory', clientSecret: 'mallory-idp-secret-0123456789' },
  /** mcpx at the IdP. */
  gatewayIdp: { clientId: 'mcpx-at-idp', clientSecret: 'mcpx-idp-secret-0123456789' },
  /** mcpx at the upstream's AS (the ID-JAG's client_id). */
  gatewayAs: { clientId: 'mcpx-at-as', clientSecret: 'mcpx-as-secret-0123456789' }
} as const

export interface IdJagServer {
  issuer: string
  /** Tokens issued so far, by grant type. */
  issued: (grantType: string) => number
  /** Every request is cut (connection destroyed) until `up()`. */
  down: () => void
  up: () => void
}

export interface IdJagServers {
  idp: IdJagServer & {
    /** A caller's access token for `resource` (mcpx's front door). */
    callerToken: (client: TestClient, resource: string) => Promise<string>
    /** The claims and header of every ID-JAG issued. */
    idJags: Array<{ header: Record<string, unknown>, claims: JWTPayload }>
  }
  as: IdJagServer
}

interface GrantContext { status: number, body: unknown, oidc: { params: Record<string, string | undefined>, client: { clientId: string } } }

/** A listening socket whose provider is set later, that can be taken down. */
async function socket (t: Teardown): Promise<{ issuer: string, serve: (h: (req: IncomingMessage, res: ServerResponse) => void) => void, down: () => void, up: () => void }> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined
  let isDown = false
  const server = createServer((req, res) => {
    if (isDown) { req.socket.destroy(); return }
    handler?.(req, res)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.closeAllConnections(); server.close() })
  return {
    issuer: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    serve: h => { handler = h },
    down: () => { isDown = true },
    up: () => { isDown = false }
  }
}

async function sign (key: SigningKey, claims: JWTPayload, typ: string): Promise<string> {
  return await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: key.kid, typ }).sign({ ...key.privateJwk, alg: 'RS256' })
}

function refuse (ctx: GrantContext, error: string, description: string): void {
  ctx.status = 400
  ctx.body = { error, error_description: description }
}

/** Resource indicators with JWT access tokens for the requested resource, `ttl` seconds. */
function resourceIndicators (ttl: number): Record<string, unknown> {
  return {
    enabled: true,
    defaultResource: async (_ctx: unknown, _client: unknown, oneOf?: string | string[]) => oneOf,
    useGrantedResource: async () => true,
    getResourceServerInfo: async (_ctx: unknown, resourceIndicator: string) => ({ scope: 'mcp:tools', audience: resourceIndicator, accessTokenTTL: ttl, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } })
  }
}

/**
 * Starts the IdP and the upstream's AS; both closed at teardown.
 * @param options.ttlSeconds lifetime of the AS's access tokens (default 600 s); ID-JAGs live 300 s
 */
export async function startIdJagServers (t: Teardown, options: { ttlSeconds?: number } = {}): Promise<IdJagServers> {
  const ttl = options.ttlSeconds ?? 600
  const [idpSocket, asSocket] = [await socket(t), await socket(t)]
  const [idpKey, asKey] = [await newSigningKey(), await newSigningKey()]
  const idpIssued = new Map<string, number>()
  const asIssued = new Map<string, number>()
  const idJags: IdJagServers['idp']['idJags'] = []
  const count = (map: Map<string, number>) => (ctx: { oidc: { params: { grant_type: string } } }) => { map.set(ctx.oidc.params.grant_type, (map.get(ctx.oidc.params.grant_type) ?? 0) + 1) }

  const idp = new Provider(idpSocket.issuer, {
    clients: [
      ...[ID_JAG_CLIENTS.alice, ID_JAG_CLIENTS.bob, ID_JAG_CLIENTS.mallory].map(c => ({ client_id: c.clientId, client_secret: c.clientSecret, grant_types: ['client_credentials'], redirect_uris: [], response_types: [], scope: 'mcp:tools' })),
      { client_id: ID_JAG_CLIENTS.gatewayIdp.clientId, client_secret: ID_JAG_CLIENTS.gatewayIdp.clientSecret, grant_types: [TOKEN_EXCHANGE], redirect_uris: [], response_types: [] }
    ],
    jwks: { keys: [idpKey.privateJwk] },
    scopes: ['mcp:tools'],
    cookies: { keys: ['mcpx-test-idp-cookie-key'] },
    features: { clientCredentials: { enabled: true }, resourceIndicators: resourceIndicators(600) },
    ttl: { ClientCredentials: 600 }
  })
  idp.on('grant.success', count(idpIssued))
  // draft-ietf-oauth-identity-assertion-authz-grant §4.3: token exchange for an ID-JAG.
  idp.registerGrantType(TOKEN_EXCHANGE, async function issueIdJag (ctx: GrantContext) {
    const p = ctx.oidc.params
    if (p.requested_token_type !== ID_JAG) return refuse(ctx, 'invalid_request', 'requested_token_type must be the id-jag URN')
    if (p.subject_token === undefined || p.subject_token_type !== ACCESS_TOKEN_TYPE) return refuse(ctx, 'invalid_request', 'subject_token of type access_token required')
    if (p.audience === undefined || p.resource === undefined) return refuse(ctx, 'invalid_request', 'audience and resource required')
    let subject: JWTPayload
    try {
      subject = (await jwtVerify(p.subject_token, createLocalJWKSet({ keys: [idpKey.publicJwk] }), { issuer: idpSocket.issuer })).payload
    } catch {
      return refuse(ctx, 'invalid_grant', 'subject_token not accepted')
    }
    if (subject.sub === ID_JAG_CLIENTS.mallory.clientId) return refuse(ctx, 'invalid_grant', 'policy: no access to this resource')
    const now = Math.floor(Date.now() / 1000)
    const claims: JWTPayload = { iss: idpSocket.issuer, sub: subject.sub, aud: p.audience, client_id: ID_JAG_CLIENTS.gatewayAs.clientId, resource: p.resource, scope: p.scope, jti: randomUUID(), iat: now, exp: now + 300 }
    const idJag = await sign(idpKey, claims, 'oauth-id-jag+jwt')
    idJags.push({ header: decodeProtectedHeader(idJag) as Record<string, unknown>, claims })
    ctx.body = { access_token: idJag, issued_token_type: ID_JAG, token_type: 'N_A', expires_in: 300, ...(p.scope !== undefined ? { scope: p.scope } : {}) }
  }, ['subject_token', 'subject_token_type', 'requested_token_type', 'audience', 'resource', 'scope'])
  idpSocket.serve(idp.callback())

  const as = new Provider(asSocket.issuer, {
    clients: [{ client_id: ID_JAG_CLIENTS.gatewayAs.clientId, client_secret: ID_JAG_CLIENTS.gatewayAs.clientSecret, grant_types: [JWT_BEARER, 'client_credentials'], redirect_uris: [], response_types: [], scope: 'mcp:tools' }],
    jwks: { keys: [asKey.privateJwk] },
    scopes: ['mcp:tools'],
    cookies: { keys: ['mcpx-test-as-cookie-key'] },
    features: { clientCredentials: { enabled: true }, resourceIndicators: resourceIndicators(ttl) },
    ttl: { ClientCredentials: ttl }
  })
  as.on('grant.success', count(asIssued))
  // RFC 7523 §2.1 with the ID-JAG as the assertion (draft §5): validate it, then issue for its resource.
  as.registerGrantType(JWT_BEARER, async function redeemIdJag (ctx: GrantContext) {
    const assertion = ctx.oidc.params.assertion
    if (assertion === undefined) return refuse(ctx, 'invalid_request', 'assertion required')
    let claims: JWTPayload
    try {
      claims = (await jwtVerify(assertion, createLocalJWKSet({ keys: [idpKey.publicJwk] }), { issuer: idpSocket.issuer, audience: asSocket.issuer, typ: 'oauth-id-jag+jwt' })).payload
    } catch {
      return refuse(ctx, 'invalid_grant', 'assertion not accepted')
    }
    if (claims.client_id !== ctx.oidc.client.clientId) return refuse(ctx, 'invalid_grant', 'the ID-JAG names another client')
    const now = Math.floor(Date.now() / 1000)
    const accessToken = await sign(asKey, { iss: asSocket.issuer, sub: claims.sub, aud: claims.resource as string, client_id: claims.client_id, scope: claims.scope, jti: randomUUID(), iat: now, exp: now + ttl }, 'at+jwt')
    ctx.body = { access_token: accessToken, token_type: 'Bearer', expires_in: ttl, ...(typeof claims.scope === 'string' ? { scope: claims.scope } : {}) }
  }, ['assertion', 'scope'])
  asSocket.serve(as.callback())

  return {
    idp: {
      issuer: idpSocket.issuer,
      issued: g => idpIssued.get(g) ?? 0,
      down: idpSocket.down,
      up: idpSocket.up,
      idJags,
      async callerToken (client, resource) {
        const response = await fetch(`${idpSocket.issuer}/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}` },
          body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope: 'mcp:tools' })
        })
        const json = await response.json() as { access_token?: string, error?: string }
        if (json.access_token === undefined) throw new Error(`IdP token endpoint: ${response.status} ${json.error ?? ''}`)
        return json.access_token
      }
    },
    as: { issuer: asSocket.issuer, issued: g => asIssued.get(g) ?? 0, down: asSocket.down, up: asSocket.up }
  }
}
