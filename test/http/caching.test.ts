/**
 * Caching of 2026-07-28 results (server/utilities/caching.mdx; DIGEST §6f "Caching"): the lists mcpx
 * builds carry `cacheScope: "public"` when every caller sees the same answer, and `"private"` when
 * what a caller sees depends on who the caller is (a policy applies, or an upstream answers per
 * caller), so a shared cache never hands one user's catalogue to another; `ttlMs` is
 * `transport.catalogueTtl`. The mcpx plugin on a bare Fastify through `fastify.inject`, the echo
 * fixture upstream. Tests are named 2026-07-28/caching/<requirement>.
 */
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, fixtureUpstreams, modernHeaders, modernMeta } from '../helpers/app.js'
import { TOKENS, tokensAuth } from '../helpers/policy.js'

const LISTS = ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list'] as const

async function modern (app: FastifyInstance, method: string, params: Record<string, unknown> = {}, headers: Record<string, string> = {}, path = '/mcp'): Promise<Record<string, any>> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const name = typeof params.name === 'string' ? params.name : typeof params.uri === 'string' ? params.uri : undefined
  const reply = await app.inject({
    method: 'POST',
    url: path,
    headers: modernHeaders(method, name, { accept: 'application/json', ...headers }),
    payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: modernMeta() } })
  })
  t.equal(reply.statusCode, 200, `${method} on ${path}: 200`)
  return reply.json().result
}

/** The `cacheScope` of every list and of server/discover, on `path`. */
async function scopes (app: FastifyInstance, headers: Record<string, string> = {}, path = '/mcp'): Promise<Record<string, unknown>> {
  const seen: Record<string, unknown> = {}
  for (const method of [...LISTS, 'server/discover']) seen[method] = (await modern(app, method, {}, headers, path)).cacheScope
  return seen
}

const PUBLIC = { 'tools/list': 'public', 'prompts/list': 'public', 'resources/list': 'public', 'resources/templates/list': 'public', 'server/discover': 'public' }
const PRIVATE = { 'tools/list': 'private', 'prompts/list': 'private', 'resources/list': 'private', 'resources/templates/list': 'private', 'server/discover': 'public' }

t.test('2026-07-28/caching/public-when-every-caller-sees-the-same', async t => {
  const app = await build(t, { servers: { kit: { tools: { allow: ['echo'] } } } })
  t.same(await scopes(app), PUBLIC, 'no policy, no per-caller upstream: public')
  t.same(await scopes(app, {}, '/mcp/kit'), PUBLIC, 'a curated endpoint is the same for every caller: public')
  t.equal((await modern(app, 'tools/list')).ttlMs, 0, 'transport.catalogueTtl defaults to 0 (immediately stale)')
})

t.test('2026-07-28/caching/private-when-a-policy-applies', async t => {
  const app = await build(t, {
    auth: tokensAuth(),
    policy: { default: 'allow', rules: [{ principals: { tokens: ['ci'] }, deny: { tools: ['fail'] } }] }
  })
  const headers = { authorization: `Bearer ${TOKENS.ci}` }
  t.same(await scopes(app, headers), PRIVATE, 'what a caller sees depends on who the caller is: private (server/discover stays public)')
  const read = await modern(app, 'resources/read', { uri: 'fixture://static' }, headers)
  t.equal(read.cacheScope, 'private', 'resources/read under a policy: private')
})

t.test('2026-07-28/caching/private-when-an-upstream-answers-per-caller', async t => {
  const app = await build(t, { upstreams: { fixture: { ...fixtureUpstreams().fixture as Record<string, unknown>, isolation: 'per-session' } } })
  t.same(await scopes(app), PRIVATE, 'an isolated upstream answers per caller: private')
})

t.test('2026-07-28/caching/ttl-from-catalogue-ttl', async t => {
  const app = await build(t, { transport: { catalogueTtl: '30s' } })
  for (const method of [...LISTS, 'server/discover']) t.equal((await modern(app, method)).ttlMs, 30_000, `${method}: ttlMs is transport.catalogueTtl in ms`)
  const call = await modern(app, 'tools/call', { name: 'echo', arguments: { text: 'x' } })
  t.notOk('ttlMs' in call || 'cacheScope' in call, 'tools/call is not cacheable')
})
