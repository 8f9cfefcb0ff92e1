/**
 * The package's public API is a decision, not an accident of file paths: package.json names each
 * subpath a host app may import, and every other file of dist/ stays private. Imports go through the
 * package's own name (Node resolves a package's self-reference through its `exports`).
 */
import t from 'tap'
import { readFileSync } from 'node:fs'

const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { exports: Record<string, unknown> }

t.test('package/exports/named-subpaths-only', async t => {
  t.same(Object.keys(pkg.exports), ['.', './lib/trace', './package.json'], 'the root, the documented tracing subpath and package.json; no wildcard')
  const root = await import('mcpx') as Record<string, unknown>
  t.type(root.default, 'function', 'mcpx: the Fastify plugin')
  const trace = await import('mcpx/lib/trace') as Record<string, unknown>
  t.type(trace.startTracing, 'function', 'mcpx/lib/trace: startTracing, as the docs say')
  for (const hidden of ['mcpx/lib/telemetry/log', 'mcpx/lib/log', 'mcpx/lib/config/config', 'mcpx/dist/app.js']) {
    // Node sets code ERR_PACKAGE_PATH_NOT_EXPORTED; tap's loader reports the same code in the message.
    const err = await import(hidden).then(() => undefined, (e: unknown) => e as { code?: string, message?: string })
    t.match(`${err?.code ?? ''} ${err?.message ?? ''}`, /ERR_PACKAGE_PATH_NOT_EXPORTED|not defined by "exports"/, `${hidden} is private`)
  }
})
