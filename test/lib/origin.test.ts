/**
 * Unit tests of lib/http/origin (seed › "Origin (every revision with Streamable HTTP)"). No Fastify.
 */
import t from 'tap'
import { McpxError } from '../../lib/base/errors.js'
import { loadConfig } from '../../lib/config/load.js'
import { createOriginCheck, isOriginAllowed, originPolicyFromConfig, type OriginPolicy } from '../../lib/http/origin.js'
import { isUnspecifiedHost, parseHostPort } from '../../lib/base/net.js'
import { refusal } from '../../lib/protocol/http-status.js'

const LOOPBACK: OriginPolicy = { allowedOrigins: [] }

t.test('all/origin/no-origin-allowed', async t => {
  t.equal(isOriginAllowed(undefined, LOOPBACK), true)
})

t.test('all/origin/loopback-any-port-http-https', async t => {
  for (const scheme of ['http', 'https']) {
    for (const host of ['localhost', '127.0.0.1', '[::1]']) {
      for (const port of ['', ':1', ':3000', ':3939', ':5173', ':8080', ':65535']) {
        t.equal(isOriginAllowed(`${scheme}://${host}${port}`, LOOPBACK), true, `${scheme}://${host}${port}`)
      }
    }
  }
  // ASCII case is forgiven: scheme and host are case-insensitive.
  t.equal(isOriginAllowed('HTTP://LocalHost:3000', LOOPBACK), true)
})

t.test('all/origin/null-refused', async t => {
  t.equal(isOriginAllowed('null', LOOPBACK), false)
  t.equal(isOriginAllowed('null', { allowedOrigins: ['https://app.example.com'], daemonAddress: '10.0.0.5:3939' }), false)
})

t.test('all/origin/lookalikes-refused', async t => {
  const refused = [
    'http://localhost.attacker.example',
    'http://127.0.0.1.nip.io',
    'http://localhost@evil.com',
    'http://user:pass@localhost',
    'http://user@localhost:3000',
    'http://localhost/',
    'http://localhost/x',
    'http://localhost:3000/x',
    'http://localhost?x',
    'http://localhost#x',
    'http://localhost.',
    'http://localhost:80', // not the serialised form: a browser sends http://localhost
    'https://localhost:443',
    'http://localhost:0x50',
    'http://0x7f.0.0.1',
    'http://127.1',
    'http://2130706433',
    'http://[0:0:0:0:0:0:0:1]',
    'http://127.0.0.2',
    'http://[::ffff:127.0.0.1]',
    'http://0.0.0.0',
    'ws://localhost',
    'wss://localhost:3000',
    'ftp://localhost',
    'file://localhost',
    'file:///etc/passwd',
    'data:text/html,hi',
    'javascript:alert(1)',
    'localhost',
    'localhost:3000',
    '//localhost',
    'http://',
    'http:localhost',
    'http:/localhost',
    ' http://localhost',
    'http://localhost ',
    'http://local host',
    'http://lоcalhost', // Cyrillic о
    'http://\u212Aey.example', // Kelvin sign lowercases to ASCII k
    '*',
    '',
    'http://evil.com',
    'https://evil.com'
  ]
  for (const origin of refused) t.equal(isOriginAllowed(origin, LOOPBACK), false, JSON.stringify(origin))
})

t.test('all/origin/duplicate-origin-refused', async t => {
  t.equal(isOriginAllowed(['http://localhost:3000'], LOOPBACK), false)
  t.equal(isOriginAllowed(['http://localhost:3000', 'http://localhost:3000'], LOOPBACK), false)
  t.equal(isOriginAllowed([], LOOPBACK), false)
})

t.test('all/origin/daemon-address-specific', async t => {
  const policy = { allowedOrigins: [], daemonAddress: '10.0.0.5:3939' }
  t.equal(isOriginAllowed('http://10.0.0.5:3939', policy), true)
  t.equal(isOriginAllowed('https://10.0.0.5:3939', policy), true)
  t.equal(isOriginAllowed('http://10.0.0.5:3940', policy), false)
  t.equal(isOriginAllowed('http://10.0.0.5', policy), false)
  t.equal(isOriginAllowed('http://10.0.0.6:3939', policy), false)

  const named = { allowedOrigins: [], daemonAddress: 'MCPX.Internal:8443' }
  t.equal(isOriginAllowed('https://mcpx.internal:8443', named), true)
  t.equal(isOriginAllowed('http://mcpx.internal:8443', named), true)
  t.equal(isOriginAllowed('https://mcpx.internal', named), false)

  const v6 = { allowedOrigins: [], daemonAddress: '[FD00::5]:3939' }
  t.equal(isOriginAllowed('http://[fd00::5]:3939', v6), true)
  t.equal(isOriginAllowed('https://[fd00::5]:3939', v6), true)

  // Port 80: the http origin serialises without the port, the https one keeps it.
  const port80 = { allowedOrigins: [], daemonAddress: '10.0.0.5:80' }
  t.equal(isOriginAllowed('http://10.0.0.5', port80), true)
  t.equal(isOriginAllowed('https://10.0.0.5:80', port80), true)
  t.equal(isOriginAllowed('http://10.0.0.5:80', port80), false)
})

t.test('all/origin/daemon-address-unspecified-adds-nothing', async t => {
  for (const daemonAddress of ['0.0.0.0:3939', '[::]:3939', ':::3939', '[0:0:0:0:0:0:0:0]:3939']) {
    const policy = { allowedOrigins: [], daemonAddress }
    t.equal(isOriginAllowed('http://0.0.0.0:3939', policy), false, daemonAddress)
    t.equal(isOriginAllowed('https://0.0.0.0:3939', policy), false, daemonAddress)
    t.equal(isOriginAllowed('http://[::]:3939', policy), false, daemonAddress)
    t.equal(isOriginAllowed('http://localhost:3939', policy), true, daemonAddress) // loopback still is
  }
  // Ephemeral port: no origin to name.
  t.equal(isOriginAllowed('http://10.0.0.5:0', { allowedOrigins: [], daemonAddress: '10.0.0.5:0' }), false)
})

t.test('all/origin/allowed-origins-exact', async t => {
  const policy = { allowedOrigins: ['https://App.Example.com/', 'http://tools.example.org:8080', 'https://secure.example.net:443'] }
  t.equal(isOriginAllowed('https://app.example.com', policy), true)
  t.equal(isOriginAllowed('https://APP.example.com', policy), true)
  t.equal(isOriginAllowed('http://tools.example.org:8080', policy), true)
  t.equal(isOriginAllowed('https://secure.example.net', policy), true)

  t.equal(isOriginAllowed('http://app.example.com', policy), false, 'scheme differs')
  t.equal(isOriginAllowed('https://app.example.com:8443', policy), false, 'port differs')
  t.equal(isOriginAllowed('https://evil.app.example.com', policy), false, 'subdomain')
  t.equal(isOriginAllowed('https://app.example.com.evil.com', policy), false, 'suffix')
  t.equal(isOriginAllowed('https://app.example.com/', policy), false, 'a path is not an origin')
  t.equal(isOriginAllowed('http://tools.example.org', policy), false)
  t.equal(isOriginAllowed('https://secure.example.net:443', policy), false, 'not the serialised form')
  // Only ASCII case is forgiven: U+212A (Kelvin sign) lowercases to "k" and IDNA maps it to "k".
  t.equal(isOriginAllowed('http://key.example', { allowedOrigins: ['http://key.example'] }), true)
  t.equal(isOriginAllowed('http://\u212Aey.example', { allowedOrigins: ['http://key.example'] }), false)
})

t.test('all/origin/host-header-is-not-consulted', async t => {
  // There is no Host input at all: evil.com is refused however it is reached.
  t.equal(isOriginAllowed('http://evil.com', { allowedOrigins: [], daemonAddress: '127.0.0.1:3939' }), false)
})

t.test('all/origin/bad-policy-fails-at-build', async t => {
  const bad = [
    ['null', /transport\.allowedOrigins\[0\] must be an http or https origin|is not an origin/],
    ['*', /transport\.allowedOrigins\[0\] is not an origin/],
    ['app.example.com', /transport\.allowedOrigins\[0\]/],
    ['https://app.example.com/path', /no userinfo, path, query or fragment/],
    ['https://user@app.example.com', /no userinfo, path, query or fragment/],
    ['ftp://app.example.com', /must be an http or https origin/]
  ] as const
  for (const [entry, message] of bad) {
    t.throws(() => createOriginCheck({ allowedOrigins: [entry] }), { name: 'McpxError', code: 'MCPX_ERR_CONFIG', message }, entry)
  }
  t.throws(() => createOriginCheck({ allowedOrigins: [], daemonAddress: 'no-port' }),
    { name: 'McpxError', code: 'MCPX_ERR_CONFIG', message: 'mcpx: daemon.address must be host:port, got "no-port"' })
  t.throws(() => isOriginAllowed(undefined, { allowedOrigins: ['nope'] }), McpxError)
})

t.test('all/origin/policy-from-config', async t => {
  const config = loadConfig({ daemon: { address: '10.1.2.3:4000' }, transport: { allowedOrigins: ['https://app.example.com'] } })
  const policy = originPolicyFromConfig(config)
  t.same(policy, { allowedOrigins: ['https://app.example.com'], daemonAddress: '10.1.2.3:4000' })
  t.ok(Object.isFrozen(policy))
  t.equal(isOriginAllowed('http://10.1.2.3:4000', policy), true)
  t.equal(isOriginAllowed('https://app.example.com', policy), true)
  t.equal(isOriginAllowed('https://other.example.com', policy), false)
  const defaults = originPolicyFromConfig(loadConfig({}))
  t.same(defaults, { allowedOrigins: [], daemonAddress: '127.0.0.1:3939' })
})

t.test('all/origin/refused-body', async t => {
  t.equal(refusal('forbiddenOrigin').status, 403)
  t.equal(refusal('forbiddenOrigin').body, '{"jsonrpc":"2.0","error":{"code":-32600,"message":"Forbidden: Origin not allowed"}}')
})

t.test('all/origin/parse-host-port', async t => {
  t.same(parseHostPort('127.0.0.1:3939'), { host: '127.0.0.1', port: 3939 })
  t.same(parseHostPort('[::1]:3939'), { host: '[::1]', port: 3939 })
  t.same(parseHostPort('::1:3939'), { host: '[::1]', port: 3939 })
  t.same(parseHostPort('LocalHost:80'), { host: 'localhost', port: 80 })
  t.same(parseHostPort('0:3939'), { host: '0.0.0.0', port: 3939 })
  for (const bad of ['', ':3939', 'host', 'host:', 'host:x', 'host:65536', 'a@b:1', 'a/b:1', 'a b:1', '[zz]:1']) {
    t.equal(parseHostPort(bad), undefined, JSON.stringify(bad))
  }
  t.equal(isUnspecifiedHost('0.0.0.0'), true)
  t.equal(isUnspecifiedHost('[::]'), true)
  t.equal(isUnspecifiedHost('127.0.0.1'), false)
})

t.test('all/origin/one-loopback-definition-two-member-sets', async t => {
  const { isLoopbackHost, isLoopbackHostHeader, isLoopbackAddress } = await import('../../lib/base/net.js')
  for (const host of ['localhost', '127.0.0.1', '127.9.9.9', '[::1]', '::1', 'LOCALHOST']) t.ok(isLoopbackHost(host), host)
  for (const host of ['10.0.0.1', '::ffff:127.0.0.1', 'localhost.example', '']) t.notOk(isLoopbackHost(host), host)
  for (const header of ['localhost:3939', '127.0.0.1', '[::1]:3939', '127.0.0.2:80']) t.ok(isLoopbackHostHeader(header), header)
  for (const header of ['evil.example:3939', undefined, '', ':3939']) t.notOk(isLoopbackHostHeader(header), String(header))
  t.ok(isLoopbackAddress('127.0.0.1:3939'))
  t.notOk(isLoopbackAddress('0.0.0.0:3939'))
  // The Origin rule is the seed's three names exactly: 127.0.0.2 is loopback as an address, not as an Origin.
  t.ok(isOriginAllowed('http://127.0.0.1:5173', LOOPBACK))
  t.notOk(isOriginAllowed('http://127.0.0.2:5173', LOOPBACK))
})
