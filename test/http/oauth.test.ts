/**
 * mcpx as an OAuth 2.1 resource server at the HTTP tier (docs/authentication.md › OAuth 2.1 (the MCP
 * authorization spec); DIGEST §4, §6e): the whole app through `fastify.inject`, with a real
 * authorization server (oidc-provider, test/helpers/oauth.ts). The protected-resource metadata in
 * both forms, the 401 challenge of every method in both eras, and 403 for a token without the
 * required scope; a token whose key cannot be fetched while the server is down; a curated endpoint as
 * its own protected resource. test/e2e/oauth.test.ts checks the same ids on a real socket, beside the rest.
 * No upstream: every answer here is the front door's, before any dispatch.
 */
import t from 'tap'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { build, legacyHeaders, modernHeaders, modernMeta, type BuildOptions } from '../helpers/app.js'
import { initializeBody, pollUntil } from '../helpers/legacy.js'
import { CLIENTS, SCOPES, newSigningKey, startAuthServer, type AuthServer } from '../helpers/oauth.js'
import { INVALID_TOKEN_DESCRIPTIONS } from '../../lib/auth/verifier.js'

const REQUIRED = ['mcp:tools']
/** inject's requests come to Host `localhost:80` over plain http; the resource is config, never guessed from Host. */
const BASE = 'http://localhost'

let shared: Promise<AuthServer> | undefined
async function authServer (): Promise<AuthServer> {
  shared ??= startAuthServer(t)
  return await shared
}

/** The whole app with `auth.oauth` for `${BASE}${prefix}/mcp`; returns it, its resource and its metadata URL. */
async function serve (as: AuthServer, oauth: Record<string, unknown> = {}, extra: BuildOptions = {}): Promise<{ app: FastifyInstance, resource: string, prm: string }> {
  const prefix = typeof extra.prefix === 'string' ? extra.prefix : ''
  const resource = `${BASE}${prefix}/mcp`
  const app = await build(t, { upstreams: {}, ...extra, auth: { oauth: { issuer: as.issuer, resource, requiredScopes: REQUIRED, ...oauth } } })
  return { app, resource, prm: `${BASE}/.well-known/oauth-protected-resource${prefix}/mcp` }
}

const ID_LESS = { jsonrpc: '2.0', error: { code: -32_600 } }

t.test('auth/oauth/protected-resource-metadata-both-forms', async t => {
  const as = await authServer()
  for (const prefix of ['', '/tools']) {
    const s = await serve(as, { scopesSupported: SCOPES, resourceName: 'acme tools' }, { prefix, transport: { allowedOrigins: ['https://app.example.com'] } })
    const expected = { resource: s.resource, authorization_servers: [as.issuer], scopes_supported: SCOPES, bearer_methods_supported: ['header'], resource_name: 'acme tools' }
    for (const path of ['/.well-known/oauth-protected-resource', `/.well-known/oauth-protected-resource${prefix}/mcp`]) {
      const res = await s.app.inject({ method: 'GET', url: path, headers: { origin: 'https://app.example.com' } })
      t.equal(res.statusCode, 200, `${path}: no token needed`)
      t.match(res.headers['content-type'], /^application\/json/)
      t.equal(res.headers['access-control-allow-origin'], 'https://app.example.com', `${path}: an allowed origin can read it`)
      t.same(res.json(), expected, path)
    }
    const preflight = await s.app.inject({ method: 'OPTIONS', url: new URL(s.prm).pathname, headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET', 'access-control-request-headers': 'mcp-protocol-version' } })
    t.equal(preflight.statusCode, 204, 'a browser preflight (the SDK sends MCP-Protocol-Version) is granted')
    t.equal(preflight.headers['access-control-allow-origin'], 'https://app.example.com')
    const foreign = await s.app.inject({ method: 'GET', url: new URL(s.prm).pathname, headers: { origin: 'https://evil.example' } })
    t.equal(foreign.headers['access-control-allow-origin'], undefined, 'another origin gets no CORS grant')
  }
})

t.test('auth/oauth/401-challenge-every-method-and-era', async t => {
  const s = await serve(await authServer())
  const challenge = `Bearer resource_metadata="${s.prm}", scope="mcp:tools"`
  t.equal(s.prm, `${BASE}/.well-known/oauth-protected-resource/mcp`, 'RFC 9728 §3.1: derived from resource')
  const requests: Array<[string, InjectOptions]> = [
    ['legacy POST initialize', { method: 'POST', headers: legacyHeaders(), payload: JSON.stringify(initializeBody('2025-11-25')) }],
    ['legacy POST in a (made-up) session', { method: 'POST', headers: legacyHeaders({ 'mcp-session-id': 'made.up', 'mcp-protocol-version': '2025-11-25' }), payload: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) }],
    ['modern POST', { method: 'POST', headers: modernHeaders('tools/list'), payload: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: modernMeta() } }) }],
    ['legacy GET with a session header', { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': 'made.up' } }],
    ['modern GET', { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2026-07-28' } }],
    ['legacy DELETE', { method: 'DELETE', headers: { 'mcp-session-id': 'made.up' } }],
    ['modern DELETE', { method: 'DELETE', headers: { 'mcp-protocol-version': '2026-07-28' } }]
  ]
  for (const [what, init] of requests) {
    for (const authorization of [undefined, 'Basic dXNlcjpwYXNz']) {
      const headers = { ...(init.headers as Record<string, string>), ...(authorization !== undefined ? { authorization } : {}) }
      const res = await s.app.inject({ ...init, url: '/mcp', headers })
      t.equal(res.statusCode, 401, `${what} (${authorization ?? 'no Authorization'}): 401, before any session lookup`)
      t.equal(res.headers['www-authenticate'], challenge, what)
      const body = res.json() as Record<string, unknown>
      t.match(body, ID_LESS, what)
      t.notOk('id' in body, `${what}: id-less`)
    }
  }
})

t.test('auth/oauth/insufficient-scope-403', async t => {
  const as = await authServer()
  const s = await serve(as)
  const token = await as.clientCredentials(CLIENTS.alice, { resource: s.resource, scope: 'mcp:admin' })
  const res = await listAs(s.app, token)
  t.equal(res.statusCode, 403)
  t.equal(res.headers['www-authenticate'], `Bearer error="insufficient_scope", scope="mcp:tools", resource_metadata="${s.prm}"`)
  t.match(res.json(), { jsonrpc: '2.0', error: { code: -32_600, message: /required scope/ } })
  const enough = await as.clientCredentials(CLIENTS.alice, { resource: s.resource, scope: 'mcp:tools' })
  const admitted = await listAs(s.app, enough, 2)
  t.equal(admitted.statusCode, 200, `a token with the required scope is admitted: ${admitted.body.slice(0, 200)}`)
})

/** A modern tools/list (request id `id`) with this bearer token, through inject: the reply. */
async function listAs (app: FastifyInstance, token: string, id = 1): Promise<Awaited<ReturnType<FastifyInstance['inject']>>> {
  return await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: modernHeaders('tools/list', undefined, { authorization: `Bearer ${token}` }),
    payload: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list', params: { _meta: modernMeta() } })
  })
}

/** A modern tools/list with this bearer token: status and the challenge's error_description. */
async function listWith (app: FastifyInstance, token: string): Promise<{ status: number, challenge: string | undefined, description: string | undefined }> {
  const res = await listAs(app, token)
  const challenge = res.headers['www-authenticate'] as string | undefined
  return { status: res.statusCode, challenge, description: /error_description="([^"]*)"/.exec(challenge ?? '')?.[1] }
}

t.test('auth/oauth/unknown-kid-while-server-down-cannot-be-checked-now', async t => {
  // A client mid-rotation holds a token signed by a key the server published after mcpx's last
  // fetch. While the server cannot be reached that key cannot be known: "cannot be checked now"
  // tells the client to retry; "unknown key" would send it for a new token, signed by the same key.
  const as = await startAuthServer(t) // its own: this test takes it down
  const s = await serve(as, { jwksCooldown: 500 })
  const token = await as.clientCredentials(CLIENTS.alice, { resource: s.resource })
  t.equal((await listWith(s.app, token)).status, 200, 'keys fetched while the server is up')
  as.down()
  const rotated = await newSigningKey()
  const stranger = await as.sign({ iss: as.issuer, sub: 'x', aud: s.resource, scope: 'mcp:tools', exp: Math.floor(Date.now() / 1000) + 60 }, { key: rotated })
  // Inside the cooldown after the successful fetch no refetch is tried: "unknown key" (docs › Keys).
  // Past it, the refetch fails: every answer from then on is "cannot be checked now".
  const first = await pollUntil('an unknown kid answered "cannot be checked now" once the refetch failed', async () => {
    const { status, description } = await listWith(s.app, stranger)
    return status === 401 && description === INVALID_TOKEN_DESCRIPTIONS.key ? undefined : { status, description }
  }, 10_000)
  t.same(first, { status: 401, description: INVALID_TOKEN_DESCRIPTIONS.unavailable }, 'the refetch failed: 401, cannot be checked now')
  for (let i = 0; i < 3; i++) {
    // Inside the cooldown after the failed fetch: the cached keys only, and they lack the kid.
    const answer = await listWith(s.app, stranger)
    t.equal(answer.status, 401)
    t.match(answer.challenge, /^Bearer error="invalid_token", error_description="The access token cannot be checked now/)
    t.equal(answer.description, INVALID_TOKEN_DESCRIPTIONS.unavailable, `request ${i}: cannot be checked now`)
  }
  t.equal((await listWith(s.app, token)).status, 200, 'a token signed by a cached key still passes')
})

t.test('servers/oauth/endpoint-is-its-own-protected-resource', async t => {
  // RFC 9728 §3.3: the metadata a 401 names must have, as its resource, the URL the client asked;
  // /mcp/<name> names its own, and a token for it (RFC 8707) is accepted there and nowhere else.
  const as = await authServer()
  const s = await serve(as, {}, { servers: { support: { tools: { allow: ['echo'] } }, billing: { tools: { allow: ['echo'] } } } })
  const support = `${s.resource}/support`
  const supportPrm = `${BASE}/.well-known/oauth-protected-resource/mcp/support`
  const billingPrm = `${BASE}/.well-known/oauth-protected-resource/mcp/billing`
  const list = async (token: string | undefined, path = '/mcp'): Promise<{ status: number, challenge: string | undefined }> => {
    const res = await s.app.inject({
      method: 'POST',
      url: path,
      headers: modernHeaders('tools/list', undefined, token !== undefined ? { authorization: `Bearer ${token}` } : {}),
      payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: modernMeta() } })
    })
    return { status: res.statusCode, challenge: res.headers['www-authenticate'] as string | undefined }
  }
  const missing = await list(undefined, '/mcp/support')
  t.equal(missing.status, 401)
  t.equal(missing.challenge, `Bearer resource_metadata="${supportPrm}", scope="mcp:tools"`, 'the 401 names the endpoint\'s own metadata')
  const document = await s.app.inject({ method: 'GET', url: new URL(supportPrm).pathname })
  t.equal(document.statusCode, 200, 'served without a token')
  const mcpDocument = (await s.app.inject({ method: 'GET', url: new URL(s.prm).pathname })).json() as Record<string, unknown>
  t.same(document.json(), { ...mcpDocument, resource: support }, 'its resource is the URL the client asked; the rest is /mcp\'s')
  const unknown = await s.app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource/mcp/nosuch' })
  t.equal(unknown.statusCode, 404, 'no metadata for an endpoint that is not configured')
  const mcpWide = await as.clientCredentials(CLIENTS.alice, { resource: s.resource })
  const forSupport = await as.clientCredentials(CLIENTS.alice, { resource: support })
  t.equal(JSON.parse(Buffer.from(forSupport.split('.')[1], 'base64url').toString()).aud, support, 'the server issued a token for the endpoint')
  for (let round = 1; round <= 2; round++) { // the second round answers from the remembered verdicts
    t.equal((await list(mcpWide, '/mcp/support')).status, 200, `round ${round}: a token for /mcp is accepted on the endpoint, as before`)
    t.equal((await list(forSupport, '/mcp/support')).status, 200, `round ${round}: a token for the endpoint is accepted there`)
    const onMcp = await list(forSupport)
    t.equal(onMcp.status, 401, `round ${round}: and refused on /mcp`)
    t.equal(onMcp.challenge, `Bearer error="invalid_token", error_description="${INVALID_TOKEN_DESCRIPTIONS.audience}", resource_metadata="${s.prm}"`)
    const onBilling = await list(forSupport, '/mcp/billing')
    t.equal(onBilling.status, 401, `round ${round}: and on another endpoint`)
    t.equal(onBilling.challenge, `Bearer error="invalid_token", error_description="${INVALID_TOKEN_DESCRIPTIONS.audience}", resource_metadata="${billingPrm}"`)
  }
})
