/**
 * `oauth-user` upstreams, the pure parts (docs/upstreams.md › Upstream identity): the config rules
 * at load, the grant vault (AES-256-GCM bound to each record's key, bounded), and the callback's state
 * (taken once). No sockets.
 * Tests are named identity-upstream/<area>/<requirement>.
 */
import t from 'tap'
import { randomBytes } from 'node:crypto'
import { loadConfig } from '../../lib/config/load.js'
import { GrantVault, RedisGrantVault, UserGrants, callbackBeside, consentPage, createGrantStore, vaultKeyFrom } from '../../lib/upstreams/user-grants.js'

const AUTH = { type: 'oauth-user', clientId: 'mcpx' }
const TOKENS = { tokens: [{ name: 'ci', tokenEnv: 'MCPX_CI' }] }

t.test('identity-upstream/config/needs-a-user-at-the-front-door', async t => {
  t.throws(() => loadConfig({ upstreams: { me: { url: 'https://me.example/mcp', prefix: 'me', auth: { ...AUTH, redirectUri: 'https://mcp.example/oauth/callback' } } } }),
    { code: 'MCPX_ERR_CONFIG', message: /upstreams\.me\.auth: type "oauth-user" needs auth\.oauth or auth\.tokens/ })
  const withTokens = loadConfig({ auth: TOKENS, upstreams: { me: { url: 'https://me.example/mcp', prefix: 'me', auth: { ...AUTH, redirectUri: 'https://mcp.example/oauth/callback' } } } })
  t.equal(withTokens.upstreams.me.isolation, 'per-principal', 'accepted with auth.tokens; isolation set to per-principal')
  const withOAuth = loadConfig({ auth: { oauth: { issuer: 'https://login.example', resource: 'https://mcp.example/mcp' } }, upstreams: { me: { url: 'https://me.example/mcp', prefix: 'me', auth: AUTH } } })
  t.equal(withOAuth.upstreams.me.isolation, 'per-principal', 'accepted with auth.oauth, whose resource gives the callback URL')
  t.throws(() => loadConfig({ auth: TOKENS, upstreams: { me: { url: 'https://me.example/mcp', prefix: 'me', auth: AUTH } } }),
    { message: /upstreams\.me\.auth\.redirectUri: required without auth\.oauth\.resource/ })
  t.throws(() => loadConfig({ auth: TOKENS, upstreams: { me: { command: 'node', prefix: 'me', auth: AUTH } } }), { code: 'MCPX_ERR_CONFIG' }, 'a stdio upstream takes no auth')
  t.throws(() => loadConfig({ auth: TOKENS, upstreams: { me: { url: 'https://me.example/mcp', prefix: 'me', auth: { ...AUTH, redirectUri: 'https://x/cb', scopes: ['a b'] } } } }), { code: 'MCPX_ERR_CONFIG' }, 'a scope with a space is refused')
})

t.test('identity-upstream/config/prefix-and-isolation', async t => {
  const auth = { ...AUTH, redirectUri: 'https://mcp.example/oauth/callback' }
  t.throws(() => loadConfig({ auth: TOKENS, upstreams: { me: { url: 'https://me.example/mcp', auth } } }), { message: /upstreams\.me\.prefix: required for an "oauth-user" upstream/ })
  t.throws(() => loadConfig({ auth: TOKENS, upstreams: { me: { url: 'https://me.example/mcp', prefix: 'me', isolation: 'shared', auth } } }), { message: /upstreams\.me\.isolation: an "oauth-user" upstream is "per-principal"/ })
  t.equal(loadConfig({ auth: TOKENS, upstreams: { me: { url: 'https://me.example/mcp', prefix: 'me', isolation: 'per-principal', auth } } }).upstreams.me.isolation, 'per-principal')
  t.equal(callbackBeside('https://mcp.example/mcp'), 'https://mcp.example/oauth/callback')
  t.equal(callbackBeside('https://host.example/tools/mcp'), 'https://host.example/tools/oauth/callback', 'under a plugin prefix')
})

t.test('identity-upstream/vault/aes-gcm-bound-to-its-key', async t => {
  const vault = new GrantVault(randomBytes(32), 2)
  const record = { access: 'access-token-secret-0123', refresh: 'refresh-token-secret-0123', principalId: 'token:alice' }
  t.ok(await vault.set('alice', 'me', record))
  t.same(await vault.get('alice', 'me'), record, 'decrypts to what was stored')
  const raw = (vault as unknown as { records: Map<string, Buffer> }).records
  const sealed = raw.get('alice\0me') as Buffer
  t.notOk(sealed.toString('latin1').includes('access-token-secret'), 'the access token is not stored in clear')
  t.notOk(sealed.toString('latin1').includes('refresh-token-secret'), 'nor the refresh token')
  raw.set('bob\0me', sealed)
  t.equal(await vault.get('bob', 'me'), undefined, 'a record moved under another principal does not decrypt (additional data)')
  raw.delete('bob\0me')
  const tampered = Buffer.from(sealed)
  tampered[tampered.length - 1] ^= 1
  raw.set('alice\0me', tampered)
  t.equal(await vault.get('alice', 'me'), undefined, 'a tampered record does not decrypt (GCM tag)')
  t.ok(await vault.set('alice', 'me', record), 'overwriting a held grant is always possible')
  t.ok(await vault.set('bob', 'me', record))
  t.notOk(await vault.set('carol', 'me', record), 'past maxGrants a new grant is refused, none evicted')
  t.same((await vault.keys()).map(k => k.principalKey).sort(), ['alice', 'bob'])
  t.ok(await vault.delete('alice', 'me'))
  t.equal(await vault.get('alice', 'me'), undefined)
  t.throws(() => vaultKeyFrom({ MCPX_VAULT_KEY: 'c2hvcnQ=' }), { code: 'MCPX_ERR_CONFIG', message: /MCPX_VAULT_KEY must be 32 bytes/ })
  t.equal(vaultKeyFrom({ MCPX_VAULT_KEY: randomBytes(32).toString('base64') }).length, 32)
  t.equal(vaultKeyFrom({}).length, 32, 'without one, a random key')
})

t.test('identity-upstream/config/redis-needs-a-vault-key', async t => {
  const sessions = { store: 'redis' as const, redis: 'redis://127.0.0.1:1', keyPrefix: 'mcpx-test-unused:' }
  t.throws(() => createGrantStore(sessions, {}), { code: 'MCPX_ERR_CONFIG', message: /MCPX_VAULT_KEY/ })
  const store = createGrantStore(sessions, { MCPX_VAULT_KEY: randomBytes(32).toString('base64') })
  t.ok(store instanceof RedisGrantVault, 'with a key: the Redis store (not connected until used)')
  await store.close()
  t.ok(createGrantStore({ ...sessions, store: 'memory' }, {}) instanceof GrantVault, 'memory sessions: the in-memory vault, key or not')
})

// The callback takes its flow by state once (lib/upstreams/user-grants.ts › UserGrants.callback): a
// second redirect with the same state finds nothing, whatever the first one's outcome. The first here
// carries the authorization server's `error` (a refusal needs no code exchange, so no socket); the
// whole consent, then the same redirect again, runs in test/e2e/identity-upstream.test.ts.
t.test('identity-upstream/consent/state-single-use', async t => {
  const config = loadConfig({ auth: TOKENS, upstreams: { me: { url: 'https://me.example/mcp', prefix: 'me', auth: { ...AUTH, redirectUri: 'https://mcp.example/oauth/callback' } } } })
  const store = new GrantVault(randomBytes(32))
  const grants = new UserGrants(config.upstreams, { logger: { info: () => {}, warn: () => {} }, store })
  t.teardown(() => store.close())
  const flow = { principalKey: 'alice', principalId: 'token:alice', upstream: 'me', verifier: 'v'.repeat(43), expiresAtMs: Date.now() + 60_000, elicitationId: 'mcpx-consent-x' }
  const state = randomBytes(32).toString('base64url')
  await store.putFlow(state, flow, 60_000)
  const first = await grants.callback({ state, error: 'access_denied' })
  t.match(first, { ok: false, status: 400, message: /refused: access_denied/ }, 'the first redirect reaches its flow')
  const again = await grants.callback({ state, error: 'access_denied' })
  t.match(again, { ok: false, status: 400, message: /unknown, already used or expired/ }, 'the same redirect again finds none')
  t.equal(consentPage(again).status, 400, 'the callback page answers 400')
  t.match(await grants.callback({ state, code: 'a-code' }), { ok: false, status: 400, message: /unknown, already used or expired/ }, 'nor with a code: nothing is exchanged')
  t.match(await grants.callback({ state: randomBytes(32).toString('base64url'), code: 'a-code' }), { ok: false, status: 400, message: /unknown, already used or expired/ }, 'a state mcpx never issued')
})
