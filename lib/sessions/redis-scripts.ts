/**
 * The Redis session store's Lua scripts (lib/sessions/redis-store.ts), KEYS and ARGV documented at each.
 * Each touches a single session's keys, which share one Cluster slot through the `{<sid>}` hash tag;
 * the store defines them all on its command connection ({@link SCRIPTS}) and runs them by name.
 */

/**
 * KEYS: session, subs. ARGV: idleMs, wantFacts ('1'|'0': a new shadow).
 * → nil | {rev, caps|false, {uris}, instance owner|false, principal key|false}
 */
const FIND = `
local rev = redis.call('HGET', KEYS[1], 'rev')
if not rev then return false end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
local caps = false
local pr = false
if ARGV[2] == '1' then
  caps = redis.call('HGET', KEYS[1], 'caps')
  pr = redis.call('HGET', KEYS[1], 'pr')
end
return {rev, caps, redis.call('SMEMBERS', KEYS[2]), redis.call('HGET', KEYS[1], 'inst'), pr}`

/**
 * KEYS: session, subs. ARGV: replica id. The replica holding the session's isolated instances
 * (isolated upstreams): the one recorded, else this one, recorded now; with the session's subscriptions
 * as of then (a new owner's instances start with them). → nil (no session) | {owner id, {uris}}
 */
const CLAIM_INSTANCES = `
local owner = redis.call('HGET', KEYS[1], 'inst')
if not owner then
  if redis.call('EXISTS', KEYS[1]) == 0 then return false end
  redis.call('HSET', KEYS[1], 'inst', ARGV[1])
  owner = ARGV[1]
end
return {owner, redis.call('SMEMBERS', KEYS[2])}`

/** KEYS: session, subs, stream. ARGV: bus channel, payload. → 1 ended | 0 unknown */
const END = `
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1`

/** KEYS: session, stream. ARGV: replica id, leaseMs. → 1 claimed | 0 held by another | -1 no session */
const CLAIM_STREAM = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0`

/** KEYS: stream. ARGV: replica id. Deletes the lease only if this replica holds it. */
const RELEASE_STREAM = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`

/**
 * KEYS: session, subs, stream. ARGV: replica id, leaseMs, idleMs, holdsStream ('1'|'0').
 * Slides the session's TTL; when holding the stream, refreshes (or re-takes) the lease.
 * → -1 no session | 0 the lease is another replica's | 1 ok
 */
const HEARTBEAT = `
if redis.call('PEXPIRE', KEYS[1], ARGV[3]) == 0 then return -1 end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
if ARGV[4] ~= '1' then return 1 end
local owner = redis.call('GET', KEYS[3])
if owner == ARGV[1] then redis.call('PEXPIRE', KEYS[3], ARGV[2]) return 1 end
if not owner then redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0`

/** KEYS: stream. ARGV: replica channel prefix, payload. → receivers (0: no stream open) */
const SEND_TO_STREAM = `
local owner = redis.call('GET', KEYS[1])
if not owner then return 0 end
return redis.call('PUBLISH', ARGV[1] .. owner, ARGV[2])`

/** KEYS: question. ARGV: replica channel prefix, payload. → receivers (0: nothing waits) */
const ANSWER = `
local owner = redis.call('GET', KEYS[1])
if not owner then return 0 end
redis.call('DEL', KEYS[1])
return redis.call('PUBLISH', ARGV[1] .. owner, ARGV[2])`

/** KEYS: session, subs. ARGV: idleMs, uri, add ('1'|'0'), bus channel, payload. → 1 | -1 no session */
const SUBSCRIPTION = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if ARGV[3] == '1' then redis.call('SADD', KEYS[2], ARGV[2]) else redis.call('SREM', KEYS[2], ARGV[2]) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1`

/** The scripts by the command name the store defines them under, with how many of their arguments are KEYS. */
export const SCRIPTS = {
  mcpxFind: { numberOfKeys: 2, lua: FIND },
  mcpxEnd: { numberOfKeys: 3, lua: END },
  mcpxClaimStream: { numberOfKeys: 2, lua: CLAIM_STREAM },
  mcpxReleaseStream: { numberOfKeys: 1, lua: RELEASE_STREAM },
  mcpxHeartbeat: { numberOfKeys: 3, lua: HEARTBEAT },
  mcpxSendToStream: { numberOfKeys: 1, lua: SEND_TO_STREAM },
  mcpxAnswer: { numberOfKeys: 1, lua: ANSWER },
  mcpxSubscription: { numberOfKeys: 2, lua: SUBSCRIPTION },
  mcpxClaimInstances: { numberOfKeys: 2, lua: CLAIM_INSTANCES }
} as const
/** The name of one of {@link SCRIPTS}. */
export type ScriptName = keyof typeof SCRIPTS
/** A defined script, called with its KEYS then its ARGV; resolves with its reply. */
export type ScriptRunner = (...keysAndArgs: Array<string | number>) => Promise<unknown>
