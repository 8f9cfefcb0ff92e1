/**
 * Unit tests of lib/core and lib/base/version: one core builder for both faces, and mcpx's version read
 * once (seed › stdio and Streamable HTTP: serverInfo). No Fastify.
 */
import t from 'tap'
import { readFileSync } from 'node:fs'
import { pino } from 'pino'
import { createCore } from '../../lib/core.js'
import { SERVER_INFO, SERVER_VERSION } from '../../lib/base/version.js'
import { loadConfig } from '../../lib/config/load.js'
import { createRegistry } from '../../lib/upstreams/registry.js'

t.test('all/lifecycle/server-version-read-once-from-package-json', async t => {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
  t.equal(SERVER_VERSION, pkg.version)
  t.strictSame(SERVER_INFO, { name: 'mcpx', version: pkg.version })
})

t.test('all/lifecycle/one-core-builder', async t => {
  const logger = pino({ level: 'silent' })
  const registry = createRegistry({}, { logger, defaultTimeoutMs: 1000 })
  t.teardown(async () => { await registry.close() })
  const core = createCore(loadConfig({}), registry, logger)
  t.equal(core.serverInfo, SERVER_INFO)
  t.equal(core.dispatcher.serverInfo, SERVER_INFO, 'the dispatcher reports the same serverInfo')
  t.equal(core.registry, registry)
  t.equal(core.dispatcher.registry, registry, 'one registry handle: the dispatcher routes through the core\'s')
  await t.resolves(core.close(), 'close resolves (nothing to flush without an audit trail)')
  t.throws(() => createCore(loadConfig({ mrtr: { stateKey: 'c2hvcnQ=' } }), registry, logger), { code: 'MCPX_ERR_CONFIG' }, 'a short mrtr.stateKey fails at build')
})
