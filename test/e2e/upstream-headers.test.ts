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

/** Starts the HTTP fixture (`flags`: e.g. `--era legacy`); resolves with its port. Stopped at teardown. */
async function startHttpFixture (t: Teardown, ...flags: string[]): Promise<number> {
  const { command, args } = fixtureCommand('--http', '0', ...flags)
  return Number(new URL(await startHttpUpstream(t, command, args)).port)
}

/**
 * Serves `handler` on a loopback port until teardown; resolves with its `/mcp` URL. The gates
 * below are this with their own handler.
 */
async function listenGate (t: Teardown, handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler)
  server.listen(0, '127.0.0.1')
  await new Promise(resolve => server.once('listening', resolve))
  t.teardown(async () => { server.closeAllConnections(); await new Promise(resolve => server.close(resolve)) })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`
}

/**
 * Passes one request on to the fixture at `upstreamPort` and its answer back, with `extraHeaders`
 * added to the answer. `body`: the request's body when the gate has read it already; otherwise
 * the request is piped.
 */
function forwardTo (upstreamPort: number, req: IncomingMessage, res: ServerResponse, body?: Buffer, extraHeaders?: Record<string, string>): void {
  const forward = httpRequest({ host: '127.0.0.1', port: upstreamPort, path: req.url, method: req.method, headers: req.headers }, upstream => {
    res.writeHead(upstream.statusCode ?? 502, extraHeaders === undefined ? upstream.headers : { ...upstream.headers, ...extraHeaders })
    upstream.pipe(res)
  })
  forward.on('error', () => res.destroy())
  if (body === undefined) req.pipe(forward)
  else forward.end(body)
}

/** A gate in front of the fixture: 401 for any authorization but `Bearer good`; records each one seen. */
async function startGate (t: Teardown, upstreamPort: number): Promise<{ url: string, seen: string[] }> {
  const seen: string[] = []
  const url = await listenGate(t, (req, res) => {
    const authorization = req.headers.authorization
    if (authorization !== undefined) {
      seen.push(authorization)
      if (authorization !== 'Bearer good') {
        req.resume()
        res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"', 'content-type': 'text/plain' }).end('no')
        return
      }
    }
    forwardTo(upstreamPort, req, res)
  })
  return { url, seen }
}

/**
 * A gate that records the raw request headers (`[name, value, …]` as sent, so a repeated name
 * shows) of every POST whose body is a `tools/call`, and passes everything to the fixture. With
 * `sessionId`, it plays a stateful legacy server in front of the stateless one: its answer to
 * `initialize` carries that `Mcp-Session-Id`.
 */
async function startRecorder (t: Teardown, upstreamPort: number, sessionId?: string): Promise<{ url: string, calls: string[][] }> {
  const calls: string[][] = []
  const url = await listenGate(t, (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      if (req.method === 'POST' && body.includes('"tools/call"')) calls.push(req.rawHeaders)
      const initialize = req.method === 'POST' && body.includes('"initialize"')
      forwardTo(upstreamPort, req, res, body, initialize && sessionId !== undefined ? { 'mcp-session-id': sessionId } : undefined)
    })
  })
  return { url, calls }
}

/** The values of `name` (any case) in raw headers, in order. */
const valuesOf = (raw: string[], name: string): string[] => raw.filter((_, i) => i % 2 === 1 && raw[i - 1].toLowerCase() === name)

t.test('upstreams/http/request-headers-one-per-name', async t => {
  const recorder = await startRecorder(t, await startHttpFixture(t))
  const registry = createRegistry({ remote: { url: recorder.url, headers: { 'X-Team': 'from-config', 'X-Kept': 'config-only', Accept: 'application/json' } } }, {
    logger: captureLogger().logger,
    defaultTimeoutMs: 10_000,
    // mcpx owns content-type, accept and mcp-*: a provider cannot set them; any other name it gives replaces the config's.
    headerProvider: async request => request.own === true ? undefined : { 'x-team': 'from-provider', 'Content-Type': 'text/plain', ACCEPT: 'text/html', 'Mcp-Method': 'tools/list', 'Mcp-Extra': 'from-provider' }
  })
  t.teardown(async () => { await registry.close() })
  await registry.start()
  t.match(await registry.callTool('echo', { text: 'headers' }, { signal: new AbortController().signal }), { content: [{ text: 'headers' }] })
  t.equal(recorder.calls.length, 1, 'one tools/call POST')
  const raw = recorder.calls[0]
  const names = raw.filter((_, i) => i % 2 === 0).map(name => name.toLowerCase())
  t.same(names.filter((name, i) => names.indexOf(name) !== i), [], 'no header name is sent twice')
  t.same(valuesOf(raw, 'x-team'), ['from-provider'], 'the provider\'s header replaces the config\'s')
  t.same(valuesOf(raw, 'x-kept'), ['config-only'], 'a config header the provider does not name stays')
  t.same(valuesOf(raw, 'content-type'), ['application/json'])
  t.same(valuesOf(raw, 'accept'), ['application/json, text/event-stream'], 'the config\'s accept, with what mcpx must accept added once')
  t.same(valuesOf(raw, 'mcp-extra'), [], 'a provider cannot set mcp-* headers, even one mcpx does not send')
  t.same(valuesOf(raw, 'mcp-method'), ['tools/call'], 'the mirrored Mcp-Method is the call\'s (the fixture speaks 2026-07-28)')
})

t.test('upstreams/http/legacy-session-headers-on-calls', async t => {
  // A legacy upstream that issued a session: every call carries its Mcp-Session-Id and the
  // negotiated MCP-Protocol-Version (seed › Streamable HTTP, legacy sessions), once each, and a
  // provider cannot replace either.
  const recorder = await startRecorder(t, await startHttpFixture(t, '--era', 'legacy'), 'gate-session-1')
  const registry = createRegistry({ remote: { url: recorder.url } }, {
    logger: captureLogger().logger,
    defaultTimeoutMs: 10_000,
    headerProvider: async request => request.own === true ? undefined : { 'Mcp-Session-Id': 'from-provider', 'MCP-Protocol-Version': '1999-01-01' }
  })
  t.teardown(async () => { await registry.close() })
  await registry.start()
  t.match(await registry.callTool('echo', { text: 'in a session' }, { signal: new AbortController().signal }), { content: [{ text: 'in a session' }] })
  t.equal(recorder.calls.length, 1, 'one tools/call POST')
  const raw = recorder.calls[0]
  t.same(valuesOf(raw, 'mcp-session-id'), ['gate-session-1'], 'the session the upstream issued')
  const version = valuesOf(raw, 'mcp-protocol-version')
  t.equal(version.length, 1, 'one MCP-Protocol-Version')
  t.match(version[0], /^20\d\d-\d\d-\d\d$/, 'a revision')
  t.not(version[0], '1999-01-01', 'the negotiated one, not the provider\'s')
  t.not(version[0], '2026-07-28', 'a legacy revision: the upstream speaks only the initialize era')
})

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
