/**
 * `auth.type: "id-jag"` (docs/authentication.md › Enterprise-managed authorization (ID-JAG)) without the network:
 * the config refusals at load and at build, and the caller without an OAuth token. The two grants
 * themselves run against real servers in test/e2e/id-jag.test.ts.
 */
import t from 'tap'
import { loadConfig } from '../../lib/config/load.js'
import { createIdJagProvider } from '../../lib/upstreams/id-jag.js'
import { createUpstreamAuthProvider } from '../../lib/upstreams/credentials.js'
import { captureLogger } from '../helpers/registry.js'

const ENV = { IDP_SECRET: 'idp-secret-0123456789', AS_SECRET: 'as-secret-0123456789' }
const AUTH = {
  type: 'id-jag' as const,
  idp: { issuer: 'https://idp.example.com', clientId: 'mcpx-at-idp', clientSecretEnv: 'IDP_SECRET' },
  issuer: 'https://as.example.com',
  clientId: 'mcpx-at-as',
  clientSecretEnv: 'AS_SECRET',
  scope: 'crm:read'
}
const OAUTH = { oauth: { issuer: 'https://idp.example.com', resource: 'https://mcpx.example.com/mcp' } }

t.test('identity-upstream/id-jag/config-needs-front-door-oauth', async t => {
  t.throws(() => loadConfig({ upstreams: { crm: { url: 'https://crm.example.com/mcp', auth: AUTH } } }),
    { code: 'MCPX_ERR_CONFIG', message: /upstreams\.crm\.auth: type "id-jag" needs auth\.oauth/ }, 'no front-door OAuth: nothing to exchange, refused at load')
  const loaded = loadConfig({ upstreams: { crm: { url: 'https://crm.example.com/mcp', auth: AUTH } }, auth: OAUTH })
  t.match(loaded.upstreams.crm, { auth: { type: 'id-jag', idp: { clientId: 'mcpx-at-idp' } } }, 'with auth.oauth it loads')
  t.throws(() => loadConfig({ upstreams: { crm: { url: 'https://crm.example.com/mcp', auth: { ...AUTH, idp: undefined } } }, auth: OAUTH }), { code: 'MCPX_ERR_CONFIG' }, 'idp is required')
  t.throws(() => loadConfig({ upstreams: { crm: { url: 'https://crm.example.com/mcp', auth: { ...AUTH, idp: { ...AUTH.idp, clientSecret: 'inline' } } } }, auth: OAUTH }), { code: 'MCPX_ERR_CONFIG' }, 'no inline secret')
})

t.test('identity-upstream/id-jag/config-errors-at-build', async t => {
  const { logger } = captureLogger()
  t.throws(() => createIdJagProvider('crm', 'https://crm.example.com/mcp', { ...AUTH, issuer: undefined, tokenUrl: 'https://as.example.com/token' }, logger, ENV, createUpstreamAuthProvider),
    { code: 'MCPX_ERR_CONFIG', message: /upstreams\.crm\.auth\.audience: needed when the authorization server is given by tokenUrl/ }, 'no audience to name in the exchange')
  t.throws(() => createIdJagProvider('crm', 'https://crm.example.com/mcp', { ...AUTH, idp: { clientId: 'x', clientSecretEnv: 'IDP_SECRET' } }, logger, ENV, createUpstreamAuthProvider),
    { code: 'MCPX_ERR_CONFIG', message: /upstreams\.crm\.auth\.idp needs issuer or tokenUrl/ })
  t.throws(() => createIdJagProvider('crm', 'https://crm.example.com/mcp', AUTH, logger, { AS_SECRET: ENV.AS_SECRET }, createUpstreamAuthProvider),
    { code: 'MCPX_ERR_CONFIG', message: /upstreams\.crm\.auth\.idp names environment variable IDP_SECRET/ }, 'the IdP secret is read at build')
})

t.test('identity-upstream/id-jag/caller-without-oauth-token', async t => {
  const { logger } = captureLogger()
  const provider = createIdJagProvider('crm', 'https://crm.example.com/mcp', AUTH, logger, ENV, createUpstreamAuthProvider)
  await t.rejects(provider.token({ principal: undefined, afterUnauthorized: false }), { message: /upstream crm needs the caller's OAuth access token \(enterprise-managed authorization, ID-JAG\), and this caller \(anonymous\) has none/ })
  await t.rejects(provider.token({ principal: { kind: 'token', id: 'token:ci', key: 'k', scopes: [], name: 'ci' } as never, afterUnauthorized: false }), { message: /this caller \(token:ci\) has none/ }, 'a static token is not an identity assertion')
})
