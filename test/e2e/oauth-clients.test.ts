/**
 * The official SDK clients through mcpx's OAuth front door (the official SDK clients,
 * end to end): each starts with no token, gets 401, reads the Protected Resource Metadata, goes to
 * the authorization server it names (a real oidc-provider), where the test plays the user
 * (authorization code with PKCE, resource indicator), then lists and calls a tool through mcpx.
 */
import t, { type Test } from 'tap'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client'
import { build, fixtureUpstreams } from '../helpers/app.js'
import { freePort } from '../helpers/daemon.js'
import { MemoryOAuthProvider, playUser, startAuthServer } from '../helpers/oauth.js'

/** mcpx on a free port whose resource is its own /mcp; the authorization server in front. */
async function setUp (t: Test, extra: Record<string, unknown> = {}): Promise<{ url: URL, issuer: string }> {
  const as = await startAuthServer(t)
  const port = await freePort()
  const url = new URL(`http://127.0.0.1:${port}/mcp`)
  const app = await build(t, { upstreams: fixtureUpstreams(), auth: { oauth: { issuer: as.issuer, resource: url.href, requiredScopes: ['mcp:tools'], scopesSupported: ['mcp:tools', 'mcp:admin'] } }, ...extra })
  await app.listen({ host: '127.0.0.1', port })
  return { url, issuer: as.issuer }
}

function textOf (result: unknown): string {
  return ((result as { content: Array<{ text: string }> }).content[0]).text
}

t.test('auth/oauth/sdk-v1-client-authorization-code-flow', async t => {
  const { url, issuer } = await setUp(t)
  const provider = new MemoryOAuthProvider()
  const first = new ClientV1({ name: 'oauth-v1', version: '1.0.0' })
  const transport = new TransportV1(url, { authProvider: provider as never })
  await t.rejects(first.connect(transport), { message: 'Unauthorized' }, 'no token: the 401 sends the client to authorize (v1 UnauthorizedError)')
  t.ok(provider.authorizationUrl?.href.startsWith(`${issuer}/auth?`), 'it found the authorization server through the metadata')
  t.equal(provider.authorizationUrl?.searchParams.get('resource'), url.href, 'with the resource indicator (RFC 8707)')
  t.equal(provider.authorizationUrl?.searchParams.get('code_challenge_method'), 'S256', 'and PKCE')
  const { code } = await playUser(provider.authorizationUrl as URL, 'alice')
  await transport.finishAuth(code)
  t.type(provider.savedTokens?.access_token, 'string', 'it holds an access token')
  const client = new ClientV1({ name: 'oauth-v1', version: '1.0.0' })
  await client.connect(new TransportV1(url, { authProvider: provider as never }))
  t.teardown(async () => { await client.close() })
  const { tools } = await client.listTools()
  t.ok(tools.some(tool => tool.name === 'echo'), 'tools listed through mcpx')
  t.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'hello' } })), 'hello', 'a tool called through mcpx')
})

t.test('auth/oauth/sdk-v2-client-authorization-code-flow', async t => {
  const { url, issuer } = await setUp(t)
  const provider = new MemoryOAuthProvider()
  const pinned = { versionNegotiation: { mode: { pin: '2026-07-28' } } } as const
  const first = new ClientV2({ name: 'oauth-v2', version: '1.0.0' }, pinned)
  const transport = new TransportV2(url, { authProvider: provider as never })
  await t.rejects(first.connect(transport), { name: 'UnauthorizedError' }, 'no token: the 401 sends the client to authorize')
  t.ok(provider.authorizationUrl?.href.startsWith(`${issuer}/auth?`), 'it found the authorization server through the metadata')
  t.equal(provider.authorizationUrl?.searchParams.get('resource'), url.href, 'with the resource indicator (RFC 8707)')
  const { params } = await playUser(provider.authorizationUrl as URL, 'bob')
  t.equal(params.get('iss'), issuer, 'the authorization response names its issuer (RFC 9207)')
  await transport.finishAuth(params)
  t.type(provider.savedTokens?.access_token, 'string', 'it holds an access token')
  const client = new ClientV2({ name: 'oauth-v2', version: '1.0.0' }, pinned)
  await client.connect(new TransportV2(url, { authProvider: provider as never }))
  t.teardown(async () => { await client.close() })
  const { tools } = await client.listTools()
  t.ok(tools.some(tool => tool.name === 'echo'), 'tools listed through mcpx (2026-07-28)')
  t.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'hello' } })), 'hello', 'a tool called through mcpx')
})

// A curated endpoint behind the same OAuth front door is a protected resource of its own: its 401
// names its own Protected Resource Metadata, whose resource is the endpoint's URL (RFC 9728 §3.3),
// so the client asks for a token for /mcp/<name> (RFC 8707) and mcpx accepts it there. The
// endpoint's view (one tool, renamed) shows the calls went there.
t.test('servers/oauth/sdk-v1-client-on-a-curated-endpoint', async t => {
  const { url, issuer } = await setUp(t, { servers: { support: { tools: { allow: ['echo'] }, rename: { echo: 'say' } } } })
  const endpoint = new URL(`${url.href}/support`)
  const provider = new MemoryOAuthProvider()
  const first = new ClientV1({ name: 'oauth-v1-curated', version: '1.0.0' })
  const transport = new TransportV1(endpoint, { authProvider: provider as never })
  await t.rejects(first.connect(transport), { message: 'Unauthorized' }, 'no token: the 401 sends the client to authorize')
  t.ok(provider.authorizationUrl?.href.startsWith(`${issuer}/auth?`), 'it found the authorization server through the metadata')
  t.equal(provider.authorizationUrl?.searchParams.get('resource'), endpoint.href, 'the resource indicator is the endpoint\'s metadata\'s resource, /mcp/support')
  const { code } = await playUser(provider.authorizationUrl as URL, 'carol')
  await transport.finishAuth(code)
  const client = new ClientV1({ name: 'oauth-v1-curated', version: '1.0.0' })
  await client.connect(new TransportV1(endpoint, { authProvider: provider as never }))
  t.teardown(async () => { await client.close() })
  const { tools } = await client.listTools()
  t.same(tools.map(tool => tool.name), ['say'], 'the endpoint\'s view: one tool, renamed')
  t.equal(textOf(await client.callTool({ name: 'say', arguments: { text: 'hello' } })), 'hello', 'called through the curated endpoint')
})
