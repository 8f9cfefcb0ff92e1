/**
 * The transports of an upstream connection: the SDK's stdio transport (spawn, exit info, kill with
 * grace) and its Streamable HTTP transport, each with a send tap (see client.ts).
 */
import type { ChildProcess } from 'node:child_process'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'

/** SIGTERM → SIGKILL grace when killing a child (ms). */
export const KILL_GRACE_MS = 2_000
/** After a killed child exited, how long its pipes may take to close before we destroy them (ms). */
export const PIPE_DRAIN_MS = 500

/**
 * The SDK stdio transport, subclassed so the era probe runs in place (see module comment), with
 * the child's exit recorded (code/signal) and a kill that waits for the exit.
 */
export class UpstreamStdioTransport extends StdioClientTransport {
  child: ChildProcess | undefined
  /** How the child ended on its own (`code 3`, `signal SIGSEGV`, `spawn failed: ENOENT`); unset when mcpx killed it. */
  exitInfo: string | undefined
  exited: Promise<void> = Promise.resolve()
  onSend: ((message: unknown) => void) | undefined
  /** Set by kill(): a start() that has not spawned yet must not spawn at all. */
  private killed = false

  override async start (): Promise<void> {
    if (this.killed) throw new Error('upstream closed before its child was spawned')
    const started = super.start()
    // 2.4.0 spawns synchronously inside start() and keeps the child in the (TS-)private
    // `_process`: read it at once, so the child is tracked (pid, kill) from spawn, not only once
    // the connection is set up.
    const child = (this as unknown as { _process?: ChildProcess })._process
    if (child !== undefined) {
      this.child = child
      this.exited = new Promise(resolve => {
        if (child.exitCode !== null || child.signalCode !== null) { resolve(); return }
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
    }
    await started
  }

  /** The child's pid while it runs (from spawn until exit). */
  get runningPid (): number | undefined {
    const child = this.child
    return child === undefined || child.exitCode !== null || child.signalCode !== null ? undefined : child.pid
  }

  override async send (...args: Parameters<StdioClientTransport['send']>): Promise<void> {
    this.onSend?.(args[0])
    return await super.send(...args)
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
    // holding them would delay their 'close', and with it the SDK's close(), by seconds.
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
}

/** The SDK Streamable HTTP transport, with the same send tap. */
export class UpstreamHttpTransport extends StreamableHTTPClientTransport {
  onSend: ((message: unknown) => void) | undefined

  override async send (...args: Parameters<StreamableHTTPClientTransport['send']>): Promise<void> {
    this.onSend?.(args[0])
    return await super.send(...args)
  }
}
