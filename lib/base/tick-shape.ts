/**
 * One `process.nextTick` queue entry, held for the life of an `mcpx` process (`mcpx daemon`,
 * `mcpx serve`), so that V8 keeps building those entries on its fast path.
 *
 * Node 20's `process.nextTick` makes each entry with an object literal whose first two keys are
 * computed, `{ [async_id_symbol]: …, [trigger_async_id_symbol]: …, callback, args }`
 * (lib/internal/process/task_queues.js). V8 defines each property after the first computed one
 * through a feedback slot that knows one map (hidden class) only: when it meets a second map, it
 * goes from monomorphic straight to megamorphic, and stays there
 * (`Runtime_DefineKeyedOwnPropertyInLiteral`). The maps of a half-built entry are held only weakly:
 * by the map they came from, and by the feedback. So a major GC at a moment when no entry is queued
 * frees them; the next `nextTick` builds new ones, the slots see a second map, and from then on
 * every entry is built property by property in the runtime.
 *
 * Measured in `mcpx daemon` (V8's `%DebugPrint` of `process.nextTick`): the three slots were
 * megamorphic in every run, from a major GC within the first second after start; a nextTick
 * then cost ~300 ns against ~50 ns in the forwarding ceiling's process, and a 2026-07-28
 * `tools/call` makes five to seven of them inside Node's streams and HTTP server. A plain `node`
 * script that calls `gc()` between bursts of ticks shows the same; with one entry held, the slots
 * stay monomorphic. The entry holds the whole chain of maps (each map points back to the one it came
 * from), so later entries land on the same maps.
 *
 * Only the `mcpx` command holds one (cli.ts imports ./tick-shape-hold.ts before anything else), as
 * with pretenuring (./pretenuring.ts): a host application's process is its own to tune.
 */
import { createHook } from 'node:async_hooks'

/** The entry held; undefined until {@link keepTickObjectShape} ran. */
let kept: object | undefined

/**
 * Captures one `process.nextTick` entry and keeps it for the life of the process (see the module
 * comment). It enables an async hook with an `init` callback for one `nextTick` call, which Node
 * calls synchronously with the entry (`TickObject`), and disables it at once. Call it first, before
 * other modules load (./tick-shape-hold.ts): once the slots have gone megamorphic nothing brings
 * them back, and an entry taken after the server's modules had loaded was built on maps outside
 * V8's transition tree, which later entries never use.
 * Idempotent. Never throws.
 * @returns whether an entry is held (false when this Node makes no `TickObject` resource)
 */
export function keepTickObjectShape (): boolean {
  if (kept !== undefined) return true
  try {
    const hook = createHook({
      init (_asyncId: number, type: string, _triggerAsyncId: number, resource: object) {
        if (type === 'TickObject') kept ??= resource
      }
    })
    hook.enable()
    try {
      process.nextTick(noop)
    } finally {
      hook.disable()
    }
  } catch {}
  return kept !== undefined
}

function noop (): void {}
