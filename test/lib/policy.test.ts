/**
 * lib/policy/rules alone: rule matching per principal kind, servers, deny wins, absent allow, default,
 * globs, and the config schema's `policy` (docs/policy.md › Policy).
 */
import t from 'tap'
import { Policy, compileGlobs, principalMatches, type PolicyConfig } from '../../lib/policy/rules.js'
import { LOCAL_PRINCIPAL, oauthPrincipal, tokenPrincipal } from '../../lib/auth/principal.js'
import { loadConfig } from '../../lib/config/load.js'
import { Visibility } from '../../lib/policy/visibility.js'
import { CuratedServer } from '../../lib/policy/endpoints.js'

const ISS = 'https://as.example.com'
const carol = oauthPrincipal({ iss: ISS, sub: 'carol', groups: ['staff', 'support-team'], tier: 'gold', level: 3 }, ['mcp:tools', 'mcp:read'])
const ci = tokenPrincipal('ci', ['mcp:read'])

function policy (config: Partial<PolicyConfig>): Policy {
  return new Policy({ default: 'deny', rules: [], ...config })
}

t.test('policy/rules/principal-kinds-match', async t => {
  t.ok(principalMatches({ tokens: ['ci'] }, ci), 'token by name')
  t.notOk(principalMatches({ tokens: ['ci'] }, carol), 'a token rule does not match an OAuth caller')
  t.ok(principalMatches({ subjects: [{ issuer: ISS, subject: 'carol' }] }, carol), 'issuer and subject')
  t.notOk(principalMatches({ subjects: [{ issuer: 'https://other.example.com', subject: 'carol' }] }, carol), 'same subject, another issuer')
  t.ok(principalMatches({ scopes: ['mcp:read'] }, ci), 'a static token\'s scopes count')
  t.ok(principalMatches({ scopes: ['mcp:tools', 'mcp:read'] }, carol), 'every scope held')
  t.notOk(principalMatches({ scopes: ['mcp:tools', 'mcp:admin'] }, carol), 'one scope missing')
  t.ok(principalMatches({ claims: { groups: 'support-team' } }, carol), 'a value contained in an array claim')
  t.ok(principalMatches({ claims: { tier: 'gold', level: 3 } }, carol), 'values equal to the claims')
  t.notOk(principalMatches({ claims: { tier: 'silver' } }, carol), 'a different value')
  t.notOk(principalMatches({ claims: { groups: 'staff-x' } }, carol), 'not contained')
  t.notOk(principalMatches({ claims: { tier: 'gold' } }, ci), 'claims match OAuth callers only')
  t.ok(principalMatches({ local: true }, LOCAL_PRINCIPAL), 'local')
  t.notOk(principalMatches({ local: true }, ci), 'local is the stdio caller only')
  t.notOk(principalMatches({ tokens: ['ci'], scopes: ['mcp:admin'] }, ci), 'every key given must match')
  t.ok(principalMatches(undefined, undefined), 'no principals: everyone, the anonymous caller too')
  t.notOk(principalMatches({ tokens: ['ci'] }, undefined), 'an anonymous caller matches no principal')
})

t.test('policy/rules/deny-wins-and-absent-allow-is-nothing', async t => {
  const p = policy({
    rules: [
      { principals: { tokens: ['ci'] }, allow: { tools: ['crm__*'] }, deny: { tools: ['crm__delete_*'] } },
      { allow: { prompts: ['*'] }, deny: { tools: ['crm__export'] } }
    ]
  })
  const view = p.viewOf(ci)
  t.ok(view.allows('tools', 'crm__lookup'))
  t.notOk(view.allows('tools', 'crm__delete_user'), 'the rule\'s own deny wins')
  t.notOk(view.allows('tools', 'crm__export'), 'another applying rule\'s deny wins')
  t.ok(view.allows('prompts', 'anything'))
  t.notOk(view.allows('resources', 'kb://a'), 'no rule allows resources: none')
  t.notOk(p.viewOf(carol).allows('tools', 'crm__lookup'), 'carol: only the everyone rule applies, it allows no tools')
  const filtered = view.filter('tools', [{ name: 'crm__lookup' }, { name: 'crm__delete_x' }, { name: 'kb__search' }, { title: 'no name' }], 'name')
  t.same(filtered, [{ name: 'crm__lookup' }], 'filter keeps the visible items only')
})

t.test('policy/rules/servers-scope-a-rule', async t => {
  const p = policy({ rules: [{ servers: ['support'], allow: { tools: ['kb__*'] } }, { principals: { tokens: ['ci'] }, allow: { tools: ['crm__lookup'] } }] })
  t.ok(p.viewOf(ci, 'support').allows('tools', 'kb__search'), 'on its server')
  t.notOk(p.viewOf(ci).allows('tools', 'kb__search'), 'not on /mcp')
  t.notOk(p.viewOf(ci, 'billing').allows('tools', 'kb__search'), 'not on another server')
  t.ok(p.viewOf(ci, 'billing').allows('tools', 'crm__lookup'), 'a rule without servers applies on every endpoint')
  t.ok(p.viewOf(ci).allows('tools', 'crm__lookup'), '...including /mcp')
})

t.test('policy/rules/default-allow-only-denies', async t => {
  const p = policy({ default: 'allow', rules: [{ principals: { tokens: ['ci'] }, deny: { tools: ['danger*'] } }] })
  t.ok(p.viewOf(carol).allows('tools', 'danger_zone'))
  t.notOk(p.viewOf(ci).allows('tools', 'danger_zone'))
  t.ok(p.viewOf(ci).allows('resources', 'kb://x'))
  t.ok(p.viewOf(undefined).allows('prompts', 'p'), 'anonymous callers see everything too')
})

t.test('policy/globs/star-spans-any-characters', async t => {
  const re = compileGlobs(['kb://*', 'a?c', 'x.y'])
  t.ok(re?.test('kb://docs/deep/page'), '* spans / and :')
  t.ok(re?.test('abc'))
  t.notOk(re?.test('abbc'), '? is one character')
  t.notOk(re?.test('xzy'), '. is literal')
  t.notOk(re?.test('kb:/x'), 'the literal part must match')
  t.equal(compileGlobs([]), null, 'no globs: nothing')
})

t.test('policy/templates/expansions-judged-with-their-templates', async t => {
  // The catalogue as the registry holds it: its templates are read at each check.
  let templates = [{ uriTemplate: 'secret://t/{id}', name: 't' }, { uriTemplate: 'docs://{+path}', name: 'docs' }, { uriTemplate: 'kb://s{?q,lang}', name: 'search' }]
  const catalogue = { resourceTemplates: () => templates }
  const view = (config: Partial<PolicyConfig>, server?: CuratedServer): Visibility => new Visibility(policy(config).viewOf(ci), server, catalogue)

  const denied = view({ default: 'allow', rules: [{ deny: { resources: ['secret://t/{id}'] } }] })
  t.notOk(denied.resource('secret://t/carol-1'), 'an expansion of a denied template is hidden')
  t.notOk(denied.seesUri('secret://t/carol-1'), '...its resources/updated too')
  t.ok(denied.resource('secret://t/carol-1/x'), 'a URI the template cannot expand to is judged by its own name')
  t.notOk(denied.resourceOrTemplate('secret://t/{id}'), 'the template itself (a completion ref) is hidden')
  t.notOk(denied.resourceOrTemplate('secret://t/carol-1'), 'a completion ref naming an expansion is hidden')
  t.same(denied.resources([{ uri: 'secret://t/listed' }, { uri: 'docs://a/b' }], 'uri').map(r => r.uri), ['docs://a/b'], 'resources/list drops a listed expansion')
  t.same(denied.resources(templates, 'uriTemplate').map(r => r.uriTemplate), ['docs://{+path}', 'kb://s{?q,lang}'], 'resources/templates/list drops the template')

  const allowOnly = view({ rules: [{ allow: { resources: ['docs://{+path}', 'kb://s{?q,lang}'] } }] })
  t.ok(allowOnly.resource('docs://guides/setup.md'), 'an expansion of a template allowed alone is visible ({+path} spans /)')
  t.ok(allowOnly.resource('kb://s?q=mcp&lang=en'), '...of a query template too')
  t.ok(allowOnly.resource('kb://s'), '...with every variable undefined')
  t.notOk(allowOnly.resource('kb://sx'), 'a URI no allowed template expands to is not')
  t.notOk(allowOnly.resource('secret://t/carol-1'), 'nor one of a template no rule allows')

  const uriGlob = view({ rules: [{ allow: { resources: ['secret://t/carol-*'] } }] })
  t.ok(uriGlob.resource('secret://t/carol-1'), 'a URI allowed by its own glob stays visible though its template is merely not allowed')
  t.notOk(uriGlob.resourceOrTemplate('secret://t/{id}'), 'the template stays hidden')

  const uriDenied = view({ rules: [{ allow: { resources: ['docs://{+path}'] }, deny: { resources: ['docs://private/*'] } }] })
  t.notOk(uriDenied.resource('docs://private/x'), 'a URI deny glob wins over an allowed template')
  t.ok(uriDenied.resource('docs://public/x'), '...the rest of the template\'s expansions stay visible')

  const server = new CuratedServer('support', { resources: { allow: ['*'], deny: ['docs://{+path}'] } })
  const curated = new Visibility(undefined, server, catalogue)
  t.notOk(curated.resource('docs://a'), 'a curated endpoint hides the expansions of a template it denies')
  t.ok(curated.resource('secret://t/1'), '...and no other')

  templates = [{ uriTemplate: 'kb://s{?q,lang}', name: 'search' }]
  t.ok(denied.resource('secret://t/carol-1'), 'the templates are read at each check: once the denied template is gone, the URI is judged by its own name')
  t.ok(Visibility.ALL.resource('secret://t/carol-1'), 'the null view sees everything')
})

t.test('policy/rules/rate-limits-of-the-rules-that-allow-the-tool', async t => {
  const p = policy({ rules: [{ principals: { tokens: ['ci'] }, allow: { tools: ['kb__*'] }, rateLimit: { calls: 5, per: 60_000 } }, { allow: { tools: ['crm__*'] } }] })
  t.same(p.viewOf(ci).limitsFor('kb__search').map(l => [l.calls, l.per]), [[5, 60_000]])
  t.same(p.viewOf(ci).limitsFor('crm__lookup'), [], 'a tool the limited rule does not allow is not counted by it')
})

t.test('config/policy/schema-and-durations', async t => {
  const config = loadConfig({ policy: { rules: [{ principals: { claims: { groups: 'support' } }, allow: { tools: ['*'] }, rateLimit: { calls: 60, per: '1m' } }] } })
  t.equal(config.policy?.default, 'deny', 'default is deny')
  t.equal(config.policy?.rules[0].rateLimit?.per, 60_000, 'per is read as a duration (ms)')
  t.throws(() => loadConfig({ policy: { rules: [{ allow: { tool: ['*'] } }] } }), /policy\.rules\.0\.allow: must NOT have additional properties \(tool\)/)
  t.throws(() => loadConfig({ policy: { default: 'maybe' } }), /policy\.default/)
  t.throws(() => loadConfig({ policy: { rules: [{ principals: { subjects: [{ subject: 'x' }] } }] } }), /issuer/)
  t.equal(loadConfig({}).policy, undefined, 'no policy unless configured')
})
