/**
 * Where the compiled fixture upstream lives, and the command that spawns it.
 * Tests run from dist/, so this file is dist/test/helpers/fixture.js and the fixture is
 * dist/test/fixtures/echo-upstream.js.
 */
import { fileURLToPath } from 'node:url'

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
