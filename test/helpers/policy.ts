/**
 * Helpers for the policy, curated-endpoint and audit tests: named static tokens read
 * from the environment, and one JSON-RPC POST over real HTTP in either era that returns the status,
 * headers and raw body (the byte-identity checks compare bodies as sent).
 */
import { legacyHeaders, modernHeaders, modernMeta } from './app.js'

/** Named static tokens (auth.tokens): name → secret, exported to the environment under `MCPX_TEST_TOKEN_<NAME>`. */
export const TOKENS: Readonly<Record<string, string>> = Object.freeze({
  ci: 'ci-0123456789abcdef0123456789abcdef',
  admin: 'admin-0123456789abcdef0123456789abcdef',
  support: 'support-0123456789abcdef0123456789abcdef',
  nobody: 'nobody-0123456789abcdef0123456789abcdef'
})

/** The environment variable holding a token. */
export function tokenEnv (name: string): string { return `MCPX_TEST_TOKEN_${name.toUpperCase()}` }

/** The environment entries of every test token (for a spawned daemon); also set in this process. */
export function tokenEnvironment (): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [name, secret] of Object.entries(TOKENS)) env[tokenEnv(name)] = secret
  Object.assign(process.env, env)
  return env
}

/** `auth` config with every test token; `admin` holds the `mcp:admin` scope. */
export function tokensAuth (): Record<string, unknown> {
  tokenEnvironment()
  return { tokens: Object.keys(TOKENS).map(name => ({ name, tokenEnv: tokenEnv(name), ...(name === 'admin' ? { scopes: ['mcp:admin'] } : {}) })) }
}

/** One HTTP answer, raw. */
export interface RawReply { status: number, headers: Headers, text: string, json: any } // eslint-disable-line @typescript-eslint/no-explicit-any

/** Where and as whom a request goes. */
export interface Target {
  /** Base URL `http://127.0.0.1:<port>` (plus any prefix). */
  base: string
  /** Path under base; default `/mcp`. */
  path?: string
  /** A raw bearer token, or a name of {@link TOKENS}. */
  token?: string
}

function bearer (token: string | undefined): Record<string, string> {
  if (token === undefined) return {}
  return { authorization: `Bearer ${TOKENS[token] ?? token}` }
}

async function post (target: Target, headers: Record<string, string>, body: unknown): Promise<RawReply> {
  const res = await fetch(`${target.base}${target.path ?? '/mcp'}`, { method: 'POST', headers: { ...headers, ...bearer(target.token) }, body: JSON.stringify(body) })
  const text = await res.text()
  let json: unknown
  try { json = JSON.parse(text) } catch { json = undefined }
  return { status: res.status, headers: res.headers, text, json }
}

/** The field Mcp-Name mirrors for a method, if any. */
function mirroredName (method: string, params: Record<string, unknown>): string | undefined {
  if (method === 'tools/call' || method === 'prompts/get') return params.name as string
  if (method === 'resources/read') return params.uri as string
  return undefined
}

/** A 2026-07-28 request (headers and `_meta` filled in); `extraHeaders` e.g. Mcp-Param-*. */
export async function modernRpc (target: Target, id: number | string, method: string, params: Record<string, unknown> = {}, extraHeaders: Record<string, string> = {}): Promise<RawReply> {
  const body = { jsonrpc: '2.0', id, method, params: { ...params, _meta: modernMeta() } }
  return await post(target, modernHeaders(method, mirroredName(method, params), { accept: 'application/json', ...extraHeaders }), body)
}

/** A legacy request (sessionless 2025-03-26 unless `session` is given), or a batch when `body` is an array. */
export async function legacyRpc (target: Target, body: unknown, session?: { id: string, revision: string }): Promise<RawReply> {
  const headers = legacyHeaders({ accept: 'application/json, text/event-stream', ...(session !== undefined ? { 'mcp-session-id': session.id, 'mcp-protocol-version': session.revision } : {}) })
  return await post(target, headers, body)
}

/** A legacy request body. */
export function request (id: number | string, method: string, params: Record<string, unknown> = {}): Record<string, unknown> {
  return { jsonrpc: '2.0', id, method, params }
}

/** Initializes a legacy session; returns its id and revision. Throws when no session was minted. */
export async function legacySession (target: Target, revision = '2025-03-26'): Promise<{ id: string, revision: string }> {
  const reply = await post(target, legacyHeaders({ accept: 'application/json, text/event-stream' }),
    { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: revision, capabilities: {}, clientInfo: { name: 'mcpx-policy-test', version: '0.0.0' } } })
  const id = reply.headers.get('mcp-session-id')
  if (id === null) throw new Error(`no session minted: ${reply.status} ${reply.text}`)
  await post(target, legacyHeaders({ 'mcp-session-id': id, 'mcp-protocol-version': revision }), { jsonrpc: '2.0', method: 'notifications/initialized' })
  return { id, revision }
}

/** The names (or URIs, or uriTemplates) of a list reply, sorted. */
export function namesOf (reply: RawReply, key: 'tools' | 'prompts' | 'resources' | 'resourceTemplates'): string[] {
  const items = reply.json?.result?.[key] as Array<Record<string, string>> | undefined
  if (items === undefined) throw new Error(`not a ${key} list: ${reply.status} ${reply.text}`)
  const field = key === 'resources' ? 'uri' : key === 'resourceTemplates' ? 'uriTemplate' : 'name'
  return items.map(item => item[field]).sort()
}

/**
 * A reply's bytes with its id and one name made neutral, for the "hidden looks absent" checks:
 * `"id":<id>` becomes `"id":0`, and every occurrence of `name` becomes `<name>`.
 */
export function neutral (text: string, id: number | string, name: string): string {
  return text.replace(`"id":${JSON.stringify(id)}`, '"id":0').replaceAll(name, '<name>')
}

/** Waits (bounded, 20 s) until `<base>/readyz` is 200: every upstream is ready (a loaded machine can be slower than the start wait). */
export async function untilReady (base: string): Promise<void> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const res = await fetch(`${base}/readyz`)
    await res.text()
    if (res.status === 200) return
    if (Date.now() > deadline) throw new Error(`${base}/readyz still ${res.status}`)
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}

/** An SSE response whose `data:` messages are collected as they arrive (keep-alive comments skipped). */
export interface Collected { messages: Array<Record<string, any>>, close: () => void } // eslint-disable-line @typescript-eslint/no-explicit-any

/** Opens `GET <path>` with a legacy session (its notification stream) and collects what it carries. */
export async function openGetStream (target: Target, session: { id: string, revision: string }): Promise<Collected> {
  const abort = new AbortController()
  const res = await fetch(`${target.base}${target.path ?? '/mcp'}`, {
    headers: { accept: 'text/event-stream', 'mcp-session-id': session.id, 'mcp-protocol-version': session.revision, ...bearer(target.token) },
    signal: abort.signal
  })
  if (res.status !== 200 || res.body === null) throw new Error(`GET stream refused: ${res.status} ${await res.text()}`)
  return collect(res, abort)
}

/** Collects the `data:` messages of an SSE response until `close()`. */
export function collect (res: Response, abort: AbortController): Collected {
  const messages: Array<Record<string, any>> = [] // eslint-disable-line @typescript-eslint/no-explicit-any
  void (async () => {
    const decoder = new TextDecoder()
    let text = ''
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        text += decoder.decode(chunk, { stream: true })
        let cut: number
        while ((cut = text.indexOf('\n\n')) >= 0) {
          const data = text.slice(0, cut).split('\n').filter(l => l.startsWith('data:')).map(l => l.slice(5).trimStart()).join('\n')
          text = text.slice(cut + 2)
          if (data !== '') messages.push(JSON.parse(data))
        }
      }
    } catch {
      // aborted at close()
    }
  })()
  return { messages, close: () => { abort.abort() } }
}
