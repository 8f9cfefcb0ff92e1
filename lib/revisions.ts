/**
 * The five MCP revisions mcpx serves, and which era each belongs to (DIGEST §1, §6a "Eras").
 *
 * Revisions are ISO dates, so they compare as strings. "Modern" is 2026-07-28 and later,
 * "legacy" 2025-11-25 and earlier. A date mcpx does not implement can still be modern
 * (seed › "Which era a POST belongs to"): it is answered -32022, never served as legacy.
 */

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
 * The revision a sessionless legacy HTTP request without `MCP-Protocol-Version` is taken to speak
 * (2025-06-18/basic/transports.mdx: "the server SHOULD assume 2025-03-26").
 */
export const DEFAULT_HTTP_REVISION: Revision = '2025-03-26'

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
  return revision === '2025-03-26'
}

/**
 * Legacy `initialize` negotiation (2024-11-05/basic/lifecycle.mdx): echo the client's proposal
 * when mcpx implements it as a legacy revision, otherwise offer the newest legacy revision.
 */
export function negotiateLegacy (proposed: unknown): Revision {
  return isLegacyRevision(proposed) ? proposed : NEWEST_LEGACY_REVISION
}
