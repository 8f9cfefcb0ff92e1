/**
 * Isolated upstreams (docs/upstreams.md › Isolated upstreams): whom a call serves ({@link InstanceOwner}), the key
 * of the instance that serves it ({@link instanceKeyOf}), what an instance sends its owner alone
 * ({@link InstanceEvent}), and where a session's instances live when replicas share sessions
 * ({@link InstanceHome}).
 */
import type { JsonObject, ListKind } from '../protocol/jsonrpc.js'
import type { UpstreamIsolation } from './config.js'
import type { UpstreamCallOptions } from './contract.js'

/**
 * Whom a call, a subscription or a notification listener serves, in the terms an isolated
 * upstream picks its instance by (docs/upstreams.md › Isolated upstreams): the call's `owner` (a legacy
 * session id, the stdio client) and its `principalKey` (lib/auth/principal.ts Principal.key).
 */
export interface InstanceOwner {
  owner?: string
  principalKey?: string
  /**
   * Where the `owner` session's per-session instances live when replicas share sessions (Redis
   * store). When set, the subscriptions of that session's own instance are not counted here: the
   * store applies the session's stored set on the replica running it (lib/sessions/redis-store.ts).
   */
  home?: InstanceHome
}

/**
 * The key of the isolated instance that serves `who` (the one rule; upstream.ts and the
 * notification hub both use it): per-session, the owner, else the principal (2026-07-28
 * traffic has no session); per-principal, the principal; `anonymous` when neither is known.
 * @returns undefined for a shared upstream (no instance)
 */
export function instanceKeyOf (isolation: UpstreamIsolation | undefined, who: InstanceOwner): string | undefined {
  if (isolation === undefined || isolation === 'shared') return undefined
  if (isolation === 'per-session') return who.owner ?? who.principalKey ?? 'anonymous'
  return who.principalKey ?? 'anonymous'
}

/**
 * What an isolated instance sent that belongs to its owner alone: a list change it
 * announced (`kind`, after re-listing it) or a `notifications/resources/updated` (`uri`). `key` is
 * the instance's ({@link instanceKeyOf}); the hub delivers it only to listeners of that key.
 */
export type InstanceEvent = { upstream: string, isolation: 'per-session' | 'per-principal', key: string } & ({ kind: ListKind } | { uri: string })

/**
 * Where one legacy session's per-session isolated instances live when several replicas serve it
 * (under `sessions.store: "redis"`): on the replica that started the first of them, for
 * every isolated upstream. Another replica forwards the session's calls there.
 */
export interface InstanceHome {
  /**
   * true when they live on this replica: the first asker claims them (one Redis round trip per
   * session; later answers are synchronous). Rejects with {@link InstanceForwardError} when that
   * cannot be told (the store is down, the session is gone).
   */
  isHere: () => boolean | Promise<boolean>
  /**
   * Runs `method` on the owner replica's instance of `upstream` and resolves with its raw result;
   * progress, log lines and questions come back to `options`' callbacks, `options.signal` cancels it.
   * Rejects with UpstreamRpcError (the upstream's error, or the owner's refusal) or
   * {@link InstanceForwardError} (too many forwarded calls, the owner is gone, no answer in time).
   * @param timeoutMs the upstream's call timeout, ms: with no word from the owner for this long plus a grace, the call fails
   */
  forward: (upstream: string, method: string, params: JsonObject, options: UpstreamCallOptions, timeoutMs: number) => Promise<JsonObject>
}
