/**
 * Durations in the config: the JSON Schema fragment every duration key uses, and {@link parseDuration},
 * which turns a value it accepts into ms. One file, because the schema's pattern and the parser's
 * regular expression are one contract. A duration is a number of ms or a string such as "15s",
 * "500ms", "2m", "1h"; after loading it is a number of ms.
 */
import { McpxError } from './errors.js'

/** JSON Schema of a duration: a number of ms, or a string with an optional unit (ms, s, m, h). */
export const DURATION_SCHEMA = { anyOf: [{ type: 'number', minimum: 0 }, { type: 'string', pattern: '^\\s*\\d+(\\.\\d+)?\\s*(ms|s|m|h)?\\s*$' }] }

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/** The longest duration a Node timer can hold, ms (2^31 - 1). */
export const MAX_DURATION_MS = 2_147_483_647

/**
 * A duration as ms. @param value a number of ms or a string like "15s", "500ms", "2m", "1h"
 * (a bare number string is ms). Throws McpxError MCPX_ERR_CONFIG for any other shape.
 */
export function parseDuration (value: unknown, path = 'duration'): number {
  let ms: number | undefined
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) ms = value
  if (typeof value === 'string') {
    const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(value)
    if (match !== null) ms = Math.round(Number(match[1]) * UNIT_MS[match[2] ?? 'ms'])
  }
  if (ms === undefined) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: ${path} must be a duration (ms, or a string such as "15s"), got ${JSON.stringify(value)}`)
  // Node's timers hold at most 2^31-1 ms (about 24.8 days); a longer one silently becomes 1 ms.
  if (ms > MAX_DURATION_MS) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: ${path} must be at most ${MAX_DURATION_MS} ms (about 24 days), got ${JSON.stringify(value)}`)
  return ms
}
