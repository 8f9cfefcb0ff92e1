/**
 * The requirement manifest (test/requirements.ts) against the suite: every id is the name of some test, every
 * source names a real seed, DIGEST or docs/ section, and every test name follows the scheme documented there. Test names
 * are read from the sources by test/helpers/test-names.ts (templated names expanded over their loops).
 */
import t from 'tap'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { REQUIREMENTS, REVISIONS, SCOPES, SEED_FILE, requirementIds, type Requirement } from '../requirements.js'
import { testNames, type TestName } from '../helpers/test-names.js'
import { QUICK, SLOW_ONLY, runsInTier, type Tier } from '../tiers.js'

/** This file runs as dist/test/lib/requirements.test.js: the sources are in test/, shared/ is beside the checkout. */
const TEST_DIR = fileURLToPath(new URL('../../../test', import.meta.url))
const SHARED_DIR = fileURLToPath(new URL('../../../../shared/', import.meta.url))
const DOCS_DIR = fileURLToPath(new URL('../../../docs/', import.meta.url))

/** The `##` and `###` headings of docs/<page>, or an empty set when there is no such page. */
function docsHeadings (page: string): Set<string> {
  let text: string
  try { text = readFileSync(DOCS_DIR + page, 'utf8') } catch { return new Set() }
  return new Set([...text.matchAll(/^#{2,3} (.+?)\s*$/gm)].map(m => m[1]))
}

const SEGMENT = /^(?:[a-z0-9]|\$\{[^}]+\})+(?:-(?:[a-z0-9]|\$\{[^}]+\})+)*$/

/** Why `name` leaves the scheme, or undefined when it follows it. */
function schemeProblem (name: string): string | undefined {
  const segments = name.split('/')
  if (segments.length !== 3) return `${segments.length} segments, not <scope>/<area>/<requirement>`
  if (!SCOPES.includes(segments[0])) return `scope ${JSON.stringify(segments[0])} is none of ${SCOPES.join(' ')}`
  const bad = segments.slice(1).find(s => !SEGMENT.test(s))
  return bad === undefined ? undefined : `${JSON.stringify(bad)} is not kebab-case`
}

/** The manifest ids no test name cites. */
function uncited (manifest: Readonly<Record<string, Requirement>>, names: readonly TestName[]): string[] {
  return requirementIds(manifest).filter(({ id }) => !names.some(name => name.matches(id))).map(({ id, key }) => id === key ? id : `${id} (family ${key})`)
}

const names = testNames(TEST_DIR)

/**
 * The manifest entries that only the slow tier cites: an id no test of `tier` cites, or a `*` family none of whose
 * members a test of `tier` cites (a family is a rule checked per revision: one revision in the quick tier is enough
 * to catch a regression of the rule before the whole suite runs).
 */
function slowOnly (tier: Tier, manifest: Readonly<Record<string, Requirement>>, all: readonly TestName[]): string[] {
  const quick = all.filter(name => runsInTier(tier, name.file, name.text, REVISIONS))
  const cited = new Set(requirementIds(manifest).filter(({ id }) => quick.some(name => name.matches(id))).map(({ key }) => key))
  return Object.keys(manifest).filter(key => !cited.has(key))
}

t.test('all/meta/every-requirement-is-cited', async t => {
  const ids = requirementIds()
  t.ok(ids.length > 100, `${ids.length} ids from ${Object.keys(REQUIREMENTS).length} manifest entries`)
  t.same(uncited(REQUIREMENTS, names), [], 'every id in test/requirements.ts is the name of a test')
})

t.test('all/meta/coverage-check-reports-an-uncited-id', async t => {
  const typo: Record<string, Requirement> = {
    '2026-07-28/headers/mcp-method-missing': REQUIREMENTS['2026-07-28/headers/mcp-method-missing'],
    '2026-07-28/headers/mcp-methd-missing': { source: 'DIGEST §6d', text: 'a typo nobody cites' },
    '*/sessions/unknown-404': { source: 'DIGEST §3d', text: 'a family', revisions: [...REVISIONS] }
  }
  t.same(uncited(typo, names), ['2026-07-28/headers/mcp-methd-missing', '2026-07-28/sessions/unknown-404 (family */sessions/unknown-404)'],
    'a misspelt id and a family member no loop registers are both reported')
  const withoutTemplates = names.filter(name => name.file !== 'http/legacy.test.ts')
  t.same(uncited({ '*/sessions/unknown-404': typo['*/sessions/unknown-404'] }, withoutTemplates).length, REVISIONS.length,
    'a family cited only by a templated name in a loop is uncited once that file is gone')
})

t.test('all/meta/quick-tier-cites-every-family', async t => {
  // test/tiers.ts's QUICK is what `npm run test:quick` runs; every manifest entry should be cited there too.
  const quickNames = names.filter(name => runsInTier(QUICK, name.file, name.text, REVISIONS))
  t.ok(quickNames.length > 200, `${quickNames.length} test names run in the quick tier`)
  const reported = slowOnly(QUICK, REQUIREMENTS, names)
  if (reported.length > 0) t.comment(`only the slow tier cites ${reported.length} manifest entries:\n${reported.join('\n')}`)
  t.same(reported.filter(key => !SLOW_ONLY.includes(key)), [], 'every requirement (for a * family, one member at least) is cited by a file npm run test:quick runs, or listed in SLOW_ONLY (test/tiers.ts)')
  t.same(SLOW_ONLY.filter(key => !reported.includes(key)), [], 'every SLOW_ONLY entry is still cited only by the slow tier (delete the ones a quick-tier test now cites)')
  // The check can fail: with the HTTP tier gone, the ids only it cites are reported; with nothing, every entry is.
  t.ok(slowOnly({ ...QUICK, dirs: QUICK.dirs.filter(dir => dir !== 'http') }, REQUIREMENTS, names).length > 0, 'an id only test/http cites is reported once test/http leaves the tier')
  t.same(slowOnly({ dirs: [], files: [] }, REQUIREMENTS, names), Object.keys(REQUIREMENTS), 'an empty tier cites nothing')
  // A family is covered by one member; a member of a revision the tier leaves out does not count.
  const family: Record<string, Requirement> = { '*/get/closes-on-delete': REQUIREMENTS['*/get/closes-on-delete'] }
  const legacyOnly = names.filter(name => name.file === 'e2e/legacy-http.test.ts')
  t.same(slowOnly({ dirs: [], files: ['e2e/legacy-http.test.ts'], revisions: ['2025-06-18'] }, family, legacyOnly), [], 'one revision of legacy-http cites the family')
  t.same(slowOnly({ dirs: [], files: ['e2e/legacy-http.test.ts'], revisions: ['2026-07-28'] }, family, legacyOnly), ['*/get/closes-on-delete'], 'a revision the family does not span cites none of it')
})

t.test('all/meta/test-names-follow-the-scheme', async t => {
  t.ok(names.length > 300, `${names.length} test names read`)
  const off = names.flatMap(({ file, line, text }) => {
    const problem = schemeProblem(text)
    return problem === undefined ? [] : [`${file}:${line} ${text}: ${problem}`]
  })
  t.same(off, [], 'every test name is <scope>/<area>/<requirement> (see test/requirements.ts)')
  t.equal(schemeProblem('2025-06-18/sessions/unknown-404'), undefined)
  t.equal(schemeProblem('all/stdio/ids-echoed-exactly'), undefined)
  t.match(schemeProblem('stdio/ids-echoed-exactly'), /segments/)
  t.match(schemeProblem('security/limits/body-too-large'), /scope/)
  t.match(schemeProblem('all/stdio/before-initialize (one child)'), /kebab-case/)
})

t.test('all/meta/requirement-ids-and-sources-are-well-formed', async t => {
  const seedLines = new Set(readFileSync(SHARED_DIR + SEED_FILE, 'utf8').split('\n').map(line => line.trim()))
  const digestSections = new Set([...readFileSync(SHARED_DIR + 'spec/DIGEST.md', 'utf8').matchAll(/^#{2,3} (\d+[a-z]?)\. /gm)].map(m => m[1]))
  const problems: string[] = []
  for (const [key, { source, revisions }] of Object.entries(REQUIREMENTS)) {
    const family = key.startsWith('*/')
    const problem = schemeProblem(family ? `${REVISIONS[0]}${key.slice(1)}` : key)
    if (problem !== undefined) problems.push(`${key}: ${problem}`)
    if (family !== (revisions !== undefined && revisions.length > 0)) problems.push(`${key}: a * family needs revisions, and only a family has them`)
    const seed = /^seed › (.+)$/.exec(source)
    const digest = /^DIGEST §(\d+[a-z]?)$/.exec(source)
    const docs = /^docs\/([a-z0-9-]+\.md) › (.+)$/.exec(source)
    const named = seed !== null
      ? seedLines.has(seed[1])
      : digest !== null ? digestSections.has(digest[1]) : docs !== null && docsHeadings(docs[1]).has(docs[2])
    if (!named) problems.push(`${key}: source ${JSON.stringify(source)} names no seed, DIGEST or docs/ section`)
  }
  t.same(problems, [])
})
