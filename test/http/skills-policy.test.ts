/**
 * A skill the policy hides is absent, byte for byte (docs/policy.md › Skills), on one listening app:
 * test/fixtures/skills-upstream as `alpha` (2026-07-28) and `beta` (legacy era, prefix ""), named
 * static tokens, and a rule that denies `support` alpha's review skill. skills/list and resources/list
 * leave it out for `support`; skills/get, resources/directory/read and resources/read of it answer as
 * an unknown skill, in both eras. test/e2e/skills.test.ts checks the same id through a real daemon.
 */
import t from 'tap'
import { fileURLToPath } from 'node:url'
import { listen } from '../helpers/app.js'
import { legacyRpc, modernRpc, neutral, request, tokensAuth, type RawReply, type Target } from '../helpers/policy.js'

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
