// Supplies `fs.globSync` (added in Node 22) on Node 20, so that the conformance
// suite's ESM bundle, which does `import { globSync } from 'fs'`, links.
//
// Use: node --import <this file> node_modules/conformance-…/dist/index.js …
//
// Why a loader hook and not `fs.globSync = …` in a --require preload: Node 20 fixes
// the named exports of a builtin's ESM facade from the CJS keys at the first
// public require/import of that builtin, and never adds names afterwards
// (module.syncBuiltinESMExports() only refreshes existing names). The preload's
// own require('fs') would be that first load. So instead every ESM import of
// 'fs' / 'node:fs' resolves to a small shim that re-exports node:fs and adds
// globSync from the `glob` package. The suite calls
// globSync('**/checks.json', { cwd }) and joins the relative paths it gets back.
import fs from 'node:fs'
import { createRequire, register } from 'node:module'
import { pathToFileURL } from 'node:url'

if (typeof fs.globSync !== 'function') {
  const require = createRequire(import.meta.url)
  const globUrl = pathToFileURL(require.resolve('glob')).href

  const shimSource = [
    "export * from 'node:fs'",
    "export { default } from 'node:fs'",
    `import { globSync as globPackageSync } from ${JSON.stringify(globUrl)}`,
    'export function globSync (pattern, options) {',
    '  return globPackageSync(pattern, { ...(options ?? {}), posix: true })',
    '}'
  ].join('\n')
  const shimUrl = 'data:text/javascript,' + encodeURIComponent(shimSource)

  const hooksSource = [
    `const SHIM_URL = ${JSON.stringify(shimUrl)}`,
    'export async function resolve (specifier, context, nextResolve) {',
    "  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL !== SHIM_URL) {",
    '    return { url: SHIM_URL, shortCircuit: true }',
    '  }',
    '  return nextResolve(specifier, context)',
    '}'
  ].join('\n')
  register('data:text/javascript,' + encodeURIComponent(hooksSource))
}
