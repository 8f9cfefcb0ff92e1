/**
 * The stdio transport of an upstream: spawns the child, frames JSON-RPC as newline-delimited JSON
 * on its stdin/stdout (MCP stdio transport: one message per line, no embedded newlines), records
 * how it ended, and kills it with a grace period. mcpx's own framing, not the SDK's: one
 * `JSON.parse` per line and no schema pass (the SDK's ReadBuffer zod-validates every message and
 * concatenates buffers per chunk). It still has the SDK `Transport` shape, so the SDK client runs
 * the handshake over it; the `stderr` and `pid` properties make the client probe the era IN PLACE
 * (see ./README.md). Calls write their frames with {@link StdioUpstreamTransport.write}.
 * Sources: DIGEST §6b (stdio upstreams); MCP 2025-11-25 transports › stdio.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { PassThrough } from 'node:stream'
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client'
import { getDefaultEnvironment } from '@modelcontextprotocol/client/stdio'
import { isObject } from '../jsonrpc.js'

/** SIGTERM → SIGKILL grace when killing a child (ms). */
export const KILL_GRACE_MS = 2_000
/** After a killed child exited, how long its pipes may take to close before we destroy them (ms). */
export const PIPE_DRAIN_MS = 500
/**
 * Longest line (bytes, without its newline) accepted from an upstream's stdout: the SDK transport's
 * bound (10 MiB), kept. Past it the child is killed as broken (and restarted with backoff). Issue #20
 * makes it per upstream through the constructor's `maxMessageBytes`.
 */
export const DEFAULT_MAX_MESSAGE_BYTES = 10 * 1024 * 1024

/** How to start one stdio upstream (config `command`, `args`, `env`, `cwd`). */
export interface StdioUpstreamParams {
  command: string
  args?: string[]
  /** Added to the SDK's default inherited environment (PATH, HOME, …), as the SDK transport did. */
  env?: Record<string, string>
  cwd?: string
  /** Bound of one incoming line (bytes); default {@link DEFAULT_MAX_MESSAGE_BYTES}. */
  maxMessageBytes?: number
}

const NEWLINE = 0x0a

/** One child process speaking newline-delimited JSON-RPC. */
export class StdioUpstreamTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void
  child: ChildProcess | undefined
  /** How the child ended on its own (`code 3`, `signal SIGSEGV`, `spawn failed: ENOENT`); unset when mcpx killed it. */
  exitInfo: string | undefined
  exited: Promise<void> = Promise.resolve()
  /** The child's stderr, available before start() so no early line is lost. */
  readonly stderr = new PassThrough()
  private readonly maxMessageBytes: number
  /** The bytes of an incomplete line, waiting for its newline. */
  private partial: Buffer[] = []
  private partialBytes = 0
  /** Set by kill(): a start() that has not spawned yet must not spawn at all. */
  private killed = false

  constructor (private readonly params: StdioUpstreamParams) {
    this.maxMessageBytes = params.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES
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
    child.stdout?.on('data', (chunk: Buffer) => { this.read(chunk) })
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
    if (!stdin.write(JSON.stringify(message) + '\n')) await new Promise(resolve => stdin.once('drain', resolve))
  }

  /**
   * Writes one frame (a serialised message followed by '\n') for a call. Node queues it when the
   * pipe is full. @returns false when the child's stdin is gone. Never throws.
   */
  write (frame: string): boolean {
    const stdin = this.child?.stdin
    if (stdin == null || stdin.destroyed || !stdin.writable) return false
    stdin.write(frame)
    return true
  }

  /** Closes the connection: kills the child (see kill) and resolves once it exited. */
  async close (): Promise<void> {
    await this.kill(KILL_GRACE_MS)
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited. Never throws. */
  async kill (graceMs: number): Promise<void> {
    this.killed = true
    const child = this.child
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
    try { child.stdin?.end() } catch {}
    try { child.kill('SIGTERM') } catch {}
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

  /** Splits stdout into lines (a line may span chunks) and delivers each. */
  private read (chunk: Buffer): void {
    let start = 0
    let newline = chunk.indexOf(NEWLINE)
    if (this.partialBytes > 0 && newline !== -1) {
      this.partial.push(chunk.subarray(0, newline))
      const line = Buffer.concat(this.partial, this.partialBytes + newline).toString('utf8')
      this.partial = []
      this.partialBytes = 0
      this.deliver(line)
      start = newline + 1
      newline = chunk.indexOf(NEWLINE, start)
    }
    while (newline !== -1) {
      this.deliver(chunk.toString('utf8', start, newline))
      start = newline + 1
      newline = chunk.indexOf(NEWLINE, start)
    }
    if (start === chunk.length) return
    this.partialBytes += chunk.length - start
    if (this.partialBytes > this.maxMessageBytes) {
      this.partial = []
      this.partialBytes = 0
      this.onerror?.(new Error(`upstream sent a message longer than ${this.maxMessageBytes} bytes`))
      void this.kill(KILL_GRACE_MS)
      return
    }
    this.partial.push(start === 0 ? chunk : chunk.subarray(start))
  }

  /** Parses one line and hands it on; a line that is not a JSON object is reported and skipped. */
  private deliver (line: string): void {
    const text = line.endsWith('\r') ? line.slice(0, -1) : line
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
