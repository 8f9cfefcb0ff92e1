/**
 * Logging. In stdio mode stdout carries only MCP frames, so every log line goes to fd 2
 * (seed › stdio › "stdout carries only MCP"). lib/ takes a Logger parameter; it never imports
 * a global logger.
 */
import { pino } from 'pino'

type LogFn = (obj: unknown, msg?: string, ...args: unknown[]) => void

/**
 * The logger lib/ accepts: pino's, or a Fastify instance's (which is pino underneath).
 * A structural subset, so lib/ never names a Fastify type.
 */
export interface Logger {
  trace: LogFn
  debug: LogFn
  info: LogFn
  warn: LogFn
  error: LogFn
  fatal: LogFn
  child: (bindings: Record<string, unknown>) => Logger
  level: string
}

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
