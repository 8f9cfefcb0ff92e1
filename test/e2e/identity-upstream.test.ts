/**
 * Each caller's own identity toward an upstream (docs/upstreams.md › Upstream identity), end to end,
 * with real parts: oidc-provider as the upstream's authorization server (authorization code with
 * PKCE, refresh tokens, resource indicators), an HTTP fixture upstream behind a bearer check that
 * answers 401 with `WWW-Authenticate: Bearer resource_metadata=…` (mcpx discovers the authorization
 * server from it), and one real `mcpx daemon` whose log is captured. The browser step is driven by
 * HTTP (test/helpers/oauth.ts playUser), then the redirect is followed to mcpx's `/oauth/callback`.
 * Callers are static-token principals (`token:alice`, `token:bob`, `token:carol`). One daemon for the
 * file; the cases run in order and build on each other (alice consents first, then bob, …).
 * Tests are named identity-upstream/<area>/<requirement>.
 */
import t from 'tap'
import { mkdtempSync, readFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ElicitationCompleteNotificationSchema, ToolListChangedNotificationSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client'
import { freePort, startDaemon } from '../helpers/daemon.js'
import { modernHeaders, modernMeta } from '../helpers/app.js'
import { CLIENTS, playUser, startAuthServer } from '../helpers/oauth.js'
import { spawnServe } from '../helpers/spawn.js'
import { mcpx } from '../helpers/cli.js'
import { REDIS_URL, redisTestPrefix } from '../helpers/redis.js'
import { Redis } from 'ioredis'
import { randomBytes } from 'node:crypto'
import { startProtectedUpstream } from '../helpers/protected-upstream.js'

type Message = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

const TOKENS = { alice: 'iu-alice-token-0123456789abcdef', bob: 'iu-bob-token-0123456789abcdef', carol: 'iu-carol-token-0123456789abcdef' }
const ADMIN = 'iu-admin-token-0123456789abcdef'
const CLIENT = { id: 'mcpx-user', secret: 'iu-mcpx-user-secret-0123456789abcdef' }

const port = await freePort()
const base = `http://127.0.0.1:${port}`
const redirectUri = `${base}/oauth/callback`
/** `mcpx serve` receives its consent callbacks on a loopback port of its own (RFC 8252 §7.3). */
const stdioRedirectUri = `http://127.0.0.1:${await freePort()}/oauth/callback`
/** Two replicas sharing Redis; the callback is replica A's (a load balancer would send it to either). */
const replicaPorts = [await freePort(), await freePort()]
const replicaRedirectUri = `http://127.0.0.1:${replicaPorts[0]}/oauth/callback`
const as = await startAuthServer(t, {
  clients: [{
    client_id: CLIENT.id, client_secret: CLIENT.secret, redirect_uris: [redirectUri, stdioRedirectUri, replicaRedirectUri], grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic', scope: 'openid offline_access mcp:tools mcp:admin'
  }]
})
const upstream = await startProtectedUpstream(t, as.issuer, { resourceMetadata: true })
const auditFile = join(mkdtempSync(join(tmpdir(), 'mcpx-iu-')), 'audit.log')
const daemon = await startDaemon(t, {
  auth: { tokens: Object.keys(TOKENS).map(name => ({ name, tokenEnv: `MCPX_IU_${name.toUpperCase()}` })) },
  admin: { tokens: [ADMIN] },
  audit: { file: auditFile },
  upstreams: {
    me: { url: upstream.url, prefix: 'me', auth: { type: 'oauth-user', clientId: CLIENT.id, clientSecretEnv: 'MCPX_IU_CLIENT_SECRET', scopes: ['openid', 'offline_access', 'mcp:tools'], redirectUri } }
  }
}, { port, env: { MCPX_IU_ALICE: TOKENS.alice, MCPX_IU_BOB: TOKENS.bob, MCPX_IU_CAROL: TOKENS.carol, MCPX_IU_CLIENT_SECRET: CLIENT.secret } })

/** Every code and state the browser carried back (none may reach a log). */
const redirects: string[] = []

/** Plays `login` at the authorization server for `url`, then follows the redirect to mcpx's callback. */
async function consent (url: string, login: string, redirect = redirectUri): Promise<{ status: number, page: string, location: string }> {
  const { location, code, state } = await playUser(url, login, redirect)
  redirects.push(code, state ?? '')
  const response = await fetch(location)
  return { status: response.status, page: await response.text(), location }
}

/** A 2026-07-28 tools/call of `name` as `who`; `meta` is the request's `_meta`; extra params merged in. */
async function modernCall (who: keyof typeof TOKENS, name: string, capabilities: Record<string, unknown>, extra: Record<string, unknown> = {}, at = base): Promise<{ status: number, body: Message }> {
  const res = await fetch(`${at}/mcp`, {
    method: 'POST',
    headers: modernHeaders('tools/call', name, { accept: 'application/json', authorization: `Bearer ${TOKENS[who]}` }),
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: { text: `hi ${who}` }, _meta: modernMeta(capabilities), ...extra } })
  })
  return { status: res.status, body: await res.json() as Message }
}

/** A v1 SDK client (2025-11-25) as `who`, declaring URL-mode elicitation. */
async function v1Client (who: keyof typeof TOKENS): Promise<ClientV1> {
  const client = new ClientV1({ name: 'iu-v1', version: '1.0.0' }, { capabilities: { elicitation: { form: {}, url: {} } } })
  await client.connect(new TransportV1(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${TOKENS[who]}` } } }))
  t.teardown(async () => { await client.close() })
  return client
}

function subjectsOfCalls (): Array<string | undefined> {
  return upstream.seen.filter(s => s.rpc === 'tools/call').map(s => s.sub)
}

function auditLines (): Message[] {
  return existsSync(auditFile) ? readFileSync(auditFile, 'utf8').split('\n').filter(l => l !== '').map(l => JSON.parse(l) as Message) : []
}

t.test('identity-upstream/consent/legacy-url-elicitation-then-retry', async t => {
  const client = await v1Client('alice')
  const completed = new Promise<Message>(resolve => client.setNotificationHandler(ElicitationCompleteNotificationSchema, n => resolve(n.params)))
  const listChanged = new Promise<void>(resolve => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()))
  const before = await client.listTools()
  t.notOk(before.tools.some(tool => tool.name.startsWith('me__')), 'before consent the caller\'s catalogue holds none of the upstream\'s tools')
  let error: McpError | undefined
  try { await client.callTool({ name: 'me__echo', arguments: { text: 'hi alice' } }) } catch (e) { error = e as McpError }
  t.equal(error?.code, -32042, 'a name in the upstream\'s namespace starts consent: URLElicitationRequired (2025-11-25)')
  const elicitation = (error?.data as Message | undefined)?.elicitations?.[0] as Message
  t.equal(elicitation?.mode, 'url')
  t.type(elicitation?.elicitationId, 'string')
  const url = new URL(elicitation.url as string)
  t.equal(url.origin, as.issuer, 'discovered from the upstream\'s 401 → RFC 9728 metadata → RFC 8414')
  t.equal(url.searchParams.get('code_challenge_method'), 'S256', 'PKCE S256')
  t.equal(url.searchParams.get('resource'), upstream.url, 'RFC 8707 resource of the upstream')
  t.equal(url.searchParams.get('redirect_uri'), redirectUri)
  t.ok((url.searchParams.get('state') ?? '').length >= 43, 'a state of 256 bits')
  t.equal(upstream.seen.filter(s => s.rpc === 'tools/call').length, 0, 'nothing reached the upstream')
  const callback = await consent(url.href, 'alice-upstream')
  t.equal(callback.status, 200)
  t.match(callback.page, /return to your client/)
  t.same(await completed, { elicitationId: elicitation.elicitationId }, 'notifications/elicitation/complete on the caller\'s stream')
  await listChanged
  const after = await client.listTools()
  t.ok(after.tools.some(tool => tool.name === 'me__echo'), 'after consent mcpx lists the upstream as that caller')
  const result = await client.callTool({ name: 'me__echo', arguments: { text: 'hi alice' } }) as Message
  t.equal(result.content[0].text, 'hi alice', 'the retry succeeds')
  t.equal(subjectsOfCalls().at(-1), 'alice-upstream', 'with the caller\'s own upstream identity')

  t.test('identity-upstream/consent/prompts-and-resources-as-the-caller', async t => {
    t.ok((await client.listPrompts()).prompts.some(p => p.name === 'me__greet'), 'its prompts are listed for the caller, prefixed')
    const prompt = await client.getPrompt({ name: 'me__greet', arguments: { name: 'alice' } })
    t.match(JSON.stringify(prompt.messages), /alice/, 'prompts/get reaches the upstream as the caller')
    t.ok((await client.listResources()).resources.some(r => r.uri === 'fixture://static'), 'its resources are listed for the caller')
    const read = await client.readResource({ uri: 'fixture://static' })
    t.equal(read.contents[0].uri, 'fixture://static', 'resources/read reaches the upstream as the caller')
    t.equal(upstream.seen.filter(s => s.rpc === 'resources/read').at(-1)?.sub, 'alice-upstream')
  })

  t.test('identity-upstream/consent/state-single-use', async t => {
    const replay = await fetch(callback.location)
    t.equal(replay.status, 400, 'the same redirect again is refused')
    t.match(await replay.text(), /unknown, already used or expired/)
  })
})

t.test('identity-upstream/consent/modern-input-required-then-retry', async t => {
  const first = await modernCall('bob', 'me__echo', { elicitation: { url: {} } })
  t.equal(first.status, 200)
  const result = first.body.result as Message
  t.equal(result.resultType, 'input_required', '2026-07-28: an InputRequiredResult')
  const input = result.inputRequests.u1 as Message
  t.equal(input.method, 'elicitation/create')
  t.equal(input.params.mode, 'url')
  t.notOk('elicitationId' in input.params, 'without the 2025-only elicitationId')
  const listed = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: modernHeaders('tools/list', undefined, { accept: 'application/json', authorization: `Bearer ${TOKENS.bob}` }),
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: modernMeta() } })
  })
  t.notOk(((await listed.json() as Message).result.tools as Message[]).some(tool => String(tool.name).startsWith('me__')), 'alice\'s consent lists nothing for bob')
  t.equal((await consent(input.params.url as string, 'bob-upstream')).status, 200)
  const retry = await modernCall('bob', 'me__echo', { elicitation: { url: {} } }, { requestState: result.requestState, inputResponses: { u1: { action: 'accept' } } })
  t.equal(retry.body.result?.content?.[0]?.text, 'hi bob', 'the retry succeeds')
  t.equal(subjectsOfCalls().at(-1), 'bob-upstream')
})

t.test('identity-upstream/connections/two-principals-two-identities', async t => {
  const alice = await modernCall('alice', 'me__echo', {})
  t.equal(alice.body.result?.content?.[0]?.text, 'hi alice')
  t.equal(subjectsOfCalls().at(-1), 'alice-upstream', 'alice\'s call carries alice\'s upstream token')
  const bob = await modernCall('bob', 'me__echo', {})
  t.equal(bob.body.result?.content?.[0]?.text, 'hi bob')
  t.equal(subjectsOfCalls().at(-1), 'bob-upstream', 'bob\'s call carries bob\'s')
  const handshakes = upstream.seen.filter(s => s.rpc === 'initialize' || s.rpc === 'server/discover').map(s => s.sub)
  t.ok(handshakes.includes('alice-upstream') && handshakes.includes('bob-upstream'), 'each principal has its own connection, opened with its own token')
  t.notOk(upstream.seen.some(s => s.sub === undefined), 'no request reached the upstream without a caller\'s identity')
})

t.test('identity-upstream/consent/without-url-capability-names-the-url', async t => {
  const reply = await modernCall('carol', 'me__echo', {})
  t.equal(reply.body.error?.code, -32603)
  t.match(reply.body.error?.message, new RegExp(`open ${as.issuer.replace(/[.]/g, '\\.')}/auth\\?\\S+ in a browser`), 'the message names the URL to open')
  const prompt = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: modernHeaders('prompts/get', 'me__greet', { accept: 'application/json', authorization: `Bearer ${TOKENS.carol}` }),
    body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'prompts/get', params: { name: 'me__greet', arguments: { name: 'carol' }, _meta: modernMeta({ elicitation: { url: {} } }) } })
  })
  t.equal(((await prompt.json() as Message).result as Message).resultType, 'input_required', 'a prompt in the namespace starts consent too')
})

t.test('identity-upstream/refresh/after-upstream-401', async t => {
  const refreshes = as.issued('refresh_token')
  upstream.refuseNext(1)
  const reply = await modernCall('alice', 'me__echo', {})
  t.equal(reply.body.result?.content?.[0]?.text, 'hi alice', 'the call succeeds with a refreshed token')
  t.equal(as.issued('refresh_token'), refreshes + 1, 'one refresh grant at the authorization server')
  t.equal(subjectsOfCalls().at(-1), 'alice-upstream')
})

t.test('identity-upstream/revocation/admin-api', async t => {
  const denied = await fetch(`${base}/admin/grants?principal=token:alice`, { method: 'DELETE' })
  t.equal(denied.status, 401, 'an admin credential is needed')
  const listed = await fetch(`${base}/admin/grants`, { headers: { authorization: `Bearer ${ADMIN}` } })
  t.equal(listed.status, 200)
  const grants = (await listed.json() as Message).grants as Message[]
  t.same(grants.map(g => `${g.principal} ${g.upstream}`).sort(), ['token:alice me', 'token:bob me'], 'the grants held, without tokens')
  const revoked = await fetch(`${base}/admin/grants?principal=token:alice&upstream=me`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN}` } })
  t.equal(revoked.status, 200)
  t.same(await revoked.json(), { revoked: [{ principal: 'token:alice', upstream: 'me' }] })
  const again = await modernCall('alice', 'me__echo', { elicitation: { url: {} } })
  t.equal(again.body.result?.resultType, 'input_required', 'alice must consent again')
  const bob = await modernCall('bob', 'me__echo', {})
  t.equal(bob.body.result?.content?.[0]?.text, 'hi bob', 'bob keeps his grant')
})

t.test('identity-upstream/revocation/cli', async t => {
  const run = await mcpx('revoke', 'token:bob', '--upstream', 'me', '--config', daemon.file)
  t.equal(run.code, 0, run.stderr)
  t.equal(run.stdout, 'revoked token:bob me\n')
  const again = await mcpx('revoke', 'token:bob', '--config', daemon.file)
  t.equal(again.code, 1)
  t.match(again.stderr, /token:bob holds no grant/)
  const bob = await modernCall('bob', 'me__echo', { elicitation: { url: {} } })
  t.equal(bob.body.result?.resultType, 'input_required', 'bob must consent again')
})

t.test('identity-upstream/audit/consent-events', async t => {
  const events = auditLines().filter(l => typeof l.event === 'string').map(l => `${l.event} ${l.principal} ${l.upstream}${l.reason !== undefined ? ` ${l.reason}` : ''}`)
  t.ok(events.includes('consent_required token:alice me'))
  t.ok(events.includes('consent_granted token:alice me'))
  t.ok(events.includes('consent_granted token:bob me'))
  t.ok(events.includes('consent_revoked token:alice me operator'))
  t.ok(events.includes('consent_revoked token:bob me operator'))
})

t.test('identity-upstream/stdio/consent-then-retry', async t => {
  const serve = spawnServe(t, {
    config: {
      auth: { tokens: [{ name: 'unused-on-stdio', tokenEnv: 'MCPX_IU_ALICE' }] },
      upstreams: { me: { url: upstream.url, prefix: 'me', auth: { type: 'oauth-user', clientId: CLIENT.id, clientSecretEnv: 'MCPX_IU_CLIENT_SECRET', scopes: ['openid', 'mcp:tools'], redirectUri: stdioRedirectUri } } }
    },
    env: { MCPX_IU_ALICE: TOKENS.alice, MCPX_IU_CLIENT_SECRET: CLIENT.secret }
  })
  const init = await serve.request({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: { url: {} } }, clientInfo: { name: 'iu-stdio', version: '1' } } })
  t.equal(init.result?.protocolVersion, '2025-11-25')
  serve.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
  const first = await serve.request({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'me__echo', arguments: { text: 'hi local' } } })
  t.equal(first.error?.code, -32042, 'over stdio too: URLElicitationRequired')
  const elicitation = first.error?.data?.elicitations?.[0] as Message
  const at = serve.messages.length
  const callback = await consent(elicitation.url as string, 'local-upstream', stdioRedirectUri)
  t.equal(callback.status, 200, 'mcpx serve answered its own loopback callback')
  const complete = await serve.nextMessage(m => m.method === 'notifications/elicitation/complete', { after: at })
  t.same(complete.params, { elicitationId: elicitation.elicitationId })
  const listed = await serve.request({ jsonrpc: '2.0', id: 3, method: 'tools/list' })
  t.ok((listed.result?.tools as Message[]).some(tool => tool.name === 'me__echo'), 'listed for the local caller')
  const retry = await serve.request({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'me__echo', arguments: { text: 'hi local' } } })
  t.equal(retry.result?.content?.[0]?.text, 'hi local', 'the retry succeeds')
  t.equal(subjectsOfCalls().at(-1), 'local-upstream')
  t.ok(serve.messages.every(m => m !== undefined), 'stdout carried MCP frames only')
  for (const secret of [...upstream.bearers, ...redirects.filter(x => x !== ''), CLIENT.secret]) t.notOk(serve.stderr().includes(secret), `no ${secret.slice(0, 6)}… in mcpx serve's log`)
})

t.test('identity-upstream/replicas/grants-shared-through-redis', async t => {
  const keyPrefix = redisTestPrefix(t)
  const config = {
    auth: { tokens: [{ name: 'alice', tokenEnv: 'MCPX_IU_ALICE' }] },
    admin: { tokens: [ADMIN] },
    sessions: { store: 'redis', redis: REDIS_URL, keyPrefix },
    upstreams: { me: { url: upstream.url, prefix: 'me', auth: { type: 'oauth-user', clientId: CLIENT.id, clientSecretEnv: 'MCPX_IU_CLIENT_SECRET', scopes: ['openid', 'offline_access', 'mcp:tools'], redirectUri: replicaRedirectUri } } }
  }
  const env = { MCPX_IU_ALICE: TOKENS.alice, MCPX_IU_CLIENT_SECRET: CLIENT.secret, MCPX_VAULT_KEY: randomBytes(32).toString('base64') }
  const [a, b] = await Promise.all(replicaPorts.map(async port => await startDaemon(t, config, { port, env })))
  const first = await modernCall('alice', 'me__echo', { elicitation: { url: {} } }, {}, b.base)
  const input = first.body.result?.inputRequests?.u1 as Message
  t.equal(input?.params?.mode, 'url', 'replica B asks for consent')
  t.equal((await consent(input.params.url as string, 'alice-replicas', replicaRedirectUri)).status, 200, 'the callback lands on replica A, which finds B\'s flow in Redis')
  const retry = await modernCall('alice', 'me__echo', {}, { requestState: first.body.result.requestState, inputResponses: { u1: { action: 'accept' } } }, b.base)
  t.equal(retry.body.result?.content?.[0]?.text, 'hi alice', 'the retry on B succeeds')
  t.equal(subjectsOfCalls().at(-1), 'alice-replicas')
  const onA = await modernCall('alice', 'me__echo', {}, {}, a.base)
  t.equal(onA.body.result?.content?.[0]?.text, 'hi alice', 'replica A uses the same grant')
  t.equal(subjectsOfCalls().at(-1), 'alice-replicas')
  const redis = new Redis(REDIS_URL)
  t.teardown(() => { redis.disconnect() })
  const stored = Object.values(await redis.hgetall(`${keyPrefix}grants`)).join('\n')
  t.ok(stored.length > 0, 'the grant is in Redis')
  for (const bearer of upstream.bearers) t.notOk(stored.includes(bearer) || stored.includes(Buffer.from(bearer).toString('base64')), 'encrypted at rest: no token in Redis')
  const revoked = await fetch(`${b.base}/admin/grants?principal=token:alice`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN}` } })
  t.equal(revoked.status, 200, 'revoked on replica B')
  const again = await modernCall('alice', 'me__echo', { elicitation: { url: {} } }, {}, a.base)
  t.equal(again.body.result?.resultType, 'input_required', 'replica A asks for consent again')
  for (const secret of [...upstream.bearers, CLIENT.secret]) t.notOk(JSON.stringify([a.lines, b.lines]).includes(secret), 'no token in either replica\'s log')
})

// The official v2 client on 2026-07-28: its URL-mode elicitation handler is where a host opens the
// browser; here it plays the user at the authorization server, and the client's retry succeeds.
t.test('identity-upstream/consent/official-v2-client-url-elicitation-then-retry', async t => {
  const v2 = new ClientV2({ name: 'iu-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: { url: {} } } })
  const asked: string[] = []
  v2.setRequestHandler('elicitation/create', async request => {
    const params = request.params as Message
    asked.push(String(params.mode))
    t.equal((await consent(String(params.url), 'carol-upstream')).status, 200, 'the browser step lands on mcpx\'s callback')
    return { action: 'accept' }
  })
  await v2.connect(new TransportV2(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${TOKENS.carol}` } } }))
  t.teardown(async () => { await v2.close() })
  t.equal(v2.getProtocolEra(), 'modern')
  const result = await v2.callTool({ name: 'me__echo', arguments: { text: 'hi carol' } }) as Message
  t.same(asked, ['url'], 'one URL-mode question, through input_required')
  t.equal(result.content?.[0]?.text, 'hi carol', 'the v2 client\'s retry succeeds')
  t.equal(subjectsOfCalls().at(-1), 'carol-upstream', 'as carol\'s own upstream identity')
})

t.test('identity-upstream/secrets/none-in-logs', async t => {
  const status = await (await fetch(`${base}/status.json`)).text()
  const metrics = await (await fetch(`${base}/metrics`)).text()
  const haystack = [JSON.stringify(daemon.lines), daemon.stderr(), existsSync(auditFile) ? readFileSync(auditFile, 'utf8') : '', status, metrics].join('\n')
  const secrets = [...upstream.bearers, ...redirects.filter(s => s !== ''), CLIENT.secret, ...Object.values(TOKENS)]
  t.ok(upstream.bearers.size >= 3, 'the upstream saw several tokens (two principals, one refreshed)')
  for (const secret of secrets) t.notOk(haystack.includes(secret), `no ${secret.slice(0, 6)}… in the log, audit trail, status page or metrics`)
  t.ok(daemon.lines.length > 0, 'the log was captured')
})
