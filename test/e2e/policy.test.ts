/**
 * Per-caller policy over real HTTP, in both eras and in a 2025-03-26 batch, with named static
 * tokens and with OAuth principals (oidc-provider), on a real listening daemon, and on a spawned
 * `mcpx serve` (the `local` principal). Docs: Policy. Tests are named policy/<area>/<requirement>.
 */
import t, { type Test } from 'tap'
import { build, listen, fixtureUpstreams, modernHeaders, modernMeta } from '../helpers/app.js'
import { freePort, startDaemon } from '../helpers/daemon.js'
import { spawnServe } from '../helpers/spawn.js'
import { pollUntil } from '../helpers/legacy.js'
import { fixtureCommand } from '../helpers/fixture.js'
import { CLIENTS, startAuthServer } from '../helpers/oauth.js'
import { collect, legacyRpc, legacySession, modernRpc, namesOf, neutral, request, tokenEnvironment, untilReady, tokensAuth, TOKENS, type Collected, type RawReply, type Target } from '../helpers/policy.js'

/**
 * admin (scope mcp:admin) sees everything; ci a few tools and resources; support every resource but
 * the template fixture://items/{id} (so none of its expansions either); nobody nothing.
 */
const POLICY = {
  default: 'deny',
  rules: [
    { principals: { scopes: ['mcp:admin'] }, allow: { tools: ['*'], prompts: ['*'], resources: ['*'] } },
    { principals: { tokens: ['ci'] }, allow: { tools: ['echo', 'head*', 'slow'], resources: ['fixture://static', 'fixture://items/*'] }, deny: { tools: ['headers'] } },
    { principals: { tokens: ['support'] }, allow: { resources: ['*'] }, deny: { resources: ['fixture://items/{id}'] } }
  ]
}

const ALL_TOOLS = ['add_tool', 'bump', 'crash', 'echo', 'elicit', 'fail', 'headers', 'log', 'roots', 'sample', 'slow']

async function serve (t: Test, extra: Record<string, unknown> = {}): Promise<string> {
  const { base, app } = await listen(t, { upstreams: fixtureUpstreams(), auth: tokensAuth(), policy: POLICY, ...extra })
  await app.upstreams.ready() // the fixture tried once (ready): its lists are in the catalogue
  return base
}

/**
 * One app with POLICY, shared by the cases that need no state of their own (none reads the
 * counter's value; they run one at a time). Started on first use, closed when the file ends.
 */
let shared: Promise<string> | undefined
async function sharedServe (): Promise<string> {
  shared ??= serve(t)
  return await shared
}

/** tools/list, prompts/list, resources/list and resources/templates/list in one era, as names. */
async function lists (target: Target, era: 'modern' | 'legacy'): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {}
  const methods = [['tools/list', 'tools'], ['prompts/list', 'prompts'], ['resources/list', 'resources'], ['resources/templates/list', 'resourceTemplates']] as const
  for (const [method, key] of methods) {
    const reply = era === 'modern' ? await modernRpc(target, 1, method) : await legacyRpc(target, request(1, method))
    out[key] = namesOf(reply, key)
  }
  return out
}

t.test('policy/lists/filtered-per-caller-in-both-eras', async t => {
  const base = await sharedServe()
  for (const era of ['modern', 'legacy'] as const) {
    t.same(await lists({ base, token: 'ci' }, era), { tools: ['echo', 'slow'], prompts: [], resources: ['fixture://static'], resourceTemplates: ['fixture://items/{id}'] }, `${era}: ci sees what its rule allows, minus the denied headers`)
    t.same((await lists({ base, token: 'admin' }, era)).tools, ALL_TOOLS, `${era}: a static token's scopes count (mcp:admin sees every tool)`)
    t.same(await lists({ base, token: 'nobody' }, era), { tools: [], prompts: [], resources: [], resourceTemplates: [] }, `${era}: no rule applies: default deny shows nothing`)
  }
})

t.test('policy/lists/no-policy-everything-allowed', async t => {
  const { base, app } = await listen(t, { upstreams: fixtureUpstreams(), auth: tokensAuth() })
  await app.upstreams.ready()
  t.same((await lists({ base, token: 'nobody' }, 'modern')).tools, ALL_TOOLS, 'without policy every caller sees everything (today\'s behaviour)')
})

/**
 * Each hidden thing and an absent one, through the same request: the replies must be the same
 * bytes apart from the id and the name (hidden things look absent).
 */
const HIDDEN_VS_ABSENT: Array<{ method: string, hidden: string, absent: string, params: (name: string) => Record<string, unknown> }> = [
  { method: 'tools/call', hidden: 'bump', absent: 'no_such_tool', params: name => ({ name, arguments: {} }) },
  { method: 'tools/call', hidden: 'headers', absent: 'no_such_tool', params: name => ({ name, arguments: { text: 'x' } }) },
  { method: 'prompts/get', hidden: 'greet', absent: 'no_such_prompt', params: name => ({ name, arguments: { name: 'x' } }) },
  { method: 'resources/read', hidden: 'fixture://counter', absent: 'fixture://no-such-resource', params: uri => ({ uri }) },
  { method: 'completion/complete', hidden: 'greet', absent: 'no_such_prompt', params: name => ({ ref: { type: 'ref/prompt', name }, argument: { name: 'name', value: 'a' } }) }
]

function sameApartFromIdAndName (t: Test, hidden: RawReply, absent: RawReply, names: [string, string], ids: [number, number], label: string): void {
  t.equal(hidden.status, absent.status, `${label}: same status`)
  t.equal(hidden.headers.get('content-type'), absent.headers.get('content-type'), `${label}: same content-type`)
  t.equal(neutral(hidden.text, ids[0], names[0]), neutral(absent.text, ids[1], names[1]), `${label}: same bytes apart from id and name`)
  t.ok(hidden.json?.error !== undefined, `${label}: an error (${hidden.text})`)
}

t.test('policy/calls/hidden-is-byte-identical-to-absent', async t => {
  const base = await sharedServe()
  const ci = { base, token: 'ci' }
  for (const { method, hidden, absent, params } of HIDDEN_VS_ABSENT) {
    const modern = [await modernRpc(ci, 11, method, params(hidden)), await modernRpc(ci, 12, method, params(absent))]
    sameApartFromIdAndName(t, modern[0], modern[1], [hidden, absent], [11, 12], `modern ${method} ${hidden}`)
    const legacy = [await legacyRpc(ci, request(21, method, params(hidden))), await legacyRpc(ci, request(22, method, params(absent)))]
    sameApartFromIdAndName(t, legacy[0], legacy[1], [hidden, absent], [21, 22], `legacy ${method} ${hidden}`)
  }
  // resources/subscribe (legacy, in a session)
  const session = await legacySession(ci)
  const sub = [await legacyRpc(ci, request(31, 'resources/subscribe', { uri: 'fixture://counter' }), session), await legacyRpc(ci, request(32, 'resources/subscribe', { uri: 'fixture://nothing' }), session)]
  sameApartFromIdAndName(t, sub[0], sub[1], ['fixture://counter', 'fixture://nothing'], [31, 32], 'legacy resources/subscribe')
  // the allowed ones still work
  t.equal((await modernRpc(ci, 1, 'tools/call', { name: 'echo', arguments: { text: 'hi' } })).json.result.content[0].text, 'hi', 'an allowed tool is called')
  t.equal((await legacyRpc(ci, request(1, 'resources/read', { uri: 'fixture://items/7' }))).json.result.contents[0].text, 'item 7', 'a templated URI allowed by a glob is read')
})

/**
 * A hidden expansion and an absent URI of the same length (so Content-Length agrees) through the same
 * request: the same status and headers (Date aside) and the same bytes apart from the id and the URI.
 */
const HIDDEN_EXPANSION = 'fixture://items/carol-1'
const ABSENT_URI = 'fixture://nothing/carol'

function sameReply (t: Test, hidden: RawReply, absent: RawReply, names: [string, string], ids: [number, number], label: string): void {
  const headers = (reply: RawReply): Record<string, string> => Object.fromEntries([...reply.headers].filter(([name]) => name !== 'date'))
  t.equal(hidden.status, absent.status, `${label}: same status`)
  t.same(headers(hidden), headers(absent), `${label}: same headers apart from Date`)
  t.equal(neutral(hidden.text, ids[0], names[0]), neutral(absent.text, ids[1], names[1]), `${label}: same bytes apart from id and URI`)
  t.ok(hidden.json?.error !== undefined, `${label}: an error (${hidden.text})`)
}

t.test('policy/templates/expansions-of-a-hidden-template-look-absent', async t => {
  // support may see every resource but the template fixture://items/{id}: its expansions are hidden too.
  const base = await sharedServe()
  const support = { base, token: 'support' }
  for (const era of ['modern', 'legacy'] as const) {
    const rpc = async (id: number, method: string, params: Record<string, unknown>): Promise<RawReply> =>
      era === 'modern' ? await modernRpc(support, id, method, params) : await legacyRpc(support, request(id, method, params))
    const listed = await lists(support, era)
    t.same([listed.resources, listed.resourceTemplates], [['fixture://counter', 'fixture://static'], []], `${era}: the template is not listed, the other resources are`)
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

t.test('policy/templates/updates-of-a-hidden-expansion-never-reach-the-caller', async t => {
  // Both listen to fixture://items/counter and fixture://counter; bump announces them in that order.
  const base = await sharedServe()
  const listenAs = async (token: string): Promise<Collected> => {
    const abort = new AbortController()
    const body = { jsonrpc: '2.0', id: 'l', method: 'subscriptions/listen', params: { notifications: { resourceSubscriptions: ['fixture://items/counter', 'fixture://counter'] }, _meta: modernMeta() } }
    const res = await fetch(`${base}/mcp`, { method: 'POST', headers: { ...modernHeaders('subscriptions/listen'), authorization: `Bearer ${TOKENS[token]}` }, body: JSON.stringify(body), signal: abort.signal })
    const stream = collect(res, abort)
    t.teardown(() => { stream.close() })
    await pollUntil(`${token}'s acknowledgement`, () => stream.messages.some(m => m.method === 'notifications/subscriptions/acknowledged'), 20_000)
    return stream
  }
  const [admin, support] = [await listenAs('admin'), await listenAs('support')]
  t.equal((await modernRpc({ base, token: 'admin' }, 1, 'tools/call', { name: 'bump', arguments: {} })).status, 200, 'bumped')
  const updates = (stream: Collected): string[] => stream.messages.filter(m => m.method === 'notifications/resources/updated').map(m => m.params.uri)
  // (Counted as sets: two concurrent subscription changes can leave mcpx two upstream listens a while, each
  // delivering; what matters here is which URIs reach whom.)
  await pollUntil('admin told of both', () => updates(admin).includes('fixture://counter'), 20_000)
  await pollUntil('support told of the counter', () => updates(support).includes('fixture://counter'), 20_000)
  t.same([...new Set(updates(admin))], ['fixture://items/counter', 'fixture://counter'], 'admin sees the expansion: both updates, in order')
  t.same([...new Set(updates(support))], ['fixture://counter'], 'support heard only of what it sees (the expansion\'s update came first and was not delivered)')
})

t.test('policy/hidden/byte-identical-to-absent-upstream-down', async t => {
  // The one upstream never comes up (it exits at once): a name ci may see but nobody lists is a
  // transient "not available right now"; a name ci may not see must answer exactly so.
  const policy = {
    default: 'deny',
    rules: [{ principals: { tokens: ['ci'] }, allow: { tools: ['head*'], prompts: ['g*'], resources: ['fixture://items/*'] }, deny: { tools: ['headers'], prompts: ['greet'] } }]
  }
  const { base } = await listen(t, { upstreams: { fixture: { command: process.execPath, args: ['-e', 'process.exit(3)'] } }, auth: tokensAuth(), policy })
  const ci = { base, token: 'ci' }
  const cases = [
    { method: 'tools/call', hidden: 'headers', absent: 'head_nope', params: (name: string) => ({ name, arguments: {} }) },
    { method: 'prompts/get', hidden: 'greet', absent: 'gnope', params: (name: string) => ({ name }) },
    { method: 'resources/read', hidden: 'fixture://counter', absent: 'fixture://items/none', params: (uri: string) => ({ uri }) }
  ]
  for (const { method, hidden, absent, params } of cases) {
    const modern = await samePhase(async () => [await modernRpc(ci, 11, method, params(hidden)), await modernRpc(ci, 12, method, params(absent))])
    sameApartFromIdAndName(t, modern[0], modern[1], [hidden, absent], [11, 12], `modern ${method} ${hidden}`)
    const legacy = await samePhase(async () => [await legacyRpc(ci, request(21, method, params(hidden))), await legacyRpc(ci, request(22, method, params(absent)))])
    sameApartFromIdAndName(t, legacy[0], legacy[1], [hidden, absent], [21, 22], `legacy ${method} ${hidden}`)
  }
})

/**
 * The upstream above restarts with backoff, so it is `down` and then `connecting` by turns. Two
 * requests sent across such a flip differ in that word, not because one name is hidden: such a
 * pair is sent again (at most 20 times; the comparison then judges the last pair as it is).
 */
async function samePhase (send: () => Promise<[RawReply, RawReply]>): Promise<[RawReply, RawReply]> {
  const phase = (reply: RawReply): string | undefined => /is (down|connecting):/.exec(reply.text)?.[1]
  for (let attempt = 1; ; attempt++) {
    const pair = await send()
    if (phase(pair[0]) === phase(pair[1]) || attempt >= 20) return pair
  }
}

t.test('policy/calls/hidden-never-reaches-the-upstream', async t => {
  const base = await serve(t)
  for (let i = 0; i < 3; i++) {
    await modernRpc({ base, token: 'ci' }, i, 'tools/call', { name: 'bump', arguments: {} })
    await legacyRpc({ base, token: 'ci' }, request(i, 'tools/call', { name: 'bump', arguments: {} }))
  }
  const read = await modernRpc({ base, token: 'admin' }, 1, 'resources/read', { uri: 'fixture://counter' })
  t.equal(read.json.result.contents[0].text, '0', 'six hidden bump calls left the counter at 0')
  const bumped = await modernRpc({ base, token: 'admin' }, 2, 'tools/call', { name: 'bump', arguments: {} })
  t.equal(bumped.json.result.content[0].text, 'counter 1', 'the upstream is there: an allowed caller bumps it')
})

t.test('policy/batches/2025-03-26-mixed-allowed-and-denied', async t => {
  const base = await serve(t)
  const batch = [
    request(1, 'tools/call', { name: 'echo', arguments: { text: 'allowed' } }),
    request(2, 'tools/call', { name: 'bump', arguments: {} }),
    request(3, 'tools/call', { name: 'no_such_tool', arguments: {} }),
    request(4, 'tools/list'),
    request(5, 'prompts/get', { name: 'greet', arguments: { name: 'x' } })
  ]
  for (const session of [undefined, await legacySession({ base, token: 'ci' })]) {
    const label = session === undefined ? 'sessionless' : 'in a session'
    const reply = await legacyRpc({ base, token: 'ci' }, batch, session)
    t.equal(reply.status, 200, `${label}: the batch is 200`)
    const byId = new Map<number, Record<string, any>>((reply.json as Array<Record<string, any>>).map(m => [m.id, m])) // eslint-disable-line @typescript-eslint/no-explicit-any
    t.equal(byId.size, 5, `${label}: one reply per request`)
    t.equal(byId.get(1)?.result.content[0].text, 'allowed', `${label}: the allowed call is served`)
    t.same(byId.get(2)?.error, { code: -32602, message: 'Unknown tool: bump' }, `${label}: the hidden call is an unknown tool`)
    t.same(byId.get(3)?.error, { code: -32602, message: 'Unknown tool: no_such_tool' }, `${label}: as the absent one is`)
    t.same(byId.get(4)?.result.tools.map((tool: { name: string }) => tool.name).sort(), ['echo', 'slow'], `${label}: the list in the batch is filtered`)
    t.same(byId.get(5)?.error, { code: -32602, message: 'Unknown prompt: greet' }, `${label}: a hidden prompt`)
  }
  const read = await legacyRpc({ base, token: 'admin' }, request(9, 'resources/read', { uri: 'fixture://counter' }))
  t.equal(read.json.result.contents[0].text, '0', 'the hidden bumps of the batches never reached the upstream')
})

t.test('policy/headers/mcp-param-of-a-hidden-tool-is-not-checked', async t => {
  const base = await sharedServe()
  // headers declares x-mcp-header Region: a call without Mcp-Param-Region is -32020 for a caller who sees it...
  const admin = await modernRpc({ base, token: 'admin' }, 1, 'tools/call', { name: 'headers', arguments: { region: 'eu' } })
  t.equal(admin.status, 400)
  t.equal(admin.json.error.code, -32020, 'the header check runs for a visible tool')
  // ...and for a caller it is hidden from, the answer is the absent tool's, not the header check's.
  const hidden = await modernRpc({ base, token: 'ci' }, 2, 'tools/call', { name: 'headers', arguments: { region: 'eu' } })
  const absent = await modernRpc({ base, token: 'ci' }, 3, 'tools/call', { name: 'no_such_tool', arguments: { region: 'eu' } })
  sameApartFromIdAndName(t, hidden, absent, ['headers', 'no_such_tool'], [2, 3], 'modern hidden tool with an x-mcp-header argument')
  t.equal(hidden.json.error.code, -32602)
})

t.test('policy/oauth/subjects-scopes-and-claims', async t => {
  const as = await startAuthServer(t)
  const port = await freePort()
  const resource = `http://127.0.0.1:${port}/mcp`
  const policy = {
    rules: [
      { principals: { subjects: [{ issuer: as.issuer, subject: 'carol' }] }, allow: { tools: ['echo'] } },
      { principals: { claims: { groups: 'support-team' } }, allow: { tools: ['slow', 'fail'] }, deny: { tools: ['fail'] } },
      { principals: { scopes: ['mcp:tools', 'mcp:admin'] }, allow: { tools: ['*'] } }
    ]
  }
  const served = await build(t, { upstreams: fixtureUpstreams(), auth: { oauth: { issuer: as.issuer, resource } }, policy })
  await served.listen({ host: '127.0.0.1', port })
  await served.upstreams.ready()
  const target = (token: string): Target => ({ base: `http://127.0.0.1:${port}`, token })
  const exp = Math.floor(Date.now() / 1000) + 300
  const token = async (claims: Record<string, unknown>): Promise<string> => await as.sign({ iss: as.issuer, aud: resource, exp, scope: 'mcp:tools', ...claims })
  const carol = await token({ sub: 'carol' })
  const dave = await token({ sub: 'dave', groups: ['staff', 'support-team'] })
  const erin = await token({ sub: 'erin', groups: 'support-team', scope: 'mcp:tools mcp:admin' })
  const frank = await token({ sub: 'frank', groups: ['staff'] })
  for (const era of ['modern', 'legacy'] as const) {
    t.same((await lists(target(carol), era)).tools, ['echo'], `${era}: a subject rule (issuer and subject)`)
    t.same((await lists(target(dave), era)).tools, ['slow'], `${era}: a claim contained in an array claim; deny wins over the same rule's allow`)
    t.same((await lists(target(erin), era)).tools, ALL_TOOLS.filter(n => n !== 'fail'), `${era}: all listed scopes held: everything, but the claims rule that also applies denies fail (deny wins across rules)`)
    t.same((await lists(target(frank), era)).tools, [], `${era}: no rule applies (claim not held, one scope of two)`)
  }
  const client = await as.clientCredentials(CLIENTS.alice, { resource, scope: 'mcp:tools mcp:admin' })
  t.same((await lists(target(client), 'modern')).tools, ALL_TOOLS, 'a token issued by the authorization server (client_credentials) with both scopes')
  const hidden = await modernRpc(target(carol), 5, 'tools/call', { name: 'bump', arguments: {} })
  t.same(hidden.json.error, { code: -32602, message: 'Unknown tool: bump' }, 'an OAuth caller\'s hidden tool is unknown')
})

t.test('policy/daemon/filtered-on-a-real-daemon', async t => {
  const env = tokenEnvironment()
  const daemon = await startDaemon(t, { upstreams: fixtureUpstreams(), auth: tokensAuth(), policy: POLICY }, { env })
  await untilReady(daemon.base)
  const ci = { base: daemon.base, token: 'ci' }
  t.same((await lists(ci, 'modern')).tools, ['echo', 'slow'], 'modern list filtered by the daemon')
  t.same((await lists(ci, 'legacy')).tools, ['echo', 'slow'], 'legacy list filtered by the daemon')
  const hidden = await modernRpc(ci, 7, 'tools/call', { name: 'bump', arguments: {} })
  const absent = await modernRpc(ci, 8, 'tools/call', { name: 'nope', arguments: {} })
  sameApartFromIdAndName(t, hidden, absent, ['bump', 'nope'], [7, 8], 'daemon modern tools/call')
  t.test('policy/templates/daemon-hides-expansions-in-both-eras', async t => {
    const support = { base: daemon.base, token: 'support' }
    sameReply(t, await modernRpc(support, 11, 'resources/read', { uri: HIDDEN_EXPANSION }), await modernRpc(support, 12, 'resources/read', { uri: ABSENT_URI }), [HIDDEN_EXPANSION, ABSENT_URI], [11, 12], 'daemon modern resources/read')
    sameReply(t, await legacyRpc(support, request(13, 'resources/read', { uri: HIDDEN_EXPANSION })), await legacyRpc(support, request(14, 'resources/read', { uri: ABSENT_URI })), [HIDDEN_EXPANSION, ABSENT_URI], [13, 14], 'daemon legacy resources/read')
    const session = await legacySession(support, '2025-11-25')
    sameReply(t, await legacyRpc(support, request(15, 'resources/subscribe', { uri: HIDDEN_EXPANSION }), session), await legacyRpc(support, request(16, 'resources/subscribe', { uri: ABSENT_URI }), session),
      [HIDDEN_EXPANSION, ABSENT_URI], [15, 16], 'daemon 2025-11-25 session resources/subscribe')
    t.equal((await modernRpc({ base: daemon.base, token: 'admin' }, 17, 'resources/read', { uri: HIDDEN_EXPANSION })).json.result.contents[0].text, 'item carol-1', 'admin reads it')
  })
})

t.test('policy/stdio/local-principal-rules', async t => {
  const { command, args } = fixtureCommand()
  const child = spawnServe(t, {
    config: {
      upstreams: { fixture: { command, args } },
      policy: {
        rules: [
          { principals: { local: true }, allow: { tools: ['echo'], prompts: ['greet'], resources: ['*'] }, deny: { resources: ['fixture://items/{id}'] } },
          { principals: { tokens: ['ci'] }, allow: { tools: ['*'] } }
        ]
      }
    }
  })
  const init = await child.request({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 't', version: '0' } } })
  t.ok(init.result, 'initialized')
  child.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
  let seq = 100
  // Bounded wait for the fixture (a loaded machine can be slower than the start wait): echo is listed once it is up.
  const listed = await pollUntil('the fixture listed', async () => {
    const reply = await child.request({ jsonrpc: '2.0', id: seq++, method: 'tools/list' })
    return reply.result.tools.length > 0 ? reply : undefined
  }, 20_000)
  t.same(listed.result.tools.map((tool: { name: string }) => tool.name), ['echo'], 'the local rule applies on stdio; the token rule does not')
  const hidden = await child.request({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'bump', arguments: {} } })
  const absent = await child.request({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'nope', arguments: {} } })
  t.equal(neutral(JSON.stringify(hidden), 3, 'bump'), neutral(JSON.stringify(absent), 4, 'nope'), 'stdio: hidden answers as absent')
  const modern = await child.request({ jsonrpc: '2.0', id: 5, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } })
  t.same(modern.result.tools.map((tool: { name: string }) => tool.name), ['echo'], 'a modern request on stdio is filtered too')
  const batch = await new Promise<unknown>(resolve => {
    const at = child.messages.length
    child.send([{ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'echo', arguments: { text: 'ok' } } }, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'bump', arguments: {} } }])
    void child.nextMessage(m => Array.isArray(m), { after: at }).then(resolve)
  }) as Array<Record<string, any>> // eslint-disable-line @typescript-eslint/no-explicit-any
  t.equal(batch.find(m => m.id === 6)?.result.content[0].text, 'ok', 'stdio batch: the allowed call')
  t.same(batch.find(m => m.id === 7)?.error, { code: -32602, message: 'Unknown tool: bump' }, 'stdio batch: the hidden call')
  t.test('policy/templates/serve-hides-expansions-in-both-eras', async t => {
    // The local rule allows every resource but the template fixture://items/{id}: its expansions look absent, line for line.
    const line = async (message: Record<string, unknown>): Promise<string> => {
      const reply = await child.request(message)
      return child.lines[child.messages.indexOf(reply)]
    }
    const modernMetaOnly = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} }
    const cases = [
      { label: 'legacy resources/read', method: 'resources/read', meta: undefined },
      { label: 'legacy resources/subscribe', method: 'resources/subscribe', meta: undefined },
      { label: 'modern resources/read', method: 'resources/read', meta: modernMetaOnly }
    ]
    let id = 200
    for (const { label, method, meta } of cases) {
      const params = (uri: string): Record<string, unknown> => meta === undefined ? { uri } : { uri, _meta: meta }
      const hidden = await line({ jsonrpc: '2.0', id: ++id, method, params: params(HIDDEN_EXPANSION) })
      const absent = await line({ jsonrpc: '2.0', id: ++id, method, params: params(ABSENT_URI) })
      t.equal(neutral(hidden, id - 1, HIDDEN_EXPANSION), neutral(absent, id, ABSENT_URI), `stdio ${label}: the same line apart from id and URI`)
      t.match(hidden, /"error"/, `stdio ${label}: an error (${hidden})`)
    }
    const template = await child.request({ jsonrpc: '2.0', id: ++id, method: 'resources/templates/list' })
    t.same(template.result.resourceTemplates, [], 'stdio: the template is not listed')
  })
})
