/**
 * Who may read the daemon's operator endpoints (docs/operating.md › Who may read the operator
 * endpoints): `/status`, `/status.json`, `/metrics` and the detail of `/readyz`. The decision rests on
 * the connection, never on what the client writes: a client is local when the address at the other
 * end of its connection is loopback (lib/base/net.ts isLoopbackIp), after daemon.trustProxy has
 * resolved a trusted proxy's X-Forwarded-For into the client it names. Anyone else needs an admin
 * credential (admin.tokens, or an OAuth token holding admin.scopes), checked by the daemon.
 *
 * Two more conditions keep it closed where the peer address alone would mislead:
 * - a request that names a forwarded client (X-Forwarded-For, Forwarded, X-Real-IP) that
 *   daemon.trustProxy did not resolve came through a proxy mcpx was not told to trust; its real
 *   client is unknown, so it is not local, whatever the proxy's own address (nginx on the same host
 *   connects from 127.0.0.1 for every client on the internet);
 * - a loopback client whose Host is not a loopback name is a web page that DNS rebinding pointed at
 *   127.0.0.1 (a same-origin GET carries no Origin), so it is not local either.
 * Pure, no I/O.
 */
import { isLoopbackHostHeader, isLoopbackIp } from '../base/net.js'
import type { RefusalReason } from '../protocol/http-status.js'

/** Request headers that name a client other than the connection's peer: their presence marks a proxied request. */
export const FORWARDING_HEADERS: readonly string[] = Object.freeze(['x-forwarded-for', 'forwarded', 'x-real-ip'])

/** What the connection and the request head say about an operator request. */
export interface OpsPeer {
  /**
   * The client address: the socket's peer, or with daemon.trustProxy the client the trusted proxies
   * named (Fastify's `request.ip`). Undefined when unknown (a socket already gone): not local.
   */
  ip: string | undefined
  /** The raw Host header; undefined when absent. */
  host: string | undefined
  /**
   * True when the request carries a forwarding header ({@link FORWARDING_HEADERS}) that
   * daemon.trustProxy did not resolve into `ip` (no trustProxy, or the peer is not a listed proxy).
   */
  unresolvedForward: boolean
}

/**
 * Where an operator request comes from: `local` (a loopback client asking by a loopback name),
 * `remote` (any other client, or one behind a proxy mcpx does not trust), `rebound` (a loopback
 * client under a foreign Host: DNS rebinding).
 */
export type OpsLocality = 'local' | 'remote' | 'rebound'

/**
 * Classifies an operator request by its connection (see the module comment).
 * @returns `local`, `remote` or `rebound`. Never throws.
 */
export function opsLocality (peer: OpsPeer): OpsLocality {
  if (peer.unresolvedForward || !isLoopbackIp(peer.ip)) return 'remote'
  return isLoopbackHostHeader(peer.host) ? 'local' : 'rebound'
}

/** How the request's credential fared: none sent, or one that is neither an admin token nor an admin-scoped OAuth token. */
export type OpsCredential = 'missing' | 'invalid'

/**
 * The refusal of an operator request that is not local and carried no valid admin credential
 * (lib/protocol/http-status.ts REFUSALS): a wrong credential is `adminTokenInvalid`; with admin
 * credentials configured, none is `adminTokenMissing` (401, so a client knows to send one);
 * without any, nobody but a local client may read it: `forbiddenPeer` for a remote client,
 * `forbiddenHost` for a rebound one. Never throws.
 * @param adminConfigured admin.tokens, or admin.scopes with auth.oauth, are configured
 */
export function opsRefusalReason (locality: Exclude<OpsLocality, 'local'>, credential: OpsCredential, adminConfigured: boolean): RefusalReason {
  if (credential === 'invalid') return 'adminTokenInvalid'
  if (adminConfigured) return 'adminTokenMissing'
  return locality === 'remote' ? 'forbiddenPeer' : 'forbiddenHost'
}
