/**
 * Unit tests of lib/auth/dpop (docs/authentication.md › DPoP): the memory replay cache's bound and
 * expiry, the DPoP scheme, and the binding read from claims. No sockets.
 */
import t from 'tap'
import { boundKeyOf, dpopTokenOf, MemoryDpopReplayCache } from '../../lib/auth/dpop.js'
import { loadConfig } from '../../lib/config/load.js'

t.test('auth/dpop/memory-replay-cache-bounded-and-expiring', async t => {
  const cache = new MemoryDpopReplayCache(2)
  t.equal(await cache.claim('a', 60_000), 'fresh')
  t.equal(await cache.claim('a', 60_000), 'replayed', 'a key is remembered for its ttl')
  t.equal(await cache.claim('b', 60_000), 'fresh')
  t.equal(await cache.claim('c', 60_000), 'unavailable', 'past the bound with every entry live: cannot tell, never forgets one')
  t.equal(cache.size, 2)
  const expiring = new MemoryDpopReplayCache(2)
  t.equal(await expiring.claim('x', 0), 'fresh')
  t.equal(await expiring.claim('y', 0), 'fresh')
  t.equal(await expiring.claim('z', 60_000), 'fresh', 'expired entries are swept first, so there is room')
  t.equal(expiring.size, 1)
  t.equal(await expiring.claim('x', 60_000), 'fresh', 'an expired key is fresh again (its proof is too old to pass the iat check by then)')
})

t.test('auth/dpop/scheme-and-binding-parsing', async t => {
  t.equal(dpopTokenOf('DPoP abc.def-_~+/='), 'abc.def-_~+/=')
  t.equal(dpopTokenOf('dpop   tok  '), 'tok', 'case-insensitive scheme, spaces')
  for (const header of [undefined, '', 'DPoP', 'DPoP ', 'Bearer tok', 'DPoPtok', 'DPoP a b']) t.equal(dpopTokenOf(header), undefined, String(header))
  t.equal(boundKeyOf({ cnf: { jkt: 'thumb' } }), 'thumb')
  t.equal(boundKeyOf({}), undefined, 'no cnf: not bound')
  t.equal(boundKeyOf({ cnf: { 'x5t#S256': 'cert' } }), undefined, 'a certificate binding is not a DPoP binding')
  const malformed = boundKeyOf({ cnf: { jkt: 42 } })
  t.ok(malformed !== undefined && /\s/.test(malformed), 'a jkt that is no thumbprint still binds the token, to a key no proof has')
})

t.test('auth/dpop/config-errors-are-clear', async t => {
  const oauth = { issuer: 'https://login.example.com', resource: 'https://mcp.example.com/mcp' }
  t.throws(() => loadConfig({ auth: { oauth: { ...oauth, dpop: 'maybe' } } }), { code: 'MCPX_ERR_CONFIG', message: /auth\.oauth\.dpop/ })
  t.throws(() => loadConfig({ auth: { oauth: { ...oauth, dpopSigningAlgs: [] } } }), { code: 'MCPX_ERR_CONFIG', message: /dpopSigningAlgs/ })
  t.throws(() => loadConfig({ auth: { oauth: { ...oauth, dpopProofMaxAge: 'soon' } } }), { code: 'MCPX_ERR_CONFIG', message: /dpopProofMaxAge/ })
  t.equal(loadConfig({ auth: { oauth: { ...oauth, dpop: 'required', dpopProofMaxAge: '2m' } } }).auth.oauth?.dpopProofMaxAge, 120_000, 'a duration string is ms once loaded')
  t.equal(loadConfig({ auth: { oauth } }).auth.oauth?.dpop, undefined, 'unset: the loaded config keeps its earlier shape; authenticate reads it as "allowed"')
})
