/**
 * Logging. In stdio mode stdout carries only MCP frames, so every log line goes to fd 2
 * (seed › stdio › "stdout carries only MCP"). lib/ takes a Logger parameter; it never imports
 * a global logger.
 *
 * Format (docs/operating.md › Logs): JSON lines everywhere, except on a terminal, where
 * pino-pretty prints readable lines. `--log-format json|pretty` (or env MCPX_LOG_FORMAT) and
 * `--log-level` (or env MCPX_LOG_LEVEL) override. pino-pretty runs in this thread as a stream
 * (no worker transport), so a line is written to the same fd, in order, as the JSON one would be.
 */
import { fstatSync, writeSync } from 'node:fs'
import { createRequire } from 'node:module'
import { isatty } from 'node:tty'
import { pino } from 'pino'
import type pretty from 'pino-pretty'
import sonicBoom from 'sonic-boom'
import { McpxError } from '../base/errors.js'

type LogFn = (obj: unknown, msg?: string, ...args: unknown[]) => void

/**
 * The logger lib/ accepts: pino's, or a Fastify instance's (which is pino underneath).
 * A structural subset, so lib/ never names a Fastify type.
 */
export interface Logger {
  trace: LogFn
  debug: LogFn
  info: LogFn
  warn: LogFn
  error: LogFn
  fatal: LogFn
  child: (bindings: Record<string, unknown>) => Logger
  level: string
}

/** Headers whose values are secrets: redacted in every log line. */
export const REDACTED_PATHS = ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'headers.cookie']

/** How log lines are written: one JSON object per line, or pino-pretty's readable lines. */
export type LogFormat = 'json' | 'pretty'

/** The pino level names `--log-level` accepts. */
export const LOG_LEVELS: readonly string[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']

/** Options of {@link createLogger}; each falls back to its environment variable, then to its default. */
export interface LogOptions {
  /** pino level name; default env MCPX_LOG_LEVEL, else 'info'. */
  level?: string
  /** default env MCPX_LOG_FORMAT, else 'pretty' when the log's fd is a terminal, else 'json'. */
  format?: string
}

/**
 * The log format and level for a logger on `fd`, from explicit options, then the environment,
 * then the default (pretty on a terminal, JSON otherwise; level info).
 * @throws McpxError MCPX_ERR_CONFIG naming the bad value, for a format other than json/pretty or an unknown level
 */
export function resolveLogOptions (fd: 1 | 2, options: LogOptions = {}, env: NodeJS.ProcessEnv = process.env): { level: string, format: LogFormat } {
  // An empty variable counts as unset.
  const format = options.format ?? (env.MCPX_LOG_FORMAT || undefined) ?? (isatty(fd) ? 'pretty' : 'json')
  if (format !== 'json' && format !== 'pretty') throw new McpxError('MCPX_ERR_CONFIG', `mcpx: log format must be json or pretty, got ${JSON.stringify(format)}`)
  const level = options.level ?? (env.MCPX_LOG_LEVEL || undefined) ?? 'info'
  if (!LOG_LEVELS.includes(level)) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: log level must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level)}`)
  return { level, format }
}

/**
 * The pino-pretty stream writing to `fd` (colours only on a terminal), for a pino instance.
 * pino-pretty is loaded here, by the first pretty log: a process logging JSON never loads it
 * (~30 modules of every start; it is CommonJS, so a synchronous require does). Never throws.
 */
export function prettyStream (fd: 1 | 2): ReturnType<typeof pretty> {
  const prettyFactory = createRequire(import.meta.url)('pino-pretty') as typeof pretty
  return prettyFactory({ destination: fd, sync: true, colorize: isatty(fd), translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
}

/** Bytes a {@link batchedDestination} gathers before it writes them (under load, ~15 request lines per write). */
export const LOG_BATCH_BYTES = 4096
/** Longest a line waits in a {@link batchedDestination} before it is written, ms. */
export const LOG_BATCH_DELAY_MS = 50
/**
 * Most bytes of log lines a {@link logDestination} keeps while its fd does not take them (a reader
 * that stopped reading, a full disk); lines past it are dropped, counted, and reported on stderr
 * (docs/operating.md › Logs).
 */
export const LOG_BUFFER_MAX_BYTES = 16 * 1024 * 1024
/** When the process exits, how often a write the fd refuses for now (EAGAIN) is tried again, 100 ms apart (sonic-boom's pause). */
const EXIT_WRITE_RETRIES = 10

/** True for a pino JSON line at level warn (40) or above: `{"level":40,` … `{"level":60,`. */
function urgent (line: string): boolean {
  return line.startsWith('{"level":') && line.charCodeAt(9) >= 52 /* '4' */ && line.charCodeAt(11) === 44 /* ',' */
}

/** sonic-boom's option and counters that its type declarations leave out (sonic-boom 5). */
type Destination = sonicBoom.SonicBoom & { maxWriteRetries: number }

/**
 * A sonic-boom destination on `fd` with mcpx's policy for a log that cannot be written
 * (docs/operating.md › Logs). A failing write (ENOSPC, EFBIG, EIO, EPIPE…) never throws into the
 * code that logged, and never ends the process: its lines stay in memory, and every later write
 * tries them again first, in order; past {@link LOG_BUFFER_MAX_BYTES} new lines are dropped.
 * The first failure of a run of them, and the recovery with the bytes dropped meanwhile, are each
 * told once on stderr as a JSON line (`"level":50`, then `"level":30`); a log on stderr itself
 * fails silently. When the process exits, what waits is written synchronously, and a write the
 * fd refuses is abandoned: an EAGAIN after {@link EXIT_WRITE_RETRIES} tries, any other error at
 * once (sonic-boom 4, which pino 10 bundles, retried those forever, so a daemon whose log was on
 * a full device never exited). pino's own `pino.destination()` installs no such policy: its
 * destination rethrows every error but EPIPE as an uncaught 'error' event, which ended the daemon
 * on a full disk. Never throws.
 * @param sync true: each write is a `write(2)` by the calling thread; false: off the main thread (libuv's pool)
 */
export function logDestination (fd: 1 | 2, sync: boolean): Destination {
  const destination = new sonicBoom.SonicBoom({ fd, sync, maxLength: LOG_BUFFER_MAX_BYTES }) as Destination
  let failing = false
  let droppedBytes = 0
  const tell = (level: 30 | 50, msg: string, fields: Record<string, unknown>): void => {
    if (fd === 2) return
    try { writeSync(2, JSON.stringify({ level, time: Date.now(), pid: process.pid, name: 'mcpx', fd, ...fields, msg }) + '\n') } catch {}
  }
  destination.on('drop', (data: string) => { droppedBytes += Buffer.byteLength(data) })
  destination.on('error', (err: NodeJS.ErrnoException) => {
    if (failing) return
    failing = true
    tell(50, 'writing the log failed: its lines wait in memory and are written when the fd takes them again; past the bound, lines are dropped', { code: err.code, error: err.message, boundBytes: LOG_BUFFER_MAX_BYTES })
    destination.once('write', () => {
      failing = false
      tell(30, 'writing the log works again', { droppedBytes })
      droppedBytes = 0
    })
  })
  // sonic-boom's flushSync, bounded: it writes what waits, for the process's last lines, and gives
  // up on a write the fd refuses. Never throws.
  const flushSync = destination.flushSync
  destination.flushSync = function flushHeldSync (): void {
    destination.maxWriteRetries = EXIT_WRITE_RETRIES
    try { flushSync.call(destination) } catch {}
  }
  writeOutAtExit(destination)
  return destination
}

/**
 * A pino destination on `fd` that writes lines in batches: once {@link LOG_BATCH_BYTES} are
 * gathered (counted in UTF-16 units, equal to bytes for ASCII lines), or {@link LOG_BATCH_DELAY_MS}
 * after the first line of a batch, whichever comes first (one write per request line
 * was ~6 % of the daemon's CPU under load); a line at level warn or above is written at once, with
 * every line before it. The batch is gathered here and handed to sonic-boom as one string, whose
 * write keeps the order on the same fd. (sonic-boom's own `minLength` gathers too, but
 * measures its growing buffer with Buffer.byteLength on every line, flattening it each time:
 * ~2 KiB allocated per request line under load.) Nothing is lost at shutdown: on `beforeExit`
 * the batch is handed over, and on `exit` everything still waiting is written synchronously;
 * only a process killed outright (SIGKILL) loses the last ≤ 50 ms of lines. Lines the fd cannot
 * take yet (a slow reader, a full disk) wait as {@link logDestination} says. The delay timer is
 * unref'd, set only while lines wait, and never keeps the process alive. Never throws.
 *
 * How a batch is written depends on what `fd` is, decided once:
 * - a regular file: by the main thread, at once (`write(2)` into the page cache; no reader can make
 *   it wait). Handing a batch to libuv's thread pool instead cost more than the write: waking a pool
 *   thread (a futex) and the completion callback, ~1.7 µs of the main thread per request line
 *   and ~1.5 µs of the pool's, measured under load (`perf`, 2 vCPUs) with ~17 lines per batch;
 * - anything else (a pipe, a socket, a character device): off the main thread, so a reader that
 *   stops reading (a full pipe) never stalls the daemon.
 */
export function batchedDestination (fd: 1 | 2): Destination {
  const sync = isRegularFile(fd)
  const destination = logDestination(fd, sync)
  const write = destination.write
  const flush = destination.flush
  const flushSync = destination.flushSync
  const end = destination.end
  let batch = ''
  let closed = false
  /** What sonic-boom's last write returned: false while its own buffer is past its high-water mark. */
  let ok = true
  let timer: NodeJS.Timeout | undefined // one timer, re-armed (refresh) by the first line of each batch
  function handOver (): void {
    if (batch.length === 0) return
    const lines = batch
    batch = ''
    if (!closed) ok = write.call(destination, lines)
  }
  destination.write = function writeBatched (line: string): boolean {
    if (batch.length === 0) {
      if (timer === undefined) { timer = setTimeout(handOver, LOG_BATCH_DELAY_MS); timer.unref() } else timer.refresh()
    }
    batch += line
    // A warning or an error is written at once, with the lines before it: an operator (or a test)
    // reading the log when something went wrong must not wait for the batch.
    if (batch.length >= LOG_BATCH_BYTES || urgent(line)) handOver()
    return ok
  }
  destination.flush = function flushBatch (cb?: (err?: Error) => unknown): void { handOver(); flush.call(destination, cb) }
  // When the process exits no event loop is left to finish an asynchronous write, so a batch
  // handed to one then could be lost (seen: the daemon's last lines, when it exited on a listen
  // failure). What sonic-boom holds goes first, then the waiting batch, both written synchronously.
  destination.flushSync = function flushBatchSync (): void {
    if (sync) { handOver(); flushSync.call(destination); return }
    flushSync.call(destination)
    const lines = batch
    batch = ''
    if (lines.length > 0 && !closed) writeFullySync(fd, lines)
  }
  destination.end = function endBatch (): void { handOver(); end.call(destination) }
  beforeExitOf.set(destination, handOver)
  destination.once('close', () => { closed = true; if (timer !== undefined) clearTimeout(timer) })
  return destination
}

/** The destinations to write out when the process ends (held weakly: a dropped destination is not kept alive). */
const atExit = new Set<WeakRef<Destination>>()
/** What a destination of {@link atExit} does on `beforeExit`, when it waits for more than sonic-boom's writes in flight ({@link batchedDestination}'s batch). */
const beforeExitOf = new WeakMap<Destination, () => void>()
let exitHooked = false

/**
 * Registers `destination` for {@link atExit} until it closes, with one pair of process listeners
 * for them all, installed once: on `beforeExit` (an event loop is left) what {@link beforeExitOf}
 * holds for it, if anything; on `exit` its `flushSync`. (pino installs the like for the
 * destinations `pino.destination()` makes, not for these.) Not sonic-boom's `flush` on
 * `beforeExit`: on a failing fd each flush is a new write that fails, and keeps the loop alive
 * for another `beforeExit`, for good.
 */
function writeOutAtExit (destination: Destination): void {
  if (!exitHooked) {
    exitHooked = true
    process.on('beforeExit', () => { everyDestination(d => { beforeExitOf.get(d)?.() }) })
    process.on('exit', () => { everyDestination(d => { d.flushSync() }) })
  }
  const entry = new WeakRef(destination)
  atExit.add(entry)
  destination.once('close', () => { atExit.delete(entry) })
}

function everyDestination (run: (destination: Destination) => void): void {
  for (const entry of atExit) {
    const destination = entry.deref()
    if (destination === undefined) { atExit.delete(entry); continue }
    try { run(destination) } catch {}
  }
}

/** Tries to write a pipe that is full, at most this many times, 10 ms apart (the process is exiting): 1 s, as {@link EXIT_WRITE_RETRIES} gives sonic-boom. */
const EXIT_WRITE_TRIES = 100

/**
 * Writes all of `text` to `fd` synchronously, in as many writes as the fd takes; on a full
 * non-blocking pipe (EAGAIN) waits 10 ms and tries again, {@link EXIT_WRITE_TRIES} times at most.
 * For the process's last lines. Never throws: a line that cannot be written is dropped.
 */
function writeFullySync (fd: number, text: string): void {
  let rest = Buffer.from(text)
  for (let tries = 0; rest.length > 0 && tries < EXIT_WRITE_TRIES;) {
    try {
      rest = rest.subarray(writeSync(fd, rest))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return
      tries++
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10)
    }
  }
}

/** Whether `fd` is open on a regular file; false when it cannot be told. Never throws. */
function isRegularFile (fd: number): boolean {
  try {
    return fstatSync(fd).isFile()
  } catch {
    return false
  }
}

/**
 * Creates mcpx's logger.
 * @param mode 'stdio' logs to fd 2 (stderr); 'daemon' logs to fd 1
 * @param options a level name (as before), or {@link LogOptions}
 * @throws McpxError MCPX_ERR_CONFIG for a bad format or level (see {@link resolveLogOptions})
 */
export function createLogger (mode: 'stdio' | 'daemon', options: string | LogOptions = {}): Logger {
  const fd = mode === 'stdio' ? 2 : 1
  const { level, format } = resolveLogOptions(fd, typeof options === 'string' ? { level: options } : options)
  const destination = format === 'pretty' ? prettyStream(fd) : logDestination(fd, false)
  return pino({ name: 'mcpx', level, redact: REDACTED_PATHS }, destination)
}
