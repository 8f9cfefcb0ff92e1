/**
 * The v2 SDK client (`@modelcontextprotocol/client` 2.4.0) as mcpx uses it upstream: it runs the
 * handshake and era negotiation, the `subscriptions/listen` streams, and the upstream's questions
 * (legacy server→client requests), which it hands to the connection's link. Calls do not go through
 * it (see link.ts and ./README.md, "What the SDK client still does").
 */
import { Client } from '@modelcontextprotocol/client'
import { isObject, type JsonObject } from '../protocol/jsonrpc.js'
import { SERVER_INFO } from '../base/version.js'

/** mcpx's clientInfo upstream: its serverInfo (lib/base/version.ts, the version read once from package.json). */
export const CLIENT_INFO = SERVER_INFO

/**
 * Declared so legacy upstreams will ask; the questions are relayed to the downstream client. Both
 * elicitation modes (2025-11-25): a URL-mode one reaches only a client that declared
 * `elicitation.url`, else the upstream gets -32602 (lib/dispatch/mrtr.ts refusal; URL-mode elicitation).
 */
export const CLIENT_CAPABILITIES = { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} }

/** Longest wait for the `server/discover` probe on stdio before falling back to `initialize` (ms). */
export const STDIO_PROBE_TIMEOUT_MS = 5_000

/** The upstream questions mcpx relays to its own client (each reaches the link's answerQuestion). */
export const QUESTIONS = ['elicitation/create', 'sampling/createMessage', 'roots/list'] as const
const QUESTION_SET: ReadonlySet<string> = new Set(QUESTIONS)

/** Whether `method` is one of {@link QUESTIONS}. */
export function isQuestion (method: unknown): boolean {
  return typeof method === 'string' && QUESTION_SET.has(method)
}

/**
 * A client for one connection attempt. `ask` answers the upstream's questions (the link's
 * answerQuestion), given the question's upstream request id; it may throw a ProtocolError, which
 * becomes the upstream's error response.
 */
export function createUpstreamClient (ask: (method: string, params: JsonObject | undefined, signal: AbortSignal, id: string | number) => Promise<JsonObject>): Client {
  const client = new Client(CLIENT_INFO, {
    capabilities: CLIENT_CAPABILITIES,
    versionNegotiation: { mode: 'auto', probe: { timeoutMs: STDIO_PROBE_TIMEOUT_MS } },
    inputRequired: { autoFulfill: false }
  })
  for (const method of QUESTIONS) {
    client.setRequestHandler(method, async (request: { params?: unknown }, ctx: { mcpReq: { signal: AbortSignal, id: string | number } }) =>
      await ask(method, isObject(request.params) ? request.params : undefined, ctx.mcpReq.signal, ctx.mcpReq.id) as never)
  }
  return client
}
