/**
 * Helpers for tests of the upstream layer: a pino logger whose lines a test can wait for, a
 * started registry closed at teardown, and a wait for an upstream state. Every wait is on an
 * event (a log line, a registry event), bounded by WAIT_MS, never a sleep.
 */
import { EventEmitter } from 'node:events'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import { createRegistry } from '../../lib/upstreams/registry.js'
import type { JsonObject } from '../../lib/protocol/jsonrpc.js'
import type { UpstreamConfig } from '../../lib/upstreams/config.js'
import type { UpstreamRegistry } from '../../lib/upstreams/contract.js'
import type { UpstreamStatus } from '../../lib/upstreams/status.js'
import type { Teardown } from './app.js'

/** How long a wait for a log line or a state may take, ms. */
export const WAIT_MS = 15_000

/** A logger and the lines it wrote. */
export interface CapturedLog {
  logger: pino.Logger
  lines: JsonObject[]
  /** The first line matching, among those logged from index `since` on (default: all); rejects after WAIT_MS. */
  waitFor: (match: (line: JsonObject) => boolean, since?: number) => Promise<JsonObject>
}

/** A pino logger (level debug) whose JSON lines are kept and can be waited for. */
export function captureLogger (): CapturedLog {
  const lines: JsonObject[] = []
  const events = new EventEmitter()
  const stream = new Writable({
    write (chunk: Buffer, _encoding, callback) {
      for (const text of chunk.toString('utf8').split('\n')) {
        if (text === '') continue
        const line = JSON.parse(text) as JsonObject
        lines.push(line)
        events.emit('line', line)
      }
      callback()
    }
  })
  const waitFor = async (match: (line: JsonObject) => boolean, since = 0): Promise<JsonObject> => {
    const found = lines.slice(since).find(match)
    if (found !== undefined) return found
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => { events.off('line', onLine); reject(new Error('log line not seen in time')) }, WAIT_MS)
      function onLine (line: JsonObject): void {
        if (!match(line)) return
        clearTimeout(timer)
        events.off('line', onLine)
        resolve(line)
      }
      events.on('line', onLine)
    })
  }
  return { logger: pino({ level: 'debug' }, stream), lines, waitFor }
}

/** A started registry over `upstreams`, logging into a captured logger; closed (children killed) at teardown. */
export async function startRegistry (t: Teardown, upstreams: Record<string, UpstreamConfig>, defaultTimeoutMs = 10_000): Promise<{ registry: UpstreamRegistry } & CapturedLog> {
  const capture = captureLogger()
  const registry = createRegistry(upstreams, { logger: capture.logger, defaultTimeoutMs })
  t.teardown(async () => { await registry.close() })
  await registry.start()
  return { registry, ...capture }
}

/** Resolves with the first status (current, or announced by 'upstream_state') matching; rejects after WAIT_MS. */
export async function waitForState (registry: UpstreamRegistry, match: (status: UpstreamStatus) => boolean): Promise<UpstreamStatus> {
  const current = registry.status().find(match)
  if (current !== undefined) return current
  return await new Promise((resolve, reject) => {
    const timer = setTimeout(() => { registry.off('upstream_state', onState); reject(new Error('state not reached in time')) }, WAIT_MS)
    function onState (status: UpstreamStatus): void {
      if (!match(status)) return
      clearTimeout(timer)
      registry.off('upstream_state', onState)
      resolve(status)
    }
    registry.on('upstream_state', onState)
  })
}
