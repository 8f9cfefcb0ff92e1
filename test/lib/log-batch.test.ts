/**
 * ops/logs/…: the daemon's batched JSON log (lib/telemetry/log.ts batchedDestination). Request
 * lines wait for a batch; a warning is written at once, with the lines before it. A child process
 * logs, then keeps its event loop busy for 1 s (no timer can fire; the asynchronous write itself
 * runs off the main thread), then says so on stderr: what reached stdout before that word was
 * written without the batch timer.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const LOG_JS = fileURLToPath(new URL('../../lib/telemetry/log.js', import.meta.url))

/** Runs a child that logs `levels` in order (one line each), then busy-waits 1 s; returns the stdout text seen before it finished. */
async function linesBeforeBusyEnds (levels: string[], pad = 1): Promise<{ before: string, all: string }> {
  const script = `
    import { pino } from 'pino'
    import { batchedDestination } from ${JSON.stringify(LOG_JS)}
    const log = pino({ level: 'info' }, batchedDestination(1))
    for (const level of ${JSON.stringify(levels)}) log[level]({ n: 1, pad: 'x'.repeat(${pad}) }, level + ' line')
    const until = Date.now() + 1000
    while (Date.now() < until) {}
    process.stderr.write('busy-done\\n')
  `
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('../../..', import.meta.url)), stdio: ['ignore', 'pipe', 'pipe'] })
  let all = ''
  let before: string | undefined
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { all += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { if (chunk.includes('busy-done') && before === undefined) before = all })
  await new Promise(resolve => child.once('close', resolve))
  return { before: before ?? '', all }
}

t.test('ops/logs/request-lines-wait-for-the-batch', async t => {
  const { before, all } = await linesBeforeBusyEnds(['info', 'info'])
  t.equal(before, '', 'nothing written while the batch waits')
  t.equal(all.trim().split('\n').length, 2, 'both lines written by exit (pino flushes on exit)')
})

t.test('ops/logs/warning-written-at-once-with-the-lines-before-it', async t => {
  const { before } = await linesBeforeBusyEnds(['info', 'warn'])
  const lines = before.trim().split('\n').map(l => JSON.parse(l))
  t.same(lines.map(l => l.level), [30, 40], 'the waiting info line and the warning, in order')
})

t.test('ops/logs/a-full-batch-is-written-at-once', async t => {
  // 20 lines of ~300 bytes pass LOG_BATCH_BYTES (4096): the first 4 KiB leave without the timer,
  // the rest wait for it (or the exit flush); no line is lost, split or reordered.
  const { before, all } = await linesBeforeBusyEnds(Array(20).fill('info'), 200)
  const early = before.trim().split('\n').filter(l => l !== '')
  t.ok(early.length >= 13 && early.length < 20, `the lines of the full batch written before the loop freed up (${early.length})`)
  t.ok(early.every(l => JSON.parse(l).level === 30), 'each a whole JSON line')
  t.equal(all.trim().split('\n').length, 20, 'every line written by exit, once')
})
