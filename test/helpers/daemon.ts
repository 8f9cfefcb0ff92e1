/**
 * Helpers for the tests that run mcpx as a real process (`node dist/cli.js daemon`) or hold
 * real SSE streams: a free port, the daemon child with its parsed stdout log lines, an SSE reader
 * over a fetch Response, and a liveness check of a pid. Every wait is on an event, bounded.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once, EventEmitter } from 'node:events'
import { createServer } from 'node:net'
import { writeFileSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Teardown } from './app.js'
import { exitOf } from './spawn.js'

/** The compiled CLI of this checkout (dist/cli.js). */
export const CLI_PATH = fileURLToPath(new URL('../../cli.js', import.meta.url))

/**
 * Default bound of every wait here, ms. Generous: on two cores under a load of 10 a daemon with a
 * fixture upstream was seen to need over 20 s to log its ready line. Only a bound, never a delay.
 */
export const WAIT_MS = 60_000

/** True while a process with this pid exists (signal 0). Never throws. */
export function isAlive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** A TCP port free on `host` (default 127.0.0.1) right now. */
export async function freePort (host = '127.0.0.1'): Promise<number> {
  const server = createServer()
  server.listen(0, host)
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  await once(server, 'close')
  return port
}

/** A running daemon child. */
export interface DaemonProcess {
  child: ChildProcess
  /** `http://127.0.0.1:<port>` */
  base: string
  /** Every stdout line parsed as JSON (pino), in order. */
  lines: Array<Record<string, unknown>>
  stderr: () => string
  /** The first line (from index `since`) matching; rejects after WAIT_MS. */
  waitForLine: (match: (line: Record<string, unknown>) => boolean, since?: number) => Promise<Record<string, unknown>>
  /** Resolves with the exit code (or the signal name) once the child exited and its output was read (spawn.ts exitOf). */
  exited: Promise<number | string>
  /** The config file it was started with (a test may rewrite it and reload). */
  file: string
}

/**
 * Writes `config` to a temp file (daemon.address set to <options.host, default 127.0.0.1>:<free port>;
 * `base` is on 127.0.0.1 whatever the host, so give one that 127.0.0.1 reaches, such as 0.0.0.0) and starts
 * `node <cli> daemon --config <file>` in `cwd` (or, with `configVia: 'env'`, `MCPX_CONFIG=<file>`); resolves once the "mcpx daemon ready" line is
 * logged. The child is killed (SIGKILL, by its own pid) at teardown if still running.
 */
export async function startDaemon (t: Teardown, config: Record<string, unknown>, options: { cli?: string, cwd?: string, env?: NodeJS.ProcessEnv, configVia?: 'flag' | 'env', args?: string[], host?: string, port?: number } = {}): Promise<DaemonProcess> {
  const host = options.host ?? '127.0.0.1'
  // `port`: one the caller picked with freePort first, when its config must name the daemon's own URL.
  const port = options.port ?? await freePort(host)
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-daemon-'))
  const file = join(dir, 'mcpx.config.json')
  const daemon = (config.daemon ?? {}) as Record<string, unknown>
  writeFileSync(file, JSON.stringify({ ...config, daemon: { ...daemon, address: `${host}:${port}` } }))
  const viaEnv = options.configVia === 'env'
  const child = spawn(process.execPath, [options.cli ?? CLI_PATH, 'daemon', ...(viaEnv ? [] : ['--config', file]), ...(options.args ?? [])], {
    cwd: options.cwd ?? dir,
    env: { ...process.env, MCPX_LOG_LEVEL: 'info', ...options.env, ...(viaEnv ? { MCPX_CONFIG: file } : {}) },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const exited = exitOf(child).then(({ code, signal }) => code ?? signal ?? -1)
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  const lines: Array<Record<string, unknown>> = []
  const events = new EventEmitter()
  let buffered = ''
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8') })
  child.stdout?.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8')
    let nl: number
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const text = buffered.slice(0, nl)
      buffered = buffered.slice(nl + 1)
      if (text.trim() === '') continue
      let line: Record<string, unknown>
      try { line = JSON.parse(text) as Record<string, unknown> } catch { line = { unparsed: text } }
      lines.push(line)
      events.emit('line', line)
    }
  })
  const waitForLine = async (match: (line: Record<string, unknown>) => boolean, since = 0): Promise<Record<string, unknown>> => {
    const found = lines.slice(since).find(match)
    if (found !== undefined) return found
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => { cleanup(); reject(new Error(`log line not seen in ${WAIT_MS} ms; stderr: ${stderr}`)) }, WAIT_MS)
      const onExit = (): void => { cleanup(); reject(new Error(`daemon exited before the line; stderr: ${stderr}`)) }
      function onLine (line: Record<string, unknown>): void {
        if (!match(line)) return
        cleanup()
        resolve(line)
      }
      function cleanup (): void { clearTimeout(timer); events.off('line', onLine); child.off('exit', onExit) }
      events.on('line', onLine)
      child.once('exit', onExit)
    })
  }
  await waitForLine(line => line.msg === 'mcpx daemon ready')
  return { child, base: `http://127.0.0.1:${port}`, lines, stderr: () => stderr, waitForLine, exited, file }
}

/** An SSE response read incrementally: `next()` yields each `data:` message; `ended` settles when the body ends. */
export interface SseReader {
  next: () => Promise<unknown>
  /** 'end' for a clean end of the body, 'error' when it was cut (reset, aborted). */
  ended: Promise<'end' | 'error'>
}

/** Reads an SSE fetch Response as it arrives. `next()` rejects after WAIT_MS or when the stream ends first. */
export function readSse (response: Response): SseReader {
  const messages: unknown[] = []
  const events = new EventEmitter()
  let done = false
  let text = ''
  const decoder = new TextDecoder()
  const ended = (async (): Promise<'end' | 'error'> => {
    try {
      const reader = response.body?.getReader()
      if (reader === undefined) return 'end'
      for (;;) {
        const { value, done: finished } = await reader.read()
        if (finished) return 'end'
        text += decoder.decode(value, { stream: true })
        let cut: number
        while ((cut = text.indexOf('\n\n')) >= 0) {
          const block = text.slice(0, cut)
          text = text.slice(cut + 2)
          const data = block.split('\n').filter(l => l.startsWith('data:')).map(l => l.slice(5).trimStart()).join('\n')
          if (data !== '') { messages.push(JSON.parse(data)); events.emit('message') }
        }
      }
    } catch {
      return 'error'
    } finally {
      done = true
      events.emit('message')
    }
  })()
  const next = async (): Promise<unknown> => {
    for (;;) {
      if (messages.length > 0) return messages.shift()
      if (done) throw new Error('SSE stream ended before the next message')
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => { events.off('message', onMessage); reject(new Error('no SSE message in time')) }, WAIT_MS)
        function onMessage (): void { clearTimeout(timer); events.off('message', onMessage); resolve() }
        events.on('message', onMessage)
      })
    }
  }
  return { next, ended }
}

/**
 * Waits (at most `boundMs`, default {@link WAIT_MS}) until the daemon's upstreams are all ready
 * (`/readyz` 200): the daemon serves after 5 s whatever its upstreams do, and on a loaded machine
 * a child can take longer to start. @throws Error naming the last status when the bound passes.
 */
export async function daemonReady (base: string, boundMs = WAIT_MS): Promise<void> {
  const deadline = Date.now() + boundMs
  let last = 0
  while (Date.now() < deadline) {
    const res = await fetch(`${base}/readyz`)
    await res.text()
    last = res.status
    if (last === 200) return
    await new Promise(resolve => setTimeout(resolve, 25))
  }
  throw new Error(`timed out after ${boundMs} ms waiting for ${base}/readyz 200 (last ${last})`)
}
