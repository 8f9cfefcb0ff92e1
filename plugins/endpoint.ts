/**
 * The curated endpoint a /mcp request names (docs/policy.md › Curated endpoints): the `:server` segment
 * of `<prefix>/mcp/<name>`, routed in routes/mcp. A helper, not a plugin: the route parameter is
 * the one source, read where needed (sessions binding, the Mcp-Param-* check, the exchange).
 */
import type { FastifyRequest } from 'fastify'

/** The endpoint's name, or undefined for `<prefix>/mcp` itself. Never throws. */
export function endpointOf (request: FastifyRequest): string | undefined {
  const params = request.params as { server?: unknown } | undefined
  return typeof params?.server === 'string' ? params.server : undefined
}
