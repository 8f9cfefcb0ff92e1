/**
 * mcpx-legacy-sessions: the session half of legacy Streamable HTTP (seed › Streamable HTTP,
 * 2025-03-26 … 2025-11-25). Decorates the scope with the session store and, for each legacy
 * request, finds the session its Mcp-Session-Id names (`request.mcpSession`):
 * unknown, expired or deleted → 404 (the client initializes again). It also refuses an
 * MCP-Protocol-Version header that is not a legacy revision mcpx implements: 400 -32022 with
 * the legacy list. In a session the negotiated version governs even when the header names
 * another supported one (a client quirk to tolerate).
 *
 * The store is `sessions.store`: in memory (default), or Redis shared by several replicas
 * (lib/sessions/redis-store.ts). While Redis is unreachable a request naming a session is
 * 503 with Retry-After (the JSON-RPC error carries the request's id when one can be read).
 */
import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { MemorySessionStore, sessionUsableBy, type FindOutcome, type Session, type SessionStore } from '../lib/sessions/store.js'
import { RedisSessionStore } from '../lib/sessions/redis-store.js'
import type { McpxConfig } from '../lib/config/types.js'
import { requestIdOf, type Inbound } from '../lib/protocol/inbound.js'
import { isLegacyRevision, unsupportedLegacyVersion } from '../lib/protocol/revisions.js'
import { readHeader } from '../lib/protocol/header-values.js'
import { eraRefusal, refusal } from '../lib/protocol/http-status.js'
import { bindingKeyOf } from '../lib/auth/principal.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Legacy sessions of this mcpx scope. */
    sessions: SessionStore
  }
  interface FastifyRequest {
    /** The legacy session this request named; null when none (or a modern request). */
    mcpSession: Session | null
  }
}

export interface LegacySessionsOptions {
  /** A session idle this long expires, ms. */
  idleTimeoutMs: number
  /** Most sessions open at once (memory store). */
  maxSessions: number
  /** The `sessions` config: store kind, Redis (URL, Sentinel or Cluster), key prefix, stream lease (ms). Default: memory. */
  sessions?: McpxConfig['sessions']
}

export default fp<LegacySessionsOptions>(async function mcpxLegacySessions (fastify, opts) {
  const registry = fastify.mcp.registry
  let store: SessionStore
  if (opts.sessions?.store === 'redis') {
    const redis = new RedisSessionStore({
      redis: opts.sessions.redis,
      keyPrefix: opts.sessions.keyPrefix,
      streamLeaseMs: opts.sessions.streamLease,
      idleTimeoutMs: opts.idleTimeoutMs,
      upstreams: registry,
      relay: event => { fastify.mcp.hub.relay(event) },
      relayInstance: event => { fastify.mcp.hub.instanceEvent(event) },
      logger: fastify.log
    })
    // Unreachable at startup is not fatal: modern traffic is served, session requests get 503 until Redis answers.
    await redis.connect()
    store = redis
  } else {
    store = new MemorySessionStore({ idleTimeoutMs: opts.idleTimeoutMs, maxSessions: opts.maxSessions, upstreams: registry })
  }
  fastify.decorate('sessions', store)
  fastify.decorateRequest('mcpSession', null)
  const unknownSession = refusal('unknownSession') // built once
  const badSessionHeader = refusal('badSessionHeader')
  // Modern and unreadable requests pass at once; a legacy one is looked up, without a promise when
  // the store answers at once (the memory store), else when the store's promise settles (Redis).
  fastify.addHook('preHandler', function sessionHook (request, reply, done) {
    const inbound = request.mcp
    if (inbound === null || inbound.kind === 'reject' || inbound.era !== 'legacy') { done(); return }
    const version = inbound.headerRevision
    if (version !== undefined && !isLegacyRevision(version) && request.method !== 'DELETE') {
      // The refusal carries the request's id when one can be read; a batch or a notification has none.
      reply.sendRefusal(eraRefusal('legacy', unsupportedLegacyVersion(requestIdOf(inbound), version)))
      return // answered: the chain stops here (no done(), as in the other hooks)
    }
    const header = readHeader(request.headers, 'mcp-session-id')
    if (header.kind === 'absent') { done(); return }
    if (header.kind !== 'value') { reply.sendRefusal(badSessionHeader); return }
    const found = store.find(header.value)
    if (!(found instanceof Promise)) { if (settle(request, reply, inbound, found)) done(); return }
    found.then(outcome => { if (settle(request, reply, inbound, outcome)) done() }, (err: Error) => { done(err) })
  })
  /**
   * Sets `request.mcpSession` to the session found, or answers the refusal (404, 503).
   * @returns true when the request goes on, false when it was answered here
   */
  function settle (request: FastifyRequest, reply: FastifyReply, inbound: Inbound, found: FindOutcome): boolean {
    // A session is usable only by the principal that minted it (same issuer and subject, or the
    // same static token; a refreshed token keeps it), on the endpoint it was minted on:
    // anyone else, or any other endpoint, even holding a leaked id, is told the session does not exist.
    if (found.kind === 'unknown' || (found.kind === 'found' && !sessionUsableBy(found.session, bindingKeyOf(request.mcpPrincipal, request.headers.authorization, request.mcpEndpoint)))) {
      reply.sendRefusal(unknownSession)
      return false
    }
    if (found.kind === 'unavailable') {
      // A Redis fault: a clear 503 (with the request's id when one can be read), never a hang.
      request.log.debug('session store unavailable')
      reply.sendRefusal(refusal('storeUnavailable', requestIdOf(inbound)))
      return false
    }
    request.mcpSession = found.session
    return true
  }
  fastify.addHook('onClose', async function endSessions () { await store.closeAll() })
}, { name: 'mcpx-legacy-sessions', fastify: '5.x', dependencies: ['mcpx-era', 'mcpx-upstreams'] })
