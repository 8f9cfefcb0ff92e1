/**
 * Progress and the timeout: `upstreams.X.resetTimeoutOnProgress` restarts
 * a call's timeout when the upstream sends progress, `maxTotalTimeout` bounds the whole call, and
 * a call that runs out of either is cancelled upstream (`notifications/cancelled`, seen by the
 * fixture). Real fixture children; the bounds leave a wide margin over the progress interval
 * (500 ms between progress, 2.5 s timeout), so load cannot flip a result.
 */
import t from 'tap'
import { UPSTREAM_ERROR, type JsonObject } from '../../lib/protocol/jsonrpc.js'
import { fixtureCommand } from '../helpers/fixture.js'
import { startRegistry } from '../helpers/registry.js'

const stderrLine = (text: RegExp) => (line: JsonObject): boolean => typeof line.stderr === 'string' && text.test(line.stderr)
const textOf = (result: JsonObject): string => ((result.content as Array<{ text: string }>)[0]).text
/** A call that asks for progress (as one whose client sent a progressToken does). */
function withProgress (seen: number[]): { signal: AbortSignal, onProgress: (p: { progress: number }) => void } {
  return { signal: new AbortController().signal, onProgress: p => { seen.push(p.progress) } }
}

// Every test at once: each has its own registry and fixture child, and each is almost all waiting
// (a 2.5 s timeout, a 7.5 s call kept alive by progress, a 4 s and a 1 s total bound), so the file
// takes about its longest wait instead of their sum.
t.jobs = 5

const TIMEOUT_MS = 2_500
/** The slow tool: 15 progress steps 500 ms apart, 7.5 s in all (three times the timeout). */
const SLOW = { ms: 7_500, steps: 15 }

t.test('upstreams/timeouts/progress-does-not-reset-by-default', async t => {
  const { registry, waitFor } = await startRegistry(t, { fixture: { ...fixtureCommand(), timeout: TIMEOUT_MS } })
  const seen: number[] = []
  await t.rejects(registry.callTool('slow', SLOW, withProgress(seen)), { code: UPSTREAM_ERROR, message: `upstream fixture timed out after ${TIMEOUT_MS} ms (tools/call)` })
  t.ok(seen.length >= 1, `progress came (${seen.length}) and did not extend the call`)
  await waitFor(stderrLine(/^cancelled slow /))
  t.pass('the timed-out call was cancelled upstream')
})

t.test('upstreams/timeouts/reset-on-progress', async t => {
  const { registry } = await startRegistry(t, { fixture: { ...fixtureCommand(), timeout: TIMEOUT_MS, resetTimeoutOnProgress: true } })
  const seen: number[] = []
  const result = await registry.callTool('slow', SLOW, withProgress(seen))
  t.equal(textOf(result), `slept ${SLOW.ms}`, 'a call three times longer than its timeout finishes, kept alive by its progress')
  t.same(seen, Array.from({ length: SLOW.steps }, (_, i) => i + 1), 'with every progress relayed')
})

t.test('upstreams/timeouts/reset-needs-progress', async t => {
  const { registry, waitFor } = await startRegistry(t, { fixture: { ...fixtureCommand(), timeout: TIMEOUT_MS, resetTimeoutOnProgress: true } })
  // One step: the only progress comes at the end, after the timeout.
  await t.rejects(registry.callTool('slow', { ms: 60_000, steps: 1 }, withProgress([])), { code: UPSTREAM_ERROR, message: `upstream fixture timed out after ${TIMEOUT_MS} ms (tools/call)` })
  await waitFor(stderrLine(/^cancelled slow /))
  t.pass('a silent call still times out, and is cancelled upstream')
})

t.test('upstreams/timeouts/max-total-timeout', async t => {
  const { registry, waitFor } = await startRegistry(t, { fixture: { ...fixtureCommand(), timeout: TIMEOUT_MS, resetTimeoutOnProgress: true, maxTotalTimeout: 4_000 } })
  const seen: number[] = []
  const started = Date.now()
  await t.rejects(registry.callTool('slow', { ms: 60_000, steps: 120 }, withProgress(seen)), { code: UPSTREAM_ERROR, message: 'upstream fixture: tools/call exceeded its maxTotalTimeout of 4000 ms' })
  t.ok(Date.now() - started >= 4_000, 'not before the total bound')
  t.ok(seen.length >= 2, `progress kept resetting the timeout meanwhile (${seen.length})`)
  await waitFor(stderrLine(/^cancelled slow /))
  t.pass('cancelled upstream')
})

t.test('upstreams/timeouts/max-total-without-reset', async t => {
  const { registry } = await startRegistry(t, { fixture: { ...fixtureCommand(), timeout: 30_000, maxTotalTimeout: 1_000 } })
  await t.rejects(registry.callTool('slow', { ms: 60_000 }, withProgress([])), { code: UPSTREAM_ERROR, message: 'upstream fixture: tools/call exceeded its maxTotalTimeout of 1000 ms' },
    'the shorter of timeout and maxTotalTimeout applies')
})
