/**
 * The audit trail (docs/policy.md › Audit; config `audit`): one JSON line per `tools/call`,
 * `prompts/get` and `resources/read`, and one per policy denial or rate-limit refusal of any
 * method. Written by the dispatcher (lib/dispatch/dispatcher.ts), so every transport and era is audited alike.
 *
 * Lines are written asynchronously, in order, to a file (appended, its directory created) or, for
 * `"-"`, to stderr; never to stdout, so a stdio server's MCP output stays clean. Nothing flushes
 * synchronously at exit, so a broken file never holds the process. Failures never stop serving:
 * - a write the system refuses (ENOSPC, EIO, EPIPE…) keeps its lines and is retried every
 *   {@link RETRY_MS}; a retry that succeeds loses nothing. Once writes have failed for
 *   {@link GIVE_UP_MS} without one succeeding, every line still waiting is given up;
 * - past {@link MAX_BUFFER_BYTES} waiting (a slow or failing file), a new line is dropped;
 * - a file that cannot be opened loses every line;
 * - lines still waiting when {@link AuditTrail.close} gives up ({@link CLOSE_WAIT_MS}) are lost.
 * Each lost line is counted once ({@link AuditTrail.linesLost}, the `onLinesLost` callback:
 * lib/ops/metrics `mcpx_audit_lines_lost_total`); each refused open or write, and each drop, is a
 * failure ({@link AuditTrail.failures}, `onFailure`: `mcpx_audit_failures_total`), which says the
 * trail is in trouble, not how much of it is missing. Only the first failure is logged.
 * A line cut short by a write that was given up is ended by a newline before the next line, so each
 * line of the file stays one JSON text or one torn line, never two lines run together.
 *
 * Line keys: `time` (ISO 8601), `principal` (`oauth:<issuer>#<subject>`, `token:<name>`, `local`,
 * or `anonymous`; never a credential), `endpoint` (`/mcp` or `/mcp/<name>`), `era`, `revision`,
 * `session` (first 128 bits of SHA-256 of the legacy session id, hex; absent without a session),
 * `method`, `name` (as exposed; the URI for resources), `via` (`call_tool` for the inner call of a
 * tool-search endpoint's call_tool, docs/discovery.md), `upstream` and `upstreamName` (the
 * upstream's own name of the thing), `outcome` (`ok`, `tool_error`, `error`, `denied`,
 * `rate_limited`, `declined`: the user declined the confirmation), `code` (JSON-RPC code, for `error`),
 * `durationMs`, `confirmation` and `confirmMs` (a gated call: lib/dispatch/confirm-gate.ts), `requestId`, and, by
 * `arguments`: nothing (`none`), `argumentKeys` (`keys`), or `arguments` itself (`full`).
 */
import { createHash } from 'node:crypto'
import { close as closeFd, mkdir, open, write } from 'node:fs'
import { dirname } from 'node:path'
import { McpxError } from '../base/errors.js'
import type { Logger } from '../telemetry/log.js'
import type { RequestId } from '../protocol/jsonrpc.js'

/** `audit` as configured. */
export interface AuditConfig {
  /** A file to append to, or `"-"` for stderr. */
  file: string
  /** How much of a call's arguments a line carries. Default `none`. */
  arguments: 'none' | 'keys' | 'full'
}

/** Outcomes a line can record. */
export type AuditOutcome = 'ok' | 'tool_error' | 'error' | 'denied' | 'rate_limited' | 'declined'

/** What the dispatcher knows of one audited request. */
export interface AuditEvent {
  principal: string
  endpoint: string
  era: string
  revision: string
  sessionId?: string
  method: string
  name?: string
  /** `call_tool` when the call came through a tool-search endpoint's call_tool (docs/discovery.md); `name` is then the inner tool's. */
  via?: string
  upstream?: string
  upstreamName?: string
  outcome: AuditOutcome
  code?: number
  durationMs: number
  /** What the confirmation gate decided (docs/policy.md › Confirmation): `asked`, `confirmed`, `declined`, `refused`; absent when not gated. */
  confirmation?: 'asked' | 'confirmed' | 'declined' | 'refused'
  /** The time the user took to answer the gate's question, ms. */
  confirmMs?: number
  /** The request's id as sent (a big number kept as raw text serialises as a number). */
  requestId: RequestId
  arguments?: Record<string, unknown>
}

/**
 * A pinned definition's event (lib/policy/integrity.ts; docs/policy.md › Integrity): a line with
 * `event` instead of `method`. `principal` is who approved or rejected (never a credential).
 */
export interface IntegrityAuditEvent {
  event: 'definition_changed' | 'possible_shadowing' | 'definition_approved' | 'definition_rejected'
  upstream: string
  kind: 'tool' | 'prompt' | 'template'
  /** The upstream's own name of the item. */
  name: string
  /** SHA-256 (hex) of the definition seen, approved or rejected. */
  hash?: string
  /** SHA-256 of the definition pinned before. */
  pinnedHash?: string
  /** definition_changed: how it differs (`changed`, `new`, `renamed`), and what mcpx did (`served`, `hidden`). */
  change?: string
  action?: 'served' | 'hidden'
  renamedFrom?: string
  /** possible_shadowing: the upstreams whose item it copies, and by what (`name`, `description`). */
  shadows?: Array<{ upstream: string, by: 'name' | 'description' }>
  principal?: string
}

/**
 * A grant of an `oauth-user` upstream asked for, given or taken (docs/upstreams.md › Upstream
 * identity): `consent_required` (a call met no grant; the caller was sent the consent link),
 * `consent_granted` (the callback stored the grant), `consent_revoked` (the operator revoked it, or a
 * refresh failed: `reason`). Never a token, code or link.
 */
export interface ConsentAuditEvent {
  event: 'consent_required' | 'consent_granted' | 'consent_revoked'
  principal: string
  upstream: string
  /** consent_revoked: `operator`, `refresh_failed`, `unauthorized` or `expired`. */
  reason?: string
}

/**
 * Why lines were lost, or what failed: `write` (the file could not be opened or written; for a
 * failure, one refused open or write; for a loss, lines given up), or `dropped` (the buffer was full).
 */
export type AuditFailure = 'write' | 'dropped'

/** Most bytes waiting to be written while the file is slow or failing; past it a new line is dropped (and counted). */
export const MAX_BUFFER_BYTES = 16 * 1024 * 1024

/** Wait before retrying a write the system refused, ms. */
export const RETRY_MS = 1_000

/** How long writes may keep failing, none succeeding, before the lines waiting are given up (lost, counted), ms. */
export const GIVE_UP_MS = 5_000

/** Longest wait for the trail to flush at shutdown, ms. */
export const CLOSE_WAIT_MS = 2_000

/** Wait before retrying a write refused as EAGAIN or EBUSY (a non-blocking stderr pipe that is full): slowness, not failure, ms. */
const BUSY_RETRY_MS = 100

/** Most bytes handed to one write(2). */
const MAX_WRITE_BYTES = 64 * 1024

/** Paths that are the process's stdout: refused in stdio mode (they would corrupt the MCP output). */
const STDOUT_PATHS = new Set(['/dev/stdout', '/dev/fd/1', '/proc/self/fd/1'])

/** Options of {@link createAuditTrail}. */
export interface AuditOptions {
  /** The first failure is logged here (error), once. */
  logger: Logger
  /** Called for every refused open or write and every dropped line (lib/ops/metrics counts them). Must not throw. */
  onFailure?: (reason: AuditFailure) => void
  /** Called when lines are lost for good, with how many (lib/ops/metrics counts them). Must not throw. */
  onLinesLost?: (reason: AuditFailure, lines: number) => void
  /** stdio mode: a file that is stdout is refused (McpxError MCPX_ERR_CONFIG). */
  stdio?: boolean
}

/** The first 128 bits of SHA-256 of a session id, hex: lines can be grouped by session without holding the id. */
export function sessionHash (sessionId: string): string {
  return createHash('sha256').update(sessionId).digest('hex').slice(0, 32)
}

/** Lines taken from the queue for one write: their bytes, where each line ends in them, and how many bytes are written. */
interface Batch {
  bytes: Buffer
  /** Offset just past each line's newline. */
  ends: number[]
  /** 1 when the batch opens with the newline that ends a torn line, else 0. */
  start: number
  written: number
}

/** An open audit trail. */
export class AuditTrail {
  /** Opens and writes the system refused, and lines dropped at the buffer bound, so far. */
  failures = 0
  /** Lines lost for good so far. */
  linesLost = 0
  /** The file's descriptor; undefined while it opens, or when it could not be opened. */
  private fd: number | undefined
  private broken = false
  /** Lines not yet in a write, oldest first, and their bytes. */
  private readonly queue: string[] = []
  private queuedBytes = 0
  private batch: Batch | undefined
  private writing = false
  private retry: NodeJS.Timeout | undefined
  /** When the first of the writes failing now failed (Date.now()); undefined while writes succeed. */
  private failingSince: number | undefined
  /** The last line given up was partly written: the next write starts with a newline. */
  private torn = false
  private closing = false
  private ended = false
  /** Called once nothing waits (close() waits on it). */
  private settled: (() => void) | undefined
  private logged = false

  constructor (readonly config: AuditConfig, private readonly options: AuditOptions) {
    const file = config.file
    if (options.stdio === true && STDOUT_PATHS.has(file)) {
      throw new McpxError('MCPX_ERR_CONFIG', `mcpx: audit.file ${JSON.stringify(file)} is stdout, which carries MCP in mcpx serve; use "-" (stderr) or a file`)
    }
    if (file === '-') this.fd = 2
    else this.open(file)
  }

  /** Writes one line. Never throws, never blocks on the disk. */
  record (event: AuditEvent | ConsentAuditEvent): void {
    const { sessionId, arguments: args, ...rest } = event as AuditEvent & { sessionId?: string, arguments?: Record<string, unknown> }
    const line: Record<string, unknown> = { time: new Date().toISOString(), ...rest }
    if (sessionId !== undefined) line.session = sessionHash(sessionId)
    if (args !== undefined && this.config.arguments === 'keys') line.argumentKeys = Object.keys(args)
    if (args !== undefined && this.config.arguments === 'full') line.arguments = args
    this.enqueue(line)
  }

  /** Writes one integrity line (`time`, then the event's keys). Never throws, never blocks on the disk. */
  recordIntegrity (event: IntegrityAuditEvent): void {
    this.enqueue({ time: new Date().toISOString(), ...event })
  }

  private enqueue (line: Record<string, unknown>): void {
    if (this.broken || this.ended) { this.lost('write', 1); return }
    const text = JSON.stringify(line) + '\n'
    const bytes = Buffer.byteLength(text)
    const waiting = this.queuedBytes + (this.batch === undefined ? 0 : this.batch.bytes.length - this.batch.written)
    if (waiting + bytes > MAX_BUFFER_BYTES) {
      this.failed('dropped')
      this.lost('dropped', 1)
      return
    }
    this.queue.push(text)
    this.queuedBytes += bytes
    this.pump()
  }

  /**
   * Writes what waits (at most {@link CLOSE_WAIT_MS}; a write refused now is not retried) and closes
   * the file (not stderr). Lines still waiting then are lost, and counted. Never rejects.
   */
  async close (): Promise<void> {
    if (this.closing) return
    this.closing = true
    if (this.retry !== undefined) {
      clearTimeout(this.retry)
      this.retry = undefined
    }
    await new Promise<void>(resolve => {
      const timer = setTimeout(resolve, CLOSE_WAIT_MS)
      this.settled = () => { clearTimeout(timer); resolve() }
      this.pump()
    })
    this.settled = undefined
    this.ended = true
    clearTimeout(this.retry)
    this.retry = undefined
    this.giveUp()
    if (!this.writing) this.closeFile()
  }

  private open (file: string): void {
    const refused = (err: NodeJS.ErrnoException): void => {
      this.broken = true
      this.failed('write', err)
      this.giveUp()
      this.settled?.()
    }
    mkdir(dirname(file), { recursive: true }, err => {
      if (err !== null) { refused(err); return }
      open(file, 'a', (err, fd) => {
        if (err !== null) { refused(err); return }
        this.fd = fd
        if (this.ended) this.closeFile()
        else this.pump()
      })
    })
  }

  /** Starts the next write, unless one is in flight, a retry is pending or the file is not open; tells close() once nothing waits. */
  private pump (): void {
    if (this.writing || this.retry !== undefined || this.ended) return
    if (this.batch === undefined && this.queue.length === 0) { this.settled?.(); return }
    const fd = this.fd
    if (fd === undefined) return // still opening: open() pumps
    const batch = this.batch ?? (this.batch = this.take())
    this.writing = true
    write(fd, batch.bytes, batch.written, batch.bytes.length - batch.written, null, (err, n) => {
      this.writing = false
      if (this.ended) { this.closeFile(); return }
      if (err !== null) { this.refused(err); return }
      this.failingSince = undefined
      batch.written += n
      if (batch.written >= batch.bytes.length) this.batch = undefined
      this.pump()
    })
  }

  /** Takes the oldest lines, up to {@link MAX_WRITE_BYTES} (at least one), into a batch. */
  private take (): Batch {
    const start = this.torn ? 1 : 0
    this.torn = false
    const ends: number[] = []
    let size = start
    let count = 0
    while (count < this.queue.length) {
      const length = Buffer.byteLength(this.queue[count])
      if (count > 0 && size + length > MAX_WRITE_BYTES) break
      size += length
      ends.push(size)
      count++
    }
    const lines = this.queue.splice(0, count)
    this.queuedBytes -= size - start
    return { bytes: Buffer.from((start === 1 ? '\n' : '') + lines.join('')), ends, start, written: 0 }
  }

  /** A write failed: retried later, or, once writes have failed for GIVE_UP_MS (at close: at once), what waits is given up. */
  private refused (err: NodeJS.ErrnoException): void {
    if (err.code === 'EAGAIN' || err.code === 'EBUSY') { this.later(BUSY_RETRY_MS); return }
    this.failed('write', err)
    const now = Date.now()
    this.failingSince ??= now
    if (!this.closing && now - this.failingSince < GIVE_UP_MS) { this.later(RETRY_MS); return }
    this.failingSince = undefined
    this.giveUp()
    this.pump()
  }

  private later (ms: number): void {
    this.retry = setTimeout(() => { this.retry = undefined; this.pump() }, ms)
    this.retry.unref()
  }

  /** Drops every line waiting (the batch's unwritten lines and the queue) and counts them lost. */
  private giveUp (): void {
    let lines = this.queue.length
    const batch = this.batch
    if (batch !== undefined) {
      lines += batch.ends.filter(end => end > batch.written).length
      // Torn: its opening newline is unwritten, or the write stopped inside a line.
      this.torn = batch.written < batch.start || (batch.written > batch.start && !batch.ends.includes(batch.written))
    }
    this.batch = undefined
    this.queue.length = 0
    this.queuedBytes = 0
    if (lines > 0) this.lost('write', lines)
  }

  private closeFile (): void {
    const fd = this.fd
    this.fd = undefined
    if (fd !== undefined && fd !== 2) closeFd(fd, () => {})
  }

  private lost (reason: AuditFailure, lines: number): void {
    this.linesLost += lines
    this.options.onLinesLost?.(reason, lines)
  }

  private failed (reason: AuditFailure, err?: unknown): void {
    this.failures++
    this.options.onFailure?.(reason)
    if (this.logged) return
    this.logged = true
    // The file name is config, not a secret; the error says what the system said (ENOSPC, ENOTDIR…).
    this.options.logger.error({ err, file: this.config.file, reason }, `audit trail: ${reason === 'dropped' ? 'a line was dropped, its buffer is full' : 'a write failed'} (lines lost are counted in mcpx_audit_lines_lost_total; logged once)`)
  }
}

/** Opens the trail of `config.audit`, or undefined when none is configured. Throws as {@link AuditTrail}'s constructor. */
export function createAuditTrail (config: AuditConfig | undefined, options: AuditOptions): AuditTrail | undefined {
  return config === undefined ? undefined : new AuditTrail(config, options)
}
