/**
 * mcpx's own credentials to HTTP upstreams (docs/authentication.md › Upstream credentials), end to end: a real
 * authorization server (oidc-provider, with an RFC 8693 grant), a protected upstream (the fixture
 * SDK server behind a bearer check that records the subject and audience it saw), and mcpx in
 * between. Tests are named auth/upstream/<requirement>.
 */
import t, { type Test } from 'tap'
import { join } from 'node:path'
import { build, fixtureUpstreams, modernHeaders, modernMeta, type BuildOptions } from '../helpers/app.js'
import { freePort } from '../helpers/daemon.js'
import { captureLogger } from '../helpers/registry.js'
import { CLIENTS, TOKEN_EXCHANGE, startAuthServer, type AuthServer } from '../helpers/oauth.js'
import { startProtectedUpstream, type ProtectedUpstream } from '../helpers/protected-upstream.js'
import { createUpstreamAuthProvider } from '../../lib/upstreams/credentials.js'

interface Reply { status: number, body: { id?: unknown, result?: { content?: Array<{ text: string }> }, error?: { code: number, message: string } } }

/** A modern tools/call through mcpx, with `token` as the caller's bearer token. */
async function callTool (base: string, name: string, token: string | undefined, id = 1): Promise<Reply> {
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: modernHeaders('tools/call', name, { accept: 'application/json', ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}) }),
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: { text: 'hi' }, _meta: modernMeta() } })
  })
  return { status: res.status, body: await res.json() as Reply['body'] }
}

/** The gateway client's secret in a file (secrets come from env or files, never inline). */
function secretFile (t: Test): string {
  return join(t.testdir({ 'gateway.secret': CLIENTS.gateway.clientSecret + '\n' }), 'gateway.secret')
}

/** mcpx with the protected upstream (`auth` given) beside the stdio fixture, listening on a free port. */
async function serve (t: Test, as: AuthServer, upstream: ProtectedUpstream, auth: Record<string, unknown>, extra: BuildOptions = {}): Promise<{ base: string, resource: string }> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const resource = `${base}/mcp`
  const app = await build(t, {
    upstreams: { ...fixtureUpstreams(), protected: { url: upstream.url, auth: { clientId: CLIENTS.gateway.clientId, clientSecretFile: secretFile(t), issuer: as.issuer, resource: upstream.url, ...auth } } },
    auth: { oauth: { issuer: as.issuer, resource }, tokens: [{ name: 'ci', tokenEnv: 'MCPX_TEST_UPSTREAM_CI' }] },
    ...extra
  })
  await app.listen({ host: '127.0.0.1', port })
  return { base, resource }
}

process.env.MCPX_TEST_UPSTREAM_CI = 'upstream-test-ci-token-0123456789'

t.test('auth/upstream/client-credentials', async t => {
  const as = await startAuthServer(t)
  const upstream = await startProtectedUpstream(t, as.issuer)
  const s = await serve(t, as, upstream, { type: 'client_credentials', scope: 'mcp:tools' })
  const alice = await as.clientCredentials(CLIENTS.alice, { resource: s.resource })
  for (const id of [1, 2, 3]) {
    const reply = await callTool(s.base, 'protected__echo', alice, id)
    t.equal(reply.status, 200, `call ${id}`)
    t.equal(reply.body.result?.content?.[0].text, 'hi')
  }
  const calls = upstream.seen.filter(r => r.rpc === 'tools/call')
  t.equal(calls.length, 3)
  for (const call of calls) t.match(call, { sub: CLIENTS.gateway.clientId, aud: upstream.url, clientId: CLIENTS.gateway.clientId }, 'the upstream saw mcpx itself, for its own audience')
  t.ok(upstream.seen.some(r => r.rpc === 'initialize' || r.rpc === 'server/discover'), 'the connection set-up carried the token too')
  t.equal(as.issued('client_credentials') - 1, 1, 'one client-credentials token for mcpx (cached), besides the caller\'s own')
})

t.test('auth/upstream/token-exchange-per-caller', async t => {
  const as = await startAuthServer(t)
  const upstream = await startProtectedUpstream(t, as.issuer)
  const s = await serve(t, as, upstream, { type: 'token_exchange' })
  const alice = await as.clientCredentials(CLIENTS.alice, { resource: s.resource })
  const bob = await as.clientCredentials(CLIENTS.bob, { resource: s.resource })
  for (const [who, token] of [['alice', alice], ['bob', bob], ['alice', alice]] as const) {
    const reply = await callTool(s.base, 'protected__echo', token)
    t.equal(reply.status, 200, `${who}'s call`)
    t.equal(reply.body.result?.content?.[0].text, 'hi')
  }
  const calls = upstream.seen.filter(r => r.rpc === 'tools/call')
  t.same(calls.map(c => c.sub), ['alice', 'bob', 'alice'], 'the upstream saw each caller as the subject')
  for (const call of calls) t.match(call, { aud: upstream.url, act: { sub: CLIENTS.gateway.clientId } }, 'its own audience, mcpx as the actor (RFC 8693 act)')
  t.equal(as.issued(TOKEN_EXCHANGE), 2, 'one exchange per caller, then the cache')
  t.notOk(upstream.seen.some(r => r.aud === s.resource), 'a caller\'s own token never reached the upstream')
  // The same caller with a new token is the same principal, but the exchange follows the token
  // (docs/authentication.md › Upstream credentials): a new token is a new exchange.
  const aliceAgain = await as.clientCredentials(CLIENTS.alice, { resource: s.resource })
  t.equal((await callTool(s.base, 'protected__echo', aliceAgain)).status, 200)
  t.equal(as.issued(TOKEN_EXCHANGE), 3, 'cached per (subject token, upstream)')
})

t.test('auth/upstream/caller-without-oauth-token', async t => {
  const as = await startAuthServer(t)
  const upstream = await startProtectedUpstream(t, as.issuer)
  const s = await serve(t, as, upstream, { type: 'token_exchange' })
  const ci = process.env.MCPX_TEST_UPSTREAM_CI as string
  const refused = await callTool(s.base, 'protected__echo', ci)
  t.equal(refused.status, 200, 'a JSON-RPC error in a 200 (modern: -31000 is not a 4xx code)')
  t.match(refused.body, { id: 1, error: { message: /upstream protected/ } }, 'a clear error naming the upstream')
  t.match(refused.body.error?.message, /this caller \(token:ci\) has none/)
  t.notOk(JSON.stringify(refused.body).includes(ci), 'never the token')
  const other = await callTool(s.base, 'fixture__echo', ci, 2)
  t.equal(other.body.result?.content?.[0].text, 'hi', 'the other upstream\'s tools are unaffected')
})

t.test('auth/upstream/401-retry-once', async t => {
  const as = await startAuthServer(t)
  const upstream = await startProtectedUpstream(t, as.issuer)
  const s = await serve(t, as, upstream, { type: 'token_exchange' })
  const alice = await as.clientCredentials(CLIENTS.alice, { resource: s.resource })
  t.equal((await callTool(s.base, 'protected__echo', alice)).status, 200)
  t.equal(as.issued(TOKEN_EXCHANGE), 1)
  upstream.refuseNext(1)
  const retried = await callTool(s.base, 'protected__echo', alice, 2)
  t.equal(retried.body.result?.content?.[0].text, 'hi', 'one 401: mcpx re-exchanges and retries, the call succeeds')
  t.equal(as.issued(TOKEN_EXCHANGE), 2, 'a new token was exchanged for the retry')
  upstream.refuseNext(2)
  const failed = await callTool(s.base, 'protected__echo', alice, 3)
  t.match(failed.body, { id: 3, error: { message: /upstream protected/ } }, 'two 401s: an error naming the upstream')
  t.notOk(JSON.stringify(failed.body).includes(alice.split('.')[2]), 'never the token')
  t.equal(as.issued(TOKEN_EXCHANGE), 3, 'exactly one more exchange: one retry, not a loop')
})

t.test('auth/upstream/refresh-before-expiry', async t => {
  // Tokens live 32 s: mcpx refreshes 30 s before expiry (at 2 s), while the old one is still valid.
  const as = await startAuthServer(t, { ttlSeconds: 32 })
  const { logger } = captureLogger()
  const dir = t.testdir({ 'secret': CLIENTS.gateway.clientSecret })
  const provider = createUpstreamAuthProvider('protected', { type: 'client_credentials', issuer: as.issuer, clientId: CLIENTS.gateway.clientId, clientSecretFile: join(dir, 'secret'), resource: 'http://127.0.0.1/upstream' }, logger)
  const own = { principal: undefined, own: true, afterUnauthorized: false }
  const first = await provider.token(own)
  t.equal(await provider.token(own), first, 'cached')
  t.equal(as.issued('client_credentials'), 1)
  await new Promise(resolve => setTimeout(resolve, 2_500))
  const second = await provider.token(own)
  t.not(second, first, 'refreshed ahead of expiry')
  t.equal(as.issued('client_credentials'), 2)
  t.not(await provider.token({ ...own, afterUnauthorized: true }), second, 'after a 401 the cached token is dropped')
  const exchange = createUpstreamAuthProvider('protected', { type: 'token_exchange', issuer: as.issuer, clientId: CLIENTS.gateway.clientId, clientSecretFile: join(dir, 'secret') }, logger)
  await t.rejects(exchange.token({ principal: undefined, afterUnauthorized: false }), { message: /upstream protected needs the caller's OAuth access token/ }, 'an anonymous caller has nothing to exchange')
  t.type(await exchange.token(own), 'string', 'the connection\'s own traffic uses mcpx\'s own client credentials')
})
