/**
 * The shape of lib/: folders in layers, each importing only the layers below it (value and type imports
 * alike), none importing Fastify, each with a README saying what belongs there. lib/README.md draws the
 * same order for a reader; this test is what holds it.
 */
import t from 'tap'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

/** This file runs as dist/test/lib/layers.test.js: the sources are in lib/ of the checkout. */
const LIB_DIR = fileURLToPath(new URL('../../../lib', import.meta.url))

/**
 * Each folder's layer, bottom first. A file may import its own folder and any folder of a lower layer;
 * folders of one layer do not import each other. `core.ts` assembles a face's engine and sits on top.
 */
const LAYERS: Readonly<Record<string, number>> = {
  base: 0,
  protocol: 1,
  telemetry: 2,
  auth: 3,
  upstreams: 4,
  policy: 5,
  config: 6,
  dispatch: 7,
  connection: 8,
  sessions: 9,
  stdio: 9,
  ops: 9,
  http: 10,
  'core.ts': 11
}

/** `from '…'`, `import '…'`, `import('…')`, `export … from '…'`: every module specifier in a source. */
const SPECIFIER = /(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g

interface Import { file: string, specifier: string, from: string, to: string }

function sources (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(entry => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

/** The folder (or top-level file) of lib/ that `path` belongs to. */
function nodeOf (path: string): string {
  return relative(LIB_DIR, path).split(sep)[0]
}

function importsOf (file: string): Import[] {
  const text = readFileSync(file, 'utf8')
  return [...text.matchAll(SPECIFIER)].map(match => {
    const specifier = match[1]
    const to = specifier.startsWith('.') ? nodeOf(resolve(dirname(file), specifier)) : specifier
    return { file: relative(LIB_DIR, file), specifier, from: nodeOf(file), to }
  })
}

/** The imports that do not go strictly down a layer (or stay in their folder), as `file → specifier (from → to)`. */
function upwardImports (imports: readonly Import[], layers: Readonly<Record<string, number>> = LAYERS): string[] {
  return imports
    .filter(({ specifier, from, to }) => specifier.startsWith('.') && from !== to)
    .filter(({ from, to }) => !(from in layers) || !(to in layers) || layers[to] >= layers[from])
    .map(({ file, specifier, from, to }) => `${file} → ${specifier} (${from} → ${to})`)
}

const files = sources(LIB_DIR)
const imports = files.flatMap(importsOf)

t.test('all/meta/lib-folders-import-only-downward', async t => {
  t.ok(files.length > 60, `${files.length} sources read`)
  t.ok(imports.length > 200, `${imports.length} imports read`)
  const unknown = [...new Set(files.map(nodeOf))].filter(node => !(node in LAYERS))
  t.same(unknown, [], 'every folder of lib/ has a layer')
  t.same(upwardImports(imports), [], 'no import runs up or sideways between folders')
  t.same(imports.filter(({ to }) => to === 'fastify' || to.startsWith('fastify-') || to.startsWith('@fastify/')).map(({ file }) => file), [], 'lib/ knows nothing of Fastify')
})

t.test('all/meta/lib-layer-check-reports-an-upward-import', async t => {
  // The same check over made-up imports: an upward one, a sideways one within a layer, a type import
  // counted like a value import, and a downward one that passes.
  const made: Import[] = [
    { file: 'upstreams/registry.ts', specifier: '../dispatch/tasks.js', from: 'upstreams', to: 'dispatch' },
    { file: 'stdio/server.ts', specifier: '../ops/metrics.js', from: 'stdio', to: 'ops' },
    { file: 'base/net.ts', specifier: '../protocol/jsonrpc.js', from: 'base', to: 'protocol' },
    { file: 'http/exchange.ts', specifier: '../dispatch/dispatcher.js', from: 'http', to: 'dispatch' }
  ]
  t.same(upwardImports(made), [
    'upstreams/registry.ts → ../dispatch/tasks.js (upstreams → dispatch)',
    'stdio/server.ts → ../ops/metrics.js (stdio → ops)',
    'base/net.ts → ../protocol/jsonrpc.js (base → protocol)'
  ])
  t.same(importsOf(join(LIB_DIR, 'sessions', 'store.ts')).filter(i => i.to === 'connection').length > 0, true, 'type imports are read too')
})

t.test('all/meta/lib-folders-say-what-they-hold', async t => {
  const folders = Object.keys(LAYERS).filter(node => !node.endsWith('.ts'))
  for (const folder of folders) {
    const readme = join(LIB_DIR, folder, 'README.md')
    t.ok(existsSync(readme) && readFileSync(readme, 'utf8').trim().length > 0, `lib/${folder}/README.md says what belongs there`)
  }
})
