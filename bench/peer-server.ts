/**
 * Bench scenario 2, "peer": the official v2 server SDK (`@modelcontextprotocol/server`)
 * `createMcpHandler` serving the same `echo` tool in process, with no gateway: what a user runs
 * when they skip mcpx. Default options (modern 2026-07-28 per-request serving, stateless legacy
 * fallback, responseMode 'auto': one JSON body unless something streams).
 *
 * Mounted on a bare `node:http` server through a minimal Node ↔ fetch bridge (the SDK's own
 * `toNodeHandler` lives in `@modelcontextprotocol/node`, which is not installed here): the body
 * is read once and handed over both as the Request body and as `parsedBody`, so the SDK never
 * reads it twice.
 *
 * The echo tool's schema is built once, outside the per-request factory: built inside it (as
 * test/fixtures/echo-upstream.ts does), the SDK compiles it again for every request and this server
 * answers ~100 req/s instead of ~1,500 on the 2-core bench machine (docs/benchmarks.md). Scenario 5
 * uses this server as mcpx's HTTP upstream.
 *
 * Usage: node dist/bench/peer-server.js  → prints `listening <port>` on stderr (127.0.0.1, port 0).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { McpServer, createMcpHandler, fromJsonSchema } from '@modelcontextprotocol/server'

/** Built once: the factory below runs per request, and the schema need not be rebuilt with it. */
const ECHO_INPUT = fromJsonSchema({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } as never)

function buildServer (): McpServer {
  const server = new McpServer({ name: 'bench-peer', version: '1.0.0' }, { capabilities: { tools: {} } })
  server.registerTool('echo', {
    description: 'Echoes text',
    inputSchema: ECHO_INPUT
  }, async (args) => ({ content: [{ type: 'text' as const, text: String((args as { text: string }).text) }] }))
  return server
}

const handler = createMcpHandler(() => buildServer(), { onerror: err => process.stderr.write(`peer: ${err.message}\n`) })

async function serve (req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  const headers = new Headers()
  for (const [key, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) for (const v of value) headers.append(key, v)
    else if (value !== undefined) headers.set(key, value)
  }
  const raw = chunks.length === 0 ? undefined : Buffer.concat(chunks)
  let parsedBody: unknown
  if (raw !== undefined) {
    try { parsedBody = JSON.parse(raw.toString('utf8')) } catch { parsedBody = undefined }
  }
  const request = new Request(`http://127.0.0.1${req.url ?? '/'}`, { method: req.method, headers, body: req.method === 'GET' || req.method === 'HEAD' ? undefined : raw })
  const response = await handler.fetch(request, parsedBody === undefined ? undefined : { parsedBody })
  res.writeHead(response.status, Object.fromEntries(response.headers))
  if (response.body === null) { res.end(); return }
  const reader = response.body.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    res.write(value)
  }
  res.end()
}

const httpServer = createServer((req, res) => { serve(req, res).catch(err => { process.stderr.write(`peer: ${String(err)}\n`); res.destroy() }) })
httpServer.keepAliveTimeout = 65_000
httpServer.listen(0, '127.0.0.1', () => {
  const address = httpServer.address()
  process.stderr.write(`listening ${typeof address === 'object' && address !== null ? address.port : 0}\n`)
})
process.once('SIGTERM', () => { httpServer.closeAllConnections(); httpServer.close(() => process.exit(0)) })
