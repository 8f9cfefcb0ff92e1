/**
 * Protected Resource Metadata (RFC 9728): `GET
 * /.well-known/oauth-protected-resource` and its path-suffixed forms (lib/auth/oauth-metadata
 * protectedResourceMetadataPaths: `/mcp`, `/tools/mcp` under a plugin prefix, and the resource's
 * own path), and each curated endpoint's own, suffixed with `/mcp/<name>` (endpointMetadataPaths),
 * whose `resource` is the endpoint's URL (RFC 9728 §3.3); a name not configured now is 404.
 * No token needed; allowed origins may read it (mcpx-origin and mcpx-cors, with the
 * same policy as /mcp). The documents are built once: `/mcp`'s at registration, an endpoint's on its first request.
 */
import type { FastifyPluginAsync } from 'fastify'
import type { OAuthSide } from '../../lib/auth/authenticate.js'
import type { OriginPolicy } from '../../lib/http/origin.js'
import { PRM_WELL_KNOWN, endpointMetadataPaths, protectedResourceMetadataPaths } from '../../lib/auth/oauth-metadata.js'
import originPlugin from '../../plugins/origin.js'
import corsPlugin from '../../plugins/cors.js'

export interface ProtectedResourceRoutesOptions {
  oauth: OAuthSide
  /** Where this mcpx serves MCP (`/mcp`, `/tools/mcp`). */
  mountPath: string
  policy: OriginPolicy
  /** Whether a curated endpoint by this name is configured now (the dispatcher's, after any reload). */
  hasEndpoint: (name: string) => boolean
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
  // Bounded: only configured names get a document (a reload can only add as many as it configures).
  const endpointDocuments = new Map<string, string>()
  for (const path of endpointMetadataPaths(opts.mountPath, opts.oauth.config.resource)) {
    fastify.get(`${path.slice(PRM_WELL_KNOWN.length)}/:server`, { logLevel: 'warn' }, async function endpointResourceMetadata (request, reply) {
      const name = (request.params as { server: string }).server
      if (!opts.hasEndpoint(name)) return reply.callNotFound()
      let endpointDocument = endpointDocuments.get(name)
      if (endpointDocument === undefined) endpointDocuments.set(name, endpointDocument = JSON.stringify(opts.oauth.endpointMetadata(name)))
      return await reply.header('cache-control', 'public, max-age=300').type('application/json').send(endpointDocument)
    })
  }
}

export default protectedResourceRoutes
