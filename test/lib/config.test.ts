/** Config loading and validation (lib/config/load.ts, lib/config/schema.ts; docs/configuration.md › Configuration). */
import t from 'tap'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig, resolveConfig } from '../../lib/config/load.js'
import { PRECOMPILED_FILE, configValidator } from '../../lib/config/validator.js'
import { parseDuration, MAX_DURATION_MS } from '../../lib/base/duration.js'
import { mrtrOptions, httpServerTimeouts } from '../../lib/config/derive.js'
import { McpxError } from '../../lib/base/errors.js'

function configError (fn: () => unknown): string {
  try { fn() } catch (err) {
    if (err instanceof McpxError && err.code === 'MCPX_ERR_CONFIG') return err.message
    throw err
  }
  throw new Error('no error thrown')
}

t.test('config/load/defaults', async t => {
  const config = loadConfig({})
  t.equal(config.daemon.address, '127.0.0.1:3939')
  t.same(config.transport.allowedOrigins, [])
  t.equal(config.transport.sseKeepAlive, 15_000)
  t.equal(config.transport.stdioDrain, 5_000)
  t.equal(config.transport.sessionIdleTimeout, 30 * 60_000)
  t.equal(config.transport.maxBodyBytes, 4 * 1024 * 1024)
  t.equal(config.upstreamTimeout, 60_000)
  t.same(config.upstreams, {})
})

t.test('config/durations/ms-or-strings', async t => {
  t.equal(parseDuration(250), 250)
  t.equal(parseDuration('500ms'), 500)
  t.equal(parseDuration('15s'), 15_000)
  t.equal(parseDuration('2m'), 120_000)
  t.equal(parseDuration('1h'), 3_600_000)
  t.equal(parseDuration('1.5s'), 1_500)
  t.equal(loadConfig({ transport: { sseKeepAlive: '50ms' } }).transport.sseKeepAlive, 50)
  t.match(configError(() => loadConfig({ transport: { sseKeepAlive: 'soon' } })), /transport\.sseKeepAlive/)
  t.match(configError(() => loadConfig({ transport: { sseKeepAlive: -5 } })), /transport\.sseKeepAlive/)
})

t.test('config/durations/past-the-timer-limit-refused', async t => {
  t.equal(parseDuration(MAX_DURATION_MS), MAX_DURATION_MS)
  t.match(configError(() => loadConfig({ transport: { sseKeepAlive: '600h' } })), /transport\.sseKeepAlive must be at most 2147483647 ms/)
  t.match(configError(() => loadConfig({ daemon: { shutdownTimeout: '99999999h' } })), /daemon\.shutdownTimeout/)
  t.match(configError(() => loadConfig({ upstreams: { fx: { command: 'node', timeout: '600h' } } })), /upstreams\.fx\.timeout/)
})

t.test('config/errors/bad-field-named', async t => {
  t.match(configError(() => loadConfig({ transport: { maxBodyBytes: 'big' } })), /transport\.maxBodyBytes/)
  t.match(configError(() => loadConfig({ transprot: {} })), /additional properties \(transprot\)/)
  t.match(configError(() => loadConfig({ daemon: { address: 'localhost' } })), /daemon\.address/)
})

t.test('config/load/resolution-order', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-config-'))
  const flagFile = join(dir, 'flag.json')
  const envFile = join(dir, 'env.json')
  writeFileSync(flagFile, JSON.stringify({ daemon: { address: '127.0.0.1:1001' } }))
  writeFileSync(envFile, JSON.stringify({ daemon: { address: '127.0.0.1:1002' } }))
  writeFileSync(join(dir, 'mcpx.config.json'), JSON.stringify({ daemon: { address: '127.0.0.1:1003' } }))
  t.equal(resolveConfig(flagFile, { MCPX_CONFIG: envFile }, dir).config.daemon.address, '127.0.0.1:1001', '--config first')
  t.equal(resolveConfig(undefined, { MCPX_CONFIG: envFile }, dir).config.daemon.address, '127.0.0.1:1002', 'then MCPX_CONFIG')
  t.equal(resolveConfig(undefined, {}, dir).config.daemon.address, '127.0.0.1:1003', 'then ./mcpx.config.json')
  const empty = mkdtempSync(join(tmpdir(), 'mcpx-config-'))
  const fallback = resolveConfig(undefined, {}, empty)
  t.equal(fallback.source, '(embedded default)')
  t.same(Object.keys(fallback.config.upstreams), ['everything'], 'the embedded default serves server-everything')
  t.match(configError(() => resolveConfig(join(dir, 'missing.json'), {}, dir)), /cannot read config file/)
  writeFileSync(join(dir, 'broken.json'), '{ nope')
  t.match(configError(() => resolveConfig(join(dir, 'broken.json'), {}, dir)), /is not JSON/)
})

t.test('config/mrtr/state-key', async t => {
  t.equal(mrtrOptions(loadConfig({})).stateKey, undefined, 'generated at start when absent')
  const key = Buffer.alloc(32, 7).toString('base64')
  t.equal(mrtrOptions(loadConfig({ mrtr: { stateKey: key } })).stateKey?.length, 32)
  t.match(configError(() => loadConfig({ mrtr: { stateKey: 'short' } })), /mrtr\.stateKey/)
})

// ajv (allErrors) reports every branch of a oneOf/anyOf; only the branch the value meant is
// relevant: an upstream with `command` is a stdio upstream, one with `url` an HTTP upstream, and a
// duration string is not a number.
t.test('config/errors/upstream-errors-only-from-the-meant-branch', async t => {
  t.equal(configError(() => loadConfig({ upstreams: { a: { command: 'x', timeout: '-5s' } } })),
    'mcpx: invalid config:\n  upstreams.a.timeout: must match pattern "^\\s*\\d+(\\.\\d+)?\\s*(ms|s|m|h)?\\s*$"')
  t.equal(configError(() => loadConfig({ upstreams: { a: { command: 'x', timeout: -5 } } })),
    'mcpx: invalid config:\n  upstreams.a.timeout: must be >= 0')
  t.equal(configError(() => loadConfig({ upstreams: { a: { command: 'x', headers: {} } } })),
    'mcpx: invalid config:\n  upstreams.a: must NOT have additional properties (headers)', 'stdio upstream: no `url` noise')
  t.equal(configError(() => loadConfig({ upstreams: { h: { url: 'ftp://x', headers: { a: 1 } } } })),
    'mcpx: invalid config:\n  upstreams.h.url: must match pattern "^https?://[^/?#@]+([/?#].*)?$"\n  upstreams.h.headers.a: must be string', 'HTTP upstream: no `command` noise')
  t.equal(configError(() => loadConfig({ upstreams: { h: { url: 'http://x', args: [] } } })),
    'mcpx: invalid config:\n  upstreams.h: must NOT have additional properties (args)')
  // Neither key: both branches stay possible, so both are reported.
  const neither = configError(() => loadConfig({ upstreams: { n: { args: [] } } }))
  t.match(neither, /required property 'command'/)
  t.match(neither, /required property 'url'/)
  // A good upstream next to a bad one adds nothing.
  t.equal(configError(() => loadConfig({ upstreams: { ok: { command: 'x' }, bad: { url: 'http://x', timeout: 'soon' } } })),
    'mcpx: invalid config:\n  upstreams.bad.timeout: must match pattern "^\\s*\\d+(\\.\\d+)?\\s*(ms|s|m|h)?\\s*$"')
})

t.test('config/errors/bad-upstream-name-named', async t => {
  t.equal(configError(() => loadConfig({ upstreams: { 'bad name!': { command: 'x' } } })),
    'mcpx: invalid config:\n  upstreams: key "bad name!" must match pattern "^[A-Za-z0-9][A-Za-z0-9_.-]*$"')
})

t.test('config/trust-proxy/addresses-or-cidrs', async t => {
  t.same(loadConfig({}).daemon.trustProxy, [], 'off by default: X-Forwarded-For is never believed')
  const listed = ['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8', '192.168.1.7/32']
  t.same(loadConfig({ daemon: { trustProxy: listed } }).daemon.trustProxy, listed)
  for (const [bad, index] of [['proxy.example', 0], ['10.0.0.0/33', 0], ['10.0.0.0/x', 0], ['fd00::/129', 0], ['10.0.0.1/', 0]] as const) {
    t.equal(configError(() => loadConfig({ daemon: { trustProxy: [bad] } })),
      `mcpx: daemon.trustProxy[${index}] must be an IP address or a CIDR such as "10.0.0.0/8", got ${JSON.stringify(bad)}`, bad)
  }
  for (const everyone of ['0.0.0.0/0', '::/0']) {
    t.match(configError(() => loadConfig({ daemon: { trustProxy: ['127.0.0.1', everyone] } })),
      /^mcpx: daemon\.trustProxy\[1\] .* trusts every address: any client could forge X-Forwarded-For/, everyone)
  }
  t.match(configError(() => loadConfig({ daemon: { trustProxy: '127.0.0.1' } })), /daemon\.trustProxy: must be array/)
})

t.test('config/timeouts/server-options-derived', async t => {
  t.same(httpServerTimeouts(loadConfig({}).transport), { headersTimeout: 10_000, requestTimeout: 40_000, keepAliveTimeout: 72_000, connectionsCheckingInterval: 1_000 },
    'defaults: the whole request within head + body bounds, swept every second')
  t.same(httpServerTimeouts(loadConfig({ transport: { headersTimeout: '1s', bodyTimeout: '2s', keepAliveTimeout: '5s' } }).transport),
    { headersTimeout: 1_000, requestTimeout: 3_000, keepAliveTimeout: 5_000, connectionsCheckingInterval: 250 }, 'short bounds are swept every quarter of the shortest')
  t.same(httpServerTimeouts({ headersTimeout: 200, bodyTimeout: 0, keepAliveTimeout: 0 }), { headersTimeout: 200, requestTimeout: 0, keepAliveTimeout: 0, connectionsCheckingInterval: 100 },
    'bodyTimeout 0 leaves the request unbounded (Node: requestTimeout 0); the sweep is never under 100 ms')
  t.equal(httpServerTimeouts({ headersTimeout: MAX_DURATION_MS, bodyTimeout: MAX_DURATION_MS, keepAliveTimeout: 1 }).requestTimeout, MAX_DURATION_MS, 'the sum stays within Node\'s timer limit')
})

t.test('config/upstreams/timeout-keys', async t => {
  const config = loadConfig({ upstreams: { a: { command: 'x', maxTotalTimeout: '5m', resetTimeoutOnProgress: true }, b: { url: 'http://127.0.0.1:1/mcp' } } })
  t.match(config.upstreams.a, { resetTimeoutOnProgress: true, maxTotalTimeout: 300_000 }, 'maxTotalTimeout is a duration (ms)')
  t.notOk(config.upstreams.b.resetTimeoutOnProgress, 'resetTimeoutOnProgress is off unless set, on HTTP upstreams too')
  t.equal(config.upstreams.b.maxTotalTimeout, undefined, 'no maxTotalTimeout by default')
  t.throws(() => loadConfig({ upstreams: { a: { command: 'x', maxTotalTimeout: 'soon' } } }), McpxError, 'a bad maxTotalTimeout is refused')
})

t.test('paging/config/page-size-bounds', async t => {
  t.equal(loadConfig({}).transport.pageSize, 0, 'no paging by default')
  t.equal(loadConfig({ transport: { pageSize: 1 } }).transport.pageSize, 1)
  t.equal(loadConfig({ transport: { pageSize: 10_000 } }).transport.pageSize, 10_000, 'the largest page')
  for (const bad of [-1, 10_001, 2.5, '50', null]) {
    t.match(configError(() => loadConfig({ transport: { pageSize: bad } })), /transport\.pageSize/, `${JSON.stringify(bad)} is refused, naming the key`)
  }
  t.match(configError(() => loadConfig({ transport: { pageSize: 10_001 } })), /transport\.pageSize: must be <= 10000/, 'the message gives the bound')
})

t.test('ops/status/admin-scopes-need-oauth', async t => {
  t.same(loadConfig({}).admin.scopes, [], 'no admin scopes by default: only admin tokens open the admin endpoints')
  t.match(configError(() => loadConfig({ admin: { scopes: ['mcp:admin'] } })), /admin\.scopes: needs auth\.oauth/, 'admin.scopes without auth.oauth is refused, naming the key')
  const config = loadConfig({ admin: { scopes: ['mcp:admin'] }, auth: { oauth: { issuer: 'https://as.example.com', resource: 'https://mcpx.example.com/mcp' } } })
  t.same(config.admin.scopes, ['mcp:admin'])
})

t.test('config/load/precompiled-validator-when-fresh', async t => {
  // The build writes the validator ajv would compile (lib/config/validator.ts); a process loads it
  // instead of compiling, unless it is missing, broken or built from anything else (schema,
  // options, ajv).
  const fresh = configValidator()
  t.equal(fresh.source, 'precompiled', `npm run build wrote ${PRECOMPILED_FILE} from this schema`)
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-validator-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const stale = join(dir, 'stale.cjs')
  writeFileSync(stale, readFileSync(PRECOMPILED_FILE, 'utf8').replace(/module\.exports\.schemaDigest = "[0-9a-f]+"/, 'module.exports.schemaDigest = "0"'))
  const broken = join(dir, 'broken.cjs')
  writeFileSync(broken, 'module.exports = {')
  t.equal(configValidator(join(dir, 'missing.cjs')).source, 'compiled', 'a missing file: compiled now')
  t.equal(configValidator(stale).source, 'compiled', 'a file built from anything else: compiled now')
  t.equal(configValidator(broken).source, 'compiled', 'a broken file: compiled now')
  // Both validate alike: the same verdicts, defaults and errors.
  const compiled = configValidator(stale).validate
  const configs: unknown[] = [
    {},
    { daemon: { address: 'localhost' }, transprot: {} },
    { transport: { maxBodyBytes: 'big', sseKeepAlive: 'soon' } },
    { upstreams: { fx: { command: 'node', timeout: '5s' }, web: { url: 'https://example.test/mcp', auth: { kind: 'nope' } } } },
    { policy: { default: 'deny', rules: [{ allow: ['*'] }, { deny: 7 }] } }
  ]
  for (const config of configs) {
    const [a, b] = [structuredClone(config), structuredClone(config)]
    const verdicts = [fresh.validate(a), compiled(b)]
    t.same([verdicts[0], a, fresh.validate.errors ?? null], [verdicts[1], b, compiled.errors ?? null], `alike on ${JSON.stringify(config)}`)
  }
  t.ok(configs.some(config => !compiled(structuredClone(config))), 'some of them are refused')
})
