/**
 * lib/policy/confirm alone (docs/policy.md › Confirmation): the config of `confirm` and
 * `confirmation`, which tools a view selects (globs on catalogue or exposed names, destructiveHint
 * after overrides), the question's arguments (redacted, cut), the arguments' hash, and the ledger of
 * spent approvals in memory (bounded) and in the shared Redis (single use across replicas).
 */
import t from 'tap'
import { loadConfig } from '../../lib/config/load.js'
import { McpxError } from '../../lib/base/errors.js'
import { Policy } from '../../lib/policy/rules.js'
import { CuratedServer } from '../../lib/policy/endpoints.js'
import { Visibility } from '../../lib/policy/visibility.js'
import { ConfirmSelection, MemoryLedger, RedisLedger, argumentsHash, argumentsShown, compileRedact } from '../../lib/policy/confirm.js'
import { tokenPrincipal } from '../../lib/auth/principal.js'
import { captureLogger } from '../helpers/registry.js'
import { REDIS_URL, redisTestPrefix } from '../helpers/redis.js'
import type { UpstreamRegistry } from '../../lib/upstreams/contract.js'
import type { JsonObject } from '../../lib/protocol/jsonrpc.js'

function configError (fn: () => unknown): string {
  try { fn() } catch (err) { if (err instanceof McpxError) return err.message; throw err }
  return ''
}

t.test('confirm/config/confirm-and-confirmation-checked-at-load', async t => {
  const config = loadConfig({})
  t.same(config.confirmation.expiry, 120_000, 'default expiry: 2 minutes, in ms')
  t.equal(config.confirmation.maxArgumentChars, 1000)
  t.ok(config.confirmation.redact.includes('*password*'), 'secrets are redacted by default')
  t.equal(loadConfig({ confirmation: { expiry: '5s' } }).confirmation.expiry, 5000)
  t.match(configError(() => loadConfig({ confirmation: { expiry: 0 } })), /confirmation\.expiry: must be more than 0 ms/)
  t.match(configError(() => loadConfig({ confirmation: { expiry: 'soon' } })), /confirmation\.expiry/)
  t.match(configError(() => loadConfig({ confirmation: { maxArgumentChars: 3 } })), /confirmation\/maxArgumentChars|confirmation\.maxArgumentChars/)
  t.match(configError(() => loadConfig({ policy: { rules: [{ confirm: 'crm__*' }] } })), /policy.*rules.*0.*confirm/)
  t.match(configError(() => loadConfig({ policy: { rules: [{ confirm: { destructiv: true } }] } })), /confirm/)
  t.match(configError(() => loadConfig({ servers: { s: { confirm: [''] } } })), /servers.*confirm/)
  const ok = loadConfig({ policy: { rules: [{ confirm: ['crm__delete_*'] }, { confirm: { destructive: true } }] }, servers: { s: { confirm: { tools: ['a'], destructive: false } } } })
  t.same(ok.policy?.rules[0].confirm, ['crm__delete_*'])
})

/** A registry that knows only these tools (for findTool: the view applies the endpoint's override). */
function catalogue (tools: JsonObject[]): UpstreamRegistry {
  return { findTool: (name: string) => tools.find(tool => tool.name === name), resourceTemplates: () => [] } as unknown as UpstreamRegistry
}

t.test('confirm/select/globs-and-destructive-hint', async t => {
  const registry = catalogue([
    { name: 'crm__delete_contact', inputSchema: { type: 'object' } },
    { name: 'crm__lookup', inputSchema: { type: 'object' }, annotations: { destructiveHint: true } },
    { name: 'kb__search', inputSchema: { type: 'object' } }
  ])
  const agent = tokenPrincipal('agent', [])
  const policy = new Policy({ default: 'allow', rules: [{ principals: { tokens: ['agent'] }, confirm: ['crm__delete_*'] }] })
  const view = new Visibility(policy.viewOf(agent), undefined, registry)
  t.ok(view.needsConfirmation('crm__delete_contact', 'crm__delete_contact', registry), 'a glob of the rule')
  t.notOk(view.needsConfirmation('kb__search', 'kb__search', registry))
  t.notOk(new Visibility(policy.viewOf(undefined), undefined, registry).needsConfirmation('crm__delete_contact', 'crm__delete_contact', registry), 'only for the callers the rule applies to')
  const server = new CuratedServer('support', {
    tools: { allow: ['*'] },
    rename: { crm__delete_contact: 'remove' },
    override: { crm__lookup: { annotations: { readOnlyHint: true } }, kb__search: { annotations: { destructiveHint: true } } },
    confirm: { destructive: true }
  })
  const curated = new Visibility(undefined, server, registry)
  t.ok(curated.needsConfirmation('kb__search', 'kb__search', registry), 'destructive after the endpoint\'s override')
  t.notOk(curated.needsConfirmation('crm__lookup', 'crm__lookup', registry), 'an override that drops destructiveHint drops the gate')
  const renamedByGlob = new Visibility(policy.viewOf(agent), server, registry)
  t.ok(renamedByGlob.needsConfirmation('remove', 'crm__delete_contact', registry), 'a rename does not take a tool out of the gate')
  t.ok(new ConfirmSelection(/^(?:remove)$/, false).selects('crm__delete_contact', 'remove', undefined), 'a glob may name the exposed name')
  t.notOk(Visibility.ALL.needsConfirmation('anything', 'anything', registry), 'no confirm anywhere: nothing gated')
  t.equal(ConfirmSelection.union([undefined, []]), ConfirmSelection.NONE)
})

t.test('confirm/select/arguments-shown-redacted-and-cut', async t => {
  const redact = compileRedact(['*password*', '*token*'])
  const shown = argumentsShown({ user: 'ada', Password: 'p', list: [{ accessToken: 't', keep: 1 }] }, redact, 1000)
  t.same(JSON.parse(shown), { user: 'ada', Password: '[redacted]', list: [{ accessToken: '[redacted]', keep: 1 }] }, 'case-insensitive, at any depth, inside arrays')
  const long = argumentsShown({ text: 'x'.repeat(100) }, redact, 20)
  t.equal(long, `${'{"text":"xxxxxxxxxxx'}… (${111 - 20} more characters not shown)`)
  t.equal(argumentsShown(undefined, null, 100), '{}')
})

t.test('confirm/select/arguments-hash-is-canonical', async t => {
  t.equal(argumentsHash({ a: 1, b: [1, 2] }), argumentsHash({ b: [1, 2], a: 1 }), 'key order does not matter (RFC 8785)')
  t.not(argumentsHash({ a: 1 }), argumentsHash({ a: 2 }))
  t.equal(argumentsHash(undefined), argumentsHash({}))
  t.not(argumentsHash({ a: 1 }, '\ncrm__delete'), argumentsHash({ a: 1 }, 'support\ncrm__delete'), 'bound to the endpoint and the catalogue name too')
})

t.test('confirm/ledger/memory-single-use-and-bounded', async t => {
  const ledger = new MemoryLedger(2)
  const now = 1_000_000
  t.equal(ledger.spend('a', now + 100, now), 'fresh')
  t.equal(ledger.spend('a', now + 100, now + 50), 'used', 'the same approval again')
  t.equal(ledger.spend('b', now + 100, now), 'fresh')
  t.equal(ledger.spend('c', now + 100, now + 50), 'full', 'full of unexpired approvals: refused, none forgotten')
  t.equal(ledger.spend('a', now + 100, now + 50), 'used', 'a is still remembered')
  t.equal(ledger.spend('c', now + 300, now + 200), 'fresh', 'expired entries make room')
  t.equal(ledger.size, 1)
})

t.test('confirm/ledger/redis-single-use-across-replicas', async t => {
  const prefix = redisTestPrefix(t)
  const { logger } = captureLogger()
  const one = new RedisLedger(REDIS_URL, prefix, logger)
  const two = new RedisLedger(REDIS_URL, prefix, logger)
  t.teardown(async () => { await Promise.all([one.close(), two.close()]) })
  const expires = Date.now() + 10_000
  t.equal(await one.spend('nonce-1', expires), 'fresh')
  t.equal(await two.spend('nonce-1', expires), 'used', 'spent on one replica, a replay on another is refused')
  t.equal(await two.spend('nonce-2', expires), 'fresh')
  const down = new RedisLedger('redis://127.0.0.1:1', prefix, logger)
  t.teardown(async () => { await down.close() })
  t.equal(await down.spend('nonce-3', expires), 'unavailable', 'Redis unreachable: refused (fail closed)')
})
