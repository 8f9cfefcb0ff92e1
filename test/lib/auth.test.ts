/**
 * Unit tests of lib/auth/tokens: token loading, the constant-time bearer check, assertSafeBind. No Fastify.
 */
import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig } from '../../lib/config/load.js'
import type { McpxConfig } from '../../lib/config/types.js'
import {
  assertSafeBind, checkBearer, createBearerVerifier, loadBearerTokens
} from '../../lib/auth/tokens.js'
import { isLoopbackHost as isLoopbackBindHost } from '../../lib/base/net.js'
import { refusal } from '../../lib/protocol/http-status.js'

const TOKENS = ['s3cret-token-A', 'token.B_~+/==']

t.test('auth/bearer/accepts-configured-tokens', async t => {
  t.equal(checkBearer('Bearer s3cret-token-A', TOKENS), true)
  t.equal(checkBearer('Bearer token.B_~+/==', TOKENS), true)
  t.equal(checkBearer('bearer s3cret-token-A', TOKENS), true, 'scheme is case-insensitive')
  t.equal(checkBearer('BEARER   s3cret-token-A  ', TOKENS), true, 'extra spaces around the token')
})

t.test('auth/bearer/refuses-others', async t => {
  const refused = [
    undefined, '', 'Bearer', 'Bearer ', 'Bearer s3cret-token-a', 'Bearer s3cret-token-A-', 'Bearer s3cret-token',
    'Bearer  s3cret-token-A x', 'Bearers3cret-token-A', 'Basic s3cret-token-A', 's3cret-token-A',
    'Bearer s3cret-token-A,token.B_~+/==', 'Bearer\ts3cret-token-A', 'Token s3cret-token-A'
  ]
  for (const header of refused) t.equal(checkBearer(header, TOKENS), false, JSON.stringify(header))
  t.equal(checkBearer('Bearer s3cret-token-A', []), false, 'no tokens accept nothing')
})

t.test('auth/bearer/outcomes', async t => {
  const verify = createBearerVerifier(TOKENS)
  t.equal(verify(undefined), 'missing')
  t.equal(verify('Basic dXNlcjpwYXNz'), 'missing')
  t.equal(verify('Bearer '), 'missing')
  t.equal(verify('Bearer wrong'), 'invalid')
  t.equal(verify('Bearer s3cret-token-A'), 'ok')
  // Every token matches, whatever its position (no early exit bug that only checks the first).
  t.equal(createBearerVerifier(['a', 'b', 'c'])('Bearer c'), 'ok')
  t.equal(createBearerVerifier(['a', 'b', 'c'])('Bearer b'), 'ok')
})

t.test('auth/bearer/refusal-shapes', async t => {
  const missing = refusal('unauthorizedMissing')
  const invalid = refusal('unauthorizedInvalid')
  t.equal(missing.status, 401)
  t.equal(invalid.status, 401)
  t.strictSame(missing.headers, { 'www-authenticate': 'Bearer' })
  t.strictSame(invalid.headers, { 'www-authenticate': 'Bearer error="invalid_token"' })
  t.equal(missing.body, '{"jsonrpc":"2.0","error":{"code":-32600,"message":"Unauthorized: a bearer token is required"}}')
  t.equal(invalid.body, '{"jsonrpc":"2.0","error":{"code":-32600,"message":"Unauthorized: invalid bearer token"}}')
})

function authOf (raw: Record<string, unknown>): McpxConfig['auth'] {
  return loadConfig({ auth: raw }).auth
}

t.test('auth/bearer/tokens-from-config-file-and-env', async t => {
  const dir = t.testdir({
    'tokens.txt': '# mcpx tokens\nfile-one\r\n\n  file-two  \nconfig-one\n'
  })
  const file = join(dir, 'tokens.txt')
  const tokens = loadBearerTokens(authOf({ bearerTokens: ['config-one'], bearerTokensFile: file, bearerTokensEnv: 'MCPX_TEST_TOKENS' }),
    { MCPX_TEST_TOKENS: ' env-one, ,env-two,file-one ' })
  t.same(tokens, ['config-one', 'file-one', 'file-two', 'env-one', 'env-two'])
  t.same(loadBearerTokens(authOf({}), {}), [])
  t.same(loadBearerTokens(authOf({ bearerTokensEnv: 'X' }), { X: 'only' }), ['only'])
  t.same(loadBearerTokens(authOf({ bearerTokensFile: file }), {}), ['file-one', 'file-two', 'config-one'])
})

t.test('auth/bearer/token-sources-fail-loudly', async t => {
  const dir = t.testdir({ 'empty.txt': '# nothing\n\n', 'spaced.txt': 'two words\n' })
  t.throws(() => loadBearerTokens(authOf({ bearerTokensFile: join(dir, 'missing.txt') }), {}),
    { name: 'McpxError', code: 'MCPX_ERR_CONFIG', message: /^mcpx: cannot read auth\.bearerTokensFile .*missing\.txt: ENOENT/ })
  t.throws(() => loadBearerTokens(authOf({ bearerTokensFile: join(dir, 'empty.txt') }), {}),
    { code: 'MCPX_ERR_CONFIG', message: `mcpx: auth.bearerTokensFile ${join(dir, 'empty.txt')} holds no token` })
  t.throws(() => loadBearerTokens(authOf({ bearerTokensEnv: 'MCPX_UNSET' }), {}),
    { code: 'MCPX_ERR_CONFIG', message: 'mcpx: auth.bearerTokensEnv names MCPX_UNSET, which is not set' })
  t.throws(() => loadBearerTokens(authOf({ bearerTokensEnv: 'E' }), { E: ' , ' }),
    { code: 'MCPX_ERR_CONFIG', message: 'mcpx: environment variable E (auth.bearerTokensEnv) holds no token' })
  t.throws(() => loadBearerTokens(authOf({ bearerTokensFile: join(dir, 'spaced.txt') }), {}),
    { code: 'MCPX_ERR_CONFIG', message: /holds a token with a space/ })
  t.throws(() => loadBearerTokens(authOf({ bearerTokens: ['tab\tinside'] }), {}),
    { code: 'MCPX_ERR_CONFIG', message: /^mcpx: auth\.bearerTokens\[0\] holds a token/ })
  // The message never carries the token.
  try {
    loadBearerTokens(authOf({ bearerTokensEnv: 'E' }), { E: 'sec ret' })
    t.fail('should throw')
  } catch (err) {
    t.notMatch((err as Error).message, /sec ret/)
  }
})

t.test('auth/bind/loopback-hosts', async t => {
  for (const host of ['127.0.0.1', '127.0.0.2', '127.255.255.254', 'localhost', 'LOCALHOST', '::1', '[::1]', '[0:0:0:0:0:0:0:1]']) {
    t.equal(isLoopbackBindHost(host), true, host)
  }
  for (const host of ['0.0.0.0', '::', '[::]', '10.0.0.5', '128.0.0.1', '192.168.1.1', 'example.com', 'localhost.example',
    '127.0.0.1.nip.io', '[::ffff:127.0.0.1]', '[fd00::1]', '']) {
    t.equal(isLoopbackBindHost(host), false, host)
  }
})

const UNSAFE = (address: string): string =>
  `mcpx: refusing to listen on ${address} without authentication: set auth.bearerTokens (or bearerTokensFile / bearerTokensEnv), auth.tokens or auth.oauth, or auth.allowUnauthenticated: true if an authenticating reverse proxy sits in front`

t.test('auth/bind/assert-safe-bind', async t => {
  for (const address of ['127.0.0.1:3939', '127.8.9.10:1', 'localhost:3939', '[::1]:3939']) {
    t.doesNotThrow(() => assertSafeBind(loadConfig({ daemon: { address } }), []), address)
  }
  for (const address of ['0.0.0.0:3939', '[::]:3939', '10.0.0.5:3939', 'mcpx.example.com:443', '[fd00::1]:3939']) {
    const config = loadConfig({ daemon: { address } })
    t.throws(() => assertSafeBind(config, []), { name: 'McpxError', code: 'MCPX_ERR_UNSAFE_BIND', message: UNSAFE(address) }, address)
    t.doesNotThrow(() => assertSafeBind(config, ['tok']), `${address} with a token`)
    t.doesNotThrow(() => assertSafeBind(loadConfig({ daemon: { address }, auth: { allowUnauthenticated: true } }), []), `${address} allowUnauthenticated`)
  }
})

t.test('auth/oauth/non-loopback-bind-counts-oauth-as-auth', async t => {
  const address = '0.0.0.0:3939'
  const oauth = { issuer: 'https://login.example.com/realms/acme', resource: 'https://mcp.example.com/mcp' }
  t.doesNotThrow(() => assertSafeBind(loadConfig({ daemon: { address }, auth: { oauth } }), []), 'auth.oauth is explicit authentication')
  t.doesNotThrow(() => assertSafeBind(loadConfig({ daemon: { address }, auth: { tokens: [{ name: 'ci', tokenEnv: 'X' }] } }), []), 'named tokens are too')
  t.throws(() => assertSafeBind(loadConfig({ daemon: { address } }), []), { code: 'MCPX_ERR_UNSAFE_BIND' })
})
