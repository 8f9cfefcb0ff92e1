/**
 * lib/base/cancel.ts alone: the request cancellation that replaced the AbortController per request
 * (a hot-path saving: see BENCHMARKS.md). It must keep the AbortSignal behaviours the request path relies on: listeners run
 * once, in order, synchronously inside abort(); removal; a real AbortSignal on demand that follows it.
 */
import t from 'tap'
import { Cancellation, abortSignalOf, type CancelSignal } from '../../lib/base/cancel.js'

t.test('all/cancellation/cancellation-runs-each-listener-once-in-order', async t => {
  const c = new Cancellation()
  const seen: string[] = []
  const first = (): void => { seen.push('first') }
  const object = { handleEvent: (): void => { seen.push('object') } }
  const removed = (): void => { seen.push('removed') }
  c.addEventListener('abort', first)
  c.addEventListener('abort', first) // a second add of the same listener adds nothing, as EventTarget
  c.addEventListener('abort', object)
  c.addEventListener('abort', removed)
  c.removeEventListener('abort', removed)
  t.equal(c.aborted, false)
  t.equal(c.signal, c, 'it is its own signal')
  const reason = new Error('gone')
  c.abort(reason)
  t.same(seen, ['first', 'object'], 'every listener once, in the order added; the removed one not at all')
  t.equal(c.aborted, true)
  t.equal(c.reason, reason)
  c.abort(new Error('again'))
  t.same(seen, ['first', 'object'], 'a second abort runs nothing')
  t.equal(c.reason, reason, 'and keeps the first reason')
  const plain = new Cancellation()
  plain.abort()
  t.equal((plain.reason as DOMException).name, 'AbortError', 'the default reason is an AbortError, as AbortController gives')
})

t.test('all/cancellation/cancellation-listener-that-throws-does-not-stop-the-rest', async t => {
  const c = new Cancellation()
  let after = false
  c.addEventListener('abort', () => { throw new Error('listener failed') })
  c.addEventListener('abort', () => { after = true })
  const uncaught = new Promise<unknown>(resolve => { process.once('uncaughtException', resolve) })
  c.abort()
  t.equal(after, true, 'the next listener still ran')
  t.match(await uncaught, { message: 'listener failed' }, 'the error is reported as EventTarget reports it: uncaught, on the next tick')
})

t.test('all/cancellation/real-abort-signal-follows-the-cancellation', async t => {
  const c = new Cancellation()
  const real = abortSignalOf(c)
  t.ok(real instanceof AbortSignal)
  t.equal(abortSignalOf(c), real, 'made once')
  const combined = AbortSignal.any([real, new AbortController().signal])
  const reason = new Error('client went away')
  c.abort(reason)
  t.equal(real.aborted, true)
  t.equal(real.reason, reason)
  t.equal(combined.aborted, true, 'AbortSignal.any over it fires too')
  const late = new Cancellation()
  late.abort(reason)
  t.equal(abortSignalOf(late).aborted, true, 'one asked for after the abort is already aborted')
  const native = new AbortController().signal
  t.equal(abortSignalOf(native as CancelSignal), native, 'a real AbortSignal is passed through')
})
