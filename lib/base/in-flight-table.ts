/**
 * A table of what is in flight, by request id, for tables that live as long as the process and see
 * one `set` and one `delete` per request: the calls in flight on an upstream connection
 * (lib/upstreams/link.ts), a session's requests in flight (lib/connection/peer.ts).
 *
 * Not a Map, for the garbage collector's sake. V8 grows, shrinks and compacts a Map by copying its
 * entries into a new backing table, and links the old table to the new one (so that a live
 * iterator can follow). A Map that has reached the old generation and sees a set and a delete per
 * request so makes a chain of young tables reachable from an old one; the scavenger takes old-to-young
 * pointers as roots, so every scavenge keeps those tables, and the entries they held, alive, and
 * promotes them until a major GC. Measured with a long-lived table, two million set/delete pairs
 * with four entries in flight: a Map promoted 125 MB and took 19 major GCs, a dictionary-mode
 * object 3 MB and 2. In the daemon, the survivors of a scavenge (V8's sampling heap profiler,
 * samples that survived a minor GC) were mostly the calls and contexts such tables had held.
 * A dictionary-mode object's backing store has no such link.
 *
 * Keys are property keys: a number and its decimal string are one key. A caller that must tell
 * them apart tags its keys (lib/protocol/jsonrpc.ts idKey) or checks the entry it gets.
 */
export class InFlightTable<V> {
  #entries: Record<string | number, V | undefined> = Object.create(null)
  #size = 0

  /** Entries in the table. */
  get size (): number { return this.#size }

  /** The entry under `key`, or undefined. */
  get (key: string | number): V | undefined { return this.#entries[key] }

  /** Whether an entry is under `key`. */
  has (key: string | number): boolean { return this.#entries[key] !== undefined }

  /** Puts `value` under `key`, replacing what was there. */
  set (key: string | number, value: V): void {
    if (this.#entries[key] === undefined) this.#size++
    this.#entries[key] = value
  }

  /** Removes the entry under `key`. @returns whether there was one */
  delete (key: string | number): boolean {
    if (this.#entries[key] === undefined) return false
    delete this.#entries[key] // eslint-disable-line @typescript-eslint/no-dynamic-delete -- a dictionary, on purpose (see above)
    this.#size--
    return true
  }

  /**
   * The entries, as an array made now (changing the table while walking it is safe). Order:
   * integer keys ascending, then the other keys in insertion order (property order).
   */
  values (): V[] { return Object.values(this.#entries) as V[] }
}
