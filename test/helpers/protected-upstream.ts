/**
 * An HTTP MCP upstream that demands its own token (docs/authentication.md › Upstream credentials): the
 * fixture SDK server (`--http`) behind a bearer check against the test authorization server. The
 * check verifies the JWT (signature, issuer, audience = this upstream's resource) with jose and
 * records what each request carried: the subject, audience, client and actor. It can refuse the
 * next N requests with 401 (to test mcpx's single retry).
 */
import { createServer, type IncomingMessage } from 'node:http'
import { once } from 'node:events'
import { Readable } from 'node:stream'
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose'
import type { Teardown } from './app.js'
import { startHttpFixture } from './fixture.js'

/** What the upstream saw on one request. */
export interface Seen { method: string, rpc?: string, sub?: string, aud?: unknown, clientId?: unknown, act?: unknown, jti?: unknown }

export interface ProtectedUpstream {
  /** The URL mcpx is configured with, and the resource its tokens must name. */
  url: string
  /** Every request that passed the check. */
  seen: Seen[]
  /** Requests refused (no token, bad token, or forced). */
  refused: () => number
  /** Refuse the next `n` requests with 401 even with a valid token. */
  refuseNext: (n: number) => void
  /** Every bearer token that passed the check, verbatim (to look for them in mcpx's logs). */
  bearers: Set<string>
}

async function bodyOf (req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/** Starts the fixture over HTTP and the bearer check in front of it; both stop at teardown. */
export async function startProtectedUpstream (t: Teardown, issuer: string, options: { resourceMetadata?: boolean } = {}): Promise<ProtectedUpstream> {
  const fixture = await startHttpFixture(t)
  const keys = createRemoteJWKSet(new URL(`${issuer}/jwks`), { cooldownDuration: 0 })
  const seen: Seen[] = []
  const bearers = new Set<string>()
  let refused = 0
  let forced = 0
  // `resourceMetadata`: RFC 9728 metadata at the path-suffixed well-known URL, named by every 401 (as an MCP server does).
  const metadataPath = '/.well-known/oauth-protected-resource/mcp'
  const server = createServer((req, res) => {
    void (async () => {
      if (options.resourceMetadata === true && req.method === 'GET' && req.url === metadataPath) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ resource: url, authorization_servers: [issuer], bearer_methods_supported: ['header'] }))
        return
      }
      const body = await bodyOf(req)
      const token = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1]
      let claims: JWTPayload | undefined
      if (token !== undefined && forced === 0) {
        try { claims = (await jwtVerify(token, keys, { issuer, audience: url })).payload } catch {}
      }
      if (claims === undefined) {
        if (forced > 0) forced--
        refused++
        const challenge = options.resourceMetadata === true ? `Bearer resource_metadata="${new URL(metadataPath, url).href}"${token !== undefined ? ', error="invalid_token"' : ''}` : 'Bearer error="invalid_token"'
        res.writeHead(401, { 'www-authenticate': challenge, 'content-type': 'application/json' }).end('{"error":"unauthorized"}')
        return
      }
      bearers.add(token as string)
      let rpc: string | undefined
      try { rpc = (JSON.parse(body.toString('utf8')) as { method?: string }).method } catch {}
      seen.push({ method: req.method ?? '', ...(rpc !== undefined ? { rpc } : {}), sub: claims.sub, aud: claims.aud, clientId: claims.client_id, act: claims.act, jti: claims.jti })
      const headers: Record<string, string> = {}
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && k !== 'authorization' && k !== 'host' && k !== 'content-length') headers[k] = v
      const abort = new AbortController()
      res.on('close', () => abort.abort())
      const upstream = await fetch(fixture.url, { method: req.method, headers, signal: abort.signal, ...(body.length > 0 ? { body } : {}) })
      const out: Record<string, string> = {}
      upstream.headers.forEach((v, k) => { if (k !== 'content-length' && k !== 'transfer-encoding') out[k] = v })
      res.writeHead(upstream.status, out)
      if (upstream.body === null) { res.end(); return }
      Readable.fromWeb(upstream.body as never).on('error', () => res.destroy()).pipe(res)
    })().catch(() => { if (!res.headersSent) res.writeHead(502).end(); else res.destroy() })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.closeAllConnections(); server.close() })
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`
  return { url, seen, refused: () => refused, refuseNext: n => { forced = n }, bearers }
}
