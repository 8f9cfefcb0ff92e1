/**
 * Bench scenario 1, "ceiling": a bare Fastify route that parses a JSON-RPC body (Fastify's own
 * JSON parser) and answers a fixed `tools/call` result with the request's id. No MCP, no hooks,
 * no logger: the framework's limit on this machine.
 *
 * Usage: node dist/bench/ceiling-server.js  → prints `listening <port>` on stderr (127.0.0.1, port 0).
 */
import Fastify from 'fastify'
import { ECHO_TEXT } from './wire.js'

const app = Fastify({ logger: false })
const content = [{ type: 'text', text: ECHO_TEXT }]

app.post('/mcp', async function ceiling (request) {
  const body = request.body as { id?: unknown }
  return { jsonrpc: '2.0', id: body.id ?? null, result: { content } }
})

const address = await app.listen({ host: '127.0.0.1', port: 0 })
process.stderr.write(`listening ${new URL(address).port}\n`)
process.once('SIGTERM', () => { void app.close().then(() => process.exit(0)) })
