/**
 * Test helpers for the HTTP face: `build(t, options)` boots a Fastify app with mcpx registered
 * (real upstream processes; default: the fixture over stdio) and closes it at teardown;
 * `listen(t, options)` does the same on a real socket on 127.0.0.1:0 and returns the base URL.
 */
import Fastify, { type FastifyInstance } from 'fastify'
import mcpx, { type McpxOptions } from '../../app.js'
import { fixtureCommand } from './fixture.js'

/** The part of tap's Test these helpers use. */
export interface Teardown { teardown: (fn: () => unknown) => void }

/** Options: mcpx config keys (default upstreams: one fixture, no prefix). */
export type BuildOptions = McpxOptions

/** A config with one fixture upstream (extra flags for the fixture, env for it). */
export function fixtureUpstreams (flags: string[] = [], env?: Record<string, string>): Record<string, unknown> {
  const { command, args } = fixtureCommand(...flags)
  return { fixture: { command, args, ...(env !== undefined ? { env } : {}) } }
}

/** Boots an app with mcpx registered and ready; closed at teardown (children killed). */
export async function build (t: Teardown, options: BuildOptions = {}): Promise<FastifyInstance> {
  // forceCloseConnections: after a client aborts a streamed reply, undici may open a spare
  // connection that never sends a request; close() would otherwise wait out its keep-alive.
  const app = Fastify({ logger: { level: process.env.TEST_LOG_LEVEL ?? 'silent' }, forceCloseConnections: true })
  const opts: McpxOptions = { ...options }
  if (opts.upstreams === undefined && opts.registry === undefined) opts.upstreams = fixtureUpstreams()
  await app.register(mcpx, opts)
  await app.ready()
  t.teardown(async () => { await app.close() })
  await upstreamsSettled(app)
  return app
}

/**
 * Waits (at most `boundMs`) until no upstream is still `connecting`. The plugin serves after
 * UPSTREAM_START_WAIT_MS (5 s) whatever its upstreams do; on a loaded machine a fixture child can
 * take longer than that to start, and a test's first call would then get -31000 "is connecting".
 * Past the bound the test goes on (and sees what a client would). A bound, not a delay.
 */
async function upstreamsSettled (app: FastifyInstance, boundMs = 30_000): Promise<void> {
  const deadline = Date.now() + boundMs
  while (app.upstreams.status().some(u => u.state === 'connecting') && Date.now() < deadline) {
    await new Promise(resolve => setTimeout(resolve, 25))
  }
}

/** Boots the app on a real socket; returns the base URL (`http://127.0.0.1:<port>`) and the app. */
export async function listen (t: Teardown, options: BuildOptions = {}): Promise<{ base: string, app: FastifyInstance }> {
  const app = await build(t, options)
  const address = await app.listen({ host: '127.0.0.1', port: 0 })
  return { base: address, app }
}

/** Modern request headers for a message: MCP-Protocol-Version, Mcp-Method, Mcp-Name where required. */
export function modernHeaders (method: string, name?: string, extra: Record<string, string> = {}): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method
  }
  if (name !== undefined) headers['mcp-name'] = name
  return { ...headers, ...extra }
}

/** The modern `_meta` envelope (protocolVersion, clientCapabilities, clientInfo). */
export function modernMeta (capabilities: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': capabilities,
    'io.modelcontextprotocol/clientInfo': { name: 'mcpx-test', version: '0.0.0' },
    ...extra
  }
}

/** Legacy request headers (JSON body; accepts JSON and SSE). */
export function legacyHeaders (extra: Record<string, string> = {}): Record<string, string> {
  return { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...extra }
}

/** Parses an SSE body into its `data:` JSON messages (comments skipped). */
export function sseMessages (body: string): unknown[] {
  const out: unknown[] = []
  for (const block of body.split('\n\n')) {
    const data = block.split('\n').filter(l => l.startsWith('data:')).map(l => l.slice(5).trimStart()).join('\n')
    if (data !== '') out.push(JSON.parse(data))
  }
  return out
}
