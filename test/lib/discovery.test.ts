/**
 * lib/policy/discovery alone (docs/discovery.md › Tool search): terms, BM25 ranking with prefix and
 * fuzzy matching, ties by name whatever order the catalogue came in, the empty query, the index
 * built from the caller's view (hidden tools are never found), the bounded index cache, the golden
 * queries over the generated catalogue, and the `discovery` config.
 */
import t from 'tap'
import { ToolIndex, ToolSearch, cachedIndexes, indexOf, termsOf, toolSearchOf, MAX_INDEXES } from '../../lib/policy/discovery.js'
import { Policy } from '../../lib/policy/rules.js'
import { CuratedServer } from '../../lib/policy/endpoints.js'
import { Visibility } from '../../lib/policy/visibility.js'
import { tokenPrincipal } from '../../lib/auth/principal.js'
import { loadConfig } from '../../lib/config/load.js'
import type { JsonObject } from '../../lib/protocol/jsonrpc.js'
import { generatedTools } from '../fixtures/catalogue.js'
import { GENERATED_GOLDENS, prefixed } from '../helpers/discovery.js'

function tool (name: string, description = '', params: Record<string, string> = {}, title?: string): JsonObject {
  const properties = Object.fromEntries(Object.entries(params).map(([key, text]) => [key, { type: 'string', description: text }]))
  return { name, ...(title !== undefined ? { title } : {}), description, inputSchema: { type: 'object', properties } }
}

const names = (entries: JsonObject[]): string[] => entries.map(entry => entry.name as string)

/** A fixed shuffle (reversal, then every other item first): an order no one would pick. */
function shuffled<T> (items: readonly T[]): T[] {
  const reversed = [...items].reverse()
  return [...reversed.filter((_, i) => i % 2 === 0), ...reversed.filter((_, i) => i % 2 === 1)]
}

t.test('discovery/ranking/terms-split-on-separators-and-camel-case', async t => {
  t.same(termsOf('github__create_pullRequest'), ['github', 'create', 'pull', 'request'], '__, _ and camelCase')
  t.same(termsOf('get-HTTPStatus2.v1'), ['get', 'http', 'status2', 'v1'], '-, ., an acronym before a word')
  t.same(termsOf('  '), [], 'nothing but spaces: no terms')
})

t.test('discovery/ranking/bm25-over-name-title-description-and-parameters', async t => {
  const index = new ToolIndex([
    tool('send_message', 'Posts text to a channel.', { channel: 'where to post' }),
    tool('list_files', 'Lists files; each file has a message digest.', {}),
    tool('weather', 'Forecast for a city.', { city: 'the city name' }, 'Weather forecast'),
    tool('geo_lookup', 'Finds coordinates.', { postcode: 'a postal code to look up' })
  ])
  t.same(names(index.search('message', 4)), ['send_message', 'list_files'], 'a name term outranks a description term (name boost), and only matches are returned')
  t.same(names(index.search('postcode', 4)), ['geo_lookup'], 'a parameter name is searched')
  t.same(names(index.search('postal', 4)), ['geo_lookup'], 'a parameter description is searched')
  t.same(names(index.search('Weather forecast', 1)), ['weather'], 'title and name')
  t.same(index.search('no such words here', 4), [], 'no match: no results')
})

t.test('discovery/ranking/prefix-and-light-fuzziness', async t => {
  const index = new ToolIndex([tool('create_invoice', 'Creates an invoice.'), tool('refund_payment', 'Refunds a payment.'), tool('ping', 'Answers pong.')])
  t.same(names(index.search('invo', 3)), ['create_invoice'], 'a prefix of a term matches')
  t.same(names(index.search('refnd', 3)), ['refund_payment'], 'one edit in a 5-letter term matches')
  t.same(names(index.search('pnig', 3)), [], 'short terms are not fuzzy (4 letters: exact or prefix only)')
})

t.test('discovery/ranking/ties-break-by-name-whatever-the-catalogue-order', async t => {
  const tools = [tool('b_echo', 'Echoes text.'), tool('a_echo', 'Echoes text.'), tool('c_echo', 'Echoes text.'), tool('echo', 'Echoes text.')]
  t.same(names(new ToolIndex(tools).search('echoes', 10)), ['a_echo', 'b_echo', 'c_echo', 'echo'], 'equal scores: name order')
  const catalogue = prefixed(generatedTools()) as unknown as JsonObject[]
  const one = new ToolIndex(catalogue)
  const other = new ToolIndex(shuffled(catalogue))
  for (const query of ['create invoice', 'storm', 'list things with a filter', 'pull']) {
    t.same(names(other.search(query, 50)), names(one.search(query, 50)), `"${query}": the same order from a shuffled catalogue`)
  }
})

t.test('discovery/ranking/empty-query-lists-by-name-up-to-the-limit', async t => {
  const index = new ToolIndex([tool('zeta'), tool('alpha'), tool('mid'), { description: 'no name' }])
  t.same(names(index.search('', 2)), ['alpha', 'mid'], 'name order, limit items')
  t.same(names(index.search(' _-', 10)), ['alpha', 'mid', 'zeta'], 'a query with no terms is empty; an item without a name is not indexed')
  t.same(index.search('', 1)[0], { name: 'alpha', description: '', inputSchema: { type: 'object', properties: {} } }, 'an entry carries name, title?, description, inputSchema, annotations? only')
})

t.test('discovery/golden/generated-catalogue-top-results', async t => {
  const index = new ToolIndex(prefixed(generatedTools()) as unknown as JsonObject[])
  t.equal(index.tools.length, 1024, 'the generated catalogue has 1,024 tools')
  for (const golden of GENERATED_GOLDENS) t.same(names(index.search(golden.query, golden.top.length)), golden.top, golden.query)
})

t.test('discovery/policy/hidden-tools-are-never-found', async t => {
  const catalogue = [tool('billing_refund', 'Refunds a payment.'), tool('billing_secret_refund', 'Refunds a payment without a trace.'), tool('echo', 'Echoes.')]
  const policy = new Policy({ default: 'allow', rules: [{ principals: { tokens: ['ci'] }, deny: { tools: ['*secret*'] } }] })
  const server = new CuratedServer('support', { tools: { allow: ['billing_*'] }, rename: { billing_refund: 'refund' }, override: { billing_refund: { description: 'Gives money back.' } }, discovery: { mode: 'search' } })
  const view = new Visibility(policy.viewOf(tokenPrincipal('ci', [])), server, undefined, server.search)
  const search = view.search as ToolSearch
  t.ok(search instanceof ToolSearch, 'the endpoint is in search mode')
  for (const query of ['refund', 'secret', 'trace', 'billing_secret_refund', 'echo', '']) {
    const found = names(search.search(view.tools(catalogue), query, 50))
    t.notOk(found.includes('billing_secret_refund'), `"${query}": the tool the policy hides is not found`)
    t.notOk(found.includes('echo'), `"${query}": the tool the endpoint leaves out is not found`)
  }
  t.same(search.search(view.tools(catalogue), 'money', 5), [{ name: 'refund', description: 'Gives money back.', inputSchema: { type: 'object', properties: {} } }], 'found by its override, under its exposed name')
  const everyone = new Visibility(policy.viewOf(tokenPrincipal('admin', [])), server, undefined, server.search)
  t.same(names(search.search(everyone.tools(catalogue), 'secret', 5)), ['billing_secret_refund'], 'a caller the rule does not hide it from finds it')
})

t.test('discovery/search/limit-defaults-to-and-is-capped-by-max-results', async t => {
  const catalogue = prefixed(generatedTools(64)) as unknown as JsonObject[]
  const search = new ToolSearch(5)
  t.equal(search.search(catalogue, '', undefined).length, 5, 'no limit: maxResults')
  t.equal(search.search(catalogue, '', 3).length, 3, 'a smaller limit')
  t.equal(search.search(catalogue, '', 50).length, 5, 'a larger limit is capped at maxResults')
  t.same(search.tools.map(item => item.name), ['call_tool', 'search_tools'], 'the two meta-tools, in name order')
  t.equal((search.metaTool('search_tools')?.inputSchema as JsonObject).type, 'object')
  t.equal(search.metaTool('echo'), undefined)
})

t.test('discovery/index/cached-per-view-list-and-bounded', async t => {
  const lists = Array.from({ length: MAX_INDEXES + 5 }, (_, i) => [tool(`tool_${i}`, 'x')])
  const first = indexOf(lists[0])
  t.ok(indexOf(lists[0]) === first, 'the same list: the same index')
  for (const list of lists) indexOf(list)
  t.ok(cachedIndexes() <= MAX_INDEXES, `at most ${MAX_INDEXES} indexes kept (${cachedIndexes()})`)
  t.ok(indexOf(lists[0]) !== first, 'the least recently used was dropped and is rebuilt')
  t.ok(indexOf([...lists[1]]) !== indexOf(lists[1]), 'another array (a new catalogue version): another index')
})

t.test('discovery/fresh/index-updated-in-place-ranks-as-a-fresh-build', async t => {
  const lineage = { policy: {}, server: {} }
  const before = prefixed(generatedTools(512)) as unknown as JsonObject[]
  const first = indexOf(before, lineage)
  // The registry makes new objects on every merge: copies, with 16 tools gone, 16 new and one description changed.
  const after = before.slice(16).map(tool => ({ ...tool })) as JsonObject[]
  after.push(...(prefixed(generatedTools(1024).slice(512, 528)) as unknown as JsonObject[]))
  after[100] = { ...after[100], description: 'Now about volcanoes and lava.' }
  const updated = indexOf(after, lineage)
  t.ok(updated === first, 'the view\'s index was updated in place')
  const fresh = new ToolIndex(after)
  for (const query of ['create invoice', 'volcano', 'lava', 'weathr', 'acme billing', '', 'globex pull request']) {
    t.same(names(updated.search(query, 50)), names(fresh.search(query, 50)), `"${query}": the same results as a fresh build`)
  }
  t.notOk(names(updated.search(before[0].name as string, 50)).includes(before[0].name as string), 'a removed tool is not found')
  t.equal(updated.search('volcano', 1)[0].description, 'Now about volcanoes and lava.', 'a changed tool is found by its new text')
  const replaced = after.map((tool, i) => i % 3 !== 0 ? { ...tool, description: `changed ${i}` } : tool)
  t.ok(indexOf(replaced, lineage) !== first, 'more than half changed: a fresh build')
})

t.test('discovery/config/modes-defaults-and-bad-values', async t => {
  const config = loadConfig({ discovery: { mode: 'search' }, servers: { a: { tools: { allow: ['*'] }, discovery: { mode: 'search', maxResults: 3 } }, b: { tools: { allow: ['*'] } } } })
  t.same(config.discovery, { mode: 'search', maxResults: 8 }, 'top level: maxResults defaults to 8')
  t.equal(toolSearchOf(config.servers?.a.discovery)?.maxResults, 3)
  t.equal(toolSearchOf(config.servers?.b.discovery), undefined, 'no discovery: list mode')
  t.equal(toolSearchOf({ mode: 'list' }), undefined, 'list mode')
  t.equal(loadConfig({}).discovery, undefined, 'absent stays absent (list mode)')
  t.throws(() => loadConfig({ discovery: { mode: 'fuzzy' } }), /discovery\.mode/)
  t.throws(() => loadConfig({ discovery: { mode: 'search', maxResults: 0 } }), /discovery\.maxResults/)
  t.throws(() => loadConfig({ servers: { a: { discovery: { mode: 'search', maxResults: 51 } } } }), /servers\.a\.discovery\.maxResults/)
  t.throws(() => loadConfig({ discovery: { mode: 'search', max: 5 } }), /discovery: must NOT have additional properties \(max\)/)
})
