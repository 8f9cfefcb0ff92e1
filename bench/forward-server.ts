/**
 * The forwarding ceiling: the least a Node gateway on Fastify must do to put a stdio MCP server on
 * HTTP. One POST route; each JSON-RPC request gets a fresh id and goes to one shared stdio child
 * (the command after `--`) as one line; the reply is matched by id, gets its original id back and
 * is the HTTP answer. No sessions, no log, no metrics, no validation beyond `JSON.parse`. The child
 * is initialized once at start (initialize + notifications/initialized), as any client does.
 *
 * Usage: node dist/bench/forward-server.js -- node dist/bench/v1-stdio-upstream.js
 *        → prints `listening <port>` on stderr (127.0.0.1, port 0).
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import Fastify from 'fastify'

const [command, ...args] = process.argv.slice(process.argv.indexOf('--') + 1)
const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] })
const pending = new Map<number, (reply: { id?: unknown }) => void>()
let nextId = 0
createInterface({ input: child.stdout }).on('line', line => {
  const reply = JSON.parse(line) as { id?: number }
  const resolve = pending.get(reply.id as number)
  if (resolve === undefined) return
  pending.delete(reply.id as number)
  resolve(reply)
})
/** Sends `message` with a fresh id to the child; resolves to the reply (its id still the fresh one). */
const forward = async (message: { id?: unknown }): Promise<{ id?: unknown }> => await new Promise(resolve => {
  const id = ++nextId
  pending.set(id, resolve)
  child.stdin.write(JSON.stringify({ ...message, id }) + '\n')
})

await forward({ jsonrpc: '2.0', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'forward', version: '0' } } } as { id?: unknown })
child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

const app = Fastify({ logger: false })
app.post('/mcp', async function forwardCall (request) {
  const message = request.body as { id?: unknown }
  const reply = await forward(message)
  reply.id = message.id
  return reply
})

const address = await app.listen({ host: '127.0.0.1', port: 0 })
process.stderr.write(`listening ${new URL(address).port}\n`)
process.once('SIGTERM', () => { child.kill(); void app.close().then(() => process.exit(0)) })
