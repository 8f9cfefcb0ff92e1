/**
 * mcpx as an OAuth 2.1 resource server, end to end (docs/authentication.md › OAuth 2.1 (the MCP authorization spec)): a real listening
 * mcpx, the fixture upstream, and a real authorization server (oidc-provider, test/helpers/oauth.ts).
 * Tests are named auth/oauth/<requirement>.
 */
import t, { type Test } from 'tap'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { build, fixtureUpstreams, legacyHeaders, modernHeaders, modernMeta, type BuildOptions } from '../helpers/app.js'
import { freePort, startDaemon } from '../helpers/daemon.js'
import { initializeBody, pollUntil, SseReader } from '../helpers/legacy.js'
import { CLIENTS, SCOPES, newSigningKey, startAuthServer, type AuthServer } from '../helpers/oauth.js'
import { INVALID_TOKEN_DESCRIPTIONS } from '../../lib/auth/verifier.js'

// Two tests at a time: each has its own authorization server, mcpx and fixture (and key prefix),
// and two of them wait out a token's expiry (2-3 s), which the others now overlap.
t.jobs = 2

const REQUIRED = ['mcp:tools']

interface Served { base: string, resource: string, prm: string, app: FastifyInstance }

/**
 * mcpx on a real socket whose `auth.oauth.resource` is its own URL (a free port is picked first:
 * the resource is config, never guessed from Host).
 */
async function serve (t: Test, as: AuthServer, oauth: Record<string, unknown> = {}, extra: BuildOptions = {}): Promise<Served> {
  const port = await freePort()
  const prefix = typeof extra.prefix === 'string' ? extra.prefix : ''
  const base = `http://127.0.0.1:${port}`
  const resource = `${base}${prefix}/mcp`
  const app = await build(t, { upstreams: fixtureUpstreams(), ...extra, auth: { oauth: { issuer: as.issuer, resource, requiredScopes: REQUIRED, ...oauth } } })
  await app.listen({ host: '127.0.0.1', port })
  return { base, resource, prm: `${base}/.well-known/oauth-protected-resource${prefix}/mcp`, app }
}

function bearer (token: string): Record<string, string> { return { authorization: `Bearer ${token}` } }

/** A modern tools/list with this token (no token when undefined), to `/mcp` or another path (a curated endpoint's). */
async function modernList (s: Served, token: string | undefined, headers: Record<string, string> = {}, path = '/mcp'): Promise<Response> {
  return await fetch(`${s.base}${path}`, {
    method: 'POST',
    headers: modernHeaders('tools/list', undefined, { ...(token !== undefined ? bearer(token) : {}), ...headers }),
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: modernMeta() } })
  })
}

/** A legacy request in a session (or initialize without). */
async function legacyPost (s: Served, token: string | undefined, body: unknown, sid?: string): Promise<Response> {
  return await fetch(`${s.base}/mcp`, {
    method: 'POST',
    headers: legacyHeaders({ ...(token !== undefined ? bearer(token) : {}), ...(sid !== undefined ? { 'mcp-session-id': sid } : {}), ...(sid !== undefined ? { 'mcp-protocol-version': '2025-11-25' } : {}) }),
    body: JSON.stringify(body)
  })
}

const ID_LESS = { jsonrpc: '2.0', error: { code: -32_600 } }

t.test('auth/oauth/protected-resource-metadata-both-forms', async t => {
  const as = await startAuthServer(t)
  for (const prefix of ['', '/tools']) {
    const s = await serve(t, as, { scopesSupported: SCOPES, resourceName: 'acme tools' }, { prefix, transport: { allowedOrigins: ['https://app.example.com'] } })
    const expected = { resource: s.resource, authorization_servers: [as.issuer], scopes_supported: SCOPES, bearer_methods_supported: ['header'], resource_name: 'acme tools' }
    for (const path of ['/.well-known/oauth-protected-resource', `/.well-known/oauth-protected-resource${prefix}/mcp`]) {
      const res = await fetch(`${s.base}${path}`, { headers: { origin: 'https://app.example.com' } })
      t.equal(res.status, 200, `${path}: no token needed`)
      t.match(res.headers.get('content-type'), /^application\/json/)
      t.equal(res.headers.get('access-control-allow-origin'), 'https://app.example.com', `${path}: an allowed origin can read it`)
      t.same(await res.json(), expected, path)
    }
    const preflight = await fetch(`${s.prm}`, { method: 'OPTIONS', headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET', 'access-control-request-headers': 'mcp-protocol-version' } })
    t.equal(preflight.status, 204, 'a browser preflight (the SDK sends MCP-Protocol-Version) is granted')
    t.equal(preflight.headers.get('access-control-allow-origin'), 'https://app.example.com')
    const foreign = await fetch(s.prm, { headers: { origin: 'https://evil.example' } })
    t.equal(foreign.headers.get('access-control-allow-origin'), null, 'another origin gets no CORS grant')
    await foreign.text()
  }
})

t.test('auth/oauth/401-challenge-every-method-and-era', async t => {
  const as = await startAuthServer(t)
  const s = await serve(t, as)
  const challenge = `Bearer resource_metadata="${s.prm}", scope="mcp:tools"`
  t.equal(s.prm, `${s.base}/.well-known/oauth-protected-resource/mcp`, 'RFC 9728 §3.1: derived from resource')
  const requests: Array<[string, RequestInit]> = [
    ['legacy POST initialize', { method: 'POST', headers: legacyHeaders(), body: JSON.stringify(initializeBody('2025-11-25')) }],
    ['legacy POST in a (made-up) session', { method: 'POST', headers: legacyHeaders({ 'mcp-session-id': 'made.up', 'mcp-protocol-version': '2025-11-25' }), body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) }],
    ['modern POST', { method: 'POST', headers: modernHeaders('tools/list'), body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: modernMeta() } }) }],
    ['legacy GET with a session header', { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': 'made.up' } }],
    ['modern GET', { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2026-07-28' } }],
    ['legacy DELETE', { method: 'DELETE', headers: { 'mcp-session-id': 'made.up' } }],
    ['modern DELETE', { method: 'DELETE', headers: { 'mcp-protocol-version': '2026-07-28' } }]
  ]
  for (const [what, init] of requests) {
    for (const authorization of [undefined, 'Basic dXNlcjpwYXNz']) {
      const headers = { ...(init.headers as Record<string, string>), ...(authorization !== undefined ? { authorization } : {}) }
      const res = await fetch(`${s.base}/mcp`, { ...init, headers })
      t.equal(res.status, 401, `${what} (${authorization ?? 'no Authorization'}): 401, before any session lookup`)
      t.equal(res.headers.get('www-authenticate'), challenge, what)
      const body = await res.json() as Record<string, unknown>
      t.match(body, ID_LESS, what)
      t.notOk('id' in body, `${what}: id-less`)
    }
  }
})

t.test('servers/oauth/endpoint-is-its-own-protected-resource', async t => {
  // RFC 9728 §3.3: the metadata a 401 names must have, as its resource, the URL the client asked;
  // /mcp/<name> names its own, and a token for it (RFC 8707) is accepted there and nowhere else.
  const as = await startAuthServer(t)
  const s = await serve(t, as, {}, { servers: { support: { tools: { allow: ['echo'] } }, billing: { tools: { allow: ['echo'] } } } })
  const support = `${s.resource}/support`
  const supportPrm = `${s.base}/.well-known/oauth-protected-resource/mcp/support`
  const billingPrm = `${s.base}/.well-known/oauth-protected-resource/mcp/billing`
  const missing = await modernList(s, undefined, {}, '/mcp/support')
  t.equal(missing.status, 401)
  t.equal(missing.headers.get('www-authenticate'), `Bearer resource_metadata="${supportPrm}", scope="mcp:tools"`, 'the 401 names the endpoint\'s own metadata')
  await missing.text()
  const document = await fetch(supportPrm)
  t.equal(document.status, 200, 'served without a token')
  const mcpDocument = await (await fetch(s.prm)).json() as Record<string, unknown>
  t.same(await document.json(), { ...mcpDocument, resource: support }, 'its resource is the URL the client asked; the rest is /mcp\'s')
  const unknown = await fetch(`${s.base}/.well-known/oauth-protected-resource/mcp/nosuch`)
  t.equal(unknown.status, 404, 'no metadata for an endpoint that is not configured')
  await unknown.text()
  const mcpWide = await as.clientCredentials(CLIENTS.alice, { resource: s.resource })
  const forSupport = await as.clientCredentials(CLIENTS.alice, { resource: support })
  t.equal(JSON.parse(Buffer.from(forSupport.split('.')[1], 'base64url').toString()).aud, support, 'the server issued a token for the endpoint')
  for (let round = 1; round <= 2; round++) { // the second round answers from the remembered verdicts
    t.equal((await modernList(s, mcpWide, {}, '/mcp/support')).status, 200, `round ${round}: a token for /mcp is accepted on the endpoint, as before`)
    t.equal((await modernList(s, forSupport, {}, '/mcp/support')).status, 200, `round ${round}: a token for the endpoint is accepted there`)
    const onMcp = await modernList(s, forSupport)
    t.equal(onMcp.status, 401, `round ${round}: and refused on /mcp`)
    t.equal(onMcp.headers.get('www-authenticate'), `Bearer error="invalid_token", error_description="${INVALID_TOKEN_DESCRIPTIONS.audience}", resource_metadata="${s.prm}"`)
    await onMcp.text()
    const onBilling = await modernList(s, forSupport, {}, '/mcp/billing')
    t.equal(onBilling.status, 401, `round ${round}: and on another endpoint`)
    t.equal(onBilling.headers.get('www-authenticate'), `Bearer error="invalid_token", error_description="${INVALID_TOKEN_DESCRIPTIONS.audience}", resource_metadata="${billingPrm}"`)
    await onBilling.text()
  }
})

t.test('auth/oauth/origin-refused-before-token', async t => {
  const as = await startAuthServer(t)
  const s = await serve(t, as)
  const res = await modernList(s, undefined, { origin: 'https://evil.example' })
  t.equal(res.status, 403)
  t.equal(res.headers.get('www-authenticate'), null)
  await res.text()
})

t.test('auth/oauth/valid-tokens-admitted', async t => {
  const as = await startAuthServer(t)
  const s = await serve(t, as)
  const token = await as.clientCredentials(CLIENTS.alice, { resource: s.resource })
  t.equal(JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString()).typ, 'at+jwt', 'the real server issues RFC 9068 at+jwt')
  const modern = await modernList(s, token)
  t.equal(modern.status, 200, 'modern tools/list with the AS token')
  t.ok(((await modern.json()) as { result: { tools: unknown[] } }).result.tools.length > 0)
  const init = await legacyPost(s, token, initializeBody('2025-11-25'))
  t.equal(init.status, 200, 'legacy initialize with the AS token')
  await init.text()
  const jwtTyp = await as.sign({ iss: as.issuer, sub: 'carol', aud: s.resource, scope: 'mcp:tools', exp: Math.floor(Date.now() / 1000) + 60 }, { header: { typ: 'JWT' } })
  const typed = await modernList(s, jwtTyp)
  t.equal(typed.status, 200, 'typ JWT is accepted too')
  await typed.text()
})

t.test('auth/oauth/invalid-tokens-401-invalid-token', async t => {
  const as = await startAuthServer(t)
  const s = await serve(t, as, { clockTolerance: '30s' })
  const now = Math.floor(Date.now() / 1000)
  const good = { iss: as.issuer, sub: 'carol', aud: s.resource, scope: 'mcp:tools', iat: now, exp: now + 300 }
  // Warm the key cache with a good token first, so every refusal below is about the token.
  t.equal((await modernList(s, await as.sign(good))).status, 200, 'a good crafted token passes')
  const foreign = await newSigningKey()
  const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url')
  const goodToken = await as.sign(good)
  const [h, p, sig] = goodToken.split('.')
  const otherSig = (await as.sign({ ...good, sub: 'mallory' })).split('.')[2]
  const hmac = (await import('node:crypto')).createHmac('sha256', 'secret').update(`${b64({ alg: 'HS256', kid: as.key.kid, typ: 'at+jwt' })}.${p}`).digest('base64url')
  const cases: Array<[string, string, RegExp]> = [
    ['bad-signature (signature of another payload)', `${h}.${p}.${otherSig}`, /signature is invalid/],
    ['bad-signature (foreign key, same kid)', await as.sign(good, { key: { ...foreign, kid: as.key.kid } }), /signature is invalid/],
    ['alg none', `${b64({ alg: 'none', typ: 'at+jwt' })}.${p}.`, /algorithm is not allowed|malformed/],
    ['wrong alg (HS256 with the key id)', `${b64({ alg: 'HS256', kid: as.key.kid, typ: 'at+jwt' })}.${p}.${hmac}`, /algorithm is not allowed/],
    ['alg the key does not allow (PS256 on an RS256 key)', await as.sign(good, { header: { alg: 'PS256' } }), /unknown key/],
    ['unknown key', await as.sign(good, { key: foreign }), /unknown key/],
    ['wrong issuer', await as.sign({ ...good, iss: 'http://127.0.0.1:1' }), /another authorization server/],
    ['expired beyond tolerance', await as.sign({ ...good, exp: now - 31 - 60 }), /expired/],
    ['not yet valid beyond tolerance', await as.sign({ ...good, nbf: now + 120 }), /not yet valid/],
    ['wrong audience (crafted)', await as.sign({ ...good, aud: 'http://127.0.0.1:1/mcp' }), /another resource/],
    ['wrong audience (the real AS, another resource)', await as.clientCredentials(CLIENTS.alice, { resource: 'https://other.example.com/mcp' }), /another resource/],
    ['no exp', await as.sign({ ...good, exp: undefined }), /required claim/],
    ['an id token type', await as.sign(good, { header: { typ: 'id_token+jwt' } }), /type is not accepted/],
    ['malformed (opaque, no introspection)', 'not-a-jwt', /malformed/],
    ['malformed (three garbage segments)', 'aaa.bbb.ccc', /malformed/],
    ['malformed (bad JSON header)', `${Buffer.from('{x').toString('base64url')}.${p}.${sig}`, /malformed/]
  ]
  for (const [what, token, description] of cases) {
    const res = await modernList(s, token)
    t.equal(res.status, 401, `${what}: 401`)
    const header = res.headers.get('www-authenticate') ?? ''
    t.match(header, /^Bearer error="invalid_token", error_description="[^"]+", resource_metadata="[^"]+"$/, `${what}: invalid_token`)
    t.match(header, description, `${what}: described`)
    t.ok(header.includes(`resource_metadata="${s.prm}"`), `${what}: resource_metadata`)
    t.match(await res.json(), ID_LESS)
  }
  const within = await modernList(s, await as.sign({ ...good, exp: now - 5 }))
  t.equal(within.status, 200, 'expired within clockTolerance still passes')
  await within.text()
})

t.test('auth/oauth/insufficient-scope-403', async t => {
  const as = await startAuthServer(t)
  const s = await serve(t, as)
  const token = await as.clientCredentials(CLIENTS.alice, { resource: s.resource, scope: 'mcp:admin' })
  const res = await modernList(s, token)
  t.equal(res.status, 403)
  t.equal(res.headers.get('www-authenticate'), `Bearer error="insufficient_scope", scope="mcp:tools", resource_metadata="${s.prm}"`)
  t.match(await res.json(), { jsonrpc: '2.0', error: { code: -32_600, message: /required scope/ } })
})

t.test('auth/oauth/jwks-rotation', async t => {
  const as = await startAuthServer(t)
  // Cooldown 0: every unknown kid may refetch, so the rotation is seen at once.
  const s = await serve(t, as, { jwksCooldown: 0 })
  const first = await as.clientCredentials(CLIENTS.alice, { resource: s.resource })
  t.equal((await modernList(s, first)).status, 200)
  const fetchesBefore = as.jwksFetches()
  t.equal(fetchesBefore, 1, 'keys fetched once')
  await as.rotate(true)
  const second = await as.clientCredentials(CLIENTS.alice, { resource: s.resource })
  t.not(JSON.parse(Buffer.from(second.split('.')[0], 'base64url').toString()).kid, JSON.parse(Buffer.from(first.split('.')[0], 'base64url').toString()).kid, 'the new token names the new key')
  t.equal((await modernList(s, second)).status, 200, 'a token signed by the rotated-in key passes')
  t.equal(as.jwksFetches(), fetchesBefore + 1, 'the unknown kid caused exactly one refetch')
  t.equal((await modernList(s, first)).status, 200, 'the old key, still published, still passes')
  t.equal((await modernList(s, second)).status, 200)
  t.equal(as.jwksFetches(), fetchesBefore + 1, 'known kids fetch nothing')
})

t.test('auth/oauth/jwks-unknown-kid-refetch-once-per-cooldown', async t => {
  const as = await startAuthServer(t)
  const s = await serve(t, as, { jwksCooldown: '1h' })
  const token = await as.clientCredentials(CLIENTS.alice, { resource: s.resource })
  t.equal((await modernList(s, token)).status, 200)
  t.equal(as.jwksFetches(), 1)
  const now = Math.floor(Date.now() / 1000)
  for (let i = 0; i < 5; i++) {
    const stranger = await as.sign({ iss: as.issuer, sub: 'x', aud: s.resource, scope: 'mcp:tools', exp: now + 60 }, { key: await newSigningKey() })
    const res = await modernList(s, stranger)
    t.equal(res.status, 401, `unknown kid ${i}: 401`)
    await res.text()
  }
  t.equal(as.jwksFetches(), 1, 'within the cooldown, unknown kids fetch nothing')
})

/** The `error_description` of a 401's challenge, and the body read. */
async function descriptionOf (res: Response): Promise<string | undefined> {
  await res.text()
  return /error_description="([^"]*)"/.exec(res.headers.get('www-authenticate') ?? '')?.[1]
}

t.test('auth/oauth/authorization-server-down', async t => {
  const as = await startAuthServer(t)
  const s = await serve(t, as, { jwksCooldown: 0 })
  const token = await as.clientCredentials(CLIENTS.alice, { resource: s.resource })
  t.equal((await modernList(s, token)).status, 200, 'keys cached while the server is up')
  as.down()
  t.equal((await modernList(s, token)).status, 200, 'the server is down: a token signed by a cached key still passes')
  const now = Math.floor(Date.now() / 1000)
  for (let i = 0; i < 3; i++) {
    const stranger = await as.sign({ iss: as.issuer, sub: 'x', aud: s.resource, scope: 'mcp:tools', exp: now + 60 }, { key: await newSigningKey() })
    const res = await modernList(s, stranger)
    t.equal(res.status, 401, 'a token signed by a key mcpx never saw: 401 (nothing else is admitted)')
    t.match(res.headers.get('www-authenticate'), /^Bearer error="invalid_token"/)
    t.equal(await descriptionOf(res), INVALID_TOKEN_DESCRIPTIONS.unavailable, 'its refetch failed: "cannot be checked now" (retry), not "unknown key" (get a new token)')
  }
  t.equal((await modernList(s, token)).status, 200, 'and mcpx still serves')
  as.up()
  t.equal((await modernList(s, token)).status, 200, 'the server is back')

  // A fresh mcpx that never reached the server: every token is 401, nothing crashes.
  as.down()
  const cold = await serve(t, as, { jwksCooldown: 0 })
  const res = await modernList(cold, token)
  t.equal(res.status, 401, 'no keys ever fetched: 401')
  t.match(res.headers.get('www-authenticate'), /error="invalid_token", error_description="The access token cannot be checked now/)
  await res.text()
  as.up()
  const fresh = await as.clientCredentials(CLIENTS.alice, { resource: cold.resource })
  t.equal((await modernList(cold, fresh)).status, 200, 'discovery and keys recover once the server answers')
})

t.test('auth/oauth/unknown-kid-while-server-down-cannot-be-checked-now', async t => {
  // A client mid-rotation holds a token signed by a key the server published after mcpx's last
  // fetch. While the server cannot be reached that key cannot be known: "cannot be checked now"
  // tells the client to retry; "unknown key" would send it for a new token, signed by the same key.
  const as = await startAuthServer(t)
  const s = await serve(t, as, { jwksCooldown: 500 })
  const token = await as.clientCredentials(CLIENTS.alice, { resource: s.resource })
  t.equal((await modernList(s, token)).status, 200, 'keys fetched while the server is up')
  as.down()
  const rotated = await newSigningKey()
  const stranger = await as.sign({ iss: as.issuer, sub: 'x', aud: s.resource, scope: 'mcp:tools', exp: Math.floor(Date.now() / 1000) + 60 }, { key: rotated })
  // Inside the cooldown after the successful fetch no refetch is tried: "unknown key" (docs › Keys).
  // Past it, the refetch fails: every answer from then on is "cannot be checked now".
  const first = await pollUntil('an unknown kid answered "cannot be checked now" once the refetch failed', async () => {
    const res = await modernList(s, stranger)
    const answer = { status: res.status, description: await descriptionOf(res) }
    return answer.status === 401 && answer.description === INVALID_TOKEN_DESCRIPTIONS.key ? undefined : answer
  }, 10_000)
  t.same(first, { status: 401, description: INVALID_TOKEN_DESCRIPTIONS.unavailable }, 'the refetch failed: 401, cannot be checked now')
  for (let i = 0; i < 3; i++) {
    // Inside the cooldown after the failed fetch: the cached keys only, and they lack the kid.
    const res = await modernList(s, stranger)
    t.equal(res.status, 401)
    t.match(res.headers.get('www-authenticate'), /^Bearer error="invalid_token", error_description="The access token cannot be checked now/)
    t.equal(await descriptionOf(res), INVALID_TOKEN_DESCRIPTIONS.unavailable, `request ${i}: cannot be checked now`)
  }
  t.equal((await modernList(s, token)).status, 200, 'a token signed by a cached key still passes')
})

t.test('auth/oauth/opaque-token-introspection', async t => {
  const as = await startAuthServer(t)
  const dir = t.testdir({ 'secret.txt': CLIENTS.mcpx.clientSecret + '\n' })
  const s = await serve(t, as, { introspection: { url: `${as.issuer}/token/introspection`, clientId: CLIENTS.mcpx.clientId, clientSecretFile: join(dir, 'secret.txt') } })
  const opaque = await as.clientCredentials(CLIENTS.opaque, { resource: s.resource })
  t.notOk(opaque.includes('.'), 'the real server issued an opaque token')
  const res = await modernList(s, opaque)
  t.equal(res.status, 200, 'an opaque token is introspected (RFC 7662) and admitted')
  await res.text()
  const elsewhere = await as.clientCredentials(CLIENTS.opaque, { resource: 'https://other.example.com/mcp' })
  const other = await modernList(s, elsewhere)
  t.equal(other.status, 401, 'an opaque token for another resource: 401')
  t.match(other.headers.get('www-authenticate'), /error="invalid_token", error_description="The access token was issued for another resource"/)
  await other.text()
  const unknown = await modernList(s, 'made-up-opaque-token-0123456789')
  t.equal(unknown.status, 401, 'an unknown opaque token: inactive, 401')
  t.match(unknown.headers.get('www-authenticate'), /error="invalid_token", error_description="The access token is not active"/)
  await unknown.text()
  const narrow = await as.clientCredentials(CLIENTS.opaque, { resource: s.resource, scope: 'mcp:admin' })
  t.equal((await modernList(s, narrow)).status, 403, 'introspected scopes are checked too')
})

/** Initializes a legacy session as this token's holder; returns its id. */
async function openSession (t: Test, s: Served, token: string): Promise<string> {
  const init = await legacyPost(s, token, initializeBody('2025-11-25'))
  t.equal(init.status, 200, 'initialize')
  await init.text()
  const sid = init.headers.get('mcp-session-id')
  if (sid === null) throw new Error('no session id')
  const done = await legacyPost(s, token, { jsonrpc: '2.0', method: 'notifications/initialized' }, sid)
  await done.text()
  return sid
}

for (const store of ['memory', 'redis'] as const) {
  t.test(`auth/oauth/session-survives-refresh-and-refuses-another-subject-${store}-store`, async t => {
    const as = await startAuthServer(t)
    const sessions = store === 'redis' ? { store: 'redis', keyPrefix: `mcpx-test-oauth-${process.pid}-${Date.now()}:` } : { store: 'memory' }
    const s = await serve(t, as, {}, { sessions })
    const aliceFirst = await as.clientCredentials(CLIENTS.alice, { resource: s.resource })
    const sid = await openSession(t, s, aliceFirst)
    const aliceRefreshed = await as.clientCredentials(CLIENTS.alice, { resource: s.resource })
    t.not(aliceRefreshed, aliceFirst, 'a new token for the same subject')
    const list = await legacyPost(s, aliceRefreshed, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, sid)
    t.equal(list.status, 200, 'the session survives the token refresh')
    t.match(await list.json(), { id: 2, result: { tools: [] } })
    const bob = await as.clientCredentials(CLIENTS.bob, { resource: s.resource })
    const stolen = await legacyPost(s, bob, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, sid)
    t.equal(stolen.status, 404, 'another subject with the session id: 404, as for an unknown session')
    await stolen.text()
    const get = await fetch(`${s.base}/mcp`, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid, ...bearer(bob) } })
    t.equal(get.status, 404, 'another subject cannot open its GET stream')
    await get.text()
    const del = await fetch(`${s.base}/mcp`, { method: 'DELETE', headers: { 'mcp-session-id': sid, ...bearer(bob) } })
    t.equal(del.status, 404, 'nor end it')
    const abort = new AbortController()
    const own = await fetch(`${s.base}/mcp`, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25', ...bearer(aliceRefreshed) }, signal: abort.signal })
    t.equal(own.status, 200, 'its subject opens the GET stream with the refreshed token')
    abort.abort()
    await own.body?.cancel().catch(() => {})
    const end = await fetch(`${s.base}/mcp`, { method: 'DELETE', headers: { 'mcp-session-id': sid, ...bearer(aliceFirst) } })
    t.equal(end.status, 204, 'and ends it, even with the first token')
  })
}

t.test('auth/oauth/request-state-bound-to-principal', async t => {
  const as = await startAuthServer(t)
  const s = await serve(t, as, {}, { upstreams: fixtureUpstreams(['--era', 'legacy']) })
  const call = async (token: string, id: number, extra: Record<string, unknown> = {}): Promise<{ status: number, body: { result?: Record<string, unknown>, error?: { code: number, message: string } } }> => {
    const res = await fetch(`${s.base}/mcp`, {
      method: 'POST',
      headers: modernHeaders('tools/call', 'elicit', { accept: 'application/json', ...bearer(token) }),
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'elicit', arguments: {}, ...extra, _meta: modernMeta({ elicitation: {} }) } })
    })
    return { status: res.status, body: await res.json() as never }
  }
  const alice = await as.clientCredentials(CLIENTS.alice, { resource: s.resource })
  const first = await call(alice, 1)
  t.equal(first.body.result?.resultType, 'input_required')
  const state = first.body.result?.requestState as string
  const key = Object.keys(first.body.result?.inputRequests as Record<string, unknown>)[0]
  const answer = { action: 'accept', content: { name: 'alice' } }
  const bob = await as.clientCredentials(CLIENTS.bob, { resource: s.resource })
  const hijack = await call(bob, 2, { inputResponses: { [key]: { action: 'accept', content: { name: 'mallory' } } }, requestState: state })
  t.equal(hijack.status, 400, 'another subject cannot resume the state')
  t.match(hijack.body.error, { code: -32_602, message: /another caller/ })
  const refreshed = await as.clientCredentials(CLIENTS.alice, { resource: s.resource })
  const own = await call(refreshed, 3, { inputResponses: { [key]: answer }, requestState: state })
  t.equal(own.status, 200, 'the same subject resumes it with a refreshed token')
  t.equal(own.body.result?.resultType, 'complete')
})

t.test('auth/oauth/no-token-text-in-logs', async t => {
  const as = await startAuthServer(t)
  const resource = 'http://127.0.0.1/mcp-log-test'
  const secretEnv = { MCPX_TEST_INTROSPECTION_SECRET: CLIENTS.mcpx.clientSecret }
  const daemon = await startDaemon(t, {
    upstreams: fixtureUpstreams(),
    auth: {
      oauth: { issuer: as.issuer, resource, requiredScopes: REQUIRED, introspection: { url: `${as.issuer}/token/introspection`, clientId: CLIENTS.mcpx.clientId, clientSecretEnv: 'MCPX_TEST_INTROSPECTION_SECRET' } },
      tokens: [{ name: 'ci', tokenEnv: 'MCPX_TEST_CI_TOKEN' }]
    }
  }, { env: { MCPX_LOG_LEVEL: 'debug', MCPX_TEST_CI_TOKEN: 'static-ci-token-0123456789abcdef', ...secretEnv } })
  const s: Served = { base: daemon.base, resource, prm: '', app: undefined as never }
  const now = Math.floor(Date.now() / 1000)
  const tokens = [
    await as.clientCredentials(CLIENTS.alice, { resource }),
    await as.clientCredentials(CLIENTS.alice, { resource, scope: 'mcp:admin' }),
    await as.clientCredentials(CLIENTS.opaque, { resource }),
    await as.sign({ iss: as.issuer, sub: 'carol', aud: resource, scope: 'mcp:tools', exp: now - 3600 }),
    await as.sign({ iss: as.issuer, sub: 'carol', aud: resource, scope: 'mcp:tools', exp: now + 60 }, { key: await newSigningKey() }),
    'static-ci-token-0123456789abcdef',
    'made-up-opaque-token-0123456789'
  ]
  const statuses: number[] = []
  for (const token of tokens) {
    const res = await modernList(s, token)
    statuses.push(res.status)
    await res.text()
  }
  t.same(statuses, [200, 403, 200, 401, 401, 200, 401], 'admitted and refused alike')
  const before = daemon.lines.length
  daemon.child.kill('SIGTERM')
  await daemon.exited
  t.ok(daemon.lines.length >= before)
  const everything = JSON.stringify(daemon.lines) + daemon.stderr()
  t.match(everything, /bearer token refused/, 'refusals were logged (at debug)')
  for (const token of tokens) {
    for (const part of token.split('.').filter(p => p.length >= 16)) {
      t.notOk(everything.includes(part), `no part of a token in the logs (${part.slice(0, 6)}…)`)
    }
  }
  t.notOk(everything.includes(CLIENTS.mcpx.clientSecret), 'nor the introspection client secret')
})

t.test('auth/tokens/named-static-tokens-beside-oauth', async t => {
  const as = await startAuthServer(t)
  process.env.MCPX_TEST_NAMED_CI = 'named-ci-token-0123456789abcdef'
  process.env.MCPX_TEST_NAMED_OPS = 'named-ops-token-0123456789abcdef'
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const app = await build(t, {
    upstreams: fixtureUpstreams(),
    auth: {
      oauth: { issuer: as.issuer, resource: `${base}/mcp`, requiredScopes: REQUIRED },
      tokens: [{ name: 'ci', tokenEnv: 'MCPX_TEST_NAMED_CI', scopes: ['mcp:tools'] }, { name: 'ops', tokenEnv: 'MCPX_TEST_NAMED_OPS' }],
      bearerTokens: ['legacy-token-0123456789abcdef']
    }
  })
  await app.listen({ host: '127.0.0.1', port })
  const served: Served = { base, resource: `${base}/mcp`, prm: '', app }
  for (const token of ['named-ci-token-0123456789abcdef', 'named-ops-token-0123456789abcdef', 'legacy-token-0123456789abcdef', await as.clientCredentials(CLIENTS.alice, { resource: served.resource })]) {
    const res = await modernList(served, token)
    t.equal(res.status, 200, `${token.slice(0, 10)}…: admitted`)
    await res.text()
  }
  const sid = await openSession(t, served, 'named-ci-token-0123456789abcdef')
  const same = await legacyPost(served, 'named-ci-token-0123456789abcdef', { jsonrpc: '2.0', id: 2, method: 'tools/list' }, sid)
  t.equal(same.status, 200, 'the session serves its token')
  await same.text()
  const other = await legacyPost(served, 'named-ops-token-0123456789abcdef', { jsonrpc: '2.0', id: 3, method: 'tools/list' }, sid)
  t.equal(other.status, 404, 'another named token: another principal')
  await other.text()
  const wrong = await modernList(served, 'named-ci-token-0123456789abcdeX')
  t.equal(wrong.status, 401)
  t.match(wrong.headers.get('www-authenticate'), /^Bearer error="invalid_token"/)
  await wrong.text()
})

t.test('auth/oauth/remembered-token-still-expires', async t => {
  const as = await startAuthServer(t)
  const s = await serve(t, as, { clockTolerance: 0 })
  const now = Math.floor(Date.now() / 1000)
  const shortLived = await as.sign({ iss: as.issuer, sub: 'carol', aud: s.resource, scope: 'mcp:tools', exp: now + 2 })
  t.equal((await modernList(s, shortLived)).status, 200, 'accepted (and remembered)')
  await new Promise(resolve => setTimeout(resolve, 3_100))
  const later = await modernList(s, shortLived)
  t.equal(later.status, 401, 'the remembered verdict ends when the token expires')
  t.match(later.headers.get('www-authenticate'), /The access token is expired/)
  await later.text()
})

t.test('auth/oauth/stream-ends-when-its-token-expires', async t => {
  // A GET stream and a subscriptions/listen stream opened with a token end when it expires: the
  // client reconnects with a fresh one (docs/authentication.md › Tokens that expire).
  const as = await startAuthServer(t)
  const s = await serve(t, as, { clockTolerance: 0 })
  const exp = Math.floor(Date.now() / 1000) + 2
  const token = await as.sign({ iss: as.issuer, sub: 'carol', aud: s.resource, scope: 'mcp:tools', exp })
  const init = await legacyPost(s, token, initializeBody('2025-11-25'))
  const sid = init.headers.get('mcp-session-id')
  await init.text()
  t.ok(sid !== null, 'a session')
  const abort = new AbortController()
  t.teardown(() => abort.abort())
  const get = new SseReader(await fetch(`${s.base}/mcp`, { headers: { accept: 'text/event-stream', ...bearer(token), 'mcp-session-id': sid ?? '', 'mcp-protocol-version': '2025-11-25' }, signal: abort.signal }))
  t.equal(get.response.status, 200)
  const listen = new SseReader(await fetch(`${s.base}/mcp`, {
    method: 'POST',
    headers: modernHeaders('subscriptions/listen', undefined, bearer(token)),
    body: JSON.stringify({ jsonrpc: '2.0', id: 'l', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: modernMeta() } }),
    signal: abort.signal
  }))
  await listen.until('the acknowledgement', () => listen.messages.some(m => m.method === 'notifications/subscriptions/acknowledged'))
  const bound = setTimeout(() => { abort.abort() }, 15_000) // a stream that never ends fails the test, not the run
  await Promise.all([get.done, listen.done])
  clearTimeout(bound)
  t.notOk(abort.signal.aborted, 'both streams ended by themselves')
  t.ok(Date.now() >= exp * 1000, 'not before the token expired')
})
