/**
 * lib/base/in-flight-table.ts: what a table of requests in flight must do as the Map it replaces
 * did, and the garbage-collector property it exists for.
 */
import t from 'tap'
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { InFlightTable, SequenceTable } from '../../lib/base/in-flight-table.js'

t.test('all/connection/in-flight-table-keeps-map-semantics', async t => {
  const table = new InFlightTable<{ id: string | number }>()
  t.equal(table.size, 0, 'empty')
  const a = { id: 'sa' }
  const b = { id: 'n2' }
  table.set('sa', a)
  table.set('n2', b)
  t.equal(table.size, 2, 'two entries')
  t.equal(table.get('sa'), a, 'found by key')
  t.ok(table.has('n2'), 'has')
  t.notOk(table.has('n3'), 'has not')
  const c = { id: 'sa' }
  table.set('sa', c)
  t.equal(table.size, 2, 'a set under a present key replaces and does not count twice')
  t.equal(table.get('sa'), c, 'the replacement')
  t.same(table.values(), [c, b], 'values in insertion order (string keys)')
  const snapshot = table.values()
  for (const entry of snapshot) table.delete(entry.id as string)
  t.equal(table.size, 0, 'deleting while walking a snapshot empties it')
  t.notOk(table.delete('sa'), 'deleting an absent key answers false')
  t.equal(table.size, 0, 'and counts nothing')
  const numbers = new InFlightTable<number>()
  for (const n of [30, 2, 11]) numbers.set(n, n)
  t.same(numbers.values(), [2, 11, 30], 'integer keys come back ascending (mcpx numbers its calls in order)')
  t.equal(numbers.get('11'), 11, 'a number and its decimal string are one key: callers that care check the entry')
})

t.test('all/connection/in-flight-table-promotes-no-request-it-held', async t => {
  // The reason it is not a Map (see in-flight-table.ts): a Map in the old generation that sees a
  // set and a delete per request keeps what it held alive through scavenges, and the old generation
  // grows by it. Each table is first moved to the old generation (two full GCs), then sees 200,000
  // requests, four in flight, each holding ~1 KB. The Map is the control: if V8 stops doing this,
  // the control fails, and the table has no reason left to exist.
  setFlagsFromString('--expose-gc')
  setFlagsFromString('--no-allocation-site-pretenuring') // as `mcpx daemon` runs (lib/base/pretenuring.ts); else the first run's survivors teach V8 to allocate the second's payloads old
  const gc = runInNewContext('gc') as () => void
  const oldSpace = (): number => getHeapSpaceStatistics().find(s => s.space_name === 'old_space')?.space_used_size ?? 0
  const growth = (table: { set: (k: number, v: unknown) => unknown, delete: (k: number) => unknown }, payload: (id: number) => unknown): number => {
    gc()
    gc()
    const inFlight: number[] = []
    const before = oldSpace()
    let grew = 0
    for (let id = 1; id <= 200_000; id++) {
      table.set(id, payload(id))
      inFlight.push(id)
      if (inFlight.length > 4) table.delete(inFlight.shift() as number)
      if (id % 10_000 === 0) grew = Math.max(grew, oldSpace() - before)
    }
    return grew
  }
  const MB = 1024 * 1024
  const table = growth(new InFlightTable<unknown>(), id => ({ payload: new Array(128).fill(id) }))
  const sequence = growth(new SequenceTable<unknown>(), id => ({ payload: new Array(128).fill(id) }))
  const map = growth(new Map<number, unknown>(), id => ({ payload: new Array(128).fill(id) }))
  t.ok(table < 8 * MB, `the table grew it by ${(table / MB).toFixed(1)} MB`)
  t.ok(sequence < 8 * MB, `the sequence table grew it by ${(sequence / MB).toFixed(1)} MB`)
  t.ok(map > 16 * MB, `the control: a Map grew it by ${(map / MB).toFixed(1)} MB`)
})

t.test('all/connection/sequence-table-keeps-map-semantics', async t => {
  // Against a Map, through a long run of sets, replacements and deletes, with up to 40 keys in
  // flight (the slots grow past 16 and 32), ids mostly in sequence, some far ahead (probe runs
  // that wrap and cross), and string keys beside them.
  const table = new SequenceTable<string>()
  const map = new Map<string | number, string>()
  let seed = 7
  const random = (n: number): number => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n }
  let next = 0
  let mismatches = 0
  for (let step = 0; step < 20_000; step++) {
    const keys = [...map.keys()]
    const op = random(10)
    if (op < 4 || keys.length === 0) {
      const key = random(20) === 0 ? (random(3) === 0 ? `s${random(50)}` : next + 2 ** 31 + random(1000)) : next++
      table.set(key, `v${step}`)
      map.set(key, `v${step}`)
    } else if (op < 5) {
      const key = keys[random(keys.length)]
      table.set(key, `r${step}`)
      map.set(key, `r${step}`)
    } else if (keys.length > 40 || op < 9) {
      const key = keys[random(keys.length)]
      if (table.delete(key) !== map.delete(key)) mismatches++
      if (table.delete(key)) mismatches++
    }
    if (table.size !== map.size) mismatches++
    for (const key of map.keys()) if (table.get(key) !== map.get(key)) mismatches++
  }
  t.equal(mismatches, 0, 'every get, delete and size answered as the Map did')
  const numbers = [...map.keys()].filter((k): k is number => typeof k === 'number').sort((a, b) => a - b)
  const strings = [...map.keys()].filter(k => typeof k === 'string')
  t.same(table.values(), [...numbers, ...strings].map(k => map.get(k)), 'values: integer keys ascending, then the others')
  table.set(3, 'three')
  t.equal(table.get('3'), undefined, 'keys are exact: "3" is not 3')
  t.equal(table.get(3.5), undefined, 'a fraction is no key')
  t.notOk(table.delete(-1), 'nor a negative number')
  t.throws(() => table.set(-1, 'x'), TypeError, 'and neither can be set')
})
