/**
 * A table of what is in flight, by request id, for tables that live as long as the process and see
 * one `set` and one `delete` per request: a session's requests in flight (lib/connection/peer.ts),
 * under the ids its client chose. (The calls in flight on an upstream connection, under ids mcpx
 * mints, are in a {@link SequenceTable}.)
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

/** Slots a {@link SequenceTable} starts with (a power of two). */
const FIRST_CAPACITY = 16

/**
 * A table of what is in flight under ids this process mints itself in sequence: the calls in
 * flight on an upstream connection (lib/upstreams/link.ts), whose ids are the non-negative
 * integers of the connection's request counter. For the same reason as {@link InFlightTable}, not
 * a Map; and not a dictionary-mode object either, whose every add and delete of an integer key is
 * a call into V8's runtime (`Runtime_SetKeyedProperty`, `Runtime_DeleteProperty`: ~0.7 µs of the
 * daemon's main thread per call, measured under load). Here the keys live in an open-addressing
 * array (linear probing, at most half full, deletion by backward shift), indexed by the id's low
 * bits, so ids minted in sequence fall in consecutive slots. A grown array replaces the old one,
 * which links to nothing. Keys that are not non-negative safe integers (a connection without a
 * counter mints strings) go to an {@link InFlightTable}.
 *
 * Keys are matched exactly: 7 and "7" are two keys.
 */
export class SequenceTable<V> {
  /** The integer key in each slot; -1 for an empty slot. */
  #keys: number[] = new Array<number>(FIRST_CAPACITY).fill(-1)
  #values: Array<V | undefined> = new Array<V | undefined>(FIRST_CAPACITY).fill(undefined)
  #mask = FIRST_CAPACITY - 1
  /** Entries under integer keys. */
  #count = 0
  /** Entries under other keys. */
  readonly #other = new InFlightTable<V>()

  /** Entries in the table. */
  get size (): number { return this.#count + this.#other.size }

  /** The entry under `key` (exactly), or undefined. */
  get (key: string | number): V | undefined {
    if (!isSlotKey(key)) return typeof key === 'string' ? this.#other.get(key) : undefined
    const slot = this.#find(key)
    return slot < 0 ? undefined : this.#values[slot]
  }

  /** Puts `value` under `key`, replacing what was there. @throws TypeError for a number key that is not a non-negative safe integer */
  set (key: string | number, value: V): void {
    if (!isSlotKey(key)) {
      if (typeof key !== 'string') throw new TypeError(`SequenceTable: key ${key} is not a non-negative safe integer`)
      this.#other.set(key, value)
      return
    }
    const found = this.#find(key)
    if (found >= 0) { this.#values[found] = value; return }
    if ((this.#count + 1) * 2 > this.#keys.length) this.#grow()
    this.#place(key, value)
    this.#count++
  }

  /** Removes the entry under `key` (exactly). @returns whether there was one */
  delete (key: string | number): boolean {
    if (!isSlotKey(key)) return typeof key === 'string' ? this.#other.delete(key) : false
    let hole = this.#find(key)
    if (hole < 0) return false
    const keys = this.#keys
    const values = this.#values
    const mask = this.#mask
    // Backward shift: move each later entry of the probe run whose home slot is not cyclically in
    // (hole, slot] into the hole, so that every entry stays reachable from its home slot.
    for (let slot = (hole + 1) & mask; keys[slot] !== -1; slot = (slot + 1) & mask) {
      const home = keys[slot] & mask
      const stays = hole <= slot ? home > hole && home <= slot : home > hole || home <= slot
      if (stays) continue
      keys[hole] = keys[slot]
      values[hole] = values[slot]
      hole = slot
    }
    keys[hole] = -1
    values[hole] = undefined
    this.#count--
    return true
  }

  /** The entries, as an array made now (changing the table while walking it is safe). Order: integer keys ascending, then the other keys in insertion order. */
  values (): V[] {
    const held: Array<[number, V]> = []
    for (let slot = 0; slot < this.#keys.length; slot++) {
      if (this.#keys[slot] !== -1) held.push([this.#keys[slot], this.#values[slot] as V])
    }
    held.sort((a, b) => a[0] - b[0])
    return [...held.map(([, value]) => value), ...this.#other.values()]
  }

  /** The slot holding `key`, or -1. */
  #find (key: number): number {
    const keys = this.#keys
    const mask = this.#mask
    for (let slot = key & mask; keys[slot] !== -1; slot = (slot + 1) & mask) {
      if (keys[slot] === key) return slot
    }
    return -1
  }

  /** Doubles the slots and puts every entry back. */
  #grow (): void {
    const keys = this.#keys
    const values = this.#values
    const capacity = keys.length * 2
    this.#keys = new Array<number>(capacity).fill(-1)
    this.#values = new Array<V | undefined>(capacity).fill(undefined)
    this.#mask = capacity - 1
    for (let slot = 0; slot < keys.length; slot++) {
      if (keys[slot] !== -1) this.#place(keys[slot], values[slot])
    }
  }

  /** Puts `key`, which is not in the table, in the first empty slot of its probe run. */
  #place (key: number, value: V | undefined): void {
    let slot = key & this.#mask
    while (this.#keys[slot] !== -1) slot = (slot + 1) & this.#mask
    this.#keys[slot] = key
    this.#values[slot] = value
  }
}

/** Whether `key` goes to a {@link SequenceTable}'s slots: a non-negative safe integer. */
function isSlotKey (key: string | number): key is number {
  return typeof key === 'number' && Number.isSafeInteger(key) && key >= 0
}
