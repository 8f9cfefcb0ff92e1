/**
 * A hidden resource template hides its expansions (docs/policy.md › Templates and their expansions)
 * on one listening app with the echo fixture and named static tokens: `support` may see every
 * resource but the template `fixture://items/{id}`, so resources/read, completion/complete and
 * resources/subscribe of one of its expansions answer as a URI no upstream has, in both eras.
 * test/e2e/policy.test.ts checks the same id beside the rest of the policy cases.
 */
import t, { type Test } from 'tap'
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
