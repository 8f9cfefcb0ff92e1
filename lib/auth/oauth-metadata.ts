/**
 * OAuth metadata URLs and documents (RFC 9728 Protected Resource Metadata).
 *
 * - RFC 9728 §3.1: the Protected Resource Metadata of `https://mcp.example.com/mcp` is at
 *   `https://mcp.example.com/.well-known/oauth-protected-resource/mcp` (the well-known segment goes
 *   between the host and the path).
 * - RFC 8414 §3.1 and OpenID Connect Discovery §4: an issuer's metadata, tried in the order MCP
 *   clients try them (MCP authorization › Authorization Server Metadata Discovery).
 * Pure: no I/O.
 */
import { isLoopbackHost } from '../base/net.js'

/** RFC 9728 §3: the well-known suffix of Protected Resource Metadata. */
export const PRM_WELL_KNOWN = '/.well-known/oauth-protected-resource'

/** The RFC 9728 metadata document mcpx serves. */
export interface ProtectedResourceMetadata {
  resource: string
  authorization_servers: string[]
  scopes_supported?: string[]
  bearer_methods_supported: ['header']
  resource_name?: string
  /** RFC 9728 §2: the JWS algorithms of DPoP proofs mcpx accepts (served under `auth.oauth.dpop: "required"`). */
  dpop_signing_alg_values_supported?: string[]
  /** RFC 9728 §2: true under `auth.oauth.dpop: "required"` (absent means false). */
  dpop_bound_access_tokens_required?: true
}

/**
 * The PRM URL of a resource (RFC 9728 §3.1): origin + `/.well-known/oauth-protected-resource` +
 * the resource's path (a bare `/` path adds nothing) + its query.
 * @param resource absolute URL without a fragment (config validated it)
 * @throws TypeError when `resource` is not an absolute URL
 */
export function protectedResourceMetadataUrl (resource: string): string {
  const url = new URL(resource)
  const path = url.pathname === '/' ? '' : url.pathname
  return `${url.origin}${PRM_WELL_KNOWN}${path}${url.search}`
}

/**
 * The paths under which mcpx serves its PRM: the root form, the form suffixed with the mount path
 * of /mcp (`/mcp`, `/tools/mcp` under a plugin prefix), and the one derived from `resource` when a
 * reverse proxy publishes /mcp under another path. De-duplicated, in that order. Never throws.
 * @param mountPath where this mcpx serves MCP, e.g. `/mcp` or `/tools/mcp`
 * @param resource the configured resource URL
 */
export function protectedResourceMetadataPaths (mountPath: string, resource: string): string[] {
  const resourcePath = new URL(resource).pathname
  const paths = [PRM_WELL_KNOWN, PRM_WELL_KNOWN + mountPath]
  if (resourcePath !== '/' && resourcePath !== '') paths.push(PRM_WELL_KNOWN + resourcePath)
  return [...new Set(paths)]
}

/**
 * The resource URL of the curated endpoint `name` (served at `<prefix>/mcp/<name>`): `resource`
 * (the URL of `/mcp`) with `/<name>` appended to its path, its query kept. Names match
 * `[A-Za-z0-9][A-Za-z0-9_.-]*` (the `servers` schema), so they stand in a path as they are. Never throws.
 */
export function endpointResource (resource: string, name: string): string {
  const query = resource.indexOf('?')
  const path = query < 0 ? resource : resource.slice(0, query)
  return `${path.replace(/\/$/, '')}/${name}${query < 0 ? '' : resource.slice(query)}`
}

/**
 * The paths under which the PRM of each curated endpoint is served, as `<path>/<name>`: suffixed with
 * the mount path of /mcp, and with the path of `resource` when a reverse proxy publishes /mcp under
 * another one (so that {@link protectedResourceMetadataUrl} of {@link endpointResource} is served).
 * De-duplicated, in that order. Never throws for a valid URL.
 */
export function endpointMetadataPaths (mountPath: string, resource: string): string[] {
  return [...new Set([PRM_WELL_KNOWN + mountPath, PRM_WELL_KNOWN + new URL(resource).pathname.replace(/\/$/, '')])]
}

/**
 * The PRM document (RFC 9728 §2) for one configured resource. Never throws.
 * @param options.dpopRequired the proof algorithms, when every token must be DPoP-bound
 *        (`dpop_bound_access_tokens_required`, `dpop_signing_alg_values_supported`); undefined: neither is served
 */
export function protectedResourceMetadata (options: { resource: string, issuer: string, scopesSupported?: readonly string[], resourceName?: string, dpopRequired?: readonly string[] }): ProtectedResourceMetadata {
  return {
    resource: options.resource,
    authorization_servers: [options.issuer],
    ...(options.scopesSupported !== undefined && options.scopesSupported.length > 0 ? { scopes_supported: [...options.scopesSupported] } : {}),
    bearer_methods_supported: ['header'],
    ...(options.resourceName !== undefined ? { resource_name: options.resourceName } : {}),
    ...(options.dpopRequired !== undefined ? { dpop_signing_alg_values_supported: [...options.dpopRequired], dpop_bound_access_tokens_required: true as const } : {})
  }
}

/**
 * Where to look for an issuer's metadata, in order: RFC 8414 (well-known inserted before the
 * issuer's path), then OpenID Connect with the well-known inserted, then OpenID Connect appended
 * (OIDC Discovery §4.1), as MCP clients do. Never throws for a valid URL.
 */
export function issuerMetadataUrls (issuer: string): string[] {
  const url = new URL(issuer)
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '')
  const urls = [`${url.origin}/.well-known/oauth-authorization-server${path}`]
  if (path === '') {
    urls.push(`${url.origin}/.well-known/openid-configuration`)
  } else {
    urls.push(`${url.origin}/.well-known/openid-configuration${path}`, `${url.origin}${path}/.well-known/openid-configuration`)
  }
  return urls
}

/**
 * The `token_endpoint` of `issuer`, from the first of {@link issuerMetadataUrls} that answers 200
 * with metadata whose `issuer` matches (RFC 8414 §3.3). Each fetch is bounded by `timeoutMs` (ms).
 * @throws Error naming the issuer when no metadata names a token endpoint
 */
export async function discoverTokenEndpoint (issuer: string, timeoutMs: number): Promise<string> {
  for (const url of issuerMetadataUrls(issuer)) {
    try {
      const response = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(timeoutMs) })
      if (response.status !== 200) { await response.body?.cancel(); continue }
      const metadata = await response.json() as Record<string, unknown>
      if (metadata.issuer === issuer && typeof metadata.token_endpoint === 'string') return metadata.token_endpoint
    } catch {}
  }
  throw new Error(`no token_endpoint in the metadata of ${issuer}`)
}

/**
 * Why an issuer URL is not acceptable, or undefined when it is: it must be an absolute https URL
 * with no query or fragment (RFC 8414 §2), or http on a loopback host (development, tests). Never throws.
 */
export function issuerProblem (issuer: string): string | undefined {
  let url: URL
  try { url = new URL(issuer) } catch { return 'is not an absolute URL' }
  if (url.search !== '' || url.hash !== '' || issuer.includes('#')) return 'must have no query or fragment (RFC 8414 §2)'
  if (url.protocol === 'https:') return undefined
  if (url.protocol === 'http:' && isLoopbackHost(url.hostname)) return undefined
  return 'must be https (http only on a loopback host)'
}

/** Why a resource URL is not acceptable (absolute http(s), no fragment: RFC 8707 §2, RFC 9728 §1.2), or undefined. */
export function resourceProblem (resource: string): string | undefined {
  let url: URL
  try { url = new URL(resource) } catch { return 'is not an absolute URL' }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http(s) URL'
  if (url.hash !== '' || resource.includes('#')) return 'must have no fragment (RFC 8707 §2)'
  return undefined
}
