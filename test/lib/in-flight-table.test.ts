/**
 * lib/base/in-flight-table.ts: what a table of requests in flight must do as the Map it replaces
 * did, and the garbage-collector property it exists for.
 */
import t from 'tap'
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { InFlightTable } from '../../lib/base/in-flight-table.js'

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
  const map = growth(new Map<number, unknown>(), id => ({ payload: new Array(128).fill(id) }))
  t.ok(table < 8 * MB, `the table grew it by ${(table / MB).toFixed(1)} MB`)
  t.ok(map > 16 * MB, `the control: a Map grew it by ${(map / MB).toFixed(1)} MB`)
})
