/**
 * mcpx-auth at inject level, behind mcpx-origin and mcpx-cors, on a bare Fastify with a dummy /mcp
 * route (docs/authentication.md › Static tokens).
 */
import t, { type Test } from 'tap'
import { join } from 'node:path'
import Fastify, { type FastifyInstance, type InjectOptions } from 'fastify'
import mcpxOrigin from '../../plugins/origin.js'
import mcpxSendRefusal from '../../plugins/send-refusal.js'
import mcpxCors from '../../plugins/cors.js'
import mcpxAuth from '../../plugins/auth.js'
import { loadBearerTokens } from '../../lib/auth/tokens.js'
import { createAuthenticator, type Authenticator } from '../../lib/auth/authenticate.js'
import { loadConfig } from '../../lib/config/load.js'
import type { OriginPolicy } from '../../lib/http/origin.js'

type Method = 'POST' | 'GET' | 'DELETE'
const METHODS: Method[] = ['POST', 'GET', 'DELETE']
const DUMMY = '{"reached":"mcp"}'
const MISSING = '{"jsonrpc":"2.0","error":{"code":-32600,"message":"Unauthorized: a bearer token is required"}}'
const INVALID = '{"jsonrpc":"2.0","error":{"code":-32600,"message":"Unauthorized: invalid bearer token"}}'
const FORBIDDEN = '{"jsonrpc":"2.0","error":{"code":-32600,"message":"Forbidden: Origin not allowed"}}'
const POLICY: OriginPolicy = { allowedOrigins: ['https://app.example.com'] }
const TOKENS = ['tok-alpha', 'tok-beta']

async function build (t: Test, tokens: readonly string[]): Promise<FastifyInstance> {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(async function mcpxScope (scope) {
    await scope.register(mcpxSendRefusal)
    await scope.register(mcpxOrigin, { policy: POLICY })
    await scope.register(mcpxCors, { policy: POLICY })
    await scope.register(mcpxAuth, { tokens })
    for (const method of METHODS) {
      scope.route({ method, url: '/mcp', handler: async (_request, reply) => reply.type('application/json').send(DUMMY) })
    }
  })
  await app.ready()
  return app
}

function request (method: Method, headers: Record<string, string> = {}): InjectOptions {
  return method === 'POST'
    ? { method, url: '/mcp', headers: { 'content-type': 'application/json', ...headers }, payload: '{"jsonrpc":"2.0","id":1,"method":"ping"}' }
    : { method, url: '/mcp', headers }
}

t.test('auth/bearer/missing-token-401', async t => {
  const app = await build(t, TOKENS)
  for (const method of METHODS) {
    for (const authorization of [undefined, 'Basic dXNlcjpwYXNz', 'Bearer', 'tok-alpha']) {
      const res = await app.inject(request(method, authorization === undefined ? {} : { authorization }))
      t.equal(res.statusCode, 401, `${method} ${authorization}`)
      t.equal(res.headers['www-authenticate'], 'Bearer')
      t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
      t.equal(res.body, MISSING)
    }
  }
})

t.test('auth/bearer/wrong-token-401-invalid-token', async t => {
  const app = await build(t, TOKENS)
  for (const method of METHODS) {
    for (const authorization of ['Bearer tok-gamma', 'Bearer tok-alph', 'Bearer tok-alpha-', 'Bearer TOK-ALPHA', 'Bearer tok-alpha,tok-beta']) {
      const res = await app.inject(request(method, { authorization }))
      t.equal(res.statusCode, 401, `${method} ${authorization}`)
      t.equal(res.headers['www-authenticate'], 'Bearer error="invalid_token"')
      t.equal(res.body, INVALID)
    }
  }
})

t.test('auth/bearer/right-token-200', async t => {
  const app = await build(t, TOKENS)
  for (const method of METHODS) {
    for (const authorization of ['Bearer tok-alpha', 'Bearer tok-beta', 'bearer tok-beta']) {
      const res = await app.inject(request(method, { authorization }))
      t.equal(res.statusCode, 200, `${method} ${authorization}`)
      t.equal(res.body, DUMMY)
      t.equal(res.headers['www-authenticate'], undefined)
    }
  }
})

t.test('auth/bearer/preflight-needs-no-token', async t => {
  const app = await build(t, TOKENS)
  const res = await app.inject({
    method: 'OPTIONS',
    url: '/mcp',
    headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' }
  })
  t.equal(res.statusCode, 204)
  t.equal(res.headers['access-control-allow-origin'], 'https://app.example.com')
  t.equal(res.headers['access-control-allow-headers'], 'authorization, content-type')
  t.equal(res.headers['www-authenticate'], undefined)
  const bare = await app.inject({ method: 'OPTIONS', url: '/mcp' })
  t.equal(bare.statusCode, 204, 'a bare OPTIONS is not refused either')
})

t.test('auth/bearer/origin-refused-before-auth', async t => {
  const app = await build(t, TOKENS)
  for (const method of [...METHODS, 'OPTIONS'] as const) {
    const res = await app.inject({ method, url: '/mcp', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } })
    t.equal(res.statusCode, 403, method)
    t.equal(res.body, FORBIDDEN)
    t.equal(res.headers['www-authenticate'], undefined)
  }
})

t.test('auth/bearer/401-readable-by-allowed-origin', async t => {
  const app = await build(t, TOKENS)
  const res = await app.inject(request('POST', { origin: 'https://app.example.com' }))
  t.equal(res.statusCode, 401)
  t.equal(res.headers['access-control-allow-origin'], 'https://app.example.com')
  t.equal(res.headers['access-control-expose-headers'], 'Mcp-Session-Id, WWW-Authenticate')
  t.equal(res.headers['www-authenticate'], 'Bearer')
})

t.test('auth/bearer/no-tokens-no-hook', async t => {
  const app = await build(t, [])
  for (const method of METHODS) {
    const res = await app.inject(request(method))
    t.equal(res.statusCode, 200, method)
    t.equal(res.body, DUMMY)
  }
  const hooks = app.printRoutes({ includeHooks: true, commonPrefix: false })
  t.match(hooks, /checkOrigin/, 'the route listing names hooks')
  t.notMatch(hooks, /checkBearerToken/, 'no auth hook at all')
  const withTokens = await build(t, TOKENS)
  t.match(withTokens.printRoutes({ includeHooks: true, commonPrefix: false }), /checkBearerToken/)
})

t.test('auth/bearer/static-tokens-read-no-proof', async t => {
  // Without DPoP (static tokens only) the authenticator reads no proof: the hook builds none per request.
  const app = Fastify()
  t.teardown(() => app.close())
  const real = createAuthenticator(loadConfig({ auth: { bearerTokens: TOKENS } }).auth, { logger: app.log as never })
  t.equal(real.checksProofs, false, 'a static-token authenticator checks no DPoP proof')
  const argumentCounts: number[] = []
  const authenticator: Authenticator = { ...real, authenticate: async (...args) => { argumentCounts.push(args.length); return await real.authenticate(...args) } }
  await app.register(async function mcpxScope (scope) {
    await scope.register(mcpxOrigin, { policy: POLICY })
    await scope.register(mcpxCors, { policy: POLICY })
    await scope.register(mcpxAuth, { authenticator })
    scope.route({ method: 'POST', url: '/mcp', handler: async (_request, reply) => reply.type('application/json').send(DUMMY) })
  })
  const res = await app.inject(request('POST', { authorization: 'Bearer tok-alpha' }))
  t.equal(res.statusCode, 200)
  t.same(argumentCounts, [2], 'authorization and endpoint only: no proof object')
})

t.test('auth/bearer/tokens-from-file-and-env', async t => {
  const dir = t.testdir({ 'tokens.txt': '# one per line\nfrom-file\n' })
  const config = loadConfig({ auth: { bearerTokensFile: join(dir, 'tokens.txt'), bearerTokensEnv: 'MCPX_TEST_TOKENS' } })
  const app = await build(t, loadBearerTokens(config.auth, { MCPX_TEST_TOKENS: 'from-env-1,from-env-2' }))
  for (const token of ['from-file', 'from-env-1', 'from-env-2']) {
    const res = await app.inject(request('POST', { authorization: `Bearer ${token}` }))
    t.equal(res.statusCode, 200, token)
  }
  const res = await app.inject(request('POST', { authorization: 'Bearer from-env-1,from-env-2' }))
  t.equal(res.statusCode, 401)
  t.equal(res.headers['www-authenticate'], 'Bearer error="invalid_token"')
})

t.test('auth/bearer/registration-checks', async t => {
  const noTokens = Fastify()
  t.teardown(() => noTokens.close())
  noTokens.register(mcpxOrigin, { policy: POLICY })
  noTokens.register(mcpxCors, { policy: POLICY })
  noTokens.register(mcpxAuth, {})
  await t.rejects(async () => { await noTokens.ready() }, { name: 'TypeError', message: 'mcpx: mcpx-auth requires opts.authenticator or opts.tokens (an array of strings, possibly empty)' })

  const noCors = Fastify()
  t.teardown(() => noCors.close())
  noCors.register(mcpxOrigin, { policy: POLICY })
  noCors.register(mcpxAuth, { tokens: TOKENS })
  await t.rejects(async () => { await noCors.ready() }, { message: /mcpx-cors/ }, 'mcpx-auth needs mcpx-cors registered first')
})
