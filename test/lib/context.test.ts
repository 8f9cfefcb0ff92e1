/**
 * Unit tests of the dispatch context (lib/connection/peer.ts contextFor, lib/dispatch/context.ts): what a
 * face hands the dispatcher with a request, and what the dispatcher makes of it. No Fastify, no upstream.
 */
import t from 'tap'
import { pino } from 'pino'
import { createCore } from '../../lib/core.js'
import { loadConfig } from '../../lib/config/load.js'
import { createRegistry } from '../../lib/upstreams/registry.js'
import { Policy } from '../../lib/policy/rules.js'
import { contextFor } from '../../lib/connection/peer.js'
import { Cancellation } from '../../lib/base/cancel.js'
import { FIRST_MODERN_REVISION } from '../../lib/protocol/revisions.js'
import { META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION } from '../../lib/protocol/inbound.js'
import type { JsonRpcRequest } from '../../lib/protocol/jsonrpc.js'
import type { Visibility } from '../../lib/policy/visibility.js'

t.test('ops/reload/running-request-keeps-its-view', async t => {
  // docs/operating.md › Reloading the config: requests already running finish under the old rules. A
  // 2026-07-28 tools/call has its view worked out by the Mcp-Param-* check (plugins/modern-headers),
  // before it is dispatched; a reload in between must not serve it in a second, newer view.
  const logger = pino({ level: 'silent' })
  const registry = createRegistry({}, { logger, defaultTimeoutMs: 1000 })
  t.teardown(async () => { await registry.close() })
  const core = createCore(loadConfig({}), registry, logger)
  t.teardown(async () => { await core.close() })
  const dispatcher = core.dispatcher
  const meta = { [META_PROTOCOL_VERSION]: '2026-07-28', [META_CLIENT_CAPABILITIES]: {} }
  const request: JsonRpcRequest = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta } }
  const contextIn = (view: Visibility | undefined): ReturnType<typeof contextFor> =>
    contextFor('modern', meta, undefined, FIRST_MODERN_REVISION, new Cancellation().signal, undefined, view === undefined ? {} : { view })
  const before = dispatcher.viewOf({}) // no policy yet: the whole catalogue, the same for everyone
  // The reload: a policy now applies, so a caller's cacheable results are `private` (server/utilities/caching.mdx).
  dispatcher.setAccess(new Policy({ default: 'allow', rules: [] }), undefined)
  const kept = await dispatcher.handle(request, contextIn(before))
  t.match(kept, { id: 1, result: { tools: [], cacheScope: 'public' } }, 'served in the view it started with')
  const fresh = await dispatcher.handle(request, contextIn(undefined))
  t.match(fresh, { id: 1, result: { tools: [], cacheScope: 'private' } }, 'a request without a view gets the one the reload made')
})

t.test('all/dispatch/context-for-both-eras', async t => {
  const signal = new Cancellation().signal
  const notify = (): void => {}
  const ask = async (): Promise<Record<string, never>> => ({})
  const subscriptions = new Set<string>()
  const source = { principal: 'k', caller: { kind: 'local' }, endpoint: 'support', sessionId: 's1', subscriptions, ask }
  const capabilities = { sampling: {} }
  const modern = contextFor('modern', { [META_PROTOCOL_VERSION]: '2026-07-28', [META_CLIENT_CAPABILITIES]: capabilities }, undefined, FIRST_MODERN_REVISION, signal, notify, source)
  t.equal(modern.revision, '2026-07-28', 'modern: the revision its _meta names')
  t.equal(modern.clientCapabilities, capabilities, 'modern: the capabilities its _meta declares')
  t.notOk('ask' in modern, 'modern: no server→client requests (DIGEST §6b)')
  t.notOk('subscriptions' in modern, 'modern: no subscriptions (resources/subscribe is legacy only)')
  t.match(modern, { era: 'modern', principal: 'k', endpoint: 'support', sessionId: 's1', notify })
  const legacy = contextFor('legacy', null, { revision: '2025-06-18', clientCapabilities: capabilities }, '2024-11-05', signal, undefined, source)
  t.equal(legacy.revision, '2025-06-18', 'legacy: the negotiated revision')
  t.equal(legacy.clientCapabilities, capabilities, 'legacy: the capabilities declared at initialize')
  t.equal(legacy.ask, ask)
  t.equal(legacy.subscriptions, subscriptions)
  t.notOk('notify' in legacy, 'no notify when there is nowhere to send')
  const before = contextFor('legacy', undefined, undefined, '2024-11-05', signal, undefined, {})
  t.equal(before.revision, '2024-11-05', 'before initialize: the fallback revision')
  t.strictSame(Object.keys(before), ['era', 'revision', 'clientCapabilities', 'signal', 'meta'], 'only the fields that are set')
})
