/**
 * DPoP at the front door (RFC 9449; docs/authentication.md › DPoP) at inject level: mcpx-auth
 * behind mcpx-origin and mcpx-cors on a bare Fastify with a dummy /mcp, DPoP-bound tokens from a real
 * authorization server (oidc-provider with features.dPoP), proofs made with jose
 * (test/helpers/dpop.ts). Every refusal is checked whole: status, WWW-Authenticate, body.
 */
import t, { type Test } from 'tap'
import { join } from 'node:path'
import Fastify, { type FastifyInstance, type InjectOptions, type LightMyRequestResponse } from 'fastify'
import { SignJWT } from 'jose'
import mcpxOrigin from '../../plugins/origin.js'
import mcpxSendRefusal from '../../plugins/send-refusal.js'
import mcpxCors from '../../plugins/cors.js'
import mcpxAuth from '../../plugins/auth.js'
import { createAuthenticator } from '../../lib/auth/authenticate.js'
import { DPOP_TOKEN_DESCRIPTIONS, INVALID_DPOP_PROOF_DESCRIPTIONS, MemoryDpopReplayCache, type DpopReplayCache } from '../../lib/auth/dpop.js'
import { INVALID_TOKEN_DESCRIPTIONS } from '../../lib/auth/verifier.js'
import { loadConfig } from '../../lib/config/load.js'
import { captureLogger } from '../helpers/registry.js'
import { CLIENTS, startAuthServer, type AuthServer } from '../helpers/oauth.js'
import { dpopToken, makeProof, newDpopKey, type DpopKey, type ProofOptions } from '../helpers/dpop.js'

const RESOURCE = 'http://localhost/mcp'
/** What inject's requests use: Host `localhost:80`, plain http. */
const HTU = 'http://localhost/mcp'
const PRM = 'http://localhost/.well-known/oauth-protected-resource/mcp'
const ALGS = 'ES256 ES384 ES512 PS256 PS384 PS512 RS256 RS384 RS512 EdDSA Ed25519'
const POLICY = { allowedOrigins: [] }
const DUMMY = '{"reached":"mcp"}'

/** mcpx-auth alone on a bare Fastify with a dummy /mcp (POST, GET, DELETE). */
async function build (t: Test, as: AuthServer, oauth: Record<string, unknown> = {}, replay?: () => DpopReplayCache): Promise<FastifyInstance> {
  const app = Fastify()
  t.teardown(() => app.close())
  const authenticator = createAuthenticator(loadConfig({ auth: { oauth: { issuer: as.issuer, resource: RESOURCE, ...oauth } } }).auth, { logger: captureLogger().logger, ...(replay !== undefined ? { dpopReplay: replay } : {}) })
  await app.register(async function mcpxScope (scope) {
    await scope.register(mcpxSendRefusal)
    await scope.register(mcpxOrigin, { policy: POLICY })
    await scope.register(mcpxCors, { policy: POLICY })
    await scope.register(mcpxAuth, { authenticator })
    for (const method of ['POST', 'GET', 'DELETE'] as const) scope.route({ method, url: '/mcp', handler: async (_request, reply) => reply.type('application/json').send(DUMMY) })
  })
  await app.ready()
  return app
}

/** A POST /mcp (or `method`) with these headers; `dpop` may be several values (several header fields). */
function request (headers: Record<string, string | string[]>, method: 'POST' | 'GET' | 'DELETE' = 'POST', url = '/mcp'): InjectOptions {
  return method === 'POST'
    ? { method, url, headers: { 'content-type': 'application/json', ...headers }, payload: '{"jsonrpc":"2.0","id":1,"method":"ping"}' }
    : { method, url, headers }
}

/** Asserts a whole 401 refusal: status, the exact challenge, the id-less JSON-RPC body. */
function refused (t: Test, res: LightMyRequestResponse, challenge: string, description: string, what: string): void {
  t.equal(res.statusCode, 401, what)
  t.equal(res.headers['www-authenticate'], challenge, `${what}: challenge`)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8', `${what}: JSON`)
  t.equal(res.body, JSON.stringify({ jsonrpc: '2.0', error: { code: -32_600, message: `Unauthorized: ${description.charAt(0).toLowerCase()}${description.slice(1)}` } }), `${what}: body`)
}

/** The challenge of a refused proof (RFC 9449 §7.1). */
function proofChallenge (reason: keyof typeof INVALID_DPOP_PROOF_DESCRIPTIONS): string {
  return `DPoP error="invalid_dpop_proof", error_description="${INVALID_DPOP_PROOF_DESCRIPTIONS[reason]}", algs="${ALGS}", resource_metadata="${PRM}"`
}

/** The challenge of a token refused for its DPoP binding. */
function bindingChallenge (reason: keyof typeof DPOP_TOKEN_DESCRIPTIONS): string {
  return `DPoP error="invalid_token", error_description="${DPOP_TOKEN_DESCRIPTIONS[reason]}", algs="${ALGS}", resource_metadata="${PRM}"`
}

interface Fixture { as: AuthServer, key: DpopKey, token: string }

/** One authorization server and one bound token for the tests that need nothing of their own. */
let shared: Promise<Fixture> | undefined
async function fixture (): Promise<Fixture> {
  shared ??= (async () => {
    const as = await startAuthServer(t, { dpop: true })
    const key = await newDpopKey()
    return { as, key, token: await dpopToken(as, CLIENTS.alice, key, { resource: RESOURCE }) }
  })()
  return await shared
}

/** `Authorization: DPoP <token>` and a proof made with `options` (good unless they say otherwise). */
async function dpopHeaders (f: Fixture, options: Partial<ProofOptions> = {}, key = f.key): Promise<Record<string, string>> {
  return { authorization: `DPoP ${f.token}`, dpop: await makeProof(key, { htm: 'POST', htu: HTU, accessToken: f.token, ...options }) }
}

t.test('auth/dpop/good-proof-accepted', async t => {
  const f = await fixture()
  const claims = JSON.parse(Buffer.from(f.token.split('.')[1], 'base64url').toString()) as { cnf?: { jkt?: string } }
  t.equal(claims.cnf?.jkt, f.key.jkt, 'the authorization server bound the token to the client\'s key (RFC 9449 §6.1)')
  const app = await build(t, f.as)
  for (const method of ['POST', 'GET', 'DELETE'] as const) {
    const res = await app.inject(request({ authorization: `DPoP ${f.token}`, dpop: await makeProof(f.key, { htm: method, htu: `${HTU}?ignored=query`, accessToken: f.token }) }, method, '/mcp?x=1'))
    t.equal(res.statusCode, 200, `${method}: a fresh proof for this request is accepted (htu without the query)`)
    t.equal(res.body, DUMMY)
  }
  const scheme = await app.inject(request({ ...await dpopHeaders(f), authorization: `dpop ${f.token}` }))
  t.equal(scheme.statusCode, 200, 'the scheme is case-insensitive (RFC 9110 §11.1)')
})

t.test('auth/dpop/missing-proof-refused', async t => {
  const f = await fixture()
  const app = await build(t, f.as)
  refused(t, await app.inject(request({ authorization: `DPoP ${f.token}` })), proofChallenge('missing'), INVALID_DPOP_PROOF_DESCRIPTIONS.missing, 'no DPoP header')
  refused(t, await app.inject(request({ authorization: `DPoP ${f.token}`, dpop: '' })), proofChallenge('missing'), INVALID_DPOP_PROOF_DESCRIPTIONS.missing, 'an empty DPoP header')
  refused(t, await app.inject(request({ authorization: `DPoP ${f.token}`, dpop: 'not.a.jwt' })), proofChallenge('malformed'), INVALID_DPOP_PROOF_DESCRIPTIONS.malformed, 'a DPoP header that is no JWS')
})

t.test('auth/dpop/two-dpop-headers-refused', async t => {
  const f = await fixture()
  const app = await build(t, f.as)
  const one = await makeProof(f.key, { htm: 'POST', htu: HTU, accessToken: f.token })
  const two = await makeProof(f.key, { htm: 'POST', htu: HTU, accessToken: f.token })
  refused(t, await app.inject(request({ authorization: `DPoP ${f.token}`, dpop: [one, two] })), proofChallenge('multiple'), INVALID_DPOP_PROOF_DESCRIPTIONS.multiple, 'two DPoP fields (RFC 9449 §4.3 point 1)')
  refused(t, await app.inject(request({ authorization: `DPoP ${f.token}`, dpop: [one, ''] })), proofChallenge('multiple'), INVALID_DPOP_PROOF_DESCRIPTIONS.multiple, 'a good field and an empty one')
  refused(t, await app.inject(request({ authorization: `DPoP ${f.token}`, dpop: `${one}, ${two}` })), proofChallenge('multiple'), INVALID_DPOP_PROOF_DESCRIPTIONS.multiple, 'two proofs in one field (as Node joins repeated fields)')
  t.equal((await app.inject(request({ authorization: `DPoP ${f.token}`, dpop: one }))).statusCode, 200, 'neither proof was used up: one of them alone is accepted')
})

t.test('auth/dpop/bad-signature-refused', async t => {
  const f = await fixture()
  const app = await build(t, f.as)
  const other = await newDpopKey()
  refused(t, await app.inject(request(await dpopHeaders(f, { signWith: other.privateKey }))), proofChallenge('signature'), INVALID_DPOP_PROOF_DESCRIPTIONS.signature, 'signed by another key than its jwk')
  const good = await makeProof(f.key, { htm: 'POST', htu: HTU, accessToken: f.token })
  const [header, , signature] = good.split('.')
  const tampered = `${header}.${Buffer.from(JSON.stringify({ jti: 'x', htm: 'POST', htu: HTU, iat: Math.floor(Date.now() / 1000), ath: 'y' })).toString('base64url')}.${signature}`
  refused(t, await app.inject(request({ authorization: `DPoP ${f.token}`, dpop: tampered })), proofChallenge('signature'), INVALID_DPOP_PROOF_DESCRIPTIONS.signature, 'claims changed after signing')
  const withPrivate = await new SignJWT({ jti: 'p', htm: 'POST', htu: HTU, iat: Math.floor(Date.now() / 1000) })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: await (await import('jose')).exportJWK(f.key.privateKey) }).sign(f.key.privateKey)
  refused(t, await app.inject(request({ authorization: `DPoP ${f.token}`, dpop: withPrivate })), proofChallenge('key'), INVALID_DPOP_PROOF_DESCRIPTIONS.key, 'a private key in jwk (RFC 9449 §4.3 point 7)')
})

t.test('auth/dpop/wrong-typ-refused', async t => {
  const f = await fixture()
  const app = await build(t, f.as)
  for (const typ of ['JWT', 'at+jwt', 'dpop']) {
    refused(t, await app.inject(request(await dpopHeaders(f, { typ }))), proofChallenge('type'), INVALID_DPOP_PROOF_DESCRIPTIONS.type, `typ ${typ}`)
  }
})

t.test('auth/dpop/symmetric-alg-refused', async t => {
  const f = await fixture()
  const app = await build(t, f.as)
  const secret = new TextEncoder().encode('a-shared-secret-of-32-bytes-long!')
  const hs = await new SignJWT({ jti: 'h', htm: 'POST', htu: HTU, iat: Math.floor(Date.now() / 1000) })
    .setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk: { kty: 'oct', k: Buffer.from(secret).toString('base64url') } as unknown as { kty: string } }).sign(secret)
  refused(t, await app.inject(request({ authorization: `DPoP ${f.token}`, dpop: hs })), proofChallenge('algorithm'), INVALID_DPOP_PROOF_DESCRIPTIONS.algorithm, 'HS256')
  const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'dpop+jwt', jwk: f.key.publicJwk })).toString('base64url')}.${Buffer.from(JSON.stringify({ jti: 'n', htm: 'POST', htu: HTU, iat: Math.floor(Date.now() / 1000) })).toString('base64url')}.`
  refused(t, await app.inject(request({ authorization: `DPoP ${f.token}`, dpop: none })), proofChallenge('algorithm'), INVALID_DPOP_PROOF_DESCRIPTIONS.algorithm, 'alg none')
  const narrow = await build(t, f.as, { dpopSigningAlgs: ['EdDSA'] })
  const res = await narrow.inject(request(await dpopHeaders(f)))
  t.equal(res.headers['www-authenticate'], `DPoP error="invalid_dpop_proof", error_description="${INVALID_DPOP_PROOF_DESCRIPTIONS.algorithm}", algs="EdDSA", resource_metadata="${PRM}"`, 'an asymmetric algorithm outside dpopSigningAlgs too; algs lists the configured ones')
  t.throws(() => loadConfig({ auth: { oauth: { issuer: f.as.issuer, resource: RESOURCE, dpopSigningAlgs: ['HS256'] } } }), { message: /dpopSigningAlgs/ }, 'a symmetric algorithm cannot be configured')
})

t.test('auth/dpop/wrong-htm-refused', async t => {
  const f = await fixture()
  const app = await build(t, f.as)
  for (const htm of ['GET', 'post', 'PUT']) {
    refused(t, await app.inject(request(await dpopHeaders(f, { htm }))), proofChallenge('method'), INVALID_DPOP_PROOF_DESCRIPTIONS.method, `htm ${htm} on a POST`)
  }
})

t.test('auth/dpop/wrong-htu-refused', async t => {
  const f = await fixture()
  const app = await build(t, f.as)
  for (const htu of ['http://localhost/mcp/other', 'https://localhost/mcp', 'http://localhost:8080/mcp', 'http://example.com/mcp', '/mcp', 'not a url']) {
    refused(t, await app.inject(request(await dpopHeaders(f, { htu }))), proofChallenge('url'), INVALID_DPOP_PROOF_DESCRIPTIONS.url, `htu ${htu}`)
  }
  for (const htu of ['http://LOCALHOST:80/mcp', 'http://localhost/mcp#fragment']) {
    t.equal((await app.inject(request(await dpopHeaders(f, { htu })))).statusCode, 200, `htu ${htu}: the same URL once normalised (RFC 3986 §6.2.2, §6.2.3), fragment ignored`)
  }
  const forwarded = await app.inject(request({ ...await dpopHeaders(f, { htu: 'https://mcp.example.com/mcp' }), 'x-forwarded-host': 'mcp.example.com', 'x-forwarded-proto': 'https' }))
  refused(t, forwarded, proofChallenge('url'), INVALID_DPOP_PROOF_DESCRIPTIONS.url, 'X-Forwarded-* from a proxy that is not trusted are ignored')
})

t.test('auth/dpop/iat-outside-window-refused', async t => {
  const f = await fixture()
  const app = await build(t, f.as, { dpopProofMaxAge: '60s', clockTolerance: '5s' })
  const now = Math.floor(Date.now() / 1000)
  refused(t, await app.inject(request(await dpopHeaders(f, { iat: now - 120 }))), proofChallenge('stale'), INVALID_DPOP_PROOF_DESCRIPTIONS.stale, 'iat two minutes ago')
  refused(t, await app.inject(request(await dpopHeaders(f, { iat: now + 60 }))), proofChallenge('future'), INVALID_DPOP_PROOF_DESCRIPTIONS.future, 'iat a minute ahead')
  t.equal((await app.inject(request(await dpopHeaders(f, { iat: now - 30 })))).statusCode, 200, 'iat 30 s ago: within dpopProofMaxAge')
  t.equal((await app.inject(request(await dpopHeaders(f, { iat: now + 2 })))).statusCode, 200, 'iat 2 s ahead: within clockTolerance')
})

t.test('auth/dpop/wrong-ath-refused', async t => {
  const f = await fixture()
  const app = await build(t, f.as)
  refused(t, await app.inject(request(await dpopHeaders(f, { accessToken: `${f.token}x` }))), proofChallenge('tokenHash'), INVALID_DPOP_PROOF_DESCRIPTIONS.tokenHash, 'ath of another token')
  refused(t, await app.inject(request(await dpopHeaders(f, { accessToken: undefined }))), proofChallenge('tokenHash'), INVALID_DPOP_PROOF_DESCRIPTIONS.tokenHash, 'no ath')
})

t.test('auth/dpop/wrong-jkt-refused', async t => {
  const f = await fixture()
  const app = await build(t, f.as)
  const thief = await newDpopKey()
  refused(t, await app.inject(request(await dpopHeaders(f, {}, thief))), bindingChallenge('keyBinding'), DPOP_TOKEN_DESCRIPTIONS.keyBinding, 'a sound proof by a key the token is not bound to (RFC 9449 §7.1: invalid_token)')
})

t.test('auth/dpop/replayed-jti-refused', async t => {
  const f = await fixture()
  const app = await build(t, f.as)
  const headers = await dpopHeaders(f)
  t.equal((await app.inject(request(headers))).statusCode, 200, 'first use')
  refused(t, await app.inject(request(headers)), proofChallenge('replayed'), INVALID_DPOP_PROOF_DESCRIPTIONS.replayed, 'the same proof again')
  const sameJti = await dpopHeaders(f, { jti: JSON.parse(Buffer.from(headers.dpop.split('.')[1], 'base64url').toString()).jti })
  refused(t, await app.inject(request(sameJti)), proofChallenge('replayed'), INVALID_DPOP_PROOF_DESCRIPTIONS.replayed, 'a new proof by the same key with the same jti')
})

t.test('auth/dpop/replay-cache-full-503', async t => {
  const f = await fixture()
  const app = await build(t, f.as, {}, () => new MemoryDpopReplayCache(1))
  t.equal((await app.inject(request(await dpopHeaders(f)))).statusCode, 200)
  const full = await app.inject(request(await dpopHeaders(f)))
  t.equal(full.statusCode, 503, 'past the bound, a proof that cannot be remembered is refused, not admitted unchecked')
  t.equal(full.headers['retry-after'], '1')
  t.equal(full.body, '{"jsonrpc":"2.0","error":{"code":-32603,"message":"Service Unavailable: DPoP proofs cannot be checked for replay now; retry later"}}')
})

t.test('auth/dpop/bound-token-as-bearer-refused', async t => {
  const f = await fixture()
  const app = await build(t, f.as)
  for (const withProof of [false, true]) {
    const headers = { authorization: `Bearer ${f.token}`, ...(withProof ? { dpop: (await dpopHeaders(f)).dpop } : {}) }
    refused(t, await app.inject(request(headers)), bindingChallenge('boundAsBearer'), DPOP_TOKEN_DESCRIPTIONS.boundAsBearer, `as Bearer ${withProof ? 'with' : 'without'} a proof (RFC 9449 §7.2)`)
  }
})

t.test('auth/dpop/required-refuses-unbound-token', async t => {
  const f = await fixture()
  const app = await build(t, f.as, { dpop: 'required', requiredScopes: ['mcp:tools'] })
  const unbound = await f.as.clientCredentials(CLIENTS.alice, { resource: RESOURCE })
  refused(t, await app.inject(request({ authorization: `Bearer ${unbound}` })), bindingChallenge('required'), DPOP_TOKEN_DESCRIPTIONS.required, 'an unbound token as Bearer')
  refused(t, await app.inject(request({ authorization: `DPoP ${unbound}`, dpop: await makeProof(f.key, { htm: 'POST', htu: HTU, accessToken: unbound }) })), bindingChallenge('required'), DPOP_TOKEN_DESCRIPTIONS.required, 'an unbound token with the DPoP scheme')
  const missing = await app.inject(request({}))
  t.equal(missing.statusCode, 401)
  t.equal(missing.headers['www-authenticate'], `DPoP algs="${ALGS}", resource_metadata="${PRM}", scope="mcp:tools"`, 'no credentials: the DPoP challenge alone')
  t.equal(missing.body, '{"jsonrpc":"2.0","error":{"code":-32600,"message":"Unauthorized: a DPoP-bound access token is required"}}')
  t.equal((await app.inject(request(await dpopHeaders(f)))).statusCode, 200, 'a bound token with its proof')
  const metadata = createAuthenticator(loadConfig({ auth: { oauth: { issuer: f.as.issuer, resource: RESOURCE, dpop: 'required' } } }).auth, { logger: captureLogger().logger }).oauth?.metadata
  t.match(metadata, { dpop_bound_access_tokens_required: true, dpop_signing_alg_values_supported: ALGS.split(' ') }, 'the protected resource metadata says so (RFC 9728 §2)')
})

t.test('auth/dpop/dpop-scheme-needs-a-bound-token', async t => {
  const f = await fixture()
  const app = await build(t, f.as)
  const unbound = await f.as.clientCredentials(CLIENTS.alice, { resource: RESOURCE })
  refused(t, await app.inject(request({ authorization: `DPoP ${unbound}`, dpop: await makeProof(f.key, { htm: 'POST', htu: HTU, accessToken: unbound }) })), bindingChallenge('notBound'), DPOP_TOKEN_DESCRIPTIONS.notBound, 'allowed: an unbound token with the DPoP scheme')
  t.equal((await app.inject(request({ authorization: `Bearer ${unbound}` }))).statusCode, 200, 'allowed: an unbound token as Bearer, as before')
  const bad = await app.inject(request({ authorization: `DPoP ${f.token}x`, dpop: await makeProof(f.key, { htm: 'POST', htu: HTU, accessToken: `${f.token}x` }) }))
  refused(t, bad, `DPoP error="invalid_token", error_description="${INVALID_TOKEN_DESCRIPTIONS.signature}", algs="${ALGS}", resource_metadata="${PRM}"`, INVALID_TOKEN_DESCRIPTIONS.signature, 'a bad token with the DPoP scheme: a DPoP challenge')
  const plain = await app.inject(request({}))
  t.equal(plain.headers['www-authenticate'], `Bearer resource_metadata="${PRM}"`, 'allowed: no credentials get the Bearer challenge, as before')
})

t.test('auth/dpop/off-treats-dpop-scheme-as-unsupported', async t => {
  const f = await fixture()
  const app = await build(t, f.as, { dpop: 'off' })
  const res = await app.inject(request(await dpopHeaders(f)))
  t.equal(res.statusCode, 401, 'the DPoP scheme is not a credential mcpx reads')
  t.equal(res.headers['www-authenticate'], `Bearer resource_metadata="${PRM}"`, 'answered as no credentials, with the Bearer challenge only')
  t.equal(res.body, '{"jsonrpc":"2.0","error":{"code":-32600,"message":"Unauthorized: a bearer token is required"}}')
  t.equal((await app.inject(request({ authorization: `Bearer ${f.token}` }))).statusCode, 200, 'off: a bound token is taken as a bearer token, as before DPoP')
})

t.test('auth/dpop/introspected-binding', async t => {
  // An opaque DPoP-bound token: its binding comes from the introspection answer's cnf.jkt (RFC 9449 §6.2).
  const f = await fixture()
  const dir = t.testdir({ 'secret.txt': CLIENTS.mcpx.clientSecret + '\n' })
  const app = await build(t, f.as, { introspection: { url: `${f.as.issuer}/token/introspection`, clientId: CLIENTS.mcpx.clientId, clientSecretFile: join(dir, 'secret.txt') } })
  const opaque = await dpopToken(f.as, CLIENTS.opaque, f.key, { resource: RESOURCE })
  t.notOk(opaque.includes('.'), 'an opaque token')
  t.equal((await app.inject(request({ authorization: `DPoP ${opaque}`, dpop: await makeProof(f.key, { htm: 'POST', htu: HTU, accessToken: opaque }) }))).statusCode, 200, 'with its proof')
  refused(t, await app.inject(request({ authorization: `Bearer ${opaque}` })), bindingChallenge('boundAsBearer'), DPOP_TOKEN_DESCRIPTIONS.boundAsBearer, 'as Bearer')
  const thief = await newDpopKey()
  refused(t, await app.inject(request({ authorization: `DPoP ${opaque}`, dpop: await makeProof(thief, { htm: 'POST', htu: HTU, accessToken: opaque }) })), bindingChallenge('keyBinding'), DPOP_TOKEN_DESCRIPTIONS.keyBinding, 'another key')
})

t.test('auth/dpop/insufficient-scope-challenge-is-dpop', async t => {
  const f = await fixture()
  const app = await build(t, f.as, { requiredScopes: ['mcp:admin'] })
  const res = await app.inject(request(await dpopHeaders(f)))
  t.equal(res.statusCode, 403, 'a bound token with its proof, without the required scope')
  t.equal(res.headers['www-authenticate'], `DPoP error="insufficient_scope", scope="mcp:admin", algs="${ALGS}", resource_metadata="${PRM}"`, 'challenged with the scheme it came with')
  t.equal(res.body, '{"jsonrpc":"2.0","error":{"code":-32600,"message":"Forbidden: the access token lacks a required scope: mcp:admin"}}')
})
