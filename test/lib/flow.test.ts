/**
 * lib/connection/flow.ts alone (a high-water mark on every outgoing stream): the policy one
 * OutboundFlow applies, over a real Node Writable whose writes the test holds and releases (a
 * client that stops reading, then reads again). The wire behaviour through a real daemon and a
 * real `mcpx serve` is in test/e2e/limits-streams.test.ts.
 */
import t from 'tap'
import { Writable } from 'node:stream'
import { OutboundFlow, type FlowDrop, type FlowPolicy, type FlowStream } from '../../lib/connection/flow.js'
import type { JsonRpcMessage } from '../../lib/protocol/jsonrpc.js'

/** A Writable (16-byte high-water mark) that holds every write until `release()`; `frames` is what went through. */
function stalled (): { target: Writable, frames: string[], release: () => void, reading: () => void } {
  const frames: string[] = []
  let held: Array<() => void> = []
  let flowing = false
  const target = new Writable({
    highWaterMark: 16,
    decodeStrings: false,
    write (chunk: string, _encoding, callback) {
      frames.push(chunk)
      if (flowing) callback()
      else held.push(() => callback())
    }
  })
  const release = (): void => { const now = held; held = []; for (const cb of now) cb() }
  return { target, frames, release, reading: () => { flowing = true; release() } }
}

const encode = (m: JsonRpcMessage | JsonRpcMessage[]): string => JSON.stringify(m) + '\n'
const progress = (token: string | number, value: number): JsonRpcMessage => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: value } })
const log = (n: number): JsonRpcMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `line ${n} ${'x'.repeat(100)}` } })
const response = (id: number, size = 10): JsonRpcMessage => ({ jsonrpc: '2.0', id, result: { text: 'r'.repeat(size) } })

function policy (highWaterBytes: number, maxBytes: number): { policy: FlowPolicy, drops: Array<[FlowStream, FlowDrop]>, overflows: FlowStream[], warns: string[] } {
  const drops: Array<[FlowStream, FlowDrop]> = []
  const overflows: FlowStream[] = []
  const warns: string[] = []
  const logger = { warn: (_o: unknown, msg: string) => { warns.push(msg) } } as unknown as FlowPolicy['logger']
  return { policy: { highWaterBytes, maxBytes, dropped: (s, w) => drops.push([s, w]), overflowed: s => overflows.push(s), logger }, drops, overflows, warns }
}

const parse = (frames: string[]): Array<Record<string, any>> => frames.join('').split('\n').filter(l => l !== '').map(l => JSON.parse(l)) // eslint-disable-line @typescript-eslint/no-explicit-any

t.test('limits/flow/writes-wait-for-drain-and-keep-order', async t => {
  const { target, frames, reading } = stalled()
  const p = policy(1 << 20, 8 << 20)
  const flow = new OutboundFlow(target, encode, p.policy, 'reply', () => t.fail('no overflow below the limits'))
  for (let i = 0; i < 100; i++) t.ok(flow.send(response(i)))
  // The transport got one write past its own high-water mark, then nothing until drain.
  t.ok(flow.backedUp, 'waiting for drain')
  t.ok(frames.length <= 2, `at most the first frames were handed over (${frames.length})`)
  t.ok(flow.bufferedBytes > 0)
  reading()
  await flow.idle()
  t.same(parse(frames).map(m => m.id), Array.from({ length: 100 }, (_, i) => i), 'every frame, in order')
  t.equal(flow.bufferedBytes, 0)
  t.same(p.drops, [])
})

t.test('limits/flow/progress-coalesced-to-latest-past-the-mark', async t => {
  const { target, frames, reading } = stalled()
  const p = policy(1024, 1 << 20)
  const flow = new OutboundFlow(target, encode, p.policy, 'reply', () => t.fail('no overflow'))
  for (let i = 1; i <= 5000; i++) { flow.send(progress('tok', i)); if (i % 7 === 0) flow.send(progress(42, i)) }
  flow.send(response(1))
  t.ok(flow.bufferedBytes < 4096, `the queue stays near the mark (${flow.bufferedBytes} bytes)`)
  reading()
  await flow.idle()
  const messages = parse(frames)
  const tok = messages.filter(m => m.params?.progressToken === 'tok').map(m => m.params.progress as number)
  const num = messages.filter(m => m.params?.progressToken === 42).map(m => m.params.progress as number)
  t.ok(tok.length < 100, `progress coalesced (${tok.length} of 5000 delivered)`)
  t.equal(tok.at(-1), 5000, 'the latest value arrives')
  t.same(tok, [...tok].sort((a, b) => a - b), 'values only go up')
  t.equal(num.at(-1), 4998, 'each token keeps its own latest value')
  t.same(messages.at(-1), response(1), 'the response comes last, intact')
  t.ok(p.drops.length > 0 && p.drops.every(([s, w]) => s === 'reply' && w === 'progress'), 'superseded progress is counted')
  t.equal(p.warns.length, 1, 'one warn line for the stream')
})

t.test('limits/flow/logs-dropped-and-counted-past-the-mark', async t => {
  const { target, frames, reading } = stalled()
  const p = policy(2048, 1 << 20)
  const flow = new OutboundFlow(target, encode, p.policy, 'get', () => t.fail('no overflow'))
  let accepted = 0
  for (let i = 0; i < 1000; i++) if (flow.send(log(i))) accepted++
  t.equal(accepted, 1000, 'a dropped log is not an error to its sender')
  reading()
  await flow.idle()
  const delivered = parse(frames).length
  t.ok(delivered > 5 && delivered < 50, `the logs up to the mark are delivered, the rest dropped (${delivered})`)
  t.equal(p.drops.length, 1000 - delivered, 'every dropped log is counted')
  t.ok(p.drops.every(([s, w]) => s === 'get' && w === 'log'))
  t.equal(p.warns.length, 1, 'one warn line per stream, not per drop')
  t.equal(flow.droppedCount, 1000 - delivered)
})

t.test('limits/flow/state-notifications-coalesced-per-uri-and-list', async t => {
  const { target, frames, reading } = stalled()
  const p = policy(512, 1 << 20)
  const flow = new OutboundFlow(target, encode, p.policy, 'listen', () => t.fail('no overflow'))
  for (let i = 0; i < 2000; i++) {
    flow.send({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: `fixture://${i % 3}` } })
    flow.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })
  }
  t.ok(flow.bufferedBytes < 2048, `bounded (${flow.bufferedBytes} bytes)`)
  reading()
  await flow.idle()
  const messages = parse(frames)
  for (const uri of ['fixture://0', 'fixture://1', 'fixture://2']) t.ok(messages.some(m => m.params?.uri === uri), `${uri} still announced`)
  t.ok(messages.some(m => m.method === 'notifications/tools/list_changed'))
  t.ok(messages.length < 100, `coalesced (${messages.length} of 4000)`)
  t.ok(p.drops.some(([, w]) => w === 'resource') && p.drops.some(([, w]) => w === 'list'))
})

t.test('limits/flow/hard-limit-ends-the-stream-but-never-for-a-response', async t => {
  const { target, frames, release } = stalled()
  const p = policy(1024, 8192)
  let overflowed = 0
  const flow = new OutboundFlow(target, encode, p.policy, 'reply', () => { overflowed++ })
  // Responses past the hard limit are queued, never dropped, and do not end the stream.
  let accepted = 0
  for (let i = 0; i < 20; i++) if (flow.send(response(i, 1000))) accepted++
  t.equal(accepted, 20, 'every response accepted')
  t.ok(flow.bufferedBytes > 8192, 'responses may take the queue past the limit')
  t.equal(overflowed, 0)
  // Questions to the client (not coalescable, not droppable) past the limit end the stream.
  const question: JsonRpcMessage = { jsonrpc: '2.0', id: 'mcpx-q-1', method: 'elicitation/create', params: {} }
  t.equal(flow.send(question), false, 'the frame past the limit goes nowhere')
  t.equal(overflowed, 1, 'the owner is told once')
  t.same(p.overflows, ['reply'], 'counted')
  t.equal(flow.send(response(99)), false, 'nothing is accepted after the end')
  t.equal(flow.bufferedBytes, target.writableLength, 'the queue was discarded')
  release()
  await flow.idle()
  t.ok(parse(frames).every(m => m.id !== 99 && m.id !== 'mcpx-q-1'))
})

t.test('limits/flow/below-mark-waits-for-drain', async t => {
  const { target, release } = stalled()
  const p = policy(1024, 1 << 20)
  const flow = new OutboundFlow(target, encode, p.policy, 'stdio', () => t.fail('no overflow'))
  t.equal(flow.belowMark(), undefined, 'nothing to wait for on an idle stream')
  for (let i = 0; i < 50; i++) flow.send(response(i, 100))
  const wait = flow.belowMark()
  t.ok(wait !== undefined, 'past the mark: a promise to wait on')
  let resumed = false
  void wait?.then(() => { resumed = true })
  await new Promise(resolve => setImmediate(resolve))
  t.equal(resumed, false, 'still waiting while the transport holds its writes')
  // Release the transport until the queue is back under the mark.
  while (!resumed) { release(); await new Promise(resolve => setImmediate(resolve)) }
  t.ok(flow.bufferedBytes < 1024 + 200, 'resumed once back under the mark')
})
