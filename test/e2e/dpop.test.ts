/**
 * DPoP at the front door, end to end (docs/authentication.md › DPoP): two real `mcpx daemon`
 * replicas sharing the real Redis (sessions.store "redis"), behind a trusted "proxy" (the tests send
 * X-Forwarded-Proto and X-Forwarded-Host from 127.0.0.1, listed in daemon.trustProxy, so both replicas
 * see the public URL https://mcp.example.com/mcp, as behind one load balancer), a real authorization
 * server issuing DPoP-bound tokens (oidc-provider with features.dPoP), and proofs made with jose.
 * The daemons are started once and shared by the tests.
 */
import t from 'tap'
import { request as httpRequest } from 'node:http'
import { fixtureUpstreams, modernHeaders, modernMeta } from '../helpers/app.js'
import { daemonReady, startDaemon, type DaemonProcess } from '../helpers/daemon.js'
import { REDIS_URL, redisTestPrefix } from '../helpers/redis.js'
import { CLIENTS, startAuthServer } from '../helpers/oauth.js'
import { dpopToken, makeProof, newDpopKey } from '../helpers/dpop.js'
import { DPOP_TOKEN_DESCRIPTIONS, INVALID_DPOP_PROOF_DESCRIPTIONS } from '../../lib/auth/dpop.js'

const RESOURCE = 'https://mcp.example.com/mcp'
const PRM = 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp'
const ALGS = 'ES256 ES384 ES512 PS256 PS384 PS512 RS256 RS384 RS512 EdDSA Ed25519'
/** What the trusted proxy in front adds: the client's scheme and host. */
const FORWARDED = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'mcp.example.com' }
const CALL = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', arguments: { text: 'bound' }, _meta: modernMeta() } })

const as = await startAuthServer(t, { dpop: true })
const keyPrefix = redisTestPrefix(t)
const config = {
  upstreams: fixtureUpstreams(),
  daemon: { trustProxy: ['127.0.0.1'] },
  sessions: { store: 'redis', redis: REDIS_URL, keyPrefix },
  auth: { oauth: { issuer: as.issuer, resource: RESOURCE, requiredScopes: ['mcp:tools'] } }
}
const [a, b]: DaemonProcess[] = await Promise.all([startDaemon(t, config), startDaemon(t, config)])
// "ready" is logged once the daemon serves; on a loaded machine its fixture child may still be starting.
await Promise.all([daemonReady(a.base), daemonReady(b.base)])
const key = await newDpopKey()
const token = await dpopToken(as, CLIENTS.alice, key, { resource: RESOURCE })

/** A modern tools/call to `daemon` through the "proxy", with these credentials. */
async function call (daemon: DaemonProcess, credentials: Record<string, string>): Promise<Response> {
  return await fetch(`${daemon.base}/mcp`, { method: 'POST', headers: modernHeaders('tools/call', 'echo', { accept: 'application/json', ...FORWARDED, ...credentials }), body: CALL })
}

/** A fresh proof for a POST to the public URL, with the token. */
async function proof (): Promise<string> {
  return await makeProof(key, { htm: 'POST', htu: RESOURCE, accessToken: token })
}

t.test('auth/dpop/daemon-accepts-bound-token-with-proof', async t => {
  const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as { cnf?: { jkt?: string }, aud?: unknown }
  t.same(claims.cnf, { jkt: key.jkt }, 'the authorization server bound the token to the client\'s key')
  for (const daemon of [a, b]) {
    const res = await call(daemon, { authorization: `DPoP ${token}`, dpop: await proof() })
    const body = await res.text()
    t.equal(res.status, 200, `the bound token with its proof, htu the public URL the trusted proxy names: ${res.headers.get('www-authenticate') ?? ''} ${body}`)
    t.match(JSON.parse(body), { jsonrpc: '2.0', id: 7, result: { content: [{ text: 'bound' }] } }, `the call reached the upstream: ${body}`)
  }
  const direct = await fetch(`${a.base}/mcp`, { method: 'POST', headers: modernHeaders('tools/call', 'echo', { accept: 'application/json', authorization: `DPoP ${token}`, dpop: await proof() }), body: CALL })
  t.equal(direct.status, 401, 'the same proof shape sent past the proxy: the URL the daemon sees is not the one in htu')
  t.equal(direct.headers.get('www-authenticate'), `DPoP error="invalid_dpop_proof", error_description="${INVALID_DPOP_PROOF_DESCRIPTIONS.url}", algs="${ALGS}", resource_metadata="${PRM}"`)
  await direct.text()
})

t.test('auth/dpop/daemon-refuses-bound-token-as-bearer', async t => {
  const res = await call(a, { authorization: `Bearer ${token}`, dpop: await proof() })
  t.equal(res.status, 401)
  t.equal(res.headers.get('www-authenticate'), `DPoP error="invalid_token", error_description="${DPOP_TOKEN_DESCRIPTIONS.boundAsBearer}", algs="${ALGS}", resource_metadata="${PRM}"`)
  t.equal(res.headers.get('content-type'), 'application/json; charset=utf-8')
  t.equal(await res.text(), JSON.stringify({ jsonrpc: '2.0', error: { code: -32_600, message: 'Unauthorized: the access token is bound to a DPoP key: send it with the DPoP scheme and a DPoP proof' } }), 'the id-less JSON-RPC body of a bad bearer token')
})

t.test('auth/dpop/daemon-refuses-two-dpop-header-fields', async t => {
  // Two `DPoP:` lines on the wire (node:http sends an array as repeated fields; fetch would join them).
  const fields = [await proof(), await proof()]
  const { status, challenge, body } = await new Promise<{ status: number, challenge: string | undefined, body: string }>((resolve, reject) => {
    const req = httpRequest(`${a.base}/mcp`, { method: 'POST', headers: { ...modernHeaders('tools/call', 'echo', { accept: 'application/json', ...FORWARDED, authorization: `DPoP ${token}` }), dpop: fields } }, res => {
      let text = ''
      res.setEncoding('utf8').on('data', (chunk: string) => { text += chunk }).on('end', () => resolve({ status: res.statusCode ?? 0, challenge: res.headers['www-authenticate'], body: text }))
    })
    req.on('error', reject)
    req.end(CALL)
  })
  t.equal(status, 401)
  t.equal(challenge, `DPoP error="invalid_dpop_proof", error_description="${INVALID_DPOP_PROOF_DESCRIPTIONS.multiple}", algs="${ALGS}", resource_metadata="${PRM}"`)
  t.equal(body, JSON.stringify({ jsonrpc: '2.0', error: { code: -32_600, message: 'Unauthorized: more than one DPoP proof was sent' } }))
  const one = await call(a, { authorization: `DPoP ${token}`, dpop: fields[0] })
  t.equal(one.status, 200, 'neither field was used up')
  await one.text()
})

t.test('auth/dpop/replay-refused-across-replicas', async t => {
  const captured = await proof()
  const first = await call(a, { authorization: `DPoP ${token}`, dpop: captured })
  t.equal(first.status, 200, 'replica A accepts the proof')
  await first.text()
  const replayed = await call(b, { authorization: `DPoP ${token}`, dpop: captured })
  t.equal(replayed.status, 401, 'replica B refuses it: the jti is in the shared Redis')
  t.equal(replayed.headers.get('www-authenticate'), `DPoP error="invalid_dpop_proof", error_description="${INVALID_DPOP_PROOF_DESCRIPTIONS.replayed}", algs="${ALGS}", resource_metadata="${PRM}"`)
  await replayed.text()
  const again = await call(a, { authorization: `DPoP ${token}`, dpop: captured })
  t.equal(again.status, 401, 'and replica A too')
  await again.text()
  const fresh = await call(b, { authorization: `DPoP ${token}`, dpop: await proof() })
  t.equal(fresh.status, 200, 'a fresh proof is accepted by replica B')
  await fresh.text()
})
