/**
 * The upstream of the peer-proxy scenarios (8–10): an MCP server written with the official v1 SDK
 * (`@modelcontextprotocol/sdk` 1.x, what most stdio servers in use today are built on), serving the
 * bench's `echo` tool over stdio. The low-level `Server` with a JSON Schema, so no schema is built
 * per request. mcpx, supergateway and mcp-proxy each front it the same way: spawned with this
 * command, spoken to over its stdin/stdout.
 *
 * Usage: node dist/bench/v1-stdio-upstream.js   (stdout carries only MCP; nothing is logged)
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'

const ECHO_TOOL = {
  name: 'echo',
  description: 'Echoes text',
  inputSchema: { type: 'object' as const, properties: { text: { type: 'string' } }, required: ['text'] }
}

const server = new Server({ name: 'bench-v1-upstream', version: '1.0.0' }, { capabilities: { tools: {} } })
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [ECHO_TOOL] }))
server.setRequestHandler(CallToolRequestSchema, async request => {
  if (request.params.name !== 'echo') throw new Error(`unknown tool ${request.params.name}`)
  return { content: [{ type: 'text' as const, text: String(request.params.arguments?.text) }] }
})
await server.connect(new StdioServerTransport())
