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
import { isatty } from 'node:tty'
import { pino } from 'pino'
import pretty from 'pino-pretty'
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
 * Never throws.
 */
export function prettyStream (fd: 1 | 2): ReturnType<typeof pretty> {
  return pretty({ destination: fd, sync: true, colorize: isatty(fd), translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
}

/** Bytes a {@link batchedDestination} gathers before it writes them (under load, ~15 request lines per write). */
export const LOG_BATCH_BYTES = 4096
/** Longest a line waits in a {@link batchedDestination} before it is written, ms. */
export const LOG_BATCH_DELAY_MS = 50

/** True for a pino JSON line at level warn (40) or above: `{"level":40,` … `{"level":60,`. */
function urgent (line: string): boolean {
  return line.startsWith('{"level":') && line.charCodeAt(9) >= 52 /* '4' */ && line.charCodeAt(11) === 44 /* ',' */
}

/**
 * A pino destination on `fd` that writes lines in batches: once {@link LOG_BATCH_BYTES} are
 * gathered (counted in UTF-16 units, equal to bytes for ASCII lines), or {@link LOG_BATCH_DELAY_MS}
 * after the first line of a batch, whichever comes first (one write per request line
 * was ~6 % of the daemon's CPU under load); a line at level warn or above is written at once, with
 * every line before it. The batch is gathered here and handed to sonic-boom as one string, whose
 * write keeps the order on the same fd. (sonic-boom's own `minLength` gathers too, but
 * measures its growing buffer with Buffer.byteLength on every line, flattening it each time:
 * ~2 KiB allocated per request line under load.) Nothing is lost at shutdown: pino ends an
 * asynchronous destination on `beforeExit` and flushes it synchronously on `exit` (the gathered
 * batch is then written synchronously too), and a synchronous one is handed over here; only a
 * process killed outright (SIGKILL) loses the last ≤ 50 ms of lines. Lines sonic-boom cannot
 * write yet (a slow reader) wait in its buffer, as before. The delay timer is unref'd, set only
 * while lines wait, and never keeps the process alive. Never throws.
 *
 * How a batch is written depends on what `fd` is, decided once:
 * - a regular file: by the main thread, at once (`write(2)` into the page cache; no reader can make
 *   it wait). Handing a batch to libuv's thread pool instead cost more than the write: waking a pool
 *   thread (a futex) and the completion callback, ~1.7 µs of the main thread per request line
 *   and ~1.5 µs of the pool's, measured under load (`perf`, 2 vCPUs) with ~17 lines per batch;
 * - anything else (a pipe, a socket, a character device): off the main thread, so a reader that
 *   stops reading (a full pipe) never stalls the daemon.
 */
export function batchedDestination (fd: 1 | 2): ReturnType<typeof pino.destination> {
  const sync = isRegularFile(fd)
  const destination = pino.destination({ fd, sync })
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
  destination.flush = function flushBatch (cb?: (err?: Error) => void): void { handOver(); flush.call(destination, cb) }
  // pino calls flushSync when the process exits: no event loop is left to finish an asynchronous
  // write, so a batch handed to one then could be lost (seen: the daemon's last lines, when it
  // exited on a listen failure). What sonic-boom holds goes first, then the waiting batch, both
  // written synchronously here.
  destination.flushSync = function flushBatchSync (): void {
    if (sync) { handOver(); flushSync.call(destination); return }
    try { flushSync.call(destination) } catch {}
    const lines = batch
    batch = ''
    if (lines.length > 0 && !closed) writeFullySync(fd, lines)
  }
  destination.end = function endBatch (): void { handOver(); end.call(destination) }
  // pino writes out an asynchronous destination when the process exits, not a synchronous one:
  // the batch of a synchronous one is handed over here instead.
  const exiting = sync ? handOverAtExit(handOver) : undefined
  destination.once('close', () => { closed = true; if (timer !== undefined) clearTimeout(timer); if (exiting !== undefined) atExit.delete(exiting) })
  return destination
}

/** What {@link batchedDestination}s on regular files hand over when the process ends (held weakly: a dropped destination is not kept alive). */
const atExit = new Set<WeakRef<() => void>>()
let exitHooked = false

/** Registers `handOver` for {@link atExit}, with one pair of process listeners for them all, installed once. @returns its entry, to delete when the destination closes */
function handOverAtExit (handOver: () => void): WeakRef<() => void> {
  if (!exitHooked) {
    exitHooked = true
    process.on('beforeExit', handOverAll)
    process.on('exit', handOverAll)
  }
  const entry = new WeakRef(handOver)
  atExit.add(entry)
  return entry
}

function handOverAll (): void {
  for (const entry of atExit) {
    try { entry.deref()?.() } catch {}
  }
}

/** Tries to write a pipe that is full, at most this many times, 10 ms apart (the process is exiting). */
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
  const destination = format === 'pretty' ? prettyStream(fd) : pino.destination({ fd, sync: false })
  return pino({ name: 'mcpx', level, redact: REDACTED_PATHS }, destination)
}
