/**
 * Per-caller policy on what is hidden (docs/policy.md › Templates and their expansions, › Skills), each
 * case on its own listening app with named static tokens:
 * - the echo fixture, `support` seeing every resource but the template `fixture://items/{id}`:
 *   resources/read, completion/complete and resources/subscribe of one of its expansions answer as a
 *   URI no upstream has, in both eras;
 * - test/fixtures/skills-upstream as `alpha` (2026-07-28) and `beta` (legacy era, prefix ""), with a
 *   rule that denies `support` alpha's review skill: skills/list and resources/list leave it out;
 *   skills/get, resources/directory/read and resources/read of it answer as an unknown skill.
 * test/e2e/policy.test.ts and test/e2e/skills.test.ts check the same ids beside the rest (daemon, serve).
 */
import t, { type Test } from 'tap'
import { fileURLToPath } from 'node:url'
import { listen, fixtureUpstreams } from '../helpers/app.js'
import { legacyRpc, legacySession, modernRpc, namesOf, neutral, request, tokensAuth, type RawReply, type Target } from '../helpers/policy.js'

const POLICY = {
  default: 'deny',
  rules: [
    { principals: { scopes: ['mcp:admin'] }, allow: { tools: ['*'], prompts: ['*'], resources: ['*'] } },
    { principals: { tokens: ['support'] }, allow: { resources: ['*'] }, deny: { resources: ['fixture://items/{id}'] } }
  ]
}
const HIDDEN_EXPANSION = 'fixture://items/carol-1'
const ABSENT_URI = 'fixture://nothing/carol'

/** The same answer for a hidden expansion and an absent URI: status, headers (but Date), bytes (but id and URI). */
function sameReply (t: Test, hidden: RawReply, absent: RawReply, names: [string, string], ids: [number, number], label: string): void {
  const headers = (reply: RawReply): Record<string, string> => Object.fromEntries([...reply.headers].filter(([name]) => name !== 'date'))
  t.equal(hidden.status, absent.status, `${label}: same status`)
  t.same(headers(hidden), headers(absent), `${label}: same headers apart from Date`)
  t.equal(neutral(hidden.text, ids[0], names[0]), neutral(absent.text, ids[1], names[1]), `${label}: same bytes apart from id and URI`)
  t.ok(hidden.json?.error !== undefined, `${label}: an error (${hidden.text})`)
}

t.test('policy/templates/expansions-of-a-hidden-template-look-absent', async t => {
  const { base, app } = await listen(t, { upstreams: fixtureUpstreams(), auth: tokensAuth(), policy: POLICY } as never)
  await app.upstreams.ready()
  const support: Target = { base, token: 'support' }
  for (const era of ['modern', 'legacy'] as const) {
    const rpc = async (id: number, method: string, params: Record<string, unknown> = {}): Promise<RawReply> =>
      era === 'modern' ? await modernRpc(support, id, method, params) : await legacyRpc(support, request(id, method, params))
    const listed = [namesOf(await rpc(1, 'resources/list'), 'resources'), namesOf(await rpc(2, 'resources/templates/list'), 'resourceTemplates')]
    t.same(listed, [['fixture://counter', 'fixture://static'], []], `${era}: the template is not listed, the other resources are`)
    sameReply(t, await rpc(11, 'resources/read', { uri: HIDDEN_EXPANSION }), await rpc(12, 'resources/read', { uri: ABSENT_URI }), [HIDDEN_EXPANSION, ABSENT_URI], [11, 12], `${era} resources/read`)
    const complete = (uri: string): Record<string, unknown> => ({ ref: { type: 'ref/resource', uri }, argument: { name: 'id', value: 'c' } })
    sameReply(t, await rpc(13, 'completion/complete', complete('fixture://items/{id}')), await rpc(14, 'completion/complete', complete('fixture://other/{id}')),
      ['fixture://items/{id}', 'fixture://other/{id}'], [13, 14], `${era} completion/complete of the template`)
    sameReply(t, await rpc(15, 'completion/complete', complete(HIDDEN_EXPANSION)), await rpc(16, 'completion/complete', complete(ABSENT_URI)),
      [HIDDEN_EXPANSION, ABSENT_URI], [15, 16], `${era} completion/complete of an expansion`)
  }
  const session = await legacySession(support)
  const subscribe = async (id: number, method: string, uri: string): Promise<RawReply> => await legacyRpc(support, request(id, method, { uri }), session)
  sameReply(t, await subscribe(21, 'resources/subscribe', HIDDEN_EXPANSION), await subscribe(22, 'resources/subscribe', ABSENT_URI), [HIDDEN_EXPANSION, ABSENT_URI], [21, 22], 'legacy resources/subscribe')
  const unsubscribed = [await subscribe(23, 'resources/unsubscribe', HIDDEN_EXPANSION), await subscribe(24, 'resources/unsubscribe', ABSENT_URI)]
  t.equal(neutral(unsubscribed[0].text, 23, HIDDEN_EXPANSION), neutral(unsubscribed[1].text, 24, ABSENT_URI), 'legacy resources/unsubscribe: the same answer')
  // The upstream serves the expansion: absent is the policy's doing.
  t.equal((await modernRpc({ base, token: 'admin' }, 31, 'resources/read', { uri: HIDDEN_EXPANSION })).json.result.contents[0].text, 'item carol-1', 'admin reads it')
  t.equal((await modernRpc(support, 32, 'resources/read', { uri: 'fixture://counter' })).status, 200, 'support reads what it may see')
})

const SKILLS = fileURLToPath(new URL('../fixtures/skills-upstream.js', import.meta.url))
/** What `ci` sees: alpha's two skills, then beta's deploy (beta's pdf lost the collision). */
const MERGED = ['skill://alpha/pdf/SKILL.md', 'skill://alpha/review/SKILL.md', 'skill://alpha/deploy/SKILL.md']

async function rpc (target: Target, era: 'modern' | 'legacy', id: number, method: string, params: Record<string, unknown> = {}): Promise<RawReply> {
  return era === 'modern' ? await modernRpc(target, id, method, params) : await legacyRpc(target, request(id, method, params))
}

/** Every page of skills/list, as URIs. */
async function listAll (target: Target, era: 'modern' | 'legacy'): Promise<string[]> {
  const uris: string[] = []
  let cursor: string | undefined
  for (let page = 0; page < 10; page++) {
    const reply = await rpc(target, era, 10 + page, 'skills/list', cursor === undefined ? {} : { cursor })
    if (reply.json?.result === undefined) throw new Error(`skills/list: ${reply.status} ${reply.text}`)
    uris.push(...(reply.json.result.skills as Array<{ uri: string }>).map(s => s.uri))
    cursor = reply.json.result.nextCursor
    if (cursor === undefined) break
  }
  return uris
}

t.test('skills/policy/hidden-skill-absent-byte-for-byte', async t => {
  const { base, app } = await listen(t, {
    auth: tokensAuth(),
    transport: { pageSize: 2 },
    upstreams: {
      alpha: { command: process.execPath, args: [SKILLS, '--set', 'alpha'] },
      beta: { command: process.execPath, args: [SKILLS, '--set', 'beta', '--legacy'], prefix: '' }
    },
    policy: { default: 'allow', rules: [{ principals: { tokens: ['support'] }, deny: { skills: ['skill://alpha/review/*'] } }] }
  } as never)
  await app.upstreams.ready()
  const ci = { base, token: 'ci' }
  const support = { base, token: 'support' }
  const hidden = 'skill://alpha/review/SKILL.md'
  const unknown = 'skill://alpha/nothing/SKILL.md'
  for (const era of ['modern', 'legacy'] as const) {
    t.same(await listAll(ci, era), MERGED, `${era}: ci sees every skill`)
    t.same(await listAll(support, era), MERGED.filter(uri => uri !== hidden), `${era}: absent from skills/list`)
    const list = await rpc(support, era, 1, 'resources/list')
    t.notOk((list.json.result.resources as Array<{ uri: string }>).some(r => r.uri === hidden), `${era}: its SKILL.md absent from resources/list`)
    t.ok((await rpc(ci, era, 1, 'resources/list')).json.result.resources.some((r: { uri: string }) => r.uri === hidden), `${era}: listed for ci`)
    const pairs: Array<[string, Record<string, unknown>, Record<string, unknown>, string, string]> = [
      ['skills/get', { uri: hidden }, { uri: unknown }, hidden, unknown],
      ['resources/directory/read', { uri: 'skill://alpha/review' }, { uri: 'skill://alpha/nothing' }, 'skill://alpha/review', 'skill://alpha/nothing'],
      ['resources/read', { uri: hidden }, { uri: unknown }, hidden, unknown]
    ]
    for (const [method, hiddenParams, unknownParams, hiddenName, unknownName] of pairs) {
      const a = await rpc(support, era, 21, method, hiddenParams)
      const b = await rpc(support, era, 22, method, unknownParams)
      t.equal(a.status, b.status, `${era} ${method}: same status`)
      t.equal(neutral(a.text, 21, hiddenName), neutral(b.text, 22, unknownName), `${era} ${method}: the hidden skill answers as an unknown one, byte for byte`)
      t.ok(a.json.error !== undefined, `${era} ${method}: an error`)
    }
  }
})
