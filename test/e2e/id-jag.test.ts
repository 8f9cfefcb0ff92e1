/**
 * Enterprise-Managed Authorization toward an upstream (`auth.type: "id-jag"`; docs/authentication.md ›
 * Enterprise-managed authorization (ID-JAG)), end to end: one real daemon (`node dist/cli.js daemon`), a real
 * enterprise IdP and a real upstream authorization server (two oidc-provider instances taught the token
 * exchange for an ID-JAG and the JWT bearer grant, test/helpers/id-jag.ts), and the fixture upstream
 * behind a bearer check that verifies the AS's token and records its subject and jti. The cases share
 * the daemon and run in order. Tests are named identity-upstream/id-jag/<requirement>.
 */
import t from 'tap'
import { join } from 'node:path'
import { fixtureUpstreams, modernHeaders, modernMeta } from '../helpers/app.js'
import { startDaemon, daemonReady } from '../helpers/daemon.js'
import { ID_JAG_CLIENTS, JWT_BEARER, TOKEN_EXCHANGE, startIdJagServers } from '../helpers/id-jag.js'
import { startProtectedUpstream } from '../helpers/protected-upstream.js'

interface Reply { status: number, body: { id?: unknown, result?: { content?: Array<{ text: string }> }, error?: { code: number, message: string } } }

/** mcpx's front door resource (the audience of callers' tokens); any URL, the daemon does not compare it with its address. */
const RESOURCE = 'https://mcpx.test/mcp'
/** Lifetime of the AS's access tokens, s: mcpx refreshes 30 s before expiry, i.e. after 2 s. */
const TTL_S = 32

const servers = await startIdJagServers(t, { ttlSeconds: TTL_S })
const upstream = await startProtectedUpstream(t, servers.as.issuer)
const dir = t.testdir({ 'as.secret': ID_JAG_CLIENTS.gatewayAs.clientSecret + '\n' })
const daemon = await startDaemon(t, {
  upstreams: {
    ...fixtureUpstreams(),
    protected: {
      url: upstream.url,
      auth: {
        type: 'id-jag',
        idp: { issuer: servers.idp.issuer, clientId: ID_JAG_CLIENTS.gatewayIdp.clientId, clientSecretEnv: 'MCPX_TEST_IDJAG_IDP_SECRET' },
        issuer: servers.as.issuer,
        clientId: ID_JAG_CLIENTS.gatewayAs.clientId,
        clientSecretFile: join(dir, 'as.secret'),
        scope: 'mcp:tools'
      }
    }
  },
  auth: { oauth: { issuer: servers.idp.issuer, resource: RESOURCE } }
}, { env: { MCPX_TEST_IDJAG_IDP_SECRET: ID_JAG_CLIENTS.gatewayIdp.clientSecret, MCPX_LOG_LEVEL: 'debug' } })
await daemonReady(daemon.base)

/** Every caller token handed out, to check none reaches the logs or a reply. */
const callerTokens: string[] = []
async function callerToken (who: keyof typeof ID_JAG_CLIENTS): Promise<string> {
  const token = await servers.idp.callerToken(ID_JAG_CLIENTS[who], RESOURCE)
  callerTokens.push(token)
  return token
}

let nextId = 1
/** A modern tools/call of the protected upstream's echo, with `token` as the caller's bearer token. */
async function callEcho (token: string): Promise<Reply> {
  const id = nextId++
  const res = await fetch(`${daemon.base}/mcp`, {
    method: 'POST',
    headers: modernHeaders('tools/call', 'protected__echo', { accept: 'application/json', authorization: `Bearer ${token}` }),
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'protected__echo', arguments: { text: 'hi' }, _meta: modernMeta() } })
  })
  return { status: res.status, body: await res.json() as Reply['body'] }
}

/** The upstream's tools/call requests so far. */
const calls = (): typeof upstream.seen => upstream.seen.filter(r => r.rpc === 'tools/call')

t.test('identity-upstream/id-jag/per-principal-upstream-token', async t => {
  const alice = await callerToken('alice')
  const bob = await callerToken('bob')
  for (const [who, token] of [['alice', alice], ['bob', bob]] as const) {
    const reply = await callEcho(token)
    t.equal(reply.status, 200, `${who}'s call`)
    t.equal(reply.body.result?.content?.[0].text, 'hi', `${who}'s call reached the upstream`)
  }
  const [a, b] = calls()
  t.match(a, { sub: 'alice', aud: upstream.url, clientId: ID_JAG_CLIENTS.gatewayAs.clientId }, 'alice\'s token, issued by the upstream\'s AS for the upstream')
  t.match(b, { sub: 'bob', aud: upstream.url, clientId: ID_JAG_CLIENTS.gatewayAs.clientId }, 'bob\'s token')
  t.not(a.jti, b.jti, 'two principals, two different upstream tokens')
  t.equal(servers.idp.issued(TOKEN_EXCHANGE), 2, 'one ID-JAG per principal from the IdP')
  t.equal(servers.as.issued(JWT_BEARER), 2, 'one JWT bearer grant per principal at the AS')
  const [jagA, jagB] = servers.idp.idJags
  t.match(jagA, { header: { typ: 'oauth-id-jag+jwt' }, claims: { iss: servers.idp.issuer, sub: 'alice', aud: servers.as.issuer, resource: upstream.url, scope: 'mcp:tools', client_id: ID_JAG_CLIENTS.gatewayAs.clientId } }, 'the ID-JAG request: audience = the AS issuer, resource = the upstream')
  t.match(jagB.claims, { sub: 'bob' })
})

t.test('identity-upstream/id-jag/cached-until-expiry', async t => {
  const again = await callerToken('alice')
  const exchangesBefore = servers.as.issued(JWT_BEARER)
  const first = Date.now()
  t.equal((await callEcho(again)).status, 200)
  t.equal((await callEcho(again)).status, 200)
  const [one, two] = calls().slice(-2)
  t.equal(two.jti, one.jti, 'the second call reuses the cached upstream token')
  t.equal(servers.as.issued(JWT_BEARER), exchangesBefore + 1, 'one exchange for two calls')
  // The token lives 32 s and is refreshed 30 s before it ends: past 2 s, the next call exchanges again.
  await new Promise(resolve => setTimeout(resolve, Math.max(0, first + 2_500 - Date.now())))
  t.equal((await callEcho(again)).status, 200)
  t.not(calls().at(-1)?.jti, one.jti, 'near its expiry the token is replaced')
  t.equal(servers.as.issued(JWT_BEARER), exchangesBefore + 2, 'by a new exchange')
})

t.test('identity-upstream/id-jag/new-subject-token-new-exchange', async t => {
  const first = await callerToken('bob')
  t.equal((await callEcho(first)).status, 200)
  const before = servers.idp.issued(TOKEN_EXCHANGE)
  t.equal((await callEcho(first)).status, 200)
  t.equal(servers.idp.issued(TOKEN_EXCHANGE), before, 'the same subject token: the cache')
  const second = await callerToken('bob')
  t.equal((await callEcho(second)).status, 200)
  t.equal(servers.idp.issued(TOKEN_EXCHANGE), before + 1, 'the same principal with a new subject token: a new exchange at the IdP')
  t.equal(calls().at(-1)?.sub, 'bob')
})

t.test('identity-upstream/id-jag/idp-refusal-is-a-clear-error', async t => {
  const mallory = await callerToken('mallory')
  const refused = await callEcho(mallory)
  t.equal(refused.status, 200, 'a JSON-RPC error in a 200, as token exchange failures')
  t.match(refused.body.error?.message, /upstream protected/, 'names the upstream')
  t.match(refused.body.error?.message, /identity provider refused mcpx's token exchange for an ID-JAG for upstream protected: invalid_grant/)
  t.notOk(JSON.stringify(refused.body).includes(mallory), 'never the caller\'s token')
})

t.test('identity-upstream/id-jag/idp-down-is-a-clear-error', async t => {
  const alice = await callerToken('alice') // a new subject token: nothing cached for it
  const callsBefore = calls().length
  servers.idp.down()
  try {
    const failed = await callEcho(alice)
    t.equal(failed.status, 200)
    t.match(failed.body, { error: { message: /upstream protected/ } }, 'a JSON-RPC error naming the upstream')
    t.match(failed.body.error?.message, /cannot reach the identity provider's token endpoint .* for upstream protected/)
    t.notOk(JSON.stringify(failed.body).includes(alice), 'never the caller\'s token')
    t.equal(calls().length, callsBefore, 'nothing reached the upstream')
  } finally {
    servers.idp.up()
  }
  t.equal((await callEcho(alice)).body.result?.content?.[0].text, 'hi', 'once the IdP is back, the same caller gets through')
})

t.test('identity-upstream/id-jag/as-down-is-a-clear-error', async t => {
  const bob = await callerToken('bob') // a new subject token: nothing cached for it
  const callsBefore = calls().length
  servers.as.down()
  try {
    const failed = await callEcho(bob)
    t.equal(failed.status, 200)
    t.match(failed.body.error?.message, /upstream protected/, 'a JSON-RPC error naming the upstream')
    t.match(failed.body.error?.message, /cannot reach the authorization server's token endpoint .* for upstream protected \(JWT bearer grant \(the ID-JAG\)\)/)
    t.notOk(JSON.stringify(failed.body).includes(bob), 'never the caller\'s token')
    t.notMatch(JSON.stringify(failed.body), /eyJ[\w-]+\.eyJ/, 'nor the ID-JAG')
    t.equal(calls().length, callsBefore, 'nothing reached the upstream')
  } finally {
    servers.as.up()
  }
  t.equal((await callEcho(bob)).body.result?.content?.[0].text, 'hi', 'once the AS is back, the same caller gets through')
})

t.test('identity-upstream/id-jag/401-redeems-again-once', async t => {
  const alice = await callerToken('alice')
  t.equal((await callEcho(alice)).status, 200)
  const before = servers.as.issued(JWT_BEARER)
  const jti = calls().at(-1)?.jti
  upstream.refuseNext(1)
  const retried = await callEcho(alice)
  t.equal(retried.body.result?.content?.[0].text, 'hi', 'one 401: mcpx exchanges again and retries, the call succeeds')
  t.equal(servers.as.issued(JWT_BEARER), before + 1, 'one new ID-JAG redeemed for the retry')
  t.not(calls().at(-1)?.jti, jti, 'with a new upstream token')
})

t.test('identity-upstream/id-jag/no-secret-in-logs', async t => {
  const log = JSON.stringify(daemon.lines) + daemon.stderr()
  t.ok(daemon.lines.length > 0, 'the daemon logged')
  for (const secret of [ID_JAG_CLIENTS.gatewayIdp.clientSecret, ID_JAG_CLIENTS.gatewayAs.clientSecret, ...callerTokens]) {
    t.notOk(log.includes(secret), 'no client secret or caller token in the logs')
  }
  t.notMatch(log, /eyJ[\w-]+\.eyJ[\w-]+/, 'no JWT at all (ID-JAG, upstream token) in the logs')
})
