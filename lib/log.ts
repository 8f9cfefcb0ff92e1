/**
 * Logging. In stdio mode stdout carries only MCP frames, so every log line goes to fd 2
 * (seed › stdio › "stdout carries only MCP"). lib/ takes a Logger parameter; it never imports
 * a global logger.
 */
import { pino, type Logger } from 'pino'

export type { Logger }

/** Headers whose values are secrets: redacted in every log line. */
export const REDACTED_PATHS = ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'headers.cookie']

/**
 * Creates mcpx's logger.
 * @param mode 'stdio' logs to fd 2 (stderr); 'daemon' logs to fd 1
 * @param level pino level name, default 'info' (env MCPX_LOG_LEVEL overrides)
 */
export function createLogger (mode: 'stdio' | 'daemon', level = process.env.MCPX_LOG_LEVEL ?? 'info'): Logger {
  return pino({ name: 'mcpx', level, redact: REDACTED_PATHS }, pino.destination({ fd: mode === 'stdio' ? 2 : 1, sync: false }))
}
