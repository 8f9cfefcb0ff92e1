/**
 * Unit tests of the OAuth config and metadata helpers: RFC 9728 §3.1 URL derivation,
 * discovery order, issuer and resource rules, config defaults. No network, no Fastify.
 */
import t from 'tap'
import { loadConfig } from '../../lib/config/load.js'
import { endpointMetadataPaths, endpointResource, issuerMetadataUrls, protectedResourceMetadata, protectedResourceMetadataPaths, protectedResourceMetadataUrl } from '../../lib/auth/oauth-metadata.js'
import { oauthPrincipal, scopesOf, tokenPrincipal, LOCAL_PRINCIPAL } from '../../lib/auth/principal.js'

t.test('auth/oauth/prm-url-derived-from-resource', async t => {
  t.equal(protectedResourceMetadataUrl('https://mcp.example.com/mcp'), 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp')
  t.equal(protectedResourceMetadataUrl('https://mcp.example.com/'), 'https://mcp.example.com/.well-known/oauth-protected-resource')
  t.equal(protectedResourceMetadataUrl('https://mcp.example.com'), 'https://mcp.example.com/.well-known/oauth-protected-resource')
  t.equal(protectedResourceMetadataUrl('https://mcp.example.com:8443/team/tools/mcp?x=1'), 'https://mcp.example.com:8443/.well-known/oauth-protected-resource/team/tools/mcp?x=1')
  t.same(protectedResourceMetadataPaths('/mcp', 'https://mcp.example.com/mcp'), ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp'])
  t.same(protectedResourceMetadataPaths('/tools/mcp', 'https://mcp.example.com/mcp'), ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/tools/mcp', '/.well-known/oauth-protected-resource/mcp'])
  t.same(protectedResourceMetadata({ resource: 'https://r/mcp', issuer: 'https://as', scopesSupported: [] }), { resource: 'https://r/mcp', authorization_servers: ['https://as'], bearer_methods_supported: ['header'] })
})

t.test('servers/oauth/endpoint-resource-and-its-metadata-path', async t => {
  // A curated endpoint's resource is /mcp's URL + /<name> (query kept); its metadata is served under
  // one of endpointMetadataPaths + /<name>, so that the URL RFC 9728 §3.1 derives from it answers.
  const cases: Array<[string, string, string]> = [
    // [mount path, resource, the endpoint's resource]
    ['/mcp', 'https://mcp.example.com/mcp', 'https://mcp.example.com/mcp/support'],
    ['/mcp', 'https://mcp.example.com/mcp/', 'https://mcp.example.com/mcp/support'],
    ['/tools/mcp', 'https://mcp.example.com/tools/mcp', 'https://mcp.example.com/tools/mcp/support'],
    ['/mcp', 'https://mcp.example.com:8443/team/mcp?x=1', 'https://mcp.example.com:8443/team/mcp/support?x=1'],
    ['/mcp', 'https://mcp.example.com/', 'https://mcp.example.com/support'],
    ['/mcp', 'https://mcp.example.com', 'https://mcp.example.com/support']
  ]
  for (const [mountPath, resource, expected] of cases) {
    t.equal(endpointResource(resource, 'support'), expected, resource)
    const derived = new URL(protectedResourceMetadataUrl(expected)).pathname
    t.ok(endpointMetadataPaths(mountPath, resource).some(path => `${path}/support` === derived), `${resource}: ${derived} is served`)
  }
  t.same(endpointMetadataPaths('/mcp', 'https://mcp.example.com/mcp'), ['/.well-known/oauth-protected-resource/mcp'], 'one path when the resource is the mount path')
  t.same(endpointMetadataPaths('/tools/mcp', 'https://mcp.example.com/mcp'), ['/.well-known/oauth-protected-resource/tools/mcp', '/.well-known/oauth-protected-resource/mcp'], 'a reverse proxy\'s path too')
})

t.test('auth/oauth/discovery-order', async t => {
  t.same(issuerMetadataUrls('https://login.example.com'), ['https://login.example.com/.well-known/oauth-authorization-server', 'https://login.example.com/.well-known/openid-configuration'])
  t.same(issuerMetadataUrls('https://login.example.com/realms/acme'), [
    'https://login.example.com/.well-known/oauth-authorization-server/realms/acme',
    'https://login.example.com/.well-known/openid-configuration/realms/acme',
    'https://login.example.com/realms/acme/.well-known/openid-configuration'
  ])
})

t.test('auth/oauth/config', async t => {
  const oauth = { issuer: 'https://login.example.com/realms/acme', resource: 'https://mcp.example.com/mcp' }
  const config = loadConfig({ auth: { oauth } })
  t.same(config.auth.oauth, { ...oauth, audience: [oauth.resource], requiredScopes: [], clockTolerance: 30_000, jwksCooldown: 30_000, resourceName: 'mcpx' }, 'defaults: audience = [resource], 30 s, 30 s')
  t.equal(loadConfig({ auth: { oauth: { ...oauth, clockTolerance: '5s', audience: ['a', 'b'] } } }).auth.oauth?.clockTolerance, 5000)
  t.doesNotThrow(() => loadConfig({ auth: { oauth: { ...oauth, issuer: 'http://127.0.0.1:8080' } } }), 'http on loopback')
  t.doesNotThrow(() => loadConfig({ auth: { oauth: { ...oauth, issuer: 'http://localhost:8080/realms/x' } } }))
  t.throws(() => loadConfig({ auth: { oauth: { ...oauth, issuer: 'http://login.example.com' } } }), { code: 'MCPX_ERR_CONFIG', message: /auth\.oauth\.issuer: must be https/ })
  t.throws(() => loadConfig({ auth: { oauth: { ...oauth, issuer: 'https://login.example.com#x' } } }), { code: 'MCPX_ERR_CONFIG', message: /auth\.oauth\.issuer/ })
  t.throws(() => loadConfig({ auth: { oauth: { ...oauth, resource: 'https://mcp.example.com/mcp#frag' } } }), { code: 'MCPX_ERR_CONFIG', message: /auth\.oauth\.resource: must have no fragment/ })
  t.throws(() => loadConfig({ auth: { oauth: { issuer: oauth.issuer } } }), { code: 'MCPX_ERR_CONFIG', message: /resource/ }, 'resource is required')
  t.throws(() => loadConfig({ auth: { oauth: { resource: oauth.resource } } }), { code: 'MCPX_ERR_CONFIG', message: /issuer/ }, 'issuer is required')
  t.throws(() => loadConfig({ auth: { oauth: { ...oauth, jwks: 'x' } } }), { code: 'MCPX_ERR_CONFIG', message: /jwks/ }, 'a typo fails')
  t.throws(() => loadConfig({ auth: { tokens: [{ name: 'ci' }] } }), { code: 'MCPX_ERR_CONFIG' }, 'a named token needs tokenEnv or tokenFile')
  t.same(loadConfig({ auth: { tokens: [{ name: 'ci', tokenEnv: 'X' }] } }).auth.tokens, [{ name: 'ci', tokenEnv: 'X', scopes: [] }])
})

t.test('auth/principal/keys', async t => {
  const a = oauthPrincipal({ iss: 'https://as', sub: 'alice', azp: 'app', scope: 'a b' }, ['a', 'b'])
  const a2 = oauthPrincipal({ iss: 'https://as', sub: 'alice', client_id: 'other', jti: 'x' }, [])
  t.equal(a.id, 'oauth:https://as#alice')
  t.equal(a.key, a2.key, 'the key is issuer + subject: the same across tokens')
  t.equal(a.clientId, 'app')
  t.match(a.key, /^[0-9a-f]{32}$/)
  t.not(oauthPrincipal({ iss: 'https://as', sub: 'bob' }, []).key, a.key)
  t.not(oauthPrincipal({ iss: 'https://other', sub: 'alice' }, []).key, a.key, 'another issuer is another principal')
  t.equal(tokenPrincipal('ci').id, 'token:ci')
  t.not(tokenPrincipal('ci').key, LOCAL_PRINCIPAL.key)
  t.same(scopesOf({ scope: 'a  b' }), ['a', 'b'])
  t.same(scopesOf({ scp: ['a', 'b'] }), ['a', 'b'])
  t.same(scopesOf({}), [])
})
