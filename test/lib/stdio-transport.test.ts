/**
 * lib/upstreams/stdio-transport.ts alone, on a real child: the calls' frames batched per loop
 * turn (one `stdin.write` per turn, not per call) without losing what the unbatched
 * writes guaranteed: order (with the SDK client's own writes and with kill's EOF), failure at once
 * on a gone child, and backpressure that counts the pending batch.
 */
import t from 'tap'
import type { JSONRPCMessage } from '@modelcontextprotocol/client'
import { StdioUpstreamTransport } from '../../lib/upstreams/stdio-transport.js'

/** A child that answers each line it reads with `{"got": <line>}`, and `{"eof": true}` once stdin ends. */
const ECHO = `
const { createInterface } = require('node:readline')
const lines = createInterface({ input: process.stdin })
lines.on('line', line => process.stdout.write(JSON.stringify({ got: line }) + '\\n'))
lines.on('close', () => process.stdout.write(JSON.stringify({ eof: true }) + '\\n', () => process.exit(0)))
`
/** A child that never reads its stdin. */
const DEAF = 'setInterval(() => {}, 1000)'

async function started (script: string, highWaterBytes?: number): Promise<{ transport: StdioUpstreamTransport, received: unknown[] }> {
  const transport = new StdioUpstreamTransport({ command: process.execPath, args: ['-e', script], ...(highWaterBytes !== undefined ? { highWaterBytes } : {}) })
  const received: unknown[] = []
  transport.onmessage = (message: JSONRPCMessage) => { received.push(message) }
  await transport.start()
  return { transport, received }
}

/** Resolves once `received` holds `count` messages (bounded: 20 s, for a loaded machine). */
async function receivedCount (received: unknown[], count: number): Promise<void> {
  const until = Date.now() + 20_000
  while (received.length < count) {
    if (Date.now() > until) throw new Error(`only ${received.length} of ${count} messages came back: ${JSON.stringify(received)}`)
    await new Promise(resolve => setTimeout(resolve, 10))
  }
}

const frame = (n: number): string => JSON.stringify({ jsonrpc: '2.0', method: 'ping', id: n }) + '\n'
const got = (n: number): unknown => ({ got: frame(n).slice(0, -1) })

t.test('upstreams/stdio/frames-of-one-turn-leave-in-one-write', async t => {
  const { transport, received } = await started(ECHO)
  t.teardown(async () => { await transport.kill(2_000, 0) })
  const stdin = transport.child?.stdin
  if (stdin == null) throw new Error('no stdin')
  const writes: number[] = []
  const write = stdin.write.bind(stdin) as (chunk: string) => boolean
  stdin.write = ((chunk: string) => { writes.push(chunk.length); return write(chunk) }) as typeof stdin.write
  for (const n of [1, 2, 3]) t.equal(transport.write(frame(n)), true, `frame ${n} accepted`)
  t.same(writes, [], 'nothing handed to stdin within the turn')
  t.equal(transport.buffered, frame(1).length * 3, 'the pending batch counts as buffered')
  await new Promise(resolve => setImmediate(resolve))
  t.same(writes, [frame(1).length * 3], 'one write for the three frames, at the end of the turn')
  await receivedCount(received, 3)
  t.same(received, [got(1), got(2), got(3)], 'the child read them in order')
  t.equal(transport.write(frame(4)), true)
  await receivedCount(received, 4)
  t.same(received[3], got(4), 'a later turn gets its own batch')
  t.same(writes.length, 2)
})

t.test('upstreams/stdio/sdk-writes-keep-the-order-of-batched-frames', async t => {
  const { transport, received } = await started(ECHO)
  t.teardown(async () => { await transport.kill(2_000, 0) })
  transport.write(frame(1))
  await transport.send({ jsonrpc: '2.0', method: 'ping', id: 2 })
  transport.write(frame(3))
  await receivedCount(received, 3)
  t.same(received, [got(1), got(2), got(3)], 'a frame batched before the SDK client\'s write reaches the child before it')
})

t.test('upstreams/stdio/kill-flushes-the-batch-before-eof', async t => {
  const { transport, received } = await started(ECHO)
  transport.write(frame(1))
  transport.write(frame(2))
  await transport.kill(2_000) // no turn ends in between: kill itself hands the batch over before end()
  await receivedCount(received, 3)
  t.same(received, [got(1), got(2), { eof: true }], 'both frames before EOF')
  t.equal(transport.exitInfo, undefined, 'the child exited on its own at EOF (mcpx killed it: no exit info)')
})

t.test('upstreams/stdio/write-to-a-gone-child-fails-at-once', async t => {
  const { transport } = await started(ECHO)
  await transport.kill(2_000, 0)
  t.equal(transport.write(frame(1)), false, 'false at once: the call fails with Not connected')
  t.equal(transport.buffered, 0, 'nothing kept for a child that is gone')
  await t.rejects(transport.send({ jsonrpc: '2.0', method: 'ping', id: 2 }), /Not connected/)
})

t.test('limits/upstreams/stdin-batch-counts-toward-congestion', async t => {
  const { transport } = await started(DEAF, 32 * 1024)
  t.teardown(async () => { await transport.kill(2_000, 0) })
  const stdin = transport.child?.stdin
  if (stdin == null) throw new Error('no stdin')
  const big = JSON.stringify({ jsonrpc: '2.0', method: 'ping', params: { pad: 'x'.repeat(1_000) } }) + '\n'
  // The child never reads: its stdin (a socketpair under libuv, a few hundred KiB of kernel buffer)
  // fills, then Node queues; batches of the stream's 16 KiB high-water mark are handed over within
  // the turn, so congestion shows before the turn ends (the loop below never yields).
  let written = 0
  while (!transport.congested && written < 1_000) { transport.write(big); written++ }
  t.ok(transport.congested, `congested within one turn (after ${written} frames of ${big.length} bytes)`)
  t.ok(stdin.writableNeedDrain, 'Node saw the full pipe')
  t.ok(transport.buffered - stdin.writableLength < stdin.writableHighWaterMark + big.length, 'the pending batch stays under the stream\'s mark plus one frame')
  t.ok(transport.buffered > 32 * 1024, 'buffered counts what waits, past highWaterBytes')
})
