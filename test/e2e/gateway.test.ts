/**
 * The main job end to end (what the gateway must show), against a REAL daemon process on 127.0.0.1
 * with REAL upstream children: `@modelcontextprotocol/server-everything` over stdio and our
 * fixture. The official clients (v1 at 2025-11-25, v2 pinned to 2026-07-28) list and call a
 * tool of each upstream by its prefixed name; a killed upstream fails the call in flight at once
 * and comes back; after the daemon stops, no child it started is alive.
 */
import t from 'tap'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client'
import { daemonReady, startDaemon, isAlive } from '../helpers/daemon.js'
import { fixtureCommand, everythingCommand } from '../helpers/fixture.js'
import { modernHeaders, modernMeta } from '../helpers/app.js'
import { pollUntil, fixtureLogPath, fixtureEvents } from '../helpers/legacy.js'

interface ReadyStatus { upstreams: Array<{ name: string, state: string, pid?: number, pids?: number[] }> }

const TWO_UPSTREAMS = { upstreams: { everything: everythingCommand(), fixture: fixtureCommand() } }

async function readyz (base: string): Promise<ReadyStatus> {
  return await (await fetch(`${base}/readyz`)).json() as ReadyStatus
}

function pidsOf (status: ReadyStatus): number[] {
  return [...new Set(status.upstreams.flatMap(u => [...(u.pids ?? []), ...(u.pid !== undefined ? [u.pid] : [])]))]
}

function textOf (result: unknown): string {
  const content = (result as { content?: Array<{ type: string, text?: string }> }).content ?? []
  return content.filter(c => c.type === 'text').map(c => c.text ?? '').join('')
}

t.test('daemon/gateway/serves-official-clients-of-both-eras-across-two-upstreams', async t => {
  const daemon = await startDaemon(t, TWO_UPSTREAMS)
  await daemonReady(daemon.base)

  const v1 = new ClientV1({ name: 'gateway-test-v1', version: '1.0.0' })
  await v1.connect(new TransportV1(new URL(`${daemon.base}/mcp`)))
  t.teardown(async () => { await v1.close() })
  const v1Tools = (await v1.listTools()).tools.map(tool => tool.name)
  t.ok(v1Tools.includes('everything__echo'), 'v1 lists server-everything\'s echo, prefixed')
  t.ok(v1Tools.includes('fixture__echo'), 'v1 lists the fixture\'s echo, prefixed')
  t.equal(textOf(await v1.callTool({ name: 'fixture__echo', arguments: { text: 'from v1' } })), 'from v1')
  t.match(textOf(await v1.callTool({ name: 'everything__echo', arguments: { message: 'hello everything' } })), /hello everything/)

  const v2 = new ClientV2({ name: 'gateway-test-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
  await v2.connect(new TransportV2(new URL(`${daemon.base}/mcp`)))
  t.teardown(async () => { await v2.close() })
  t.equal(v2.getProtocolEra(), 'modern')
  const v2Tools = (await v2.listTools()).tools.map(tool => tool.name)
  t.same(v2Tools, v1Tools, 'both eras see the same merged catalogue, in the same order')
  t.equal(textOf(await v2.callTool({ name: 'fixture__echo', arguments: { text: 'from v2' } })), 'from v2')
  t.match(textOf(await v2.callTool({ name: 'everything__echo', arguments: { message: 'modern hello' } })), /modern hello/)
})

t.test('upstreams/lifecycle/killed-upstream-fails-the-call-at-once-and-comes-back', async t => {
  const log = fixtureLogPath()
  const daemon = await startDaemon(t, { upstreams: { fixture: { ...fixtureCommand(), env: { FIXTURE_LOG: log } } } })
  await daemonReady(daemon.base)
  const before = await readyz(daemon.base)
  const fixturePid = before.upstreams.find(u => u.name === 'fixture')?.pid
  if (fixturePid === undefined) throw new Error('readyz names no fixture pid')

  const body = JSON.stringify({ jsonrpc: '2.0', id: 41, method: 'tools/call', params: { name: 'slow', arguments: { ms: 60_000 }, _meta: modernMeta() } })
  const pending = fetch(`${daemon.base}/mcp`, { method: 'POST', headers: modernHeaders('tools/call', 'slow', { accept: 'application/json' }), body })
  // The call is in flight once the fixture has started it (it records that in FIXTURE_LOG).
  await pollUntil('the fixture started the slow call', () => fixtureEvents(log).some(e => e.event === 'started' && e.tool === 'slow'))
  const killedAt = performance.now()
  process.kill(fixturePid, 'SIGKILL')
  const response = await pending
  const elapsedMs = performance.now() - killedAt
  const reply = await response.json() as { id: number, error?: { code: number, message: string } }
  t.equal(reply.id, 41)
  t.ok(reply.error !== undefined, 'the caller gets a JSON-RPC error')
  t.ok(elapsedMs < 1_000, `within a second of the kill (took ${Math.round(elapsedMs)} ms)`)

  const back = await pollUntil('the fixture restarted', async () => {
    const status = await readyz(daemon.base)
    const fixture = status.upstreams.find(u => u.name === 'fixture')
    return fixture?.state === 'ready' && fixture.pid !== undefined && fixture.pid !== fixturePid ? fixture : undefined
  }, 15_000)
  t.not(back.pid, fixturePid, 'a new child')
  const next = await fetch(`${daemon.base}/mcp`, {
    method: 'POST',
    headers: modernHeaders('tools/call', 'echo', { accept: 'application/json' }),
    body: JSON.stringify({ jsonrpc: '2.0', id: 42, method: 'tools/call', params: { name: 'echo', arguments: { text: 'back' }, _meta: modernMeta() } })
  })
  t.equal(next.status, 200)
  t.equal(textOf(((await next.json()) as { result: unknown }).result), 'back', 'the next call succeeds')
})

t.test('daemon/shutdown/no-child-outlives-the-daemon', async t => {
  const daemon = await startDaemon(t, TWO_UPSTREAMS)
  await daemonReady(daemon.base)
  const pids = pidsOf(await readyz(daemon.base))
  t.ok(pids.length >= 2, `one child per upstream at least (${pids.join(', ')})`)
  for (const pid of pids) t.ok(isAlive(pid), `child ${pid} runs while the daemon does`)
  daemon.child.kill('SIGTERM')
  t.equal(await daemon.exited, 0, 'the daemon exits 0 on SIGTERM')
  for (const pid of pids) t.notOk(isAlive(pid), `child ${pid} is gone`)
})

t.test('all/limits/daemon-oversized-headers-431-json-rpc', async t => {
  const daemon = await startDaemon(t, { upstreams: { fixture: fixtureCommand() } })
  const { port } = new URL(daemon.base)
  const { connect } = await import('node:net')
  const socket = connect(Number(port), '127.0.0.1')
  const chunks: Buffer[] = []
  socket.on('data', chunk => chunks.push(chunk))
  const closed = new Promise<void>(resolve => socket.on('close', () => resolve()))
  socket.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Filler: ${'a'.repeat(32 * 1024)}\r\nContent-Length: 2\r\n\r\n{}`)
  await closed
  const text = Buffer.concat(chunks).toString('utf8')
  t.match(text, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/)
  const body = text.slice(text.indexOf('\r\n\r\n') + 4)
  t.same(JSON.parse(body), { jsonrpc: '2.0', error: { code: -32_600, message: 'Request Header Fields Too Large' } }, 'an id-less JSON-RPC error, as every other refusal')
})

t.test('daemon/ops/endpoints-refuse-a-rebinding-host', async t => {
  const daemon = await startDaemon(t, { upstreams: { fixture: fixtureCommand() } })
  const { port } = new URL(daemon.base)
  const { request } = await import('node:http')
  const get = async (path: string, host: string): Promise<{ status: number, body: string }> => await new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: Number(port), path, headers: { host }, agent: false }, res => {
      let body = ''
      res.setEncoding('utf8').on('data', (chunk: string) => { body += chunk }).on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
  for (const path of ['/readyz', '/metrics', '/status.json']) {
    t.equal((await get(path, `127.0.0.1:${port}`)).status, 200, `${path} answers a loopback Host`)
    t.equal((await get(path, `localhost:${port}`)).status, 200, `${path} answers localhost`)
  }
  for (const path of ['/metrics', '/status.json']) t.equal((await get(path, `evil.example:${port}`)).status, 403, `${path} refuses a rebinding Host`)
  // Readiness answers anyone (probes), but a rebinding page learns only ready or not, not the upstreams.
  const rebound = await get('/readyz', `evil.example:${port}`)
  t.match(rebound.status, /^(200|503)$/)
  t.same(Object.keys(JSON.parse(rebound.body) as object), ['status'], '/readyz under a rebinding Host: its status only')
  t.equal((await get('/healthz', `evil.example:${port}`)).status, 200, 'liveness carries nothing worth reading')
})
