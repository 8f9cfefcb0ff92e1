/**
 * Unit tests of lib/upstreams/registry: template matching, prefixes and routing errors that need
 * no upstream process (nothing is spawned before start()).
 */
import t from 'tap'
import { compileUriTemplate, createRegistry, PREFIX_SEPARATOR } from '../../lib/upstreams/registry.js'
import { UpstreamRpcError } from '../../lib/upstreams/types.js'
import { INVALID_PARAMS, RESOURCE_NOT_FOUND } from '../../lib/jsonrpc.js'

const silent = { debug () {}, info () {}, warn () {}, error () {} }
const signal = new AbortController().signal

t.test('registry/uri-template-level-1', async t => {
  const pattern = compileUriTemplate('fixture://items/{id}')
  t.ok(pattern.test('fixture://items/42'))
  t.ok(pattern.test('fixture://items/a.b'), 'dots are literal in the template, any non-slash in the variable')
  t.notOk(pattern.test('fixture://items/'), 'a variable matches at least one character')
  t.notOk(pattern.test('fixture://items/1/2'), 'a variable does not cross a /')
  t.notOk(pattern.test('fixture://itemsX42'))
  t.notOk(pattern.test('xfixture://items/1'), 'anchored at both ends')
  const two = compileUriTemplate('db://{table}/rows/{id}.json')
  t.ok(two.test('db://users/rows/7.json'))
  t.notOk(two.test('db://users/rows/7xjson'), 'the literal dot is escaped')
})

t.test('registry/separator', async t => {
  t.equal(PREFIX_SEPARATOR, '__')
})

t.test('registry/unknown-names-and-uris-are-errors', async t => {
  const registry = createRegistry({ a: { command: 'never-started' } }, { logger: silent as never, defaultTimeoutMs: 1000 })
  await t.rejects(registry.callTool('nope', {}, { signal }), new UpstreamRpcError(INVALID_PARAMS, 'Unknown tool: nope'))
  await t.rejects(registry.getPrompt('nope', {}, { signal }), { code: INVALID_PARAMS })
  await t.rejects(registry.readResource('file:///x', { signal }), { code: RESOURCE_NOT_FOUND, data: { uri: 'file:///x' } })
  await t.rejects(registry.subscribe('file:///x'), { code: RESOURCE_NOT_FOUND })
  await t.rejects(registry.complete({ ref: { type: 'ref/prompt', name: 'nope' } }, { signal }), { code: INVALID_PARAMS })
  await t.rejects(registry.complete({ ref: 'bad' }, { signal }), { code: INVALID_PARAMS })
  t.same(registry.tools(), [])
  t.same(registry.capabilities(), {}, 'no ready upstream, no capability')
  t.match(registry.status(), [{ name: 'a', state: 'connecting', restarts: 0 }])
  await registry.close()
  t.match(registry.status(), [{ name: 'a', state: 'closed' }])
})
