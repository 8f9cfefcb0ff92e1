/**
 * The five MCP revisions mcpx serves, and which era each belongs to (DIGEST §1, §6a "Eras").
 *
 * Revisions are ISO dates, so they compare as strings. "Modern" is 2026-07-28 and later,
 * "legacy" 2025-11-25 and earlier. A date mcpx does not implement can still be modern
 * (seed › "Which era a POST belongs to"): it is answered -32022, never served as legacy.
 */

import { errorResponse, UNSUPPORTED_PROTOCOL_VERSION, type JsonRpcErrorResponse, type RequestId } from './jsonrpc.js'

/** An MCP revision string such as `'2025-06-18'`. */
export type Revision = string

/** `'legacy'`: negotiated with `initialize`; `'modern'`: per-request `_meta` (2026-07-28+). */
export type Era = 'legacy' | 'modern'

/** The legacy revisions mcpx implements, oldest first. */
export const LEGACY_REVISIONS: readonly Revision[] = Object.freeze(['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'])

/** The modern revisions mcpx implements, oldest first. */
export const MODERN_REVISIONS: readonly Revision[] = Object.freeze(['2026-07-28'])

/** Every revision mcpx implements, newest first (the order `server/discover` lists them in). */
export const SUPPORTED_REVISIONS: readonly Revision[] = Object.freeze([...LEGACY_REVISIONS, ...MODERN_REVISIONS].reverse())

/** The first modern revision: any revision string >= this is modern. */
export const FIRST_MODERN_REVISION: Revision = '2026-07-28'

/** The oldest legacy revision: the shapes mcpx answers with before any `initialize` on stdio (seed › stdio › Before initialize). */
export const OLDEST_REVISION: Revision = LEGACY_REVISIONS[0]

/** The newest legacy revision, offered when a client proposes one mcpx does not implement. */
export const NEWEST_LEGACY_REVISION: Revision = LEGACY_REVISIONS[LEGACY_REVISIONS.length - 1]

/**
 * The legacy revision assumed when none was negotiated or named:
 * - a sessionless legacy HTTP request without `MCP-Protocol-Version` (2025-06-18/basic/transports.mdx:
 *   "the server SHOULD assume 2025-03-26"), and the `initialize` that mints a session;
 * - a stdio batch before any `initialize` (seed › stdio › Batches: "from the connection's negotiated
 *   version, or 2025-03-26 before any initialize"). Everything else before initialize on stdio is
 *   answered under {@link OLDEST_REVISION}'s shapes.
 */
export const ASSUMED_LEGACY_REVISION: Revision = '2025-03-26'

const REVISION_SHAPE = /^\d{4}-\d{2}-\d{2}$/

/**
 * The era a revision string belongs to, or undefined when it is not shaped like a revision.
 * Never throws. An unimplemented date at or after 2026-07-28 is still `'modern'`.
 */
export function eraOf (revision: unknown): Era | undefined {
  if (typeof revision !== 'string' || !REVISION_SHAPE.test(revision)) return undefined
  return revision >= FIRST_MODERN_REVISION ? 'modern' : 'legacy'
}

/** True when mcpx implements this revision, in either era. Never throws. */
export function isImplemented (revision: unknown): boolean {
  return typeof revision === 'string' && (LEGACY_REVISIONS.includes(revision) || MODERN_REVISIONS.includes(revision))
}

/** True when `revision` is a legacy revision mcpx implements. Never throws. */
export function isLegacyRevision (revision: unknown): revision is Revision {
  return typeof revision === 'string' && LEGACY_REVISIONS.includes(revision)
}

/**
 * JSON-RPC batches exist only in 2025-03-26 (2025-03-26/basic/index.mdx: receiving is MUST;
 * 2025-06-18 removed them). 2024-11-05 defines none. Seed › Streamable HTTP legacy › Batches.
 */
export function batchAllowed (revision: Revision): boolean {
  return revision === ASSUMED_LEGACY_REVISION
}

/**
 * Legacy `initialize` negotiation (2024-11-05/basic/lifecycle.mdx): echo the client's proposal
 * when mcpx implements it as a legacy revision, otherwise offer the newest legacy revision.
 */
export function negotiateLegacy (proposed: unknown): Revision {
  return isLegacyRevision(proposed) ? proposed : NEWEST_LEGACY_REVISION
}

/* ---------------------------------------------------------------- -32022 */
// The whole "unsupported protocol version" rule (DIGEST §6a Negotiation; seed › Which era a POST
// belongs to): a modern-era date mcpx does not serve is -32022 listing the modern revisions; a
// legacy request whose MCP-Protocol-Version header is not a legacy revision mcpx implements is
// -32022 listing the legacy ones (2025-06-18 transports: 400 Bad Request). Statuses: lib/status.

/** True when `revision` is a modern revision string mcpx implements. Never throws. */
export function isServedModern (revision: string): boolean {
  return eraOf(revision) === 'modern' && isImplemented(revision)
}

/**
 * True when a modern-era revision (header or body) is one mcpx does not serve: -32022.
 * A header naming a legacy revision (or anything else) beside a modern body is not a version mcpx
 * lacks but the mirrored-header disagreement (-32020, lib/protocol/modern-headers.ts). Never throws.
 */
export function isUnservedModern (requested: unknown): requested is string {
  return typeof requested === 'string' && eraOf(requested) === 'modern' && !isServedModern(requested)
}

/** The -32022 error for a modern request whose revision mcpx does not serve, `data.supported` the modern list. */
export function unsupportedVersion (id: RequestId | undefined, requested: string): JsonRpcErrorResponse {
  return errorResponse(id, UNSUPPORTED_PROTOCOL_VERSION, `Unsupported protocol version: ${requested}`, { supported: [...MODERN_REVISIONS], requested })
}

/**
 * The -32022 error for a legacy request whose MCP-Protocol-Version header is not a legacy revision
 * mcpx implements, `data.supported` the legacy list. It carries the request's id when one can be read
 * (JSON-RPC 2.0 §5; 2025-11-25 basic/index.mdx lets an error omit the id only when it could not be read).
 */
export function unsupportedLegacyVersion (id: RequestId | undefined, requested: string): JsonRpcErrorResponse {
  return errorResponse(id, UNSUPPORTED_PROTOCOL_VERSION, `Unsupported protocol version: ${requested}`, { supported: [...LEGACY_REVISIONS], requested })
}
