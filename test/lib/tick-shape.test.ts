/**
 * lib/base/tick-shape.ts: holding one process.nextTick entry keeps V8 building the next ones on
 * their fast path through major GCs. Each case runs in a child node with `--expose-gc
 * --allow-natives-syntax`, which makes bursts of ticks with a major GC between them (no entry
 * queued during the GC), then prints V8's view of `process.nextTick` (`%DebugPrint`, whose
 * feedback slots name their state).
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { keepTickObjectShape } from '../../lib/base/tick-shape.js'

const TICK_SHAPE = fileURLToPath(new URL('../../lib/base/tick-shape.js', import.meta.url))

/** The states of nextTick's literal-definition slots after major GCs, with the entry held or not. */
async function slotStates (dir: string, hold: boolean): Promise<string[]> {
  const script = join(dir, `${hold ? 'held' : 'control'}.mjs`)
  writeFileSync(script, [
    hold ? `import { keepTickObjectShape } from ${JSON.stringify(TICK_SHAPE)}\nif (!keepTickObjectShape()) throw new Error('no entry held')` : '',
    'const ticks = (n) => new Promise(resolve => { let i = 0; const f = () => { if (++i < n) process.nextTick(f); else resolve() }; process.nextTick(f) })',
    'for (let round = 0; round < 6; round++) { await ticks(1000); await new Promise(resolve => setTimeout(resolve, 5)); globalThis.gc() }',
    'await ticks(1000);',
    '%DebugPrint(process.nextTick);'
  ].join('\n'))
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(process.execPath, ['--expose-gc', '--allow-natives-syntax', script], { maxBuffer: 16 * 1024 * 1024, timeout: 60_000 }, (err, out) => { if (err !== null) reject(err); else resolve(out) })
  })
  return [...stdout.matchAll(/slot #\d+ DefineKeyedOwnPropertyInLiteral (\w+)/g)].map(m => m[1])
}

t.test('all/process/tick-object-shape-outlives-major-gcs', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-tick-shape-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  // The control: without an entry held, the GCs free the entry's maps and the slots go
  // megamorphic. If a newer V8 stops doing this, the control fails, and the hold can go.
  const control = await slotStates(dir, false)
  t.equal(control.length, 4, `nextTick defines four properties in its literal: ${control.join(' ')}`)
  t.ok(control.includes('MEGAMORPHIC'), `without an entry held, a slot went megamorphic: ${control.join(' ')}`)
  const held = await slotStates(dir, true)
  t.same(held, ['MONOMORPHIC', 'MONOMORPHIC', 'MONOMORPHIC', 'MONOMORPHIC'], 'with one entry held, every slot stays monomorphic')
})

t.test('all/process/tick-object-shape-held-once', async t => {
  t.ok(keepTickObjectShape(), 'an entry is held')
  t.ok(keepTickObjectShape(), 'a second call answers true again, holding no second entry')
})
