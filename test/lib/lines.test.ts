/**
 * lib/protocol/lines.ts alone: newline framing with a byte bound (maxMessageBytes),
 * fed in chunks cut at every awkward place, and the id read from an oversized line's edges.
 */
import t from 'tap'
import { LineSplitter, recoverResponseId, EDGE_BYTES } from '../../lib/protocol/lines.js'

function split (max: number, chunks: Array<string | Buffer>): { lines: string[], oversized: Array<{ bytes: number, head: string, tail: string }> } {
  const lines: string[] = []
  const oversized: Array<{ bytes: number, head: string, tail: string }> = []
  const splitter = new LineSplitter(max, {
    line: (bytes, start, end) => { lines.push(bytes.toString('utf8', start, end)) },
    oversized: (bytes, head, tail) => { oversized.push({ bytes, head: head.toString('utf8'), tail: tail.toString('utf8') }) }
  })
  for (const chunk of chunks) splitter.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk))
  splitter.end()
  return { lines, oversized }
}

/** Cuts `text` into pieces of `size` bytes. */
function pieces (text: string, size: number): string[] {
  const out: string[] = []
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
  return out
}

t.test('limits/upstreams/line-splitter-bounds-every-line', async t => {
  const long = 'a'.repeat(1000)
  const text = `short\n${long}\nafter\n${'b'.repeat(10)}\nlast`
  for (const size of [1, 3, 7, 64, 999, 1000, 1001, 5000]) {
    const { lines, oversized } = split(100, pieces(text, size))
    t.same(lines, ['short', 'after', 'b'.repeat(10), 'last'], `chunks of ${size}: the lines within the bound, in order`)
    t.same(oversized.map(o => o.bytes), [1000], `chunks of ${size}: the long line reported once with its size`)
    t.equal(oversized[0].head, 'a'.repeat(EDGE_BYTES), `chunks of ${size}: its head`)
    t.equal(oversized[0].tail, 'a'.repeat(EDGE_BYTES), `chunks of ${size}: its tail`)
  }
  // Exactly the bound passes; one byte more does not.
  t.same(split(5, ['12345\n123456\n']).lines, ['12345'])
  t.same(split(5, ['12345\n123456\n']).oversized.map(o => o.bytes), [6])
  // An oversized line the input ends inside is reported at the end.
  t.same(split(5, ['1234567']).oversized.map(o => o.bytes), [7])
})

t.test('limits/upstreams/oversized-line-id-from-its-edges', async t => {
  const filler = 'x'.repeat(10_000)
  const cases: Array<[string, string | number | undefined]> = [
    [`{"result":{"content":[{"type":"text","text":"${filler}"}]},"jsonrpc":"2.0","id":7}`, 7],
    [`{"jsonrpc":"2.0","id":"mcpx-call-3","result":{"text":"${filler}"}}`, 'mcpx-call-3'],
    [`{"id":12,"jsonrpc":"2.0","result":{"text":"${filler}"}}`, 12],
    [`{"result":{"text":"${filler}"},"id":9,"jsonrpc":"2.0"}\r`, 9],
    // A request or notification answers no call, whatever its end looks like.
    [`{"method":"sampling/createMessage","params":{"text":"${filler}"},"jsonrpc":"2.0","id":4}`, undefined],
    [`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"${filler}"}}`, undefined],
    // An "id" that is not a top-level member is not taken for one.
    [`{"result":{"text":"${filler}","inner":{"id":5}},"jsonrpc":"2.0"}`, undefined],
    [`{"result":{"text":"${filler} \\"id\\":5}"},"jsonrpc":"2.0"}`, undefined],
    [`{"result":{"text":"${filler}"}`, undefined]
  ]
  for (const [line, id] of cases) {
    const { oversized } = split(1000, pieces(line + '\n', 333))
    t.equal(oversized.length, 1)
    t.equal(recoverResponseId(Buffer.from(oversized[0].head), Buffer.from(oversized[0].tail)), id, `${line.slice(0, 40)}…${line.slice(-30)}`)
  }
})

t.test('all/stdio/line-splitter-tells-when-a-line-crosses-the-bound', async t => {
  // The stdio server answers an oversized line when it crosses the bound (lib/stdio/server.ts), not when it ends.
  const events: string[] = []
  const splitter = new LineSplitter(5, {
    line: (bytes, start, end) => { events.push(`line ${bytes.toString('utf8', start, end)}`) },
    oversized: (bytes) => { events.push(`oversized ${bytes}`) },
    overflowing: () => { events.push('overflowing') }
  })
  splitter.push(Buffer.from('ab\n1234'))
  t.same(events, ['line ab'], 'within the bound so far: nothing to tell')
  splitter.push(Buffer.from('56'))
  t.same(events, ['line ab', 'overflowing'], 'told at the byte that crosses it, before its newline')
  splitter.push(Buffer.from('789\ncd\n1234567\n'))
  splitter.push(Buffer.from('12'))
  splitter.push(Buffer.from('3456'))
  splitter.end()
  t.same(events, ['line ab', 'overflowing', 'oversized 9', 'line cd', 'overflowing', 'oversized 7', 'overflowing', 'oversized 6'],
    'once per oversized line, always ahead of its oversized report (inside a chunk, across chunks, at the end)')
})
