/**
 * mcpx as a plugin inside a team's own Fastify app (docs/deployment.md › Use as a Fastify plugin), on a real
 * socket with the real fixture upstream. The team app has its own routes (`/hello`, `/boom`,
 * `/catalogue`), a global onRequest hook, its own error handler and its own logger; mcpx is
 * registered under the prefix `/tools`. Both sides are checked: mcpx serves `/tools/mcp`, and
 * none of mcpx's rules (Origin, CORS, Accept, error shape) reaches the team's routes.
 */
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { Writable } from 'node:stream'
import mcpx from '../../app.js'
import { fixtureUpstreams, legacyHeaders, modernHeaders, modernMeta, sseMessages } from '../helpers/app.js'
import { isAlive, readSse } from '../helpers/daemon.js'

/** How long app.close() may take with open streams before the test calls it a hang, ms. */
const CLOSE_BOUND_MS = 5_000

interface TeamApp { app: FastifyInstance, base: string, seen: string[], logLines: Array<Record<string, unknown>> }

/** The team's app: its own routes, hook, error handler and logger, then mcpx under /tools. */
async function teamApp (t: Test, { teardown = true } = {}): Promise<TeamApp> {
  const logLines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write (chunk: Buffer, _encoding, callback) {
      for (const text of chunk.toString('utf8').split('\n')) if (text !== '') logLines.push(JSON.parse(text) as Record<string, unknown>)
      callback()
    }
  })
  const app = Fastify({ logger: { level: 'info', stream } })
  const seen: string[] = []
  app.addHook('onRequest', async function countRequests (request) { seen.push(`${request.method} ${request.url}`) })
  app.setErrorHandler(function teamErrors (error: Error, _request, reply) {
    void reply.code(418).send({ team: true, message: error.message })
  })
  app.get('/hello', async function hello () { return { hello: 'world' } })
  app.get('/boom', async function boom () { throw new Error('team failure') })
  app.get('/catalogue', async function catalogue () { return { tools: app.upstreams.tools().map(tool => tool.name) } })
  await app.register(mcpx, { prefix: '/tools', upstreams: fixtureUpstreams() })
  const base = await app.listen({ host: '127.0.0.1', port: 0 })
  if (teardown) t.teardown(async () => { await app.close() })
  return { app, base, seen, logLines }
}

const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'team-test', version: '0.0.0' } } })

t.test('plugin/embedding/serves-under-prefix', async t => {
  const { base, logLines } = await teamApp(t)
  const init = await fetch(`${base}/tools/mcp`, { method: 'POST', headers: legacyHeaders(), body: INITIALIZE })
  t.equal(init.status, 200)
  const session = init.headers.get('mcp-session-id')
  t.type(session, 'string', 'legacy initialize mints a session')
  t.match(await init.json(), { jsonrpc: '2.0', id: 1, result: { protocolVersion: '2025-06-18', serverInfo: { name: 'mcpx' } } })

  const list = await fetch(`${base}/tools/mcp`, {
    method: 'POST',
    headers: legacyHeaders({ 'mcp-session-id': session ?? '', 'mcp-protocol-version': '2025-06-18' }),
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' })
  })
  t.equal(list.status, 200)
  const body = list.headers.get('content-type')?.startsWith('text/event-stream') === true ? sseMessages(await list.text())[0] : await list.json()
  const names = (body as { result: { tools: Array<{ name: string }> } }).result.tools.map(tool => tool.name)
  t.ok(names.includes('echo'), 'legacy tools/list lists the fixture tools')

  const modern = await fetch(`${base}/tools/mcp`, {
    method: 'POST',
    headers: modernHeaders('tools/list'),
    body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: modernMeta() } })
  })
  t.equal(modern.status, 200)
  t.match(await modern.json(), { id: 3, result: { tools: [{ name: 'echo' }] } }, 'modern tools/list too')

  const root = await fetch(`${base}/mcp`, { method: 'POST', headers: legacyHeaders(), body: INITIALIZE })
  t.equal(root.status, 404, 'nothing is served at /mcp when mounted under /tools')

  // One structured line per /mcp request, through the team's own logger.
  const lines = logLines.filter(line => line.msg === 'mcp request')
  t.ok(lines.length >= 3, 'mcpx logs through the host logger')
  t.match(lines.find(line => line.rpcMethod === 'initialize'), { method: 'POST', era: 'legacy', revision: '2025-06-18', status: 200, reqId: String, durationMs: Number })
  t.match(lines.find(line => line.rpcMethod === 'tools/list' && line.era === 'modern'), { revision: '2026-07-28', status: 200 })
  t.ok(logLines.some(line => line.msg === 'upstream ready' && line.upstream === 'fixture'), 'upstream lifecycle lines go to the host logger too')
})

t.test('plugin/embedding/host-routes-untouched', async t => {
  const { base, seen } = await teamApp(t)
  const evil = 'http://evil.example'

  const hello = await fetch(`${base}/hello`, { headers: { origin: evil } })
  t.equal(hello.status, 200, 'a foreign Origin is not refused on the team route')
  t.same(await hello.json(), { hello: 'world' })
  t.equal(hello.headers.get('access-control-allow-origin'), null, 'no CORS grant from mcpx on /hello')

  const mcp = await fetch(`${base}/tools/mcp`, { method: 'POST', headers: legacyHeaders({ origin: evil }), body: INITIALIZE })
  t.equal(mcp.status, 403, 'mcpx refuses the same Origin on /tools/mcp')

  const preflight = await fetch(`${base}/hello`, { method: 'OPTIONS', headers: { origin: 'http://127.0.0.1', 'access-control-request-method': 'GET' } })
  t.equal(preflight.status, 404, 'OPTIONS /hello is not answered by mcpx (the team has no OPTIONS route)')
  t.equal(preflight.headers.get('access-control-allow-methods'), null)

  const noAccept = await fetch(`${base}/hello`, { headers: { accept: 'image/png' } })
  t.equal(noAccept.status, 200, "mcpx's Accept rule stays on /mcp")

  const boom = await fetch(`${base}/boom`)
  t.equal(boom.status, 418, "the team's error handler still handles the team's errors")
  t.same(await boom.json(), { team: true, message: 'team failure' })

  const catalogue = await fetch(`${base}/catalogue`)
  t.equal(catalogue.status, 200)
  t.ok(((await catalogue.json()) as { tools: string[] }).tools.includes('echo'), 'app.upstreams is the catalogue')

  t.ok(seen.includes('GET /hello'), "the team's global hook sees its own routes")
  t.ok(seen.includes('GET /boom'))
  t.ok(seen.includes('OPTIONS /hello'))
})

t.test('plugin/options/bad-options-fail-registration', async t => {
  for (const [options, field] of [
    [{ transport: { maxBodyBytes: 'big' } }, 'transport.maxBodyBytes'],
    [{ trasnport: {} }, 'trasnport'],
    [{ daemon: { shutdownTimeout: 'soon' } }, 'daemon.shutdownTimeout']
  ] as const) {
    const app = Fastify({ logger: false })
    t.teardown(async () => { await app.close() })
    app.register(mcpx, { ...(options as Record<string, unknown>), upstreams: {} })
    const err = await app.ready().then(() => undefined, (e: unknown) => e as Error)
    t.ok(err instanceof Error, `${field}: registration fails`)
    t.match(err?.message, /^mcpx: /, 'the message starts with mcpx:')
    t.ok(err?.message.includes(field), `the message names ${field}`)
  }
})

t.test('plugin/close/ends-streams-and-children', async t => {
  const { app, base } = await teamApp(t, { teardown: false })
  const pids = app.upstreams.status().map(u => u.pid)
  t.ok(pids.every(pid => typeof pid === 'number'), 'the fixture child runs')

  // A legacy GET notification stream…
  const init = await fetch(`${base}/tools/mcp`, { method: 'POST', headers: legacyHeaders(), body: INITIALIZE })
  const session = init.headers.get('mcp-session-id') ?? ''
  await init.arrayBuffer()
  await fetch(`${base}/tools/mcp`, { method: 'POST', headers: legacyHeaders({ 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' }), body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })
  const get = await fetch(`${base}/tools/mcp`, { headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' } })
  t.equal(get.status, 200)
  t.equal(get.headers.get('content-type'), 'text/event-stream')
  const getStream = readSse(get)

  // …and a 2026-07-28 listen stream.
  const listen = await fetch(`${base}/tools/mcp`, {
    method: 'POST',
    headers: modernHeaders('subscriptions/listen'),
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: modernMeta() } })
  })
  t.equal(listen.status, 200)
  const listenStream = readSse(listen)
  t.match(await listenStream.next(), { method: 'notifications/subscriptions/acknowledged' })
  t.same(await app.mcpxMetrics.registry.getSingleMetricAsString('mcpx_open_streams').then(text => text.split('\n').filter(l => !l.startsWith('#'))),
    ['mcpx_open_streams{kind="get"} 1', 'mcpx_open_streams{kind="listen"} 1'], 'both streams are counted')

  let timer: NodeJS.Timeout | undefined
  const outcome = await Promise.race([
    app.close().then(() => 'closed'),
    new Promise<string>(resolve => { timer = setTimeout(() => resolve('hung'), CLOSE_BOUND_MS) })
  ])
  clearTimeout(timer)
  t.equal(outcome, 'closed', 'app.close() completes with open streams')
  t.equal(await getStream.ended, 'end', 'the GET stream ended cleanly (not reset)')
  t.equal(await listenStream.ended, 'end', 'the listen stream ended cleanly')
  for (const pid of pids) t.notOk(isAlive(pid as number), `upstream child ${String(pid)} is gone`)
})
