/**
 * Where the compiled fixture upstream lives, and the command that spawns it.
 * Tests run from dist/, so this file is dist/test/helpers/fixture.js and the fixture is
 * dist/test/fixtures/echo-upstream.js.
 */
import { fileURLToPath } from 'node:url'
import { spawn } from 'node:child_process'
import { once } from 'node:events'

/** Absolute path of the compiled fixture (dist/test/fixtures/echo-upstream.js). */
export const FIXTURE_PATH = fileURLToPath(new URL('../fixtures/echo-upstream.js', import.meta.url))

/** Absolute path of the published reference server's entry point. */
export const EVERYTHING_PATH = fileURLToPath(import.meta.resolve('@modelcontextprotocol/server-everything/dist/index.js'))

/**
 * The command and args that spawn the fixture: `process.execPath, [FIXTURE_PATH, ...flags]`.
 * @param flags e.g. `['--era', 'legacy']` or `['--http', '0']`. Never throws.
 */
export function fixtureCommand (...flags: string[]): { command: string, args: string[] } {
  return { command: process.execPath, args: [FIXTURE_PATH, ...flags] }
}

/** Absolute path of the compiled ttl-upstream fixture (a modern upstream whose tools/list carries a chosen `ttlMs`). */
export const TTL_FIXTURE_PATH = fileURLToPath(new URL('../fixtures/ttl-upstream.js', import.meta.url))

/**
 * The command and args that spawn the ttl-upstream fixture over stdio (test/fixtures/ttl-upstream.ts).
 * @param flags e.g. `['--ttl-ms', '1000']`. Never throws.
 */
export function ttlFixtureCommand (...flags: string[]): { command: string, args: string[] } {
  return { command: process.execPath, args: [TTL_FIXTURE_PATH, ...flags] }
}

/** The command and args that spawn `@modelcontextprotocol/server-everything` over stdio. */
export function everythingCommand (): { command: string, args: string[] } {
  return { command: process.execPath, args: [EVERYTHING_PATH, 'stdio'] }
}

/**
 * Spawns the fixture with `--http 0` (plus `flags`); resolves with its URL once it printed
 * `listening <port>`. Stopped (SIGTERM, awaited) at teardown.
 */
export async function startHttpFixture (t: { teardown: (fn: () => unknown) => void }, ...flags: string[]): Promise<{ url: string }> {
  const { command, args } = fixtureCommand('--http', '0', ...flags)
  return { url: await startHttpUpstream(t, command, args) }
}

/**
 * Spawns any HTTP upstream fixture that prints `listening <port>` on stderr (echo-upstream with
 * `--http 0`, hostile-upstream with `--http`, …) and resolves with `http://127.0.0.1:<port>/mcp`.
 * @param env extra environment, merged over `process.env`.
 * Rejects if the child exits before it listens. Stopped (SIGTERM, awaited) at teardown.
 */
export async function startHttpUpstream (t: { teardown: (fn: () => unknown) => void }, command: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } })
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = once(child, 'exit')
    child.kill('SIGTERM')
    await exited
  })
  let buffered = ''
  return await new Promise((resolve, reject) => {
    child.once('exit', code => reject(new Error(`http upstream ${args.join(' ')} exited early (${String(code)}): ${buffered}`)))
    child.stderr.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8')
      const match = /listening (\d+)/.exec(buffered)
      if (match !== null) resolve(`http://127.0.0.1:${match[1]}/mcp`)
    })
  })
}
