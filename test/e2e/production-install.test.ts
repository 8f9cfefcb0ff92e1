/**
 * What docker/Dockerfile does, without a Docker engine (docs/deployment.md › Run in a container): copy the
 * package (package.json, package-lock.json, dist/ without dist/test and dist/bench) into a clean
 * temp dir, `npm ci --omit=dev` there, start the image's entry command (`node dist/cli.js daemon`,
 * config through MCPX_CONFIG) and call it: initialize, tools/list and a tool call on
 * `@modelcontextprotocol/server-everything` (a production dependency), then SIGTERM → exit 0.
 * This proves no runtime import reaches a dev dependency. Needs the npm registry (or a warm
 * npm cache); the install may take a minute.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { legacyHeaders, sseMessages } from '../helpers/app.js'
import { isAlive, startDaemon } from '../helpers/daemon.js'

const run = promisify(execFile)
/** The package root (this file is dist/test/e2e/production-install.test.js). */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm'
/** Bound of `npm ci`, ms. */
const INSTALL_TIMEOUT_MS = 240_000

t.setTimeout(INSTALL_TIMEOUT_MS + 60_000)

/** Reads a JSON or SSE reply as its one JSON-RPC message. */
async function messageOf (response: Response): Promise<Record<string, unknown>> {
  const text = await response.text()
  if (response.headers.get('content-type')?.startsWith('text/event-stream') === true) return sseMessages(text).at(-1) as Record<string, unknown>
  return JSON.parse(text) as Record<string, unknown>
}

t.test('package/npm/pack-contents', async t => {
  const { stdout } = await run(NPM, ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 })
  const files = (JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>)[0].files.map(f => f.path)
  t.ok(files.includes('dist/app.js'), 'the plugin entry ships')
  t.ok(files.includes('dist/app.d.ts'), 'its type declarations ship')
  t.ok(files.includes('dist/cli.js'), 'the mcpx bin ships')
  t.ok(files.includes('package.json'))
  t.same(files.filter(f => f.startsWith('dist/test/') || f.startsWith('dist/bench/')), [], 'no tests or benches in the package')
  t.same(files.filter(f => f.endsWith('.ts') && !f.endsWith('.d.ts')), [], 'no TypeScript sources')
})

t.test('package/npm/production-install', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-prod-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'))
  cpSync(join(ROOT, 'package-lock.json'), join(dir, 'package-lock.json'))
  const dist = join(ROOT, 'dist')
  cpSync(dist, join(dir, 'dist'), {
    recursive: true,
    filter: source => {
      const rel = relative(dist, source)
      return rel !== 'test' && rel !== 'bench' && !rel.startsWith(`test${sep}`) && !rel.startsWith(`bench${sep}`)
    }
  })
  t.notOk(existsSync(join(dir, 'dist', 'test')), 'dist/test is not copied')

  await run(NPM, ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, timeout: INSTALL_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 })
  t.ok(existsSync(join(dir, 'node_modules', 'fastify')), 'production dependencies are installed')
  t.notOk(existsSync(join(dir, 'node_modules', 'tap')), 'dev dependencies are not (tap)')
  t.notOk(existsSync(join(dir, 'node_modules', 'typescript')), 'dev dependencies are not (typescript)')

  const everything = join(dir, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js')
  const daemon = await startDaemon(t, { upstreams: { everything: { command: process.execPath, args: [everything, 'stdio'] } } }, {
    cli: join(dir, 'dist', 'cli.js'),
    cwd: dir,
    configVia: 'env'
  })
  const ready = await fetch(`${daemon.base}/readyz`)
  t.equal(ready.status, 200)
  const pids = ((await ready.json()) as { upstreams: Array<{ pid?: number }> }).upstreams.map(u => u.pid).filter((p): p is number => typeof p === 'number')

  const init = await fetch(`${daemon.base}/mcp`, {
    method: 'POST',
    headers: legacyHeaders(),
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'prod-install-test', version: '0.0.0' } } })
  })
  t.equal(init.status, 200)
  const session = init.headers.get('mcp-session-id') ?? ''
  t.match(await messageOf(init), { id: 1, result: { protocolVersion: '2025-06-18', serverInfo: { name: 'mcpx' } } })
  const inSession = legacyHeaders({ 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' })
  const initialized = await fetch(`${daemon.base}/mcp`, { method: 'POST', headers: inSession, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })
  t.equal(initialized.status, 202)

  const list = await fetch(`${daemon.base}/mcp`, { method: 'POST', headers: inSession, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) })
  t.equal(list.status, 200)
  const tools = ((await messageOf(list)).result as { tools: Array<{ name: string }> }).tools.map(tool => tool.name)
  t.ok(tools.includes('echo'), 'server-everything tools are listed')

  const call = await fetch(`${daemon.base}/mcp`, {
    method: 'POST',
    headers: inSession,
    body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { message: 'from a production install' } } })
  })
  t.equal(call.status, 200)
  t.match(await messageOf(call), { id: 3, result: { content: [{ type: 'text', text: /from a production install/ }] } })

  daemon.child.kill('SIGTERM')
  t.equal(await daemon.exited, 0, 'SIGTERM exits 0')
  for (const pid of pids) t.notOk(isAlive(pid), `upstream child ${pid} is gone`)
})
