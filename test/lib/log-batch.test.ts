/**
 * ops/logs/…: the daemon's batched JSON log (lib/telemetry/log.ts batchedDestination). Request
 * lines wait for a batch; a warning is written at once, with the lines before it. A child process
 * logs, says so on stderr, then keeps its event loop busy for 1 s (no timer can fire), then says
 * that too: what reached stdout by then was written without the batch timer. Each case runs with
 * stdout on a pipe (the batch is written off the main thread; read when the busy loop ends) and on
 * a regular file (written by the main thread at once; read while the loop is still busy).
 * The last cases put the log on an fd that refuses writes (the full device, a file past its size
 * limit, a pipe nobody reads): lines are lost, never the process (lib/telemetry/log.ts
 * logDestination).
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CLI_PATH, WAIT_MS, daemonReady, freePort } from '../helpers/daemon.js'
import { fixtureCommand } from '../helpers/fixture.js'
import { modernHeaders } from '../helpers/app.js'
import { modernBody, post } from '../helpers/modern-wire.js'

const LOG_JS = fileURLToPath(new URL('../../lib/telemetry/log.js', import.meta.url))

/**
 * Where the child's stdout goes: a pipe, a regular file, or an fd that refuses writes: the full
 * device (ENOSPC, written off the main thread) or a regular file past the process's size limit
 * (EFBIG, written by the main thread); or a pipe this process reads only once the child has
 * exited (a stalled reader).
 */
type Stdout = 'pipe' | 'file' | Unwritable | 'stalled-pipe'
type Unwritable = 'full-device' | 'file-past-its-size-limit'
const STDOUTS: Stdout[] = ['pipe', 'file']
const UNWRITABLES: Unwritable[] = ['full-device', 'file-past-its-size-limit']
/** The size limit of `file-past-its-size-limit`: `ulimit -f 1`, one KiB (Node ignores SIGXFSZ, so the write fails EFBIG). */
const FILE_LIMIT_BYTES = 1024

/**
 * Runs `script` (an ES module) in a child whose stdout is a {@link Stdout} (a file is opened for
 * appending; past its size limit, in a shell that set the limit first), stderr piped. `onStderr`
 * sees each stderr chunk, with a reader of what reached stdout so far and the file's path. The
 * child is killed after 20 s (a hang). Returns the exit code, the signal, stderr, and all of
 * stdout once the child has ended ('' for the device).
 */
async function runChild (stdout: Stdout, script: string, onStderr?: (chunk: string, written: () => string, file: string) => void): Promise<{ code: number | null, signal: NodeJS.Signals | null, stderr: string, all: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-log-batch-'))
  try {
    const file = join(dir, 'stdout')
    const piping = stdout === 'pipe' || stdout === 'stalled-pipe'
    const fd = piping ? undefined : openSync(stdout === 'full-device' ? '/dev/full' : file, 'a')
    const node = [process.execPath, '--input-type=module', '-e', script]
    const [command, ...args] = stdout === 'file-past-its-size-limit' ? ['bash', '-c', `ulimit -f ${FILE_LIMIT_BYTES / 1024} && exec "$@"`, 'bash', ...node] : node
    const child = spawn(command, args, { cwd: fileURLToPath(new URL('../../..', import.meta.url)), stdio: ['ignore', fd ?? 'pipe', 'pipe'] })
    if (fd !== undefined) closeSync(fd)
    let piped = ''
    let stderr = ''
    const written = (): string => stdout === 'pipe' ? piped : stdout === 'full-device' || stdout === 'stalled-pipe' ? '' : readFileSync(file, 'utf8')
    if (stdout === 'stalled-pipe') child.once('exit', () => { child.stdout?.resume() }) // read (and dropped) only now: 'close' waits for it
    else child.stdout?.setEncoding('utf8').on('data', (chunk: string) => { piped += chunk })
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; onStderr?.(chunk, written, file) })
    const hang = setTimeout(() => { child.kill('SIGKILL') }, 20_000)
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>(resolve => child.once('close', (c, s) => { resolve([c, s]) }))
    clearTimeout(hang)
    return { code, signal, stderr, all: written() }
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

/** The JSON lines of a child's stderr that mcpx's log destination wrote (`"name":"mcpx"`). */
function destinationReports (stderr: string): Array<Record<string, unknown>> {
  return stderr.split('\n').filter(l => l.startsWith('{')).map(l => JSON.parse(l) as Record<string, unknown>).filter(l => l.name === 'mcpx')
}

t.test('ops/logs/unwritable-log-loses-lines-not-the-process', async t => {
  // 20 lines of ~300 bytes (a full batch, written at once), a warning, more lines after the
  // failure; then the child ends by running dry or by process.exit(). It must go on after the
  // failing write (no uncaught 'error' event), end with code 0 (no endless retry at exit: sonic-boom
  // 4 retried ENOSPC every 100 ms, for good), and say so once on stderr.
  for (const end of ['dry', 'exit']) {
    const script = `
      import { pino } from 'pino'
      import { batchedDestination } from ${JSON.stringify(LOG_JS)}
      const log = pino({ level: 'info' }, batchedDestination(1))
      for (let n = 0; n < 20; n++) log.info({ n, pad: 'x'.repeat(200) }, 'before')
      log.warn('a warning')
      setTimeout(() => {
        for (let n = 0; n < 20; n++) log.info({ n, pad: 'x'.repeat(200) }, 'after')
        log.warn('another warning')
        process.stderr.write('still-running\\n')
        ${end === 'exit' ? 'process.exit(0)' : ''}
      }, 100)
    `
    for (const kind of UNWRITABLES) {
      const { code, signal, stderr, all: written } = await runChild(kind, script)
      t.same([code, signal], [0, null], `${kind}, ${end}: the child ended by itself, code 0`)
      t.match(stderr, /still-running/, `${kind}, ${end}: it went on after the failed write`)
      const reports = destinationReports(stderr)
      t.same(reports.map(r => [r.level, r.code]), [[50, kind === 'full-device' ? 'ENOSPC' : 'EFBIG']], `${kind}, ${end}: one failure told on stderr, with its code`)
      if (kind === 'file-past-its-size-limit') {
        t.equal(Buffer.byteLength(written), FILE_LIMIT_BYTES, `${kind}, ${end}: the file holds what fitted`)
        t.ok(written.startsWith('{"level":30,') && written.includes('"msg":"before"}\n'), `${kind}, ${end}: the first lines, in order`)
      }
    }
  }
})

t.test('ops/logs/log-resumes-when-the-fd-takes-lines-again', async t => {
  // Six lines of ~250 bytes and a warning (~1.6 KB) pass the file's 1 KiB limit. The file is emptied
  // (as logrotate's copytruncate does) once the failure is told; the child then logs a warning: what
  // waited is written first, then the warning, and the recovery is told once, with nothing dropped
  // (the wait stays under LOG_BUFFER_MAX_BYTES).
  const script = `
    import { pino } from 'pino'
    import { fstatSync } from 'node:fs'
    import { batchedDestination } from ${JSON.stringify(LOG_JS)}
    const log = pino({ level: 'info' }, batchedDestination(1))
    for (let n = 0; n < 6; n++) log.info({ n, pad: 'x'.repeat(150) }, 'before')
    log.warn('a warning')
    const poll = setInterval(() => {
      if (fstatSync(1).size !== 0) return
      clearInterval(poll)
      log.warn('after the truncation')
    }, 10)
  `
  let truncated = false
  const { code, stderr, all: written } = await runChild('file-past-its-size-limit', script, (chunk, _written, file) => {
    if (!truncated && chunk.includes('"level":50')) { truncated = true; truncateSync(file, 0) }
  })
  t.equal(code, 0, 'the child ended, code 0')
  t.same(destinationReports(stderr).map(r => [r.level, r.code, r.droppedBytes]), [[50, 'EFBIG', undefined], [30, undefined, 0]], 'the failure, then the recovery with 0 bytes dropped')
  const lines = written.split('\n').filter(l => l.startsWith('{'))
  t.ok(lines.length > 0 && lines.every(l => JSON.parse(l).level >= 30), 'whole lines after the cut one')
  t.match(lines.at(-1), /"msg":"after the truncation"/, 'the warning is the last line, after what waited')
})

t.test('ops/logs/stalled-reader-does-not-hold-the-exit', async t => {
  // A reader that stopped reading: ~2 MB of lines fill the pipe, then the child exits. What waits
  // is written at exit while the pipe takes it; a write it refuses (EAGAIN, on a non-blocking fd)
  // is abandoned after a bounded number of tries (~1 s), so the child ends, code 0. (Node's own
  // process.stdout makes a pipe blocking; the child opens fd 1 as a libuv pipe handle, which makes
  // it non-blocking, as a parent sharing the fd or a terminal can.) Unbounded, it retried for good.
  const script = `
    import net from 'node:net'
    import { pino } from 'pino'
    import { batchedDestination } from ${JSON.stringify(LOG_JS)}
    new net.Socket({ fd: 1, readable: false, writable: true }).unref()
    const log = pino({ level: 'info' }, batchedDestination(1))
    for (let n = 0; n < 8000; n++) log.info({ n, pad: 'x'.repeat(200) }, 'line')
    process.stderr.write('logged\\n')
    setTimeout(() => { process.exit(0) }, 200)
  `
  const { code, signal, stderr } = await runChild('stalled-pipe', script)
  t.match(stderr, /logged/, 'the child logged past what the pipe holds')
  t.same([code, signal], [0, null], 'it exited by itself, code 0, with its reader stalled')
})

t.test('daemon/logs/unwritable-log-keeps-serving', async t => {
  // A real daemon with stdout on the full device: every request line's write fails. It serves
  // every call, tells the failure once on stderr, and stops on SIGTERM with code 0.
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-log-full-daemon-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const port = await freePort()
  const config = join(dir, 'mcpx.json')
  writeFileSync(config, JSON.stringify({ daemon: { address: `127.0.0.1:${port}` }, upstreams: { fixture: fixtureCommand() } }))
  const fd = openSync('/dev/full', 'a')
  const child = spawn(process.execPath, [CLI_PATH, 'daemon', '--config', config], { env: { ...process.env, MCPX_LOG_LEVEL: 'info', MCPX_LOG_FORMAT: 'json' }, stdio: ['ignore', fd, 'pipe'] })
  closeSync(fd)
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const exited = new Promise<[number | null, NodeJS.Signals | null]>(resolve => child.once('exit', (c, s) => { resolve([c, s]) }))
  const base = `http://127.0.0.1:${port}`
  // Its 'ready' line went to the full device: wait until it listens.
  for (const deadline = Date.now() + WAIT_MS; ;) {
    try { await daemonReady(base); break } catch (err) { if (Date.now() > deadline || child.exitCode !== null) throw err }
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  const statuses: number[] = []
  for (let id = 1; id <= 40; id++) {
    const reply = await post(base, modernBody(id, 'tools/call', { name: 'echo', arguments: { text: `call ${id}` } }), modernHeaders('tools/call', 'echo', { accept: 'application/json' }))
    statuses.push(reply.status)
    if (reply.json?.result?.content?.[0]?.text !== `call ${id}`) t.fail(`call ${id} answered ${reply.text.slice(0, 200)}`)
  }
  t.same(statuses, Array(40).fill(200), 'every call answered 200')
  t.same(destinationReports(stderr).map(r => [r.level, r.code]), [[50, 'ENOSPC']], 'the failure told once on stderr')
  child.kill('SIGTERM')
  t.same(await exited, [0, null], 'stopped on SIGTERM, code 0')
})
