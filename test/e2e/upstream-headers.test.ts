/**
 * The per-call header seam of HTTP upstreams (lib/upstreams/contract.ts UpstreamHeaderProvider, for
 * per-caller upstream credentials): a provider's headers reach the upstream on calls, from the caller's principal, and a
 * 401 makes the call retry once with fresh headers. A real HTTP fixture sits behind a small gate
 * (node:http) that refuses any `authorization` other than `Bearer good` with 401 and records what
 * it saw; the connection's own traffic (handshake, listen) carries no authorization and passes.
 */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { createRegistry } from '../../lib/upstreams/registry.js'
import type { UpstreamHeaderRequest } from '../../lib/upstreams/contract.js'
import { fixtureCommand, startHttpUpstream } from '../helpers/fixture.js'
import type { Teardown } from '../helpers/app.js'
import { captureLogger } from '../helpers/registry.js'

/** Starts the HTTP fixture; resolves with its port. Stopped at teardown. */
async function startHttpFixture (t: Teardown): Promise<number> {
  const { command, args } = fixtureCommand('--http', '0')
  return Number(new URL(await startHttpUpstream(t, command, args)).port)
}

/** A gate in front of the fixture: 401 for any authorization but `Bearer good`; records each one seen. */
async function startGate (t: Teardown, upstreamPort: number): Promise<{ url: string, seen: string[] }> {
  const seen: string[] = []
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const authorization = req.headers.authorization
    if (authorization !== undefined) {
      seen.push(authorization)
      if (authorization !== 'Bearer good') {
        req.resume()
        res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"', 'content-type': 'text/plain' }).end('no')
        return
      }
    }
    const forward = httpRequest({ host: '127.0.0.1', port: upstreamPort, path: req.url, method: req.method, headers: req.headers }, upstream => {
      res.writeHead(upstream.statusCode ?? 502, upstream.headers)
      upstream.pipe(res)
    })
    forward.on('error', () => res.destroy())
    req.pipe(forward)
  })
  server.listen(0, '127.0.0.1')
  await new Promise(resolve => server.once('listening', resolve))
  t.teardown(async () => { server.closeAllConnections(); await new Promise(resolve => server.close(resolve)) })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, seen }
}

t.test('upstreams/http/header-provider-retries-once-after-401', async t => {
  const gate = await startGate(t, await startHttpFixture(t))
  const asked: UpstreamHeaderRequest[] = []
  const registry = createRegistry({ remote: { url: gate.url } }, {
    logger: captureLogger().logger,
    defaultTimeoutMs: 10_000,
    headerProvider: async request => {
      if (request.own === true) return undefined // the connection's own traffic: nothing (mcpx's own upstream credentials give its own token here)
      asked.push(request)
      return { Authorization: request.afterUnauthorized ? 'Bearer good' : 'Bearer stale' }
    }
  })
  t.teardown(async () => { await registry.close() })
  await registry.start()
  const result = await registry.callTool('echo', { text: 'through the gate' }, { signal: new AbortController().signal, principal: { subject: 'alice' } })
  t.match(result, { content: [{ type: 'text', text: 'through the gate' }] })
  t.same(asked, [
    { upstream: 'remote', principal: { subject: 'alice' }, afterUnauthorized: false },
    { upstream: 'remote', principal: { subject: 'alice' }, afterUnauthorized: true, challenge: 'Bearer error="invalid_token"' }
  ], 'asked once per try, with the principal and, on the retry, the challenge')
  t.same(gate.seen, ['Bearer stale', 'Bearer good'], 'the provider\'s header reached the upstream, once per try')
})

t.test('upstreams/http/header-provider-second-401-fails-the-call', async t => {
  const gate = await startGate(t, await startHttpFixture(t))
  const registry = createRegistry({ remote: { url: gate.url } }, {
    logger: captureLogger().logger,
    defaultTimeoutMs: 10_000,
    headerProvider: async request => request.own === true ? undefined : { authorization: 'Bearer stale' }
  })
  t.teardown(async () => { await registry.close() })
  await registry.start()
  await t.rejects(registry.callTool('echo', { text: 'x' }, { signal: new AbortController().signal }), { code: -31_000, message: /^upstream remote: tools\/call failed: Error POSTing to endpoint: no$/ })
  t.same(gate.seen, ['Bearer stale', 'Bearer stale'], 'one retry, then the 401 is the call\'s error')
})

t.test('upstreams/http/no-header-provider-adds-nothing', async t => {
  const gate = await startGate(t, await startHttpFixture(t))
  const registry = createRegistry({ remote: { url: gate.url } }, { logger: captureLogger().logger, defaultTimeoutMs: 10_000 })
  t.teardown(async () => { await registry.close() })
  await registry.start()
  t.match(await registry.callTool('echo', { text: 'plain' }, { signal: new AbortController().signal, principal: 'ignored' }), { content: [{ text: 'plain' }] })
  t.same(gate.seen, [], 'no authorization header was sent')
})
