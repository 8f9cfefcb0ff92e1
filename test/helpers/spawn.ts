/**
 * spawnServe(t, { config }): a real `node dist/cli.js serve --config <tmp>` child for e2e tests.
 * Every stdout line is kept (raw text and parsed), so a test can check that stdout carries only
 * JSON-RPC frames; stderr (mcpx's log, fd 2) is kept as text for failure messages.
 * Waiting is on events only (a line arrives, 'exit'), each with a generous timeout.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** Absolute path of the compiled CLI (dist/cli.js); this file runs as dist/test/helpers/spawn.js. */
export const CLI_PATH = fileURLToPath(new URL('../../cli.js', import.meta.url))

/** Default wait for one event, in ms: generous, because CI machines are slow. */
export const DEFAULT_WAIT_MS = 20_000

/** The subset of tap's Test this helper needs. */
export interface Teardown { teardown: (fn: () => unknown) => void }

/** A JSON-RPC message as a test sees it (parsed with JSON.parse). */
export type Message = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

export interface ServeChild {
  child: ChildProcess
  /** Every stdout line so far, raw, in arrival order (without the `\n`). */
  lines: string[]
  /** `lines` parsed with JSON.parse (undefined where a line is not JSON: that is a test failure). */
  messages: unknown[]
  /** Writes one line: an object is JSON-encoded, a string is written as-is; `\n` is appended. */
  send: (message: object | string) => void
  /** Sends a request and resolves with the response whose id equals its id (a line with `result` or `error`). */
  request: (message: Message, timeoutMs?: number) => Promise<Message>
  /**
   * Resolves with the first message at index ≥ `after` (default 0) for which `pred` is true,
   * already received or yet to come; rejects after `timeoutMs` (default {@link DEFAULT_WAIT_MS}).
   */
  nextMessage: (pred: (m: Message) => boolean, options?: { after?: number, timeoutMs?: number }) => Promise<Message>
  /** mcpx's stderr so far. */
  stderr: () => string
  /** Closes the child's stdin (EOF). */
  end: () => void
  /** Resolves when the child exited and its output was read ({@link exitOf}). */
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
  /** The config file it was started with (a test may rewrite it and send SIGHUP). */
  file: string
}

/** After a child exited, how long its stdout and stderr may take to end before {@link exitOf} resolves anyway (ms). */
export const DRAIN_AFTER_EXIT_MS = 5_000

/**
 * Resolves with how `child` ended once it exited AND its stdout and stderr ended, so that every
 * line it wrote has been read: 'exit' alone may come before the last chunks of its pipes. Bounded:
 * a grandchild that kept a pipe open does not hold it past {@link DRAIN_AFTER_EXIT_MS} after the exit.
 */
export async function exitOf (child: ChildProcess): Promise<{ code: number | null, signal: NodeJS.Signals | null }> {
  return await new Promise(resolve => {
    let timer: NodeJS.Timeout | undefined
    const done = (code: number | null, signal: NodeJS.Signals | null): void => { clearTimeout(timer); resolve({ code, signal }) }
    child.once('close', done)
    child.once('exit', (code, signal) => { timer = setTimeout(() => done(code, signal), DRAIN_AFTER_EXIT_MS) })
  })
}

/**
 * Writes `config` as JSON into a fresh temp directory (removed at teardown).
 * @returns the config file's absolute path
 */
export function writeConfig (t: Teardown, config: object): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-serve-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const file = join(dir, 'mcpx.config.json')
  writeFileSync(file, JSON.stringify(config))
  return file
}

/** The argv (after `node`) that runs `mcpx serve` on a config file. */
export function serveArgs (configFile: string): string[] {
  return [CLI_PATH, 'serve', '--config', configFile]
}

/**
 * Spawns `node dist/cli.js serve --config <tmp>` with `config` written to a temp file.
 * The child is SIGTERMed at teardown (SIGKILLed if it has not exited 5 s later), by its own pid.
 * @param options.env extra environment for the child
 * @param options.args extra arguments after `serve --config <file>` (e.g. `--server support`)
 */
export function spawnServe (t: Teardown, options: { config: object, env?: Record<string, string>, args?: string[] }): ServeChild {
  const file = writeConfig(t, options.config)
  const child = spawn(process.execPath, [...serveArgs(file), ...(options.args ?? [])], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env }
  })
  const lines: string[] = []
  const messages: unknown[] = []
  const waiters = new Set<() => void>()
  let stderrText = ''
  let partial = ''

  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (chunk: string) => {
    partial += chunk
    let newline
    while ((newline = partial.indexOf('\n')) !== -1) {
      const line = partial.slice(0, newline)
      partial = partial.slice(newline + 1)
      lines.push(line)
      let parsed: unknown
      try { parsed = JSON.parse(line) } catch { parsed = undefined }
      messages.push(parsed)
    }
    for (const wake of [...waiters]) wake()
  })
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (chunk: string) => { stderrText += chunk })
  child.stdin.on('error', () => {}) // EPIPE after the child exits is not the test's concern

  const exited = exitOf(child).then(result => {
    for (const wake of [...waiters]) wake()
    return result
  })

  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return
    const pid = child.pid
    try { process.kill(pid, 'SIGTERM') } catch { return }
    let timer: NodeJS.Timeout | undefined
    const killed = await Promise.race([exited.then(() => true), new Promise<boolean>(resolve => { timer = setTimeout(() => resolve(false), 5000) })])
    clearTimeout(timer)
    if (!killed && child.exitCode === null && child.signalCode === null) { try { process.kill(pid, 'SIGKILL') } catch {} }
  })

  const send = (message: object | string): void => {
    child.stdin.write((typeof message === 'string' ? message : JSON.stringify(message)) + '\n')
  }

  const nextMessage = (pred: (m: Message) => boolean, opts: { after?: number, timeoutMs?: number } = {}): Promise<Message> => {
    const timeoutMs = opts.timeoutMs ?? DEFAULT_WAIT_MS
    let index = opts.after ?? 0
    return new Promise<Message>((resolve, reject) => {
      const check = (): void => {
        for (; index < messages.length; index++) {
          const m = messages[index]
          if (typeof m === 'object' && m !== null && pred(m as Message)) { done(); resolve(m as Message); return }
        }
        if (child.exitCode !== null || child.signalCode !== null) {
          done()
          reject(new Error(`mcpx exited (${String(child.exitCode ?? child.signalCode)}) before the expected message\nstdout:\n${lines.join('\n')}\nstderr:\n${stderrText}`))
        }
      }
      const timer = setTimeout(() => {
        done()
        reject(new Error(`no matching message within ${timeoutMs} ms\nstdout:\n${lines.join('\n')}\nstderr (tail):\n${stderrText.slice(-4000)}`))
      }, timeoutMs)
      const done = (): void => { clearTimeout(timer); waiters.delete(check) }
      waiters.add(check)
      check()
    })
  }

  const request = (message: Message, timeoutMs?: number): Promise<Message> => {
    const after = messages.length
    send(message)
    return nextMessage(m => m.id === message.id && (Object.hasOwn(m, 'result') || Object.hasOwn(m, 'error')), { after, timeoutMs })
  }

  return {
    child,
    lines,
    messages,
    send,
    request,
    nextMessage,
    stderr: () => stderrText,
    end: () => { child.stdin.end() },
    exited,
    file
  }
}
