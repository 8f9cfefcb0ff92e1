/**
 * Runs the operator commands as a real process (`node dist/cli.js …`) for the cli/… tests
 * (docs/operating.md › Command-line helpers).
 */
import { execFile } from 'node:child_process'
import { CLI_PATH } from './spawn.js'

/** Bound of one command run, ms: generous, the machine may be loaded (several node processes per run). */
export const CLI_WAIT_MS = 90_000

/** One finished command: its exit code (-1 when killed or not started), stdout and stderr as text. */
export interface CliRun { code: number, stdout: string, stderr: string }

/**
 * Runs `node dist/cli.js ...args` to completion, bounded by CLI_WAIT_MS, with MCPX_LOG_LEVEL and
 * MCPX_LOG_FORMAT cleared so the command's own defaults apply. Never rejects.
 */
export async function mcpx (...args: string[]): Promise<CliRun> {
  return await new Promise(resolve => {
    execFile(process.execPath, [CLI_PATH, ...args], { timeout: CLI_WAIT_MS, env: { ...process.env, MCPX_LOG_LEVEL: '', MCPX_LOG_FORMAT: '' } }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1
      resolve({ code, stdout, stderr })
    })
  })
}
