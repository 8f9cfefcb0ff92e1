/**
 * `mcpx serve`'s own `/oauth/callback` (docs/upstreams.md › Upstream identity): the stdio face has no
 * HTTP server, so for its `oauth-user` upstreams it listens on each `redirectUri` itself, as a
 * native app does (RFC 8252 §7.3: an `http` loopback redirect URI, on a port of its own). Plain
 * node:http (this face never loads Fastify); it answers GET on those paths only, 404 otherwise, and
 * logs no request (the query carries the code and state).
 */
import { createServer, type Server } from 'node:http'
import { once } from 'node:events'
import { McpxError } from '../base/errors.js'
import type { Logger } from '../telemetry/log.js'
import { CONSENT_PAGE_HEADERS, consentPage, type UserGrants } from '../upstreams/user-grants.js'

const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost'])

/**
 * Listens on every callback URL (one server per host and port).
 * @param uris the `redirectUri`s of the config's `oauth-user` upstreams
 * @returns close(), which stops them (never rejects)
 * @throws McpxError MCPX_ERR_CONFIG when a URI is not `http://` on a loopback host with an explicit
 *         port; rejects with the listen error (port in use) otherwise
 */
export async function listenForConsent (grants: UserGrants, uris: readonly string[], logger: Pick<Logger, 'info' | 'warn'>): Promise<{ close: () => Promise<void> }> {
  const byOrigin = new Map<string, { host: string, port: number, paths: Set<string> }>()
  for (const uri of uris) {
    const url = new URL(uri)
    if (url.protocol !== 'http:' || !LOOPBACK.has(url.hostname) || url.port === '') {
      throw new McpxError('MCPX_ERR_CONFIG', `mcpx: ${uri}: mcpx serve receives the consent callback itself, so an oauth-user redirectUri must be http:// on a loopback host with a port (RFC 8252 §7.3)`)
    }
    const entry = byOrigin.get(url.host) ?? { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port), paths: new Set<string>() }
    entry.paths.add(url.pathname)
    byOrigin.set(url.host, entry)
  }
  const servers: Server[] = []
  for (const { host, port, paths } of byOrigin.values()) {
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://loopback')
      if (req.method !== 'GET' || !paths.has(url.pathname)) { res.writeHead(404).end(); return }
      const query: Record<string, string | undefined> = {}
      for (const [key, value] of url.searchParams) query[key] ??= value
      grants.callback(query).then(outcome => {
        const { status, html } = consentPage(outcome)
        res.writeHead(status, CONSENT_PAGE_HEADERS).end(html)
      }, () => { res.writeHead(500).end() })
    })
    server.listen(port, host)
    await once(server, 'listening')
    servers.push(server)
    logger.info({ host, port }, 'listening for upstream consent callbacks')
  }
  return {
    async close () {
      await Promise.all(servers.map(async server => { server.closeAllConnections(); await new Promise<void>(resolve => server.close(() => resolve())) }))
    }
  }
}
