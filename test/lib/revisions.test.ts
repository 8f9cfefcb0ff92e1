/** The revision table (lib/protocol/revisions.ts; DIGEST §1, §6a "Eras"). */
import t from 'tap'
import { SUPPORTED_REVISIONS, eraOf, isImplemented, batchAllowed, negotiateLegacy, LEGACY_REVISIONS, MODERN_REVISIONS } from '../../lib/protocol/revisions.js'

t.test('all/revisions/supported-newest-first', async t => {
  t.same(SUPPORTED_REVISIONS, ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'])
})

t.test('all/revisions/era-of-a-date', async t => {
  t.equal(eraOf('2024-11-05'), 'legacy')
  t.equal(eraOf('2025-11-25'), 'legacy')
  t.equal(eraOf('2026-07-28'), 'modern')
  t.equal(eraOf('2027-01-01'), 'modern', 'a later date mcpx does not implement is still modern')
  t.equal(eraOf('2026-7-28'), undefined, 'not shaped like a revision')
  t.equal(eraOf(20260728), undefined)
  t.notOk(isImplemented('2027-01-01'))
  t.ok(isImplemented('2026-07-28'))
})

t.test('all/revisions/batches-only-in-2025-03-26', async t => {
  for (const revision of [...LEGACY_REVISIONS, ...MODERN_REVISIONS]) t.equal(batchAllowed(revision), revision === '2025-03-26', revision)
})

t.test('all/revisions/legacy-negotiation', async t => {
  for (const revision of LEGACY_REVISIONS) t.equal(negotiateLegacy(revision), revision, `${revision} is echoed`)
  t.equal(negotiateLegacy('2026-07-28'), '2025-11-25', 'initialize never negotiates the modern era')
  t.equal(negotiateLegacy('1999-01-01'), '2025-11-25')
  t.equal(negotiateLegacy(undefined), '2025-11-25')
})

t.test('all/versions/unsupported-version-is-32022-with-the-era-list', async t => {
  const { isUnservedModern, unsupportedVersion, unsupportedLegacyVersion, ASSUMED_LEGACY_REVISION } = await import('../../lib/protocol/revisions.js')
  t.equal(ASSUMED_LEGACY_REVISION, '2025-03-26')
  t.ok(isUnservedModern('2027-01-01'), 'a later modern date mcpx does not serve')
  t.notOk(isUnservedModern('2026-07-28'), 'served')
  t.notOk(isUnservedModern('2025-06-18'), 'a legacy date beside a modern body is -32020, not -32022')
  t.notOk(isUnservedModern(undefined))
  t.strictSame(unsupportedVersion(7, '2027-01-01'), { jsonrpc: '2.0', id: 7, error: { code: -32_022, message: 'Unsupported protocol version: 2027-01-01', data: { supported: [...MODERN_REVISIONS], requested: '2027-01-01' } } })
  t.strictSame(unsupportedLegacyVersion(undefined, '1999-01-01').error.data, { supported: [...LEGACY_REVISIONS], requested: '1999-01-01' })
})
