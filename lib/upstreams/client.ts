/**
 * The v2 SDK client (`@modelcontextprotocol/client` 2.4.0) as mcpx uses it upstream: it keeps the raw
 * `result` of every response to a request sent inside a call scope, and dispatches progress and
 * `notifications/message` synchronously, in wire order (see ./README.md, "Raw results", "Progress").
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { Client } from '@modelcontextprotocol/client'
import { isObject } from '../jsonrpc.js'
import type { JsonObject } from './types.js'

/** Accepts any value unchanged: the result schema for `client.request` when we want the raw JSON. */
export const PASSTHROUGH = {
  '~standard': {
    version: 1 as const,
    vendor: 'mcpx',
    validate: (value: unknown) => ({ value })
  }
}

/** The raw results of the requests sent from one call (see module comment). */
export interface CallScope { ids: Array<string | number>, raw?: JsonObject }
export const callScope = new AsyncLocalStorage<CallScope>()

/** The v2 client, keeping the raw `result` of every response to a request sent inside a call scope. */
export class UpstreamClient extends Client {
  readonly scopes = new Map<string | number, CallScope>()
  /** Progress callbacks by the progressToken we put in `_meta` (see `_onnotification`). */
  readonly progress = new Map<string, (params: JsonObject) => void>()
  /** Receives every `notifications/message`, synchronously and in wire order (before the response it precedes). */
  onLogMessage: ((notification: { method: string, params?: JsonObject }) => void) | undefined

  /**
   * Progress is handled here, synchronously and in wire order. The SDK dispatches notifications
   * on a microtask but responses synchronously, so with `onprogress` the last progress
   * notification, when it arrives in the same read as the response, finds its handler already
   * removed and is lost (seen with a legacy stdio upstream). We send our own tokens instead.
   */
  protected override _onnotification (raw: Parameters<Client['_onnotification']>[0], extra?: Parameters<Client['_onnotification']>[1]): void {
    if (raw.method === 'notifications/progress' && isObject(raw.params)) {
      const token = raw.params.progressToken
      const handler = typeof token === 'string' ? this.progress.get(token) : undefined
      if (handler !== undefined) { handler(raw.params); return }
    }
    if (raw.method === 'notifications/message' && this.onLogMessage !== undefined) {
      this.onLogMessage(isObject(raw.params) ? { method: raw.method, params: raw.params } : { method: raw.method })
      return
    }
    super._onnotification(raw, extra)
  }

  protected override _onresponse (response: Parameters<Client['_onresponse']>[0]): void {
    const id = response.id
    const scope = id === undefined ? undefined : this.scopes.get(id)
    if (id !== undefined && scope !== undefined) {
      this.scopes.delete(id)
      const result = (response as { result?: unknown }).result
      if (isObject(result)) scope.raw = result
    }
    super._onresponse(response)
  }
}

/** Records the id of each request sent inside a call scope, so `_onresponse` can find its scope. */
export function tapSend (client: UpstreamClient, message: unknown): void {
  const scope = callScope.getStore()
  if (scope === undefined || !isObject(message) || typeof message.method !== 'string') return
  const id = message.id as unknown
  if (typeof id !== 'string' && typeof id !== 'number') return
  scope.ids.push(id)
  client.scopes.set(id, scope)
}
