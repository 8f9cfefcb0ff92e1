/**
 * The stdio transport of an upstream: spawns the child, frames JSON-RPC as newline-delimited JSON
 * on its stdin/stdout (MCP stdio transport: one message per line, no embedded newlines), records
 * how it ended, and kills it with a grace period. mcpx's own framing, not the SDK's: one
 * `JSON.parse` per line and no schema pass (the SDK's ReadBuffer zod-validates every message and
 * concatenates buffers per chunk). It still has the SDK `Transport` shape, so the SDK client runs
 * the handshake over it; the `stderr` and `pid` properties make the client probe the era IN PLACE
 * (see ./README.md). Calls write their frames with {@link StdioUpstreamTransport.write}, batched:
 * every frame of one event-loop turn leaves in one `stdin.write` (one write per call was
 * the daemon's largest single cost under load).
 * Sources: DIGEST §6b (stdio upstreams); MCP 2025-11-25 transports › stdio.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { PassThrough, type Writable } from 'node:stream'
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client'
import { getDefaultEnvironment } from '@modelcontextprotocol/client/stdio'
import { isObject } from '../protocol/jsonrpc.js'
import { LineSplitter, recoverResponseId, type LineSink } from '../protocol/lines.js'
import { DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_STREAM_BUFFER_BYTES } from './config.js'

/** SIGTERM → SIGKILL grace when killing a child (ms). */
export const KILL_GRACE_MS = 2_000
/**
 * How long a child may take to exit on its own once its stdin is closed, before SIGTERM (ms): the
 * MCP stdio shutdown (close the input, wait for the server to exit, then SIGTERM). It is also the
 * child's time to read and act on the `notifications/cancelled` written just before (cancels are
 * delivered before exit): a SIGTERM sent at once could end it before it read them.
 */
export const EOF_GRACE_MS = 1_000
/** After a killed child exited, how long its pipes may take to close before we destroy them (ms). */
export const PIPE_DRAIN_MS = 500
/** How to start one stdio upstream (config `command`, `args`, `env`, `cwd`). */
export interface StdioUpstreamParams {
  command: string
  args?: string[]
  /** Added to the SDK's default inherited environment (PATH, HOME, …), as the SDK transport did. */
  env?: Record<string, string>
  cwd?: string
  /**
   * Bound of one incoming line (bytes, without its newline); default {@link DEFAULT_MAX_MESSAGE_BYTES}
   * (16 MiB). A longer line is skipped to its newline (never buffered whole) and reported through
   * `onoversized`; the child keeps running (newline framing always recovers).
   */
  maxMessageBytes?: number
  /**
   * High-water mark of the child's stdin, bytes (default {@link DEFAULT_STREAM_BUFFER_BYTES}): once
   * a write found the pipe full and more than this waits in mcpx, {@link StdioUpstreamTransport.congested}
   * is true until 'drain', and calls wait before writing (link.ts).
   */
  highWaterBytes?: number
}

/** One child process speaking newline-delimited JSON-RPC. */
export class StdioUpstreamTransport implements Transport, LineSink {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void
  /**
   * A line over `maxMessageBytes` was skipped: its size (bytes), and the id of the response it
   * carried when its first or last bytes tell it (see lines.ts recoverResponseId).
   */
  onoversized?: (bytes: number, id: string | number | undefined) => void
  child: ChildProcess | undefined
  /** How the child ended on its own (`code 3`, `signal SIGSEGV`, `spawn failed: ENOENT`); unset when mcpx killed it. */
  exitInfo: string | undefined
  exited: Promise<void> = Promise.resolve()
  /** The child's stderr, available before start() so no early line is lost. */
  readonly stderr = new PassThrough()
  /** Bound of one incoming line, bytes. */
  readonly maxMessageBytes: number
  /** High-water mark of the child's stdin, bytes. */
  readonly highWaterBytes: number
  /** The one wait for the child's stdin to drain, shared by every call held back (no listener per call). */
  private drainWait: Promise<void> | undefined
  /**
   * Frames written by calls since the last flush, joined, for this child's stdin only (a transport
   * has one child: a restarted upstream gets a new transport, so no frame reaches the next child).
   * Empty: nothing pending and no flush scheduled by it.
   */
  private batch = ''
  /** Flushes the batch at the end of the loop turn (setImmediate), bound once. */
  private readonly flushSoon = (): void => { this.flush() }
  private readonly lines: LineSplitter
  /** Set by kill(): a start() that has not spawned yet must not spawn at all. */
  private killed = false

  constructor (private readonly params: StdioUpstreamParams) {
    this.maxMessageBytes = params.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES
    this.lines = new LineSplitter(this.maxMessageBytes, this)
    this.highWaterBytes = params.highWaterBytes ?? DEFAULT_STREAM_BUFFER_BYTES
  }

  /** The child's pid once spawned (null before), as the SDK transport reports it. */
  get pid (): number | null {
    return this.child?.pid ?? null
  }

  /** The child's pid while it runs (from spawn until exit). */
  get runningPid (): number | undefined {
    const child = this.child
    return child === undefined || child.exitCode !== null || child.signalCode !== null ? undefined : child.pid
  }

  /** Spawns the child; resolves once it runs, rejects when it cannot be spawned (ENOENT…). */
  async start (): Promise<void> {
    if (this.killed) throw new Error('upstream closed before its child was spawned')
    if (this.child !== undefined) throw new Error('stdio upstream transport already started')
    const child = spawn(this.params.command, this.params.args ?? [], {
      env: { ...getDefaultEnvironment(), ...this.params.env },
      stdio: ['pipe', 'pipe', 'pipe'],
      shell: false,
      windowsHide: process.platform === 'win32',
      cwd: this.params.cwd
    })
    this.child = child
    this.exited = new Promise(resolve => {
      child.once('exit', (code, signal) => {
        if (!this.killed) this.exitInfo ??= signal !== null ? `signal ${signal}` : `code ${String(code)}`
        resolve()
      })
      // A failed spawn (ENOENT) emits 'error' and 'close', never 'exit'.
      child.once('close', () => resolve())
      child.once('error', (err: NodeJS.ErrnoException) => {
        if (child.pid === undefined) { this.exitInfo ??= `spawn failed: ${err.code ?? err.message}`; resolve() }
      })
    })
    child.on('close', () => { this.onclose?.() })
    child.on('error', error => this.onerror?.(error))
    child.stdin?.on('error', error => this.onerror?.(error))
    child.stdout?.on('error', error => this.onerror?.(error))
    child.stdout?.on('data', (chunk: Buffer) => { this.lines.push(chunk) })
    child.stderr?.pipe(this.stderr)
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve)
      child.once('error', reject)
    })
  }

  /** Sends one message for the SDK client (handshake, listen, answers to questions). */
  async send (message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin
    if (stdin == null || stdin.destroyed) throw new Error('Not connected')
    this.flush() // the calls' frames written before it leave before it
    if (!stdin.write(JSON.stringify(message) + '\n')) await new Promise(resolve => stdin.once('drain', resolve))
  }

  /**
   * Writes one frame (a serialised message followed by '\n') for a call. The frame joins the batch
   * of this loop turn, handed to the child's stdin in one `write` at the turn's end (setImmediate,
   * after the poll phase: the requests of every socket read in that phase share it), or earlier by
   * {@link send} or {@link kill}, so frames keep their order; a batch that reaches the stream's own
   * high-water mark (`writableHighWaterMark`, 16 KiB) is handed over at once, so Node's backpressure
   * (`writableNeedDrain`, hence {@link congested}) sees it within the turn. Node queues the batch
   * when the pipe is full. A child that dies before the flush takes the batch's frames with it, as it would
   * have taken them from the pipe: their calls fail when the connection closes (Link.failAll).
   * @returns false, at once, when the child's stdin is gone (the frame is dropped). Never throws.
   */
  write (frame: string): boolean {
    const stdin = this.openStdin
    if (stdin === undefined) return false
    if (this.batch.length === 0) setImmediate(this.flushSoon)
    this.batch += frame
    if (this.batch.length >= stdin.writableHighWaterMark) this.flush()
    return true
  }

  /** Hands the pending batch to the child's stdin, if it is still there; a no-op when nothing is pending. Never throws. */
  private flush (): void {
    const batch = this.batch
    if (batch.length === 0) return
    this.batch = ''
    this.openStdin?.write(batch)
  }

  /** The child's stdin while it takes writes; undefined once it is gone, destroyed or ended. */
  private get openStdin (): Writable | undefined {
    const stdin = this.child?.stdin
    return stdin == null || stdin.destroyed || !stdin.writable ? undefined : stdin
  }

  /**
   * What waits in mcpx for the child's stdin: the pending batch and what Node queues, in string
   * length units (as Node counts a string chunk's `writableLength`; bytes for ASCII frames).
   */
  get buffered (): number {
    return this.batch.length + (this.child?.stdin?.writableLength ?? 0)
  }

  /**
   * True while the child is not reading fast enough: a write found its stdin pipe full, and more
   * than `highWaterBytes` wait in mcpx for it (the pending batch counted). Calls then wait for
   * {@link drained}.
   */
  get congested (): boolean {
    const stdin = this.child?.stdin
    return stdin != null && stdin.writableNeedDrain && this.buffered > this.highWaterBytes
  }

  /** Resolves once the child's stdin drains, or closes. One shared wait and one listener pair, whatever the number of waiting calls. */
  async drained (): Promise<void> {
    const stdin = this.child?.stdin
    if (stdin == null || stdin.destroyed) return
    this.drainWait ??= new Promise<void>(resolve => {
      const done = (): void => {
        stdin.off('drain', done)
        stdin.off('close', done)
        this.drainWait = undefined
        resolve()
      }
      stdin.on('drain', done)
      stdin.on('close', done)
    })
    await this.drainWait
  }

  /** Closes the connection: kills the child (see kill) and resolves once it exited. */
  async close (): Promise<void> {
    await this.kill(KILL_GRACE_MS)
  }

  /**
   * Ends the child: closes its stdin once every frame written so far (cancels included) is flushed,
   * gives it `eofGraceMs` to exit on its own, then SIGTERM, and SIGKILL after `graceMs`. Resolves
   * once it has exited. Never throws.
   * @param graceMs SIGTERM → SIGKILL, ms
   * @param eofGraceMs stdin closed → SIGTERM, ms (default {@link EOF_GRACE_MS}; 0: SIGTERM at once)
   */
  async kill (graceMs: number, eofGraceMs = EOF_GRACE_MS): Promise<void> {
    this.killed = true
    this.flush() // the batch is among the frames end() waits for
    const child = this.child
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
    const stdin = child.stdin
    if (eofGraceMs > 0 && stdin != null && stdin.writable) {
      let timer: NodeJS.Timeout | undefined
      const expired = new Promise<void>(resolve => { timer = setTimeout(resolve, eofGraceMs) })
      // end()'s callback runs once every earlier write is handed to the pipe ('finish').
      const flushed = new Promise<void>(resolve => { try { stdin.end(resolve) } catch { resolve() } })
      await Promise.race([flushed.then(async () => { await this.exited }), expired])
      clearTimeout(timer)
    } else {
      try { stdin?.end() } catch {}
    }
    if (child.exitCode === null && child.signalCode === null) try { child.kill('SIGTERM') } catch {}
    let timer: NodeJS.Timeout | undefined
    const killed = new Promise<void>(resolve => {
      timer = setTimeout(() => {
        try { child.kill('SIGKILL') } catch {}
        resolve()
      }, graceMs)
    })
    await Promise.race([this.exited, killed])
    clearTimeout(timer)
    await this.exited
    // The pipes normally close right after the exit (draining the last stderr lines); a grandchild
    // holding them would delay their 'close', and with it the connection's teardown, by seconds.
    if (child.stdout !== null && !child.stdout.closed) {
      let drainTimer: NodeJS.Timeout | undefined
      await Promise.race([
        new Promise(resolve => child.once('close', resolve)),
        new Promise(resolve => { drainTimer = setTimeout(resolve, PIPE_DRAIN_MS) })
      ])
      clearTimeout(drainTimer)
    }
    for (const stream of [child.stdin, child.stdout, child.stderr]) try { stream?.destroy() } catch {}
  }

  /** A line over maxMessageBytes was skipped (LineSink): reported, with the id it answered when readable. */
  oversized (bytes: number, head: Buffer, tail: Buffer): void {
    this.onoversized?.(bytes, recoverResponseId(head, tail))
  }

  /** Parses one line (LineSink) and hands it on; a line that is not a JSON object is reported and skipped. */
  line (bytes: Buffer, start: number, end: number): void {
    if (end > start && bytes[end - 1] === 0x0d) end--
    const text = bytes.toString('utf8', start, end)
    if (text.length === 0) return
    let message: unknown
    try {
      message = JSON.parse(text)
    } catch {
      this.onerror?.(new Error('upstream sent a line on stdout that is not JSON: skipped'))
      return
    }
    if (!isObject(message)) {
      this.onerror?.(new Error('upstream sent a line on stdout that is not a JSON-RPC message: skipped'))
      return
    }
    this.onmessage?.(message as JSONRPCMessage)
  }
}
