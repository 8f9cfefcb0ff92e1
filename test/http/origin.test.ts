/**
 * mcpx-origin and mcpx-cors at inject level, on a bare Fastify with a dummy /mcp route
 * (seed › "Origin (every revision with Streamable HTTP)").
 */
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance, type InjectOptions } from 'fastify'
import { connect } from 'node:net'
import mcpxOrigin from '../../plugins/origin.js'
import mcpxSendRefusal from '../../plugins/send-refusal.js'
import mcpxCors from '../../plugins/cors.js'
import mcpxAuth from '../../plugins/auth.js'
import type { OriginPolicy } from '../../lib/http/origin.js'

type Method = 'POST' | 'GET' | 'DELETE' | 'OPTIONS'
const METHODS: Method[] = ['POST', 'GET', 'DELETE', 'OPTIONS']
const FORBIDDEN = '{"jsonrpc":"2.0","error":{"code":-32600,"message":"Forbidden: Origin not allowed"}}'
const DUMMY = '{"reached":"mcp"}'
const PREFLIGHT_HEADERS = 'mcp-protocol-version, mcp-method, mcp-name, mcp-param-region, mcp-session-id, last-event-id, authorization, content-type'

/** A bare Fastify: mcpx's plugins in their own un-wrapped scope, in wire order, plus a dummy /mcp. */
async function build (t: Test, policy: OriginPolicy, opts: { prefix?: string } = {}): Promise<FastifyInstance> {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(async function mcpxScope (scope) {
    await scope.register(mcpxSendRefusal)
    await scope.register(mcpxOrigin, { policy })
    await scope.register(mcpxCors, { policy })
    await scope.register(mcpxAuth, { tokens: [] })
    const url = opts.prefix === undefined ? '/mcp' : '/'
    for (const method of ['POST', 'GET', 'DELETE'] as const) {
      scope.route({ method, url, handler: async (_request, reply) => reply.type('application/json').send(DUMMY) })
    }
  }, opts.prefix === undefined ? {} : { prefix: opts.prefix })
  app.get('/host', async () => 'host route')
  await app.ready()
  return app
}

/** A request as a browser would make it; OPTIONS is a preflight. */
function request (method: Method, origin: string | string[] | undefined, extra: Record<string, string> = {}): InjectOptions {
  const headers: Record<string, string | string[]> = { ...extra }
  if (origin !== undefined) headers.origin = origin
  if (method === 'OPTIONS' && origin !== undefined) headers['access-control-request-method'] = 'POST'
  if (method === 'POST') headers['content-type'] = 'application/json'
  return { method, url: '/mcp', headers, ...(method === 'POST' ? { payload: '{}' } : {}) }
}

async function expectAllowed (t: Test, app: FastifyInstance, method: Method, origin: string | undefined, what: string): Promise<void> {
  const res = await app.inject(request(method, origin))
  if (method === 'OPTIONS') {
    t.equal(res.statusCode, 204, `${what}: ${method} status`)
    t.equal(res.body, '', `${what}: ${method} body`)
  } else {
    t.equal(res.statusCode, 200, `${what}: ${method} status`)
    t.equal(res.body, DUMMY, `${what}: ${method} reached the route`)
  }
  t.equal(res.headers['access-control-allow-origin'], origin, `${what}: ${method} CORS grant`)
}

async function expectRefused (t: Test, app: FastifyInstance, method: Method, origin: string | string[], what: string, extra: Record<string, string> = {}): Promise<void> {
  const res = await app.inject(request(method, origin, extra))
  t.equal(res.statusCode, 403, `${what}: ${method} status`)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8', `${what}: ${method} content-type`)
  t.equal(res.body, FORBIDDEN, `${what}: ${method} body`)
  t.equal(res.headers['access-control-allow-origin'], undefined, `${what}: ${method} no CORS grant`)
  t.equal(res.headers['access-control-allow-methods'], undefined, `${what}: ${method} no preflight grant`)
}

const LOOPBACK: OriginPolicy = { allowedOrigins: [] }

t.test('all/origin/no-origin-allowed', async t => {
  const app = await build(t, LOOPBACK)
  for (const method of METHODS) await expectAllowed(t, app, method, undefined, 'no Origin')
})

t.test('all/origin/loopback-allowed', async t => {
  const app = await build(t, LOOPBACK)
  for (const scheme of ['http', 'https']) {
    for (const host of ['localhost', '127.0.0.1', '[::1]']) {
      for (const port of ['', ':3000', ':3939', ':5173', ':65535']) {
        for (const method of METHODS) await expectAllowed(t, app, method, `${scheme}://${host}${port}`, `${scheme}://${host}${port}`)
      }
    }
  }
})

t.test('all/origin/null-refused', async t => {
  const app = await build(t, { allowedOrigins: ['https://app.example.com'], daemonAddress: '10.0.0.5:3939' })
  for (const method of METHODS) await expectRefused(t, app, method, 'null', 'null')
})

t.test('all/origin/lookalikes-refused', async t => {
  const app = await build(t, LOOPBACK)
  const lookalikes = [
    'http://localhost.attacker.example', 'http://127.0.0.1.nip.io', 'http://localhost@evil.com', 'http://user:pw@localhost:3000',
    'http://localhost/x', 'http://localhost:3000/', 'ws://localhost:3000', 'file://localhost', 'http://127.0.0.2',
    'http://0x7f.0.0.1', 'http://localhost:80', 'garbage', '*', 'http://evil.com'
  ]
  for (const origin of lookalikes) {
    for (const method of METHODS) await expectRefused(t, app, method, origin, origin)
  }
})

t.test('all/origin/duplicate-origin-refused', async t => {
  const app = await build(t, LOOPBACK)
  for (const method of METHODS) {
    await expectRefused(t, app, method, ['http://localhost:3000', 'http://localhost:3000'], 'repeated (array)')
    // Over a real socket Node joins a repeated Origin with ", ".
    await expectRefused(t, app, method, 'http://localhost:3000, http://localhost:3000', 'repeated (joined)')
  }
})

t.test('all/origin/duplicate-origin-refused-on-the-wire', async t => {
  const app = await build(t, LOOPBACK)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  const raw = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.end('GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://localhost:3000\r\nOrigin: http://localhost:3000\r\nConnection: close\r\n\r\n')
    })
    let data = ''
    socket.setEncoding('utf8')
    socket.on('data', chunk => { data += chunk })
    socket.on('end', () => resolve(data))
    socket.on('error', reject)
  })
  t.match(raw, /^HTTP\/1\.1 403 Forbidden\r\n/)
  t.ok(raw.endsWith(`\r\n\r\n${FORBIDDEN}`), 'exact 403 body')
})

t.test('all/origin/daemon-address-specific-allowed', async t => {
  const app = await build(t, { allowedOrigins: [], daemonAddress: '10.0.0.5:3939' })
  for (const method of METHODS) {
    await expectAllowed(t, app, method, 'http://10.0.0.5:3939', 'daemon http')
    await expectAllowed(t, app, method, 'https://10.0.0.5:3939', 'daemon https')
    await expectRefused(t, app, method, 'http://10.0.0.5:3940', 'daemon host, other port')
    await expectRefused(t, app, method, 'http://10.0.0.5', 'daemon host, no port')
  }
})

t.test('all/origin/daemon-address-wildcard-not-an-origin', async t => {
  for (const daemonAddress of ['0.0.0.0:3939', '[::]:3939']) {
    const app = await build(t, { allowedOrigins: [], daemonAddress })
    for (const method of METHODS) {
      await expectRefused(t, app, method, 'http://0.0.0.0:3939', `${daemonAddress}: http://0.0.0.0:3939`)
      await expectRefused(t, app, method, 'https://0.0.0.0:3939', `${daemonAddress}: https://0.0.0.0:3939`)
      await expectRefused(t, app, method, 'http://[::]:3939', `${daemonAddress}: http://[::]:3939`)
      await expectAllowed(t, app, method, 'http://localhost:3939', `${daemonAddress}: loopback still allowed`)
    }
  }
})

t.test('all/origin/allowed-origins-exact', async t => {
  const app = await build(t, { allowedOrigins: ['https://app.example.com/', 'http://tools.example.org:8080'] })
  for (const method of METHODS) {
    await expectAllowed(t, app, method, 'https://app.example.com', 'listed')
    await expectAllowed(t, app, method, 'http://tools.example.org:8080', 'listed with port')
    await expectRefused(t, app, method, 'http://app.example.com', 'other scheme')
    await expectRefused(t, app, method, 'https://app.example.com:444', 'other port')
    await expectRefused(t, app, method, 'https://sub.app.example.com', 'subdomain')
    await expectRefused(t, app, method, 'https://app.example.com.evil.com', 'suffix')
    await expectRefused(t, app, method, 'http://tools.example.org', 'listed host, default port')
  }
})

t.test('all/origin/host-header-does-not-help', async t => {
  // DNS rebinding: the attacker controls Host and Origin alike; the daemon address comes from config.
  const app = await build(t, { allowedOrigins: [], daemonAddress: '127.0.0.1:3939' })
  for (const method of METHODS) {
    await expectRefused(t, app, method, 'http://evil.com', 'Host: evil.com', { host: 'evil.com' })
    await expectRefused(t, app, method, 'http://evil.com:3939', 'Host: evil.com:3939', { host: 'evil.com:3939' })
  }
  const wildcard = await build(t, { allowedOrigins: [], daemonAddress: '0.0.0.0:3939' })
  for (const method of METHODS) {
    await expectRefused(t, wildcard, method, 'http://rebind.example:3939', 'wildcard bind, Host: rebind.example', { host: 'rebind.example:3939' })
  }
})

t.test('all/origin/refused-body-is-id-less-json-rpc', async t => {
  const app = await build(t, LOOPBACK)
  const res = await app.inject({ method: 'POST', url: '/mcp', headers: { origin: 'http://evil.com', 'content-type': 'application/json' }, payload: '{"jsonrpc":"2.0","id":7,"method":"ping"}' })
  t.equal(res.statusCode, 403)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  t.same(res.json(), { jsonrpc: '2.0', error: { code: -32600, message: 'Forbidden: Origin not allowed' } })
  t.notOk('id' in res.json(), 'no id, even when the body had one')
})

t.test('all/origin/cors-preflight-allowed', async t => {
  const app = await build(t, LOOPBACK)
  const res = await app.inject({
    method: 'OPTIONS',
    url: '/mcp',
    headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'POST', 'access-control-request-headers': PREFLIGHT_HEADERS }
  })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.equal(res.headers['access-control-allow-origin'], 'http://localhost:5173')
  t.equal(res.headers['access-control-allow-methods'], 'GET, POST, DELETE, OPTIONS')
  t.equal(res.headers['access-control-allow-headers'], PREFLIGHT_HEADERS, 'every requested header reflected, Mcp-Param-* included')
  t.equal(res.headers['access-control-expose-headers'], 'Mcp-Session-Id, WWW-Authenticate')
  t.equal(res.headers['access-control-allow-credentials'], undefined)
  t.equal(res.headers.vary, 'Origin, Access-Control-Request-Headers')
})

t.test('all/origin/cors-actual-request-exposes-session-id', async t => {
  const app = await build(t, { allowedOrigins: ['https://app.example.com'] })
  for (const method of ['POST', 'GET', 'DELETE'] as const) {
    const res = await app.inject(request(method, 'https://app.example.com'))
    t.equal(res.statusCode, 200)
    t.equal(res.headers['access-control-allow-origin'], 'https://app.example.com')
    t.equal(res.headers['access-control-expose-headers'], 'Mcp-Session-Id, WWW-Authenticate')
    t.equal(res.headers.vary, 'Origin')
  }
})

t.test('all/origin/cors-preflight-refused', async t => {
  const app = await build(t, LOOPBACK)
  const res = await app.inject({
    method: 'OPTIONS',
    url: '/mcp',
    headers: { origin: 'http://evil.com', 'access-control-request-method': 'POST', 'access-control-request-headers': PREFLIGHT_HEADERS }
  })
  t.equal(res.statusCode, 403)
  t.equal(res.body, FORBIDDEN)
  for (const name of Object.keys(res.headers)) t.notMatch(name, /^access-control-/, `no ${name}`)
})

t.test('all/origin/scoped-to-mcpx', async t => {
  // The plugins live in mcpx's scope: a host app's own routes never see them.
  const app = await build(t, LOOPBACK)
  const res = await app.inject({ method: 'GET', url: '/host', headers: { origin: 'http://evil.com' } })
  t.equal(res.statusCode, 200)
  t.equal(res.body, 'host route')
  t.equal(res.headers['access-control-allow-origin'], undefined)

  // With mcpx under its own prefix, even a host route's OPTIONS is untouched (@fastify/cors adds
  // an OPTIONS route on `<prefix>*`; without a prefix that wildcard would catch the host's OPTIONS).
  const prefixed = await build(t, LOOPBACK, { prefix: '/mcp' })
  const hostOptions = await prefixed.inject({ method: 'OPTIONS', url: '/host', headers: { origin: 'http://evil.com', 'access-control-request-method': 'GET' } })
  t.equal(hostOptions.statusCode, 404)
  t.equal(hostOptions.headers['access-control-allow-origin'], undefined)
  const mcpOptions = await prefixed.inject({ method: 'OPTIONS', url: '/mcp', headers: { origin: 'http://evil.com', 'access-control-request-method': 'POST' } })
  t.equal(mcpOptions.statusCode, 403)
  t.equal(mcpOptions.body, FORBIDDEN)
  const allowed = await prefixed.inject({ method: 'OPTIONS', url: '/mcp', headers: { origin: 'http://localhost:1', 'access-control-request-method': 'POST' } })
  t.equal(allowed.statusCode, 204)
  t.equal(allowed.headers['access-control-allow-origin'], 'http://localhost:1')
})

t.test('all/origin/registration-checks', async t => {
  const noPolicy = Fastify()
  t.teardown(() => noPolicy.close())
  // @ts-expect-error opts.policy is required
  noPolicy.register(mcpxOrigin, {})
  await t.rejects(async () => { await noPolicy.ready() }, { name: 'TypeError', message: 'mcpx: mcpx-origin requires opts.policy (an OriginPolicy)' })

  const badPolicy = Fastify()
  t.teardown(() => badPolicy.close())
  badPolicy.register(mcpxOrigin, { policy: { allowedOrigins: ['null'] } })
  await t.rejects(async () => { await badPolicy.ready() }, { name: 'McpxError', code: 'MCPX_ERR_CONFIG', message: /^mcpx: transport\.allowedOrigins\[0\]/ })

  const corsFirst = Fastify()
  t.teardown(() => corsFirst.close())
  corsFirst.register(mcpxCors, { policy: LOOPBACK })
  await t.rejects(async () => { await corsFirst.ready() }, { message: /mcpx-origin/ }, 'mcpx-cors needs mcpx-origin registered first')
})
