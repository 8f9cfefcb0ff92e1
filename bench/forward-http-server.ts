/**
 * The HTTP forwarding ceiling: the least a Node gateway on Fastify must do to put one Streamable
 * HTTP MCP server behind its own endpoint. One POST route; the body is parsed by Fastify's JSON
 * parser, serialised again and sent to the upstream (the URL argument) on one keep-alive undici
 * `Pool`, with the request's MCP headers; the upstream's status, content type and body are the
 * answer, read whole. No sessions, no log, no metrics, no validation beyond `JSON.parse`, no id
 * mapping (each HTTP request has its own reply). Scenario 25, beside mcpx's scenario 5, as the
 * stdio forwarding ceiling (forward-server.ts) is beside 8 and 22.
 *
 * Usage: node dist/bench/forward-http-server.js http://127.0.0.1:PORT/mcp
 *        → prints `listening <port>` on stderr (127.0.0.1, port 0).
 */
import Fastify from 'fastify'
import { Pool } from 'undici'

const target = new URL(process.argv[2])
const pool = new Pool(target.origin)
/** The request headers an MCP server reads; the rest stay at the gateway. */
const FORWARDED = ['content-type', 'accept', 'mcp-protocol-version', 'mcp-method', 'mcp-name', 'mcp-session-id'] as const

const app = Fastify({ logger: false })
app.post('/mcp', async function forwardCall (request, reply) {
  const headers: Record<string, string> = {}
  for (const name of FORWARDED) {
    const value = request.headers[name]
    if (typeof value === 'string') headers[name] = value
  }
  const answer = await pool.request({ path: target.pathname, method: 'POST', headers, body: JSON.stringify(request.body) })
  const text = await answer.body.text()
  const type = answer.headers['content-type']
  if (typeof type === 'string') reply.type(type)
  return await reply.code(answer.statusCode).send(text)
})

const address = await app.listen({ host: '127.0.0.1', port: 0 })
process.stderr.write(`listening ${new URL(address).port}\n`)
process.once('SIGTERM', () => { void app.close().then(async () => { await pool.close(); process.exit(0) }) })
