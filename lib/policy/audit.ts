/**
 * The audit trail (docs/policy.md › Audit; config `audit`): one JSON line per `tools/call`,
 * `prompts/get` and `resources/read`, and one per policy denial or rate-limit refusal of any
 * method. Written by the dispatcher (lib/dispatch/dispatcher.ts), so every transport and era is audited alike.
 *
 * Lines are written asynchronously through sonic-boom (the writer under pino's destinations; used
 * directly so that no exit hook flushes synchronously into a broken file), to a file (appended,
 * its directory created) or, for `"-"`, to stderr; never to stdout, so a stdio server's MCP output
 * stays clean. Failures never stop serving: a file that cannot be opened, a full disk (ENOSPC), or
 * a buffer past {@link MAX_BUFFER_BYTES} while the disk is slow, each lost line is counted
 * ({@link AuditTrail.failures}, and the `onFailure` callback: lib/ops/metrics `mcpx_audit_failures_total`)
 * and only the first failure is logged.
 *
 * Line keys: `time` (ISO 8601), `principal` (`oauth:<issuer>#<subject>`, `token:<name>`, `local`,
 * or `anonymous`; never a credential), `endpoint` (`/mcp` or `/mcp/<name>`), `era`, `revision`,
 * `session` (first 128 bits of SHA-256 of the legacy session id, hex; absent without a session),
 * `method`, `name` (as exposed; the URI for resources), `upstream` and `upstreamName` (the
 * upstream's own name of the thing), `outcome` (`ok`, `tool_error`, `error`, `denied`,
 * `rate_limited`), `code` (JSON-RPC code, for `error`), `durationMs`, `requestId`, and, by
 * `arguments`: nothing (`none`), `argumentKeys` (`keys`), or `arguments` itself (`full`).
 */
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { McpxError } from '../base/errors.js'
import type { Logger } from '../telemetry/log.js'
import type { RequestId } from '../protocol/jsonrpc.js'

// sonic-boom is CommonJS without a named ESM export Node can detect: required, typed from its own declarations.
const { SonicBoom } = createRequire(import.meta.url)('sonic-boom') as typeof import('sonic-boom')
type SonicBoom = InstanceType<typeof SonicBoom>

/** `audit` as configured. */
export interface AuditConfig {
  /** A file to append to, or `"-"` for stderr. */
  file: string
  /** How much of a call's arguments a line carries. Default `none`. */
  arguments: 'none' | 'keys' | 'full'
}

/** Outcomes a line can record. */
export type AuditOutcome = 'ok' | 'tool_error' | 'error' | 'denied' | 'rate_limited'

/** What the dispatcher knows of one audited request. */
export interface AuditEvent {
  principal: string
  endpoint: string
  era: string
  revision: string
  sessionId?: string
  method: string
  name?: string
  upstream?: string
  upstreamName?: string
  outcome: AuditOutcome
  code?: number
  durationMs: number
  /** The request's id as sent (a big number kept as raw text serialises as a number). */
  requestId: RequestId
  arguments?: Record<string, unknown>
}

/** Why a line was lost: the writer failed (open, ENOSPC, EIO…), or its buffer was full. */
export type AuditFailure = 'write' | 'dropped'

/** Most bytes buffered while the file is slow; past it lines are dropped (and counted). */
export const MAX_BUFFER_BYTES = 16 * 1024 * 1024

/** Longest wait for the trail to flush at shutdown, ms. */
const CLOSE_WAIT_MS = 2_000

/** Paths that are the process's stdout: refused in stdio mode (they would corrupt the MCP output). */
const STDOUT_PATHS = new Set(['/dev/stdout', '/dev/fd/1', '/proc/self/fd/1'])

/** Options of {@link createAuditTrail}. */
export interface AuditOptions {
  /** The first failure is logged here (error), once. */
  logger: Logger
  /** Called for every lost line (lib/ops/metrics counts them). Must not throw. */
  onFailure?: (reason: AuditFailure) => void
  /** stdio mode: a file that is stdout is refused (McpxError MCPX_ERR_CONFIG). */
  stdio?: boolean
}

/** The first 128 bits of SHA-256 of a session id, hex: lines can be grouped by session without holding the id. */
export function sessionHash (sessionId: string): string {
  return createHash('sha256').update(sessionId).digest('hex').slice(0, 32)
}

/** An open audit trail. */
export class AuditTrail {
  /** Lines lost so far (write failures and drops). */
  failures = 0
  private readonly out: SonicBoom
  private logged = false
  private broken = false

  constructor (readonly config: AuditConfig, private readonly options: AuditOptions) {
    const file = config.file
    if (options.stdio === true && STDOUT_PATHS.has(file)) {
      throw new McpxError('MCPX_ERR_CONFIG', `mcpx: audit.file ${JSON.stringify(file)} is stdout, which carries MCP in mcpx serve; use "-" (stderr) or a file`)
    }
    this.out = file === '-'
      ? new SonicBoom({ fd: 2, sync: false, maxLength: MAX_BUFFER_BYTES })
      : new SonicBoom({ dest: file, append: true, mkdir: true, sync: false, maxLength: MAX_BUFFER_BYTES })
    this.out.on('error', (err: NodeJS.ErrnoException) => {
      // An open that failed leaves no file descriptor: every later line is lost, and counted, without a write.
      if (err.syscall === 'open' || err.syscall === 'mkdir') this.broken = true
      this.failed('write', err)
    })
    this.out.on('drop', () => { this.failed('dropped') })
  }

  /** Writes one line. Never throws, never blocks on the disk. */
  record (event: AuditEvent): void {
    const { sessionId, arguments: args, ...rest } = event
    const line: Record<string, unknown> = { time: new Date().toISOString(), ...rest }
    if (sessionId !== undefined) line.session = sessionHash(sessionId)
    if (args !== undefined && this.config.arguments === 'keys') line.argumentKeys = Object.keys(args)
    if (args !== undefined && this.config.arguments === 'full') line.arguments = args
    if (this.broken) { this.failed('write'); return }
    try {
      this.out.write(JSON.stringify(line) + '\n')
    } catch (err) {
      this.failed('write', err)
    }
  }

  /** Flushes what is buffered and closes the file (not stderr). Never rejects. */
  async close (): Promise<void> {
    if (this.broken) return
    await new Promise<void>(resolve => {
      // Bounded: a file that keeps failing (ENOSPC) must not hold shutdown.
      const timer = setTimeout(resolve, CLOSE_WAIT_MS)
      const done = (): void => { clearTimeout(timer); resolve() }
      this.out.once('close', done)
      this.out.once('error', done)
      try { this.out.end() } catch { done() }
    })
  }

  private failed (reason: AuditFailure, err?: unknown): void {
    this.failures++
    this.options.onFailure?.(reason)
    if (this.logged) return
    this.logged = true
    // The file name is config, not a secret; the error says what the system said (ENOSPC, ENOTDIR…).
    this.options.logger.error({ err, file: this.config.file, reason }, 'audit trail: a line could not be written (counted in mcpx_audit_failures_total; logged once)')
  }
}

/** Opens the trail of `config.audit`, or undefined when none is configured. Throws as {@link AuditTrail}'s constructor. */
export function createAuditTrail (config: AuditConfig | undefined, options: AuditOptions): AuditTrail | undefined {
  return config === undefined ? undefined : new AuditTrail(config, options)
}
