/**
 * Two token rules at inject level, against a real authorization server (oidc-provider,
 * test/helpers/oauth.ts): an introspected token must be issued for this resource
 * (docs/authentication.md › Introspected tokens without an audience), and a token exchanged for an
 * upstream follows the caller's token, not the caller (docs/authentication.md › Upstream credentials).
 */
import t, { type Test } from 'tap'
import { join } from 'node:path'
import Fastify, { type FastifyInstance } from 'fastify'
import mcpxOrigin from '../../plugins/origin.js'
import mcpxSendRefusal from '../../plugins/send-refusal.js'
import mcpxCors from '../../plugins/cors.js'
import mcpxAuth from '../../plugins/auth.js'
import { createAuthenticator } from '../../lib/auth/authenticate.js'
import { loadConfig } from '../../lib/config/load.js'
import { INVALID_TOKEN_DESCRIPTIONS } from '../../lib/auth/verifier.js'
import { createUpstreamAuthProvider } from '../../lib/upstreams/credentials.js'
import { oauthPrincipal } from '../../lib/auth/principal.js'
import { Secret } from '../../lib/auth/secret.js'
import { captureLogger } from '../helpers/registry.js'
import { CLIENTS, TOKEN_EXCHANGE, startAuthServer, type AuthServer, type TestClient } from '../helpers/oauth.js'

const RESOURCE = 'http://localhost/mcp'
const POLICY = { allowedOrigins: [] }

/** mcpx-auth alone on a bare Fastify with a dummy /mcp, authenticating with `oauth`. */
async function build (t: Test, oauth: Record<string, unknown>): Promise<FastifyInstance> {
  const app = Fastify()
  t.teardown(() => app.close())
  const authenticator = createAuthenticator(loadConfig({ auth: { oauth } }).auth, { logger: captureLogger().logger })
  await app.register(async function mcpxScope (scope) {
    await scope.register(mcpxSendRefusal)
    await scope.register(mcpxOrigin, { policy: POLICY })
    await scope.register(mcpxCors, { policy: POLICY })
    await scope.register(mcpxAuth, { authenticator })
    scope.post('/mcp', async (_request, reply) => reply.type('application/json').send('{"reached":"mcp"}'))
  })
  await app.ready()
  return app
}

/** A client-credentials token asked for with no resource indicator: oidc-provider issues it opaque, and its introspection names no `aud`. */
async function tokenWithoutResource (as: AuthServer, client: TestClient): Promise<string> {
  const response = await fetch(`${as.issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}` },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'mcp:tools' })
  })
  const body = await response.json() as { access_token?: string }
  if (body.access_token === undefined) throw new Error(`token endpoint: HTTP ${response.status}`)
  return body.access_token
}

t.test('auth/oauth/introspected-token-without-audience-refused', async t => {
  const as = await startAuthServer(t)
  const dir = t.testdir({ 'secret.txt': CLIENTS.mcpx.clientSecret + '\n' })
  const introspection = { url: `${as.issuer}/token/introspection`, clientId: CLIENTS.mcpx.clientId, clientSecretFile: join(dir, 'secret.txt') }
  const token = await tokenWithoutResource(as, CLIENTS.opaque)
  const answer = await (await fetch(introspection.url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${CLIENTS.mcpx.clientId}:${CLIENTS.mcpx.clientSecret}`).toString('base64')}` },
    body: new URLSearchParams({ token })
  })).json() as Record<string, unknown>
  t.equal(answer.active, true, 'the authorization server says the token is active')
  t.notOk('aud' in answer, 'and names no audience')

  const strict = await build(t, { issuer: as.issuer, resource: RESOURCE, introspection })
  for (let round = 1; round <= 2; round++) { // the second round cannot be answered from a remembered verdict
    const res = await strict.inject({ method: 'POST', url: '/mcp', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, payload: '{}' })
    t.equal(res.statusCode, 401, `round ${round}: a token not issued for this resource is refused`)
    t.equal(res.headers['www-authenticate'], `Bearer error="invalid_token", error_description="${INVALID_TOKEN_DESCRIPTIONS.audience}", resource_metadata="http://localhost/.well-known/oauth-protected-resource/mcp"`)
    t.same(JSON.parse(res.body), { jsonrpc: '2.0', error: { code: -32_600, message: 'Unauthorized: the access token was issued for another resource' } })
  }

  // The operator says the endpoint knows tokens for this resource only: then no audience means this one.
  const trusting = await build(t, { issuer: as.issuer, resource: RESOURCE, introspection: { ...introspection, knowsOnlyThisResource: true } })
  const res = await trusting.inject({ method: 'POST', url: '/mcp', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, payload: '{}' })
  t.equal(res.statusCode, 200, 'knowsOnlyThisResource: an active token without aud is admitted')
  const elsewhere = await as.clientCredentials(CLIENTS.opaque, { resource: 'https://other.example.com/mcp' })
  const other = await trusting.inject({ method: 'POST', url: '/mcp', headers: { authorization: `Bearer ${elsewhere}`, 'content-type': 'application/json' }, payload: '{}' })
  t.equal(other.statusCode, 401, 'knowsOnlyThisResource: a token that names another audience is still refused')
  t.throws(() => loadConfig({ auth: { oauth: { issuer: as.issuer, resource: RESOURCE, introspection: { ...introspection, knowsOnlyThisResource: 'yes' } } } }), { message: /knowsOnlyThisResource/ }, 'a bad value is a clear config error')
})

/** The JWT claims of `token` (not verified: the test reads what the authorization server put in). */
function claimsOf (token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8')) as Record<string, unknown>
}

t.test('auth/upstream/exchange-follows-the-subject-token', async t => {
  // RFC 8693: what the upstream receives is exchanged from the token the caller holds now. The same
  // caller presenting a narrower token gets a new exchange, not the one made from its wider token.
  const as = await startAuthServer(t)
  const dir = t.testdir({ secret: CLIENTS.gateway.clientSecret })
  const provider = createUpstreamAuthProvider('crm', { type: 'token_exchange', issuer: as.issuer, clientId: CLIENTS.gateway.clientId, clientSecretFile: join(dir, 'secret'), resource: 'http://127.0.0.1/crm' }, captureLogger().logger)
  const callerWith = (token: string) => oauthPrincipal({ ...claimsOf(token), sub: CLIENTS.alice.clientId }, String(claimsOf(token).scope).split(' '), new Secret(token))
  const wide = await as.clientCredentials(CLIENTS.alice, { resource: RESOURCE, scope: 'mcp:tools mcp:admin' })
  const narrow = await as.clientCredentials(CLIENTS.alice, { resource: RESOURCE, scope: 'mcp:tools' })
  t.equal(callerWith(wide).key, callerWith(narrow).key, 'one caller (same issuer and subject), two tokens')

  const fromWide = await provider.token({ principal: callerWith(wide), afterUnauthorized: false })
  t.equal(claimsOf(fromWide).scope, 'mcp:tools mcp:admin')
  t.equal(await provider.token({ principal: callerWith(wide), afterUnauthorized: false }), fromWide, 'the same token again: the cached exchange')
  t.equal(as.issued(TOKEN_EXCHANGE), 1)
  const fromNarrow = await provider.token({ principal: callerWith(narrow), afterUnauthorized: false })
  t.equal(claimsOf(fromNarrow).scope, 'mcp:tools', 'the narrower token is exchanged: the upstream never gets the wider scopes')
  t.equal(as.issued(TOKEN_EXCHANGE), 2, 'a new token is a new exchange')
  t.equal(await provider.token({ principal: callerWith(wide), afterUnauthorized: false }), fromWide, 'each token keeps its own exchange')
})
