/**
 * The Skills extension's pure parts (docs/skills.md): the namespacing of one upstream's skill URIs
 * (lib/protocol/skills.ts), the `skills` globs of policy rules and curated endpoints (lib/policy), a
 * hidden skill's files left out of resources/list and reads (lib/policy/visibility.ts), and the config
 * errors for bad `skills` globs. Tests are named skills/<area>/<requirement>.
 */
import t from 'tap'
import { namespaceSkill, namespaceSkillUri, skillRootOf, skillsCapabilityOf } from '../../lib/protocol/skills.js'
import { Policy } from '../../lib/policy/rules.js'
import { CuratedServer } from '../../lib/policy/endpoints.js'
import { Visibility } from '../../lib/policy/visibility.js'
import { loadConfig } from '../../lib/config/load.js'
import { tokenPrincipal } from '../../lib/auth/principal.js'
import type { JsonObject } from '../../lib/protocol/jsonrpc.js'

const DIGEST = 'sha256:' + 'ab'.repeat(32)

t.test('skills/names/uris-namespaced-digests-and-frontmatter-verbatim', async t => {
  t.equal(namespaceSkillUri('alpha', 'skill://pdf/SKILL.md'), 'skill://alpha/pdf/SKILL.md')
  t.equal(namespaceSkillUri('alpha', 'skill://acme/pdf/references/A.md'), 'skill://alpha/acme/pdf/references/A.md', 'an organisational prefix stays under ours')
  t.equal(namespaceSkillUri('', 'skill://pdf/SKILL.md'), 'skill://pdf/SKILL.md', 'no prefix: unchanged')
  t.equal(namespaceSkillUri('alpha', 'https://example.com/skills/pdf/SKILL.md'), 'https://example.com/skills/pdf/SKILL.md', 'another scheme: unchanged')
  t.equal(skillRootOf('skill://alpha/pdf/SKILL.md'), 'skill://alpha/pdf/')
  t.equal(skillRootOf('skill://alpha/pdf/README.md'), undefined)
  const entry = {
    uri: 'skill://pdf/SKILL.md',
    frontmatter: { name: 'pdf', description: 'PDF forms', license: 'MIT' },
    resources: [{ uri: 'skill://pdf/SKILL.md', digest: DIGEST, size: 97 }, { uri: 'skill://pdf/a.bin', digest: DIGEST, size: 6, extra: 1 }],
    _meta: { k: 'v' }
  }
  const before = JSON.stringify(entry)
  t.same(namespaceSkill('alpha', entry), {
    uri: 'skill://alpha/pdf/SKILL.md',
    frontmatter: { name: 'pdf', description: 'PDF forms', license: 'MIT' },
    resources: [{ uri: 'skill://alpha/pdf/SKILL.md', digest: DIGEST, size: 97 }, { uri: 'skill://alpha/pdf/a.bin', digest: DIGEST, size: 6, extra: 1 }],
    _meta: { k: 'v' }
  }, 'only URIs change: frontmatter, digests, sizes and unknown fields pass as sent')
  t.equal(JSON.stringify(entry), before, 'the upstream entry is not changed')
  t.same(namespaceSkill('alpha', { ...entry, resources: 'dynamic' }).resources, 'dynamic', '"dynamic" passes')
  t.same(skillsCapabilityOf({ extensions: { 'io.modelcontextprotocol/skills': { directoryRead: true } } }), { directoryRead: true })
  t.equal(skillsCapabilityOf({ extensions: { 'io.modelcontextprotocol/skills': true } }), undefined, 'a non-object is no declaration')
})

/** A catalogue as the registry shows it to a view: two skills, and the resources of their files. */
function catalogue (): { view: (policy: Policy | undefined, server: CuratedServer | undefined) => Visibility, resources: JsonObject[], skills: JsonObject[] } {
  const skills = [
    { uri: 'skill://alpha/pdf/SKILL.md', frontmatter: { name: 'pdf', description: 'd' }, resources: [] },
    { uri: 'skill://alpha/review/SKILL.md', frontmatter: { name: 'review', description: 'd' }, resources: [] }
  ]
  const resources = [{ uri: 'skill://alpha/pdf/SKILL.md', name: 'pdf' }, { uri: 'skill://alpha/review/SKILL.md', name: 'review' }, { uri: 'fixture://static', name: 'static' }]
  const owning = (uri: string): string | undefined => skills.map(s => s.uri).find(s => uri.startsWith(s.slice(0, -'SKILL.md'.length)))
  const registry = { resourceTemplates: () => [], skills: () => skills, skillOwning: owning }
  return { view: (policy, server) => new Visibility(policy?.viewOf(tokenPrincipal('support', [])), server, registry), resources, skills }
}

t.test('skills/policy/globs-on-skill-uris-hide-everywhere', async t => {
  const { view, resources, skills } = catalogue()
  const policy = new Policy({ default: 'allow', rules: [{ principals: { tokens: ['support'] }, deny: { skills: ['skill://alpha/review/*'] } }] })
  const v = view(policy, undefined)
  t.same(v.skills(skills).map(s => s.uri), ['skill://alpha/pdf/SKILL.md'], 'skills/list: denied skill absent')
  t.equal(v.skill('skill://alpha/review/SKILL.md'), false)
  t.equal(v.skill('skill://alpha/pdf/SKILL.md'), true)
  t.same(v.resources(resources, 'uri').map(r => r.uri), ['skill://alpha/pdf/SKILL.md', 'fixture://static'], 'resources/list: the hidden skill\'s SKILL.md absent too')
  t.equal(v.resource('skill://alpha/review/SKILL.md'), false, 'its files cannot be read')
  t.equal(v.resource('skill://alpha/review/references/X.md'), false, 'nor any file under its root')
  t.equal(v.resource('skill://alpha/pdf/references/X.md'), true)
  t.equal(v.resources(resources, 'uri'), v.resources(resources, 'uri'), 'the filtered list is cached per array')
  const deny = new Policy({ default: 'deny', rules: [{ allow: { tools: ['*'], resources: ['*'] } }] })
  t.same(view(deny, undefined).skills(skills), [], 'default deny without a skills allow: no skill')
  t.same(view(new Policy({ default: 'allow', rules: [] }), undefined).skills(skills), skills, 'default allow: every skill')
  t.equal(Visibility.ALL.skills(skills), skills, 'the null view: the registry\'s own array')
})

t.test('skills/servers/endpoint-skills-allow-deny', async t => {
  const { view, resources, skills } = catalogue()
  const server = new CuratedServer('kit', { skills: { allow: ['skill://alpha/*'], deny: ['*/pdf/SKILL.md'] }, resources: { allow: ['*'] } })
  const v = view(undefined, server)
  t.same(v.skills(skills).map(s => s.uri), ['skill://alpha/review/SKILL.md'], 'deny wins over allow')
  t.same(v.resources(resources, 'uri').map(r => r.uri), ['skill://alpha/review/SKILL.md', 'fixture://static'])
  t.same(view(undefined, new CuratedServer('plain', { tools: { allow: ['*'] } })).skills(skills), [], 'no skills allow: none exposed')
})

t.test('skills/config/skills-globs-validated', async t => {
  const config = loadConfig({ policy: { rules: [{ allow: { skills: ['skill://a/*'] }, deny: { skills: ['*/x/*'] } }] }, servers: { kit: { skills: { allow: ['*'] } } } })
  t.same(config.policy?.rules[0].allow?.skills, ['skill://a/*'])
  t.throws(() => loadConfig({ policy: { rules: [{ allow: { skills: 'skill://a/*' } }] } }), /policy\.rules\.0\.allow\.skills: must be array/)
  t.throws(() => loadConfig({ servers: { kit: { skills: { allow: [''] } } } }), /servers\.kit\.skills\.allow\.0/)
  t.throws(() => loadConfig({ servers: { kit: { skill: { allow: ['*'] } } } }), /must NOT have additional properties \(skill\)/)
})
