/**
 * ops/logs/…: the daemon's batched JSON log (lib/telemetry/log.ts batchedDestination). Request
 * lines wait for a batch; a warning is written at once, with the lines before it. A child process
 * logs, says so on stderr, then keeps its event loop busy for 1 s (no timer can fire), then says
 * that too: what reached stdout by then was written without the batch timer. Each case runs with
 * stdout on a pipe (the batch is written off the main thread; read when the busy loop ends) and on
 * a regular file (written by the main thread at once; read while the loop is still busy).
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const LOG_JS = fileURLToPath(new URL('../../lib/telemetry/log.js', import.meta.url))

/** Where the child's stdout goes. */
type Stdout = 'pipe' | 'file'
const STDOUTS: Stdout[] = ['pipe', 'file']

/**
 * Runs `script` (an ES module) in a child whose stdout is a pipe or a regular file. `onStderr` sees
 * each stderr chunk, with a reader of what reached stdout so far. Returns the exit code and all of
 * stdout once the child has ended.
 */
async function runChild (stdout: Stdout, script: string, onStderr?: (chunk: string, written: () => string) => void): Promise<{ code: number | null, all: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-log-batch-'))
  try {
    const file = join(dir, 'stdout')
    const fd = stdout === 'file' ? openSync(file, 'w') : undefined
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('../../..', import.meta.url)), stdio: ['ignore', fd ?? 'pipe', 'pipe'] })
    if (fd !== undefined) closeSync(fd)
    let piped = ''
    const written = (): string => stdout === 'file' ? readFileSync(file, 'utf8') : piped
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => { piped += chunk })
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { onStderr?.(chunk, written) })
    const code = await new Promise<number | null>(resolve => child.once('close', resolve))
    return { code, all: written() }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Runs a child that logs `levels` in order (one line each), then busy-waits 1 s; returns the stdout
 * text written before the loop freed up, and all of it once the child has exited.
 */
async function linesBeforeBusyEnds (stdout: Stdout, levels: string[], pad = 1): Promise<{ before: string, all: string }> {
  const script = `
    import { pino } from 'pino'
    import { batchedDestination } from ${JSON.stringify(LOG_JS)}
    const log = pino({ level: 'info' }, batchedDestination(1))
    for (const level of ${JSON.stringify(levels)}) log[level]({ n: 1, pad: 'x'.repeat(${pad}) }, level + ' line')
    process.stderr.write('logged\\n')
    const until = Date.now() + 1000
    while (Date.now() < until) {}
    process.stderr.write('busy-done\\n')
  `
  let before: string | undefined
  const { all } = await runChild(stdout, script, (chunk, written) => {
    // A file is read while the child is still busy (1 s to spare); a pipe's chunks, when the loop ends.
    if (before === undefined && chunk.includes(stdout === 'file' ? 'logged' : 'busy-done')) before = written()
  })
  return { before: before ?? '', all }
}

t.test('ops/logs/request-lines-wait-for-the-batch', async t => {
  for (const stdout of STDOUTS) {
    const { before, all } = await linesBeforeBusyEnds(stdout, ['info', 'info'])
    t.equal(before, '', `${stdout}: nothing written while the batch waits`)
    t.equal(all.trim().split('\n').length, 2, `${stdout}: both lines written by exit`)
  }
})

t.test('ops/logs/warning-written-at-once-with-the-lines-before-it', async t => {
  for (const stdout of STDOUTS) {
    const { before } = await linesBeforeBusyEnds(stdout, ['info', 'warn'])
    const lines = before.trim().split('\n').filter(l => l !== '').map(l => JSON.parse(l))
    t.same(lines.map(l => l.level), [30, 40], `${stdout}: the waiting info line and the warning, in order`)
  }
})

t.test('ops/logs/a-full-batch-is-written-at-once', async t => {
  // 20 lines of ~300 bytes pass LOG_BATCH_BYTES (4096): the first 4 KiB leave without the timer,
  // the rest wait for it (or the exit flush); no line is lost, split or reordered.
  for (const stdout of STDOUTS) {
    const { before, all } = await linesBeforeBusyEnds(stdout, Array(20).fill('info'), 200)
    const early = before.trim().split('\n').filter(l => l !== '')
    t.ok(early.length >= 13 && early.length < 20, `${stdout}: the lines of the full batch written before the loop freed up (${early.length})`)
    t.ok(early.every(l => JSON.parse(l).level === 30), `${stdout}: each a whole JSON line`)
    t.equal(all.trim().split('\n').length, 20, `${stdout}: every line written by exit, once`)
  }
})

t.test('ops/logs/waiting-lines-written-at-exit', async t => {
  // A child that logs one line and ends at once, either by running dry or by process.exit(): the
  // line still waits for its batch, so only the exit hand-over writes it. On a regular file that
  // is mcpx's own (lib/telemetry/log.ts handOverAtExit: pino hands over only asynchronous
  // destinations); on a pipe, pino's flushSync at exit, which writes the batch synchronously (an
  // asynchronous write started then was lost: the daemon's last lines, when it failed to listen).
  for (const end of ['dry', 'exit']) {
    const script = `
      import { pino } from 'pino'
      import { batchedDestination } from ${JSON.stringify(LOG_JS)}
      pino({ level: 'info' }, batchedDestination(1)).info({ n: 1 }, 'last line')
      ${end === 'exit' ? 'process.exit(0)' : ''}
    `
    for (const stdout of STDOUTS) {
      const { code, all } = await runChild(stdout, script)
      t.equal(code, 0, `${stdout}, ${end}: the child ended`)
      t.same(all.trim().split('\n').filter(l => l !== '').map(l => JSON.parse(l).msg), ['last line'], `${stdout}, ${end}: its one line was written`)
    }
  }
})
