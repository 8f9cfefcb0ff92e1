/**
 * `GET /oauth/callback` (under the plugin prefix in a host app): where an `oauth-user` upstream's
 * authorization server sends the browser back (docs/upstreams.md › Upstream identity). Hands the
 * query to lib/upstreams/user-grants.ts (state checked and consumed, code redeemed with the PKCE
 * verifier) and answers the browser with a small page. Logged at `warn` only: the query carries
 * the code and state, which must never reach a log line.
 */
import type { FastifyPluginAsync } from 'fastify'
import type { UserGrants } from '../../lib/upstreams/user-grants.js'

export interface OAuthCallbackRoutesOptions {
  grants: UserGrants
}

/** The page the browser gets: plain, no script, nothing from the query but a vetted OAuth error code. */
function page (title: string, text: string): string {
  const escape = (v: string): string => v.replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`)
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title></head>` +
    `<body style="font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto"><h1>${escape(title)}</h1><p>${escape(text)}</p></body></html>`
}

const oauthCallbackRoutes: FastifyPluginAsync<OAuthCallbackRoutesOptions> = async function oauthCallbackRoutes (fastify, opts) {
  fastify.get('/oauth/callback', { logLevel: 'warn' }, async function oauthCallback (request, reply) {
    const query: Record<string, string | undefined> = {}
    for (const [key, value] of Object.entries(request.query as Record<string, unknown>)) if (typeof value === 'string') query[key] = value
    const outcome = await opts.grants.callback(query)
    void reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer').header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'").type('text/html; charset=utf-8')
    if (outcome.ok) return await reply.send(page('You are signed in', `mcpx now reaches ${outcome.upstream} as you. You can close this page and return to your client.`))
    return await reply.code(outcome.status).send(page('Sign-in did not complete', outcome.message))
  })
}

export default oauthCallbackRoutes
