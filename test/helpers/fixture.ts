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
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] })
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = once(child, 'exit')
    child.kill('SIGTERM')
    await exited
  })
  let buffered = ''
  return await new Promise((resolve, reject) => {
    child.once('exit', code => reject(new Error(`http fixture exited early (${String(code)}): ${buffered}`)))
    child.stderr.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8')
      const match = /listening (\d+)/.exec(buffered)
      if (match !== null) resolve({ url: `http://127.0.0.1:${match[1]}/mcp` })
    })
  })
}
