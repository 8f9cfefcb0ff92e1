/**
 * `GET /oauth/callback` (under the plugin prefix in a host app): where an `oauth-user` upstream's
 * authorization server sends the browser back (docs/upstreams.md › Upstream identity). Hands the
 * query to lib/upstreams/user-grants.ts (state checked and consumed, code redeemed with the PKCE
 * verifier) and answers the browser with a small page. Logged at `warn` only: the query carries
 * the code and state, which must never reach a log line.
 */
import type { FastifyPluginAsync } from 'fastify'
import { CONSENT_PAGE_HEADERS, consentPage, type UserGrants } from '../../lib/upstreams/user-grants.js'

export interface OAuthCallbackRoutesOptions {
  grants: UserGrants
}

const oauthCallbackRoutes: FastifyPluginAsync<OAuthCallbackRoutesOptions> = async function oauthCallbackRoutes (fastify, opts) {
  fastify.get('/oauth/callback', { logLevel: 'warn' }, async function oauthCallback (request, reply) {
    const query: Record<string, string | undefined> = {}
    for (const [key, value] of Object.entries(request.query as Record<string, unknown>)) if (typeof value === 'string') query[key] = value
    const { status, html } = consentPage(await opts.grants.callback(query))
    return await reply.code(status).headers(CONSENT_PAGE_HEADERS).send(html)
  })
}

export default oauthCallbackRoutes
