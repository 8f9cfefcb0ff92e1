/**
 * lib/stdio/server.ts on in-memory streams, no process: the input framing (seed › stdio, every revision;
 * the server's module comment: one frame per `\n`-terminated line, blank lines ignored, a line over
 * `maxLineBytes` answered -32600 and discarded, a last line without its newline still a line) and the
 * one classification of a line (lib/protocol/inbound classifyMessage). The real `mcpx serve` is
 * test/e2e/stdio.test.ts.
 */
import t, { type Test } from 'tap'
import { PassThrough } from 'node:stream'
import { pino } from 'pino'
import { createCore } from '../../lib/core.js'
import { loadConfig } from '../../lib/config/load.js'
import { createRegistry } from '../../lib/upstreams/registry.js'
import { startStdioServer, type StdioServer } from '../../lib/stdio/server.js'

interface Harness {
  input: PassThrough
  server: StdioServer
  /** Every stdout line so far, parsed. */
  messages: unknown[]
  /** Resolves once stdout holds `count` lines. */
  lines: (count: number) => Promise<unknown[]>
}

function harness (t: Test, maxLineBytes = 64): Harness {
  const logger = pino({ level: 'silent' })
  const registry = createRegistry({}, { logger, defaultTimeoutMs: 1000 })
  const core = createCore(loadConfig({}), registry, logger, { stdio: true })
  const input = new PassThrough()
  const output = new PassThrough()
  const server = startStdioServer(input, output, core.dispatcher, core.hub, { logger, maxLineBytes, drainMs: 100 })
  t.teardown(async () => { await server.close(); await core.close(); await registry.close() })
  const messages: unknown[] = []
  let text = ''
  const waiters: Array<() => void> = []
  output.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8')
    let newline = text.indexOf('\n')
    while (newline !== -1) {
      messages.push(JSON.parse(text.slice(0, newline)))
      text = text.slice(newline + 1)
      newline = text.indexOf('\n')
    }
    for (const wake of waiters.splice(0)) wake()
  })
  const lines = async (count: number): Promise<unknown[]> => {
    while (messages.length < count) await new Promise<void>(resolve => { waiters.push(resolve) })
    return messages.slice(0, count)
  }
  return { input, server, messages, lines }
}

const TOO_LONG = { jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request: line longer than 64 bytes' } }

t.test('all/stdio/lines-framed-blank-skipped-crlf-tolerated', async t => {
  const h = harness(t)
  // Cut at awkward places: inside a line, between '\r' and '\n', and blank lines of spaces, tabs and CRs.
  for (const piece of ['{"jsonrpc":"2.0","id":1,"me', 'thod":"ping"}\r', '\n\n  \t\r\n', '{"jsonrpc":"2.0","id":2,"method":"ping"}\n']) h.input.write(piece)
  t.same(await h.lines(2), [{ jsonrpc: '2.0', id: 1, result: {} }, { jsonrpc: '2.0', id: 2, result: {} }])
  h.input.end()
  await h.server.closed
  t.equal(h.messages.length, 2, 'blank lines are not answered')
})

t.test('all/stdio/oversized-line-answered-when-it-crosses-the-bound', async t => {
  const h = harness(t)
  // No newline yet: the answer comes as soon as the line is past the bound, not when it ends.
  h.input.write('{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"' + 'x'.repeat(100))
  t.same(await h.lines(1), [TOO_LONG], 'answered -32600 without an id, before the newline')
  h.input.write('x'.repeat(100) + '"}}\n{"jsonrpc":"2.0","id":3,"method":"ping"}\n')
  t.same(await h.lines(2), [TOO_LONG, { jsonrpc: '2.0', id: 3, result: {} }], 'the rest of it is discarded; the next line is served')
  // Exactly the bound passes (64 bytes with the '\r' it may carry), one byte more does not.
  const exact = '{"jsonrpc":"2.0","id":4,"method":"ping","params":{"p":"' + 'y'.repeat(5) + '"}}'
  t.equal(Buffer.byteLength(exact), 63)
  h.input.write(exact + '\r\n')
  t.same((await h.lines(3))[2], { jsonrpc: '2.0', id: 4, result: {} })
  h.input.write(exact.replace('"id":4', '"id":5') + 'zz\n')
  t.same((await h.lines(4))[3], TOO_LONG)
  h.input.end()
  await h.server.closed
  t.equal(h.messages.length, 4)
})

t.test('all/stdio/last-line-without-newline-served-at-eof', async t => {
  const h = harness(t)
  h.input.end('{"jsonrpc":"2.0","id":"last","method":"ping"}')
  await h.server.closed
  t.same(h.messages, [{ jsonrpc: '2.0', id: 'last', result: {} }])
})

t.test('all/stdio/oversized-line-at-eof-answered-once', async t => {
  const h = harness(t)
  h.input.end('{"jsonrpc":"2.0","id":"cut","method":"ping","params":{"pad":"' + 'x'.repeat(200))
  await h.server.closed
  t.same(h.messages, [TOO_LONG], 'one answer, when it crossed the bound; nothing more at EOF')
})
