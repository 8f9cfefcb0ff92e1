/**
 * Protected Resource Metadata (RFC 9728): `GET
 * /.well-known/oauth-protected-resource` and its path-suffixed forms (lib/auth/oauth-metadata
 * protectedResourceMetadataPaths: `/mcp`, `/tools/mcp` under a plugin prefix, and the resource's
 * own path). No token needed; allowed origins may read it (mcpx-origin and mcpx-cors, with the
 * same policy as /mcp). The document is built once, at registration.
 */
import type { FastifyPluginAsync } from 'fastify'
import type { OAuthSide } from '../../lib/auth/authenticate.js'
import type { OriginPolicy } from '../../lib/http/origin.js'
import { PRM_WELL_KNOWN, protectedResourceMetadataPaths } from '../../lib/auth/oauth-metadata.js'
import originPlugin from '../../plugins/origin.js'
import corsPlugin from '../../plugins/cors.js'

export interface ProtectedResourceRoutesOptions {
  oauth: OAuthSide
  /** Where this mcpx serves MCP (`/mcp`, `/tools/mcp`). */
  mountPath: string
  policy: OriginPolicy
}

/** Register with `{ prefix: PRM_WELL_KNOWN }` (app.ts does), so its CORS route stays under it. */
const protectedResourceRoutes: FastifyPluginAsync<ProtectedResourceRoutesOptions> = async function protectedResourceRoutes (fastify, opts) {
  await fastify.register(originPlugin, { policy: opts.policy })
  await fastify.register(corsPlugin, { policy: opts.policy })
  const document = JSON.stringify(opts.oauth.metadata)
  for (const path of protectedResourceMetadataPaths(opts.mountPath, opts.oauth.config.resource)) {
    fastify.get(path.slice(PRM_WELL_KNOWN.length), { logLevel: 'warn' }, async function protectedResourceMetadata (_request, reply) {
      return await reply.header('cache-control', 'public, max-age=300').type('application/json').send(document)
    })
  }
}

export default protectedResourceRoutes
