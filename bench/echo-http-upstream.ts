/**
 * A trivial 2026-07-28 MCP server over Streamable HTTP with one `echo` tool, as cheap as a server
 * can be: a bare `node:http` handler, one `JSON.parse` and one `JSON.stringify` per request. It is
 * the HTTP upstream of the `*-http` targets of alternate.js, alloc.js and instructions.js
 * (harness.ts startTarget), so that a gateway in front of it is measured near saturation. The SDK
 * peer (peer-server.ts, scenarios 2 and 5) keeps a core busy by itself and caps what any gateway in
 * front of it can show.
 *
 * Answers `server/discover` (modern only: supportedVersions ["2026-07-28"]), `tools/list` and
 * `tools/call echo` (200, one JSON body, shaped as the SDK peer's); a notification gets 202; any
 * other method a JSON-RPC -32601 with 400 (DIGEST: modern errors travel with 400); any other
 * HTTP method 405. No validation beyond that: it serves the bench, not clients.
 *
 * Usage: node dist/bench/echo-http-upstream.js  → prints `listening <port>` on stderr (127.0.0.1, port 0).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'

const SERVER_META = { 'io.modelcontextprotocol/serverInfo': { name: 'bench-echo-http', version: '1.0.0' } }
const ECHO_TOOL = { name: 'echo', description: 'Echoes text', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } }

/** The result of one request, or undefined for a method this server does not have. */
function resultOf (method: unknown, params: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  switch (method) {
    case 'server/discover':
      return { supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, resultType: 'complete', ttlMs: 0, cacheScope: 'public', _meta: SERVER_META }
    case 'tools/list':
      return { tools: [ECHO_TOOL], resultType: 'complete', ttlMs: 0, cacheScope: 'public', _meta: SERVER_META }
    case 'tools/call': {
      const args = params?.arguments as { text?: unknown } | undefined
      return { content: [{ type: 'text', text: String(args?.text) }], resultType: 'complete', _meta: SERVER_META }
    }
    default:
      return undefined
  }
}

function answer (res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
  res.end(body)
}

function serve (req: IncomingMessage, res: ServerResponse): void {
  if (req.method !== 'POST') { res.writeHead(405, { allow: 'POST' }); res.end(); return }
  const chunks: Buffer[] = []
  req.on('data', (chunk: Buffer) => chunks.push(chunk))
  req.on('end', () => {
    let message: { id?: unknown, method?: unknown, params?: Record<string, unknown> }
    try { message = JSON.parse(Buffer.concat(chunks).toString('utf8')) } catch {
      answer(res, 400, '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}')
      return
    }
    if (message.id === undefined) { res.writeHead(202); res.end(); return }
    const result = resultOf(message.method, message.params)
    if (result === undefined) answer(res, 400, JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } }))
    else answer(res, 200, JSON.stringify({ jsonrpc: '2.0', id: message.id, result }))
  })
}

const server = createServer(serve)
server.keepAliveTimeout = 65_000
server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  process.stderr.write(`listening ${typeof address === 'object' && address !== null ? address.port : 0}\n`)
})
process.once('SIGTERM', () => { server.closeAllConnections(); server.close(() => process.exit(0)) })
