/**
 * Era shaping of a successful result (DIGEST §6f): a modern result carries `resultType`, `_meta`
 * serverInfo and, on the cacheable methods, `ttlMs`/`cacheScope`; a legacy result carries none of
 * these, even when the upstream that produced it is modern. The dispatcher applies one of the two
 * to every result, whichever method produced it.
 */
import { copyObject, isObject, type JsonObject } from '../protocol/jsonrpc.js'
import { META_SERVER_INFO } from '../protocol/inbound.js'
import type { ServerInfo } from './context.js'

/**
 * Methods whose modern `complete` results carry `ttlMs` and `cacheScope` (2026-07-28 caching.mdx; DIGEST A20),
 * and the Skills extension's three (SEP-2640: `ListSkillsResult`, `GetSkillResult`, `ReadResourceDirectoryResult`
 * require both on 2026-07-28).
 */
const CACHEABLE = new Set(['server/discover', 'tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read',
  'skills/list', 'skills/get', 'resources/directory/read'])

/** Whether `method`'s modern results carry `ttlMs` and `cacheScope` (DIGEST §6f). Never throws. */
export function isCacheable (method: string): boolean { return CACHEABLE.has(method) }

/** Fields a modern result carries that a legacy client must not see. */
const MODERN_RESULT_KEYS = ['resultType', 'ttlMs', 'cacheScope'] as const

/**
 * A result as a modern client gets it (DIGEST §6f): `resultType` (default `complete`); on a
 * cacheable method's complete result `ttlMs` (default `ttlMs`, in ms) unless the result set one,
 * and `cacheScope`: `private` when `scope` says the answer depends on who asked (a shared cache must
 * not hand it to another user, 2026-07-28 server/utilities/caching.mdx), else the result's own
 * valid one, else `public`; `_meta` serverInfo. Returns a new object (the input is not changed).
 * Never throws.
 * @param scope `private` when what this caller sees may differ from what another caller sees
 *        (a policy, a per-caller upstream); `server/discover` is the same for everyone and stays
 *        `public` unless its result says otherwise
 */
export function shapeModern (method: string, result: JsonObject, serverInfo: ServerInfo, ttlMs: number, scope: 'public' | 'private' = 'public'): JsonObject {
  const shaped = copyObject(result) // not a spread: lib/protocol/jsonrpc.ts copyObject
  if (typeof shaped.resultType !== 'string') shaped.resultType = 'complete'
  if (shaped.resultType === 'complete' && CACHEABLE.has(method)) {
    if (typeof shaped.ttlMs !== 'number') shaped.ttlMs = ttlMs
    if (scope === 'private' && method !== 'server/discover') shaped.cacheScope = 'private'
    else if (shaped.cacheScope !== 'public' && shaped.cacheScope !== 'private') shaped.cacheScope = 'public'
  }
  const meta = isObject(shaped._meta) ? copyObject(shaped._meta) : {}
  meta[META_SERVER_INFO] = serverInfo
  shaped._meta = meta
  return shaped
}

/**
 * Removes the modern-only result fields (a dual-era gateway must not add them to legacy results, DIGEST §6f).
 * Returns `result` itself when it has none, else a copy without them. Never throws.
 */
export function shapeLegacy (result: JsonObject): JsonObject {
  let shaped: JsonObject | undefined
  for (const key of MODERN_RESULT_KEYS) {
    if (Object.hasOwn(result, key)) {
      shaped ??= { ...result }
      delete shaped[key]
    }
  }
  const meta = (shaped ?? result)._meta
  if (isObject(meta) && Object.hasOwn(meta, META_SERVER_INFO)) {
    shaped ??= { ...result }
    const { [META_SERVER_INFO]: _omit, ...rest } = meta
    if (Object.keys(rest).length === 0) delete shaped._meta
    else shaped._meta = rest
  }
  return shaped ?? result
}
