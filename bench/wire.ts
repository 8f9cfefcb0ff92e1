/**
 * What every bench scenario sends: the echo text, the 2026-07-28 headers and `_meta` envelope
 * (as test/helpers/app.ts modernHeaders/modernMeta build them), and the legacy bodies. Kept apart
 * from harness.ts so the bench's server processes do not load the load generator.
 */

/** The echo text every scenario sends and checks in the replies. */
export const ECHO_TEXT = 'hello from mcpx bench'

/** The 2026-07-28 `_meta` envelope (test/helpers/app.ts modernMeta, with the bench's client name). */
export const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'mcpx-bench', version: '0.0.0' }
}

/** Headers of a modern `tools/call echo`: every mirrored header (MCP-Protocol-Version, Mcp-Method, Mcp-Name). */
export const MODERN_HEADERS: Record<string, string> = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'tools/call',
  'mcp-name': 'echo'
}

/** A modern `tools/call echo` body (id 1). */
export const MODERN_BODY = JSON.stringify({
  jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: ECHO_TEXT }, _meta: MODERN_META }
})

/** Headers of a legacy request in a session (JSON replies accepted, SSE too). */
export function legacyHeaders (sessionId: string | undefined, revision = '2025-11-25'): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': revision }
  if (sessionId !== undefined) headers['mcp-session-id'] = sessionId
  return headers
}

/** A legacy `tools/call echo` body (id 1). */
export const LEGACY_BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: ECHO_TEXT } } })

/** A legacy `initialize` body at 2025-11-25. */
export const INITIALIZE_BODY = JSON.stringify({
  jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'mcpx-bench', version: '0.0.0' } }
})

/** The `notifications/initialized` a legacy client sends after `initialize`. */
export const INITIALIZED_BODY = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })
