/**
 * What the upstream layer reports about each upstream: its status (/readyz, logs, the status page),
 * its load and what its bounds refused (metrics), its call statistics, its list sizes, and the names
 * two upstreams claim.
 */
import type { Era, Revision } from '../protocol/revisions.js'
import type { CallStatsSnapshot } from './call-stats.js'

/** What `status()` reports per upstream, for /readyz and logs. */
export interface UpstreamStatus {
  name: string
  /** 'connecting' | 'ready' | 'down' (restarting with backoff) | 'closed' */
  state: 'connecting' | 'ready' | 'down' | 'closed'
  /** The era and revision negotiated with it, once ready. */
  era?: Era
  revision?: Revision
  /** Child process id for a stdio upstream, while running. */
  pid?: number
  /** How many times it was restarted. */
  restarts: number
  /** The last error, as text, when state is 'down'. */
  lastError?: string
  /**
   * Every child process id of a stdio upstream while running: the primary connection's and, once
   * opened, the legacy connection's (so a test or an operator can check that none is orphaned).
   */
  pids?: number[]
  /**
   * The second, legacy-era connection of a dual-era upstream (see UpstreamCallOptions.era),
   * opened on the first legacy-era call. Absent until then, when the config's `legacyConnection`
   * is false (the default for stdio upstreams), and for an upstream that negotiated a legacy
   * revision (one connection serves every call). `'unavailable'`: the upstream refused a
   * legacy `initialize` (modern-only), so legacy-era calls use the primary connection.
   */
  legacy?: UpstreamLegacyStatus
}

/** The legacy connection's part of {@link UpstreamStatus}. */
export interface UpstreamLegacyStatus {
  state: 'connecting' | 'ready' | 'down' | 'unavailable'
  /** The revision it negotiated, once ready. */
  revision?: Revision
  /** Its child process id (stdio), while running. */
  pid?: number
  /** How many times it was restarted after dying (not counting the first, lazy, open). */
  restarts: number
  /** The last error, as text, when state is 'down' or 'unavailable'. */
  lastError?: string
}

/** One upstream's load and what its bounds refused, for metrics (read at scrape time). */
export interface UpstreamLoad {
  name: string
  /** Calls holding one of its `maxInFlight` slots now. */
  inFlight: number
  /** Calls waiting in its queue now. */
  queued: number
  /** Calls refused since start because its queue was full (UpstreamBusyError). */
  refused: number
  /** Messages from it skipped since start for being over `maxMessageBytes`. */
  oversized: number
  /** Bytes waiting in mcpx for its children's stdin pipes now (stdio; at most about the high-water mark plus one frame). */
  stdinBuffered: number
}

/** One upstream's call statistics (lib/upstreams/call-stats.ts). */
export type UpstreamCallStats = { name: string } & CallStatsSnapshot

/**
 * A tool or prompt name (prefixed), resource URI or resource template claimed by two upstreams:
 * the first in config order (`kept`) serves it, the other's (`dropped`) is left out of the catalogue.
 */
export interface NameCollision {
  kind: 'tool' | 'prompt' | 'resource' | 'template' | 'skill'
  /** The downstream name, the URI, or the URI template. */
  name: string
  kept: string
  dropped: string
}

/** One upstream's list sizes (0 while it is not ready). */
export interface CatalogueCounts {
  name: string
  tools: number
  prompts: number
  resources: number
  resourceTemplates: number
  /** Skills it lists (the Skills extension, SEP-2640); absent when none. */
  skills?: number
}
