/**
 * Unit tests of lib/upstreams/registry: template matching, prefixes and routing errors that need
 * no upstream process (nothing is spawned before start()); the `legacyConnection` config key; and
 * one test with a real upstream (the conformance fixture over stdio) for list_changed relaying.
 */
import t from 'tap'
import { fileURLToPath } from 'node:url'
import { createRegistry, PREFIX_SEPARATOR } from '../../lib/upstreams/registry.js'
import { compileUriTemplate } from '../../lib/protocol/uri-template.js'
import { UpstreamRpcError, INVALID_PARAMS, RESOURCE_NOT_FOUND, UPSTREAM_ERROR } from '../../lib/protocol/jsonrpc.js'
import { wantsLegacyConnection } from '../../lib/upstreams/config.js'
import { loadConfig } from '../../lib/config/load.js'
import { createMetrics, upstreamOf } from '../../lib/ops/metrics.js'
import { fixtureCommand } from '../helpers/fixture.js'
import { startRegistry, waitForState } from '../helpers/registry.js'

const silent = { debug () {}, info () {}, warn () {}, error () {} }
const signal = new AbortController().signal

t.test('upstreams/registry/uri-template-level-1', async t => {
  const pattern = compileUriTemplate('fixture://items/{id}')
  t.ok(pattern.test('fixture://items/42'))
  t.ok(pattern.test('fixture://items/a.b'), 'dots are literal in the template, any non-slash in the variable')
  t.ok(pattern.test('fixture://items/'), 'an empty value is an expansion too (RFC 6570 §3.2.2)')
  t.notOk(pattern.test('fixture://items/1/2'), 'a variable does not cross a /')
  t.notOk(pattern.test('fixture://itemsX42'))
  t.notOk(pattern.test('xfixture://items/1'), 'anchored at both ends')
  const two = compileUriTemplate('db://{table}/rows/{id}.json')
  t.ok(two.test('db://users/rows/7.json'))
  t.notOk(two.test('db://users/rows/7xjson'), 'the literal dot is escaped')
})

t.test('upstreams/registry/uri-template-every-operator', async t => {
  // RFC 6570 §3.2: each operator's expansions, for any values (lists, explode, undefined variables).
  const cases: Array<[string, string, boolean]> = [
    ['file:///{+path}', 'file:///a/b/c.txt', true], // §3.2.3 reserved: / passes through
    ['file:///{+path}', 'file:///', true],
    ['x://a{/seg}', 'x://a', true], // §3.2.6 path segments: undefined
    ['x://a{/seg}', 'x://a/1', true],
    ['x://a{/seg*}', 'x://a/1/2/3', true], // exploded list
    ['x://a{/seg}', 'x://ab', false], // not led by /
    ['x://s{?q,lang}', 'x://s', true], // §3.2.8 query: all undefined
    ['x://s{?q,lang}', 'x://s?q=a%20b&lang=en', true],
    ['x://s{?q,lang}', 'x://sq=1', false], // not led by ?
    ['x://s{?q}{&lang}', 'x://s?q=1&lang=en', true], // §3.2.9 continuation
    ['x://s{?q}', 'x://s?q=1#frag', false], // a query run stops at #
    ['x://d{#frag}', 'x://d#a/b', true], // §3.2.4 fragment
    ['x://f{.ext}', 'x://f.tar.gz', true], // §3.2.5 label
    ['x://f{.ext}', 'x://f.a/b', false],
    ['x://m{;a,b}', 'x://m;a=1;b', true], // §3.2.7 path-style parameters
    ['x://{a}/{b}', 'x://1/2', true],
    ['x://{a}/{b}', 'x://1/2/3', false], // a simple value never holds /
    ['x://{a,b}', 'x://1,2', true], // a list of simple values
    ['x://{var:3}', 'x://abc', true], // a prefix modifier
    ['x://{open', 'x://{open', true], // an unclosed brace is literal
    ['x://{open', 'x://open', false]
  ]
  for (const [template, uri, expected] of cases) t.equal(compileUriTemplate(template).test(uri), expected, `${template} ${expected ? 'expands to' : 'never expands to'} ${uri}`)
  // No backtracking: thirty simple expressions against a long run that fails at its end answers at once
  // (a RegExp of thirty [^/]* runs would take longer than the test's timeout).
  t.equal(compileUriTemplate('x://' + '{a}-'.repeat(30) + '!').test('x://' + '-'.repeat(20_000)), false, 'linear in the URI whatever the template')
})

t.test('upstreams/registry/separator', async t => {
  t.equal(PREFIX_SEPARATOR, '__')
})

t.test('upstreams/registry/unknown-names-and-uris-are-errors', async t => {
  // Two upstreams (prefixed a__ and b__), never started: a name that no upstream's prefix claims is unknown.
  const registry = createRegistry({ a: { command: 'never-started' }, b: { command: 'never-started' } }, { logger: silent as never, defaultTimeoutMs: 1000 })
  await t.rejects(registry.callTool('nope', {}, { signal }), new UpstreamRpcError(INVALID_PARAMS, 'Unknown tool: nope'))
  await t.rejects(registry.getPrompt('nope', {}, { signal }), { code: INVALID_PARAMS })
  await t.rejects(registry.readResource('file:///x', { signal }), { code: RESOURCE_NOT_FOUND, data: { uri: 'file:///x' } })
  await t.rejects(registry.subscribe('file:///x'), { code: RESOURCE_NOT_FOUND })
  await t.rejects(registry.complete({ ref: { type: 'ref/prompt', name: 'nope' } }, { signal }), { code: INVALID_PARAMS })
  await t.rejects(registry.complete({ ref: 'bad' }, { signal }), { code: INVALID_PARAMS })
  t.same(registry.tools(), [])
  t.same(registry.capabilities(), {}, 'no ready upstream, no capability')
  t.match(registry.status(), [{ name: 'a', state: 'connecting', restarts: 0 }, { name: 'b', state: 'connecting' }])
  await registry.close()
  t.match(registry.status(), [{ name: 'a', state: 'closed' }, { name: 'b', state: 'closed' }])
})

t.test('upstreams/registry/names-of-an-upstream-not-ready-are-a-transient-error', async t => {
  // The catalogue holds only ready upstreams' items; a name that would belong to an upstream that is
  // down or connecting is not "unknown" (-32602) but unavailable for now (UPSTREAM_ERROR).
  const two = createRegistry({ a: { command: 'never-started' }, b: { command: 'never-started' } }, { logger: silent as never, defaultTimeoutMs: 1000 })
  await t.rejects(two.callTool('a__echo', {}, { signal }), new UpstreamRpcError(UPSTREAM_ERROR, 'upstream a is connecting: tool a__echo is not available right now; retry later'))
  await t.rejects(two.getPrompt('b__greet', {}, { signal }), { code: UPSTREAM_ERROR, message: /upstream b is connecting/ })
  await two.close()
  const one = createRegistry({ only: { command: 'never-started' } }, { logger: silent as never, defaultTimeoutMs: 1000 })
  await t.rejects(one.callTool('echo', {}, { signal }), { code: UPSTREAM_ERROR, message: /upstream only is connecting/ }, 'a sole upstream has no prefix: every name may be its')
  await one.close()
})

t.test('upstreams/registry/legacy-connection-config', async t => {
  const config = loadConfig({
    upstreams: {
      local: { command: 'node' },
      localOn: { command: 'node', legacyConnection: true },
      remote: { url: 'http://127.0.0.1:1/mcp' },
      remoteOff: { url: 'http://127.0.0.1:1/mcp', legacyConnection: false }
    }
  })
  t.same(Object.fromEntries(Object.entries(config.upstreams).map(([name, upstream]) => [name, wantsLegacyConnection(upstream)])),
    { local: false, localOn: true, remote: true, remoteOff: false }, 'default: stdio off, HTTP on; an explicit value wins')
  t.equal(config.upstreams.local.legacyConnection, undefined, 'no default written into the config (it depends on the shape)')
  t.throws(() => loadConfig({ upstreams: { x: { command: 'node', legacyConnection: 'yes' } } }), { code: 'MCPX_ERR_CONFIG' })
})

t.test('upstreams/registry/relays-announced-list-changed-even-when-unchanged', async t => {
  const fixture = fileURLToPath(new URL('../fixtures/conformance-upstream.js', import.meta.url))
  const registry = createRegistry({ conformance: { command: process.execPath, args: [fixture] } }, { logger: silent as never, defaultTimeoutMs: 10_000 })
  t.teardown(async () => { await registry.close() })
  await registry.start()
  t.match(registry.status(), [{ state: 'ready' }])
  const before = JSON.stringify(registry.tools())
  const changed = new Promise<string>(resolve => registry.once('list_changed', resolve))
  // The tool sends notifications/tools/list_changed without changing its tools.
  await registry.callTool('test_trigger_tool_change', {}, { signal })
  t.equal(await changed, 'tools', 'list_changed relayed after the re-list')
  t.equal(JSON.stringify(registry.tools()), before, 'though the merged list is the same')
})

t.test('upstreams/registry/upstream-names-follow-a-reload', async t => {
  // upstreamNames() is cached (the request log and the call metrics read it per call):
  // a reconcile that adds or removes an upstream must be seen at once, by upstreamOf too.
  const registry = createRegistry({ a: { command: 'never-started' } }, { logger: silent as never, defaultTimeoutMs: 1000 })
  t.type(registry.upstreamNames, 'function', 'the registry names its upstreams')
  t.type(registry.reconcile, 'function')
  t.same(registry.upstreamNames?.(), ['a'])
  t.equal(upstreamOf(registry, 'tool', 'anything'), 'a', 'a sole upstream serves every name')
  await registry.reconcile?.({ a: { command: 'never-started' }, b: { command: 'never-started' } })
  t.same(registry.upstreamNames?.(), ['a', 'b'], 'the added upstream is named')
  // Neither upstream started, so neither routes a name: the owner is the registry's route, never a guess from a prefix.
  t.equal(upstreamOf(registry, 'tool', 'b__echo'), undefined, 'a name no upstream routes has no upstream, whatever its prefix')
  t.equal(upstreamOf(registry, 'tool', 'c__echo'), undefined, 'a prefix that names no upstream is not one')
  await registry.reconcile?.({ b: { command: 'never-started' } })
  t.same(registry.upstreamNames?.(), ['b'], 'the removed upstream is gone')
  t.same(registry.upstreamNames?.(), registry.status().map(s => s.name), 'the same names status() gives')
  await registry.close()
})

t.test('upstreams/registry/custom-prefix-owns-its-calls', async t => {
  // The upstream of a call, for the call-duration metric and the request log, is the registry's route:
  // with a custom prefix ("fs") the name does not start with the upstream's name ("files").
  const { registry } = await startRegistry(t, { files: { ...fixtureCommand(), prefix: 'fs' }, other: fixtureCommand() })
  for (const name of ['files', 'other']) await waitForState(registry, s => s.name === name && s.state === 'ready')
  t.equal(upstreamOf(registry, 'tool', `fs${PREFIX_SEPARATOR}echo`), 'files', 'the custom prefix routes to its upstream')
  t.equal(upstreamOf(registry, 'tool', `other${PREFIX_SEPARATOR}echo`), 'other', 'the default prefix too')
  t.equal(upstreamOf(registry, 'tool', `files${PREFIX_SEPARATOR}echo`), undefined, 'the upstream name is not a prefix when another is configured')
  const metrics = createMetrics(registry)
  const instrumented = metrics.instrument(registry)
  await instrumented.callTool(`fs${PREFIX_SEPARATOR}echo`, { text: 'hi' }, { signal })
  const text = await metrics.registry.metrics()
  t.match(text, /mcpx_upstream_call_duration_seconds_count\{upstream="files",operation="callTool",outcome="ok"\} 1/, 'the call is counted for its upstream')
  t.notMatch(text, /mcpx_upstream_call_duration_seconds_count\{upstream="unknown"/, 'not as unknown')
})

t.test('upstreams/registry/call-metric-one-timer', async t => {
  // The call-duration metric reads the clock of the upstream's own call statistics (observeCalls):
  // the registry is not wrapped in a second timer, and a call is observed once, for its upstream.
  const { registry } = await startRegistry(t, { files: fixtureCommand() })
  await waitForState(registry, s => s.name === 'files' && s.state === 'ready')
  const metrics = createMetrics(registry)
  const instrumented = metrics.instrument(registry)
  t.equal(instrumented, registry, 'the registry itself, no proxy in front of it')
  await instrumented.callTool('echo', { text: 'hi' }, { signal })
  await t.rejects(instrumented.callTool('no-such-tool', {}, { signal }), 'an absent tool rejects as before')
  let text = await metrics.registry.metrics()
  t.match(text, /mcpx_upstream_call_duration_seconds_count\{upstream="files",operation="callTool",outcome="ok"\} 1\n/, 'the call is observed once')
  t.match(text, /mcpx_upstream_call_duration_seconds_count\{upstream="files",operation="callTool",outcome="error"\} 1\n/, 'the absent tool too: an error of the sole upstream')
  metrics.release()
  await registry.callTool('echo', { text: 'again' }, { signal })
  text = await metrics.registry.metrics()
  t.match(text, /mcpx_upstream_call_duration_seconds_count\{upstream="files",operation="callTool",outcome="ok"\} 1\n/, 'released: no longer observed')
})

t.test('upstreams/link/envelope-spliced-into-the-frame', async t => {
  // lib/upstreams/link requestFrame: the 2026-07-28 envelope, serialised once per connection, is
  // spliced into each request's params; the text is what JSON.stringify of the merged request writes.
  const { requestFrame } = await import('../../lib/upstreams/link.js')
  const envelope = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 'mcpx', version: '1.0.0' }, 'io.modelcontextprotocol/clientCapabilities': {} }
  const envelopeJson = JSON.stringify(envelope)
  const cases: Array<[string, Record<string, unknown>, string | number]> = [
    ['tools/call', { name: 'echo', arguments: { text: 'a "quoted"\nline', n: [1, { x: null }] } }, 7],
    ['tools/list', {}, 8],
    ['resources/read', { uri: 'file:///ü' }, 'mcpx-call-3'],
    ['prompts/get', { name: 'p', arguments: {}, skipped: undefined }, 0]
  ]
  for (const [method, params, id] of cases) {
    const expected = JSON.stringify({ method, params: { ...params, _meta: envelope }, jsonrpc: '2.0', id })
    t.equal(requestFrame(method, params, id, envelopeJson), expected, `${method}: the same text as the merged request`)
    t.same(JSON.parse(requestFrame(method, params, id, envelopeJson)).params._meta, envelope, `${method}: the envelope is params._meta`)
    t.equal(requestFrame(method, params, id), JSON.stringify({ method, params, jsonrpc: '2.0', id }), `${method}: without an envelope, JSON.stringify as before`)
  }
})
