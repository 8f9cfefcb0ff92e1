/**
 * The integrity admin API (docs/policy.md › Integrity › Approving), for `mcpx integrity` and operators:
 *   GET  /admin/integrity          every item of the pinned upstreams, its state, and the changes waiting
 *   POST /admin/integrity/approve  { upstream, kind?, name, hash }: the definition `hash` becomes the pin
 *   POST /admin/integrity/reject   { upstream, kind?, name, hash }: the pin stays, the change is refused
 * Thin: the guard is the daemon's admin check (an admin credential always, as POST /admin/reload),
 * who approved comes from the daemon (never the credential itself), decisions from
 * lib/policy/integrity.ts, statuses from lib/protocol/http-status.ts integrityStatus.
 */
import type { FastifyPluginAsync, FastifyRequest, onRequestHookHandler } from 'fastify'
import type { Integrity } from '../../lib/policy/integrity.js'
import type { PinnedKind } from '../../lib/policy/pin-store.js'
import { integrityStatus } from '../../lib/protocol/http-status.js'

/** Options of the integrity routes. */
export interface IntegrityRouteOptions {
  /** The daemon's admin guard. */
  guard: onRequestHookHandler
  /** The running gate; undefined when no upstream is pinned. */
  integrity: () => Integrity | undefined
  /** Who made the (already authenticated) request, for the audit trail: never a credential. */
  who: (request: FastifyRequest) => Promise<string>
}

const KINDS = new Set<PinnedKind>(['tool', 'prompt', 'template'])

/** The body of approve/reject, or undefined when it lacks a field. */
function decisionOf (body: unknown): { upstream: string, kind: PinnedKind, name: string, hash: string } | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  const { upstream, kind = 'tool', name, hash } = body as Record<string, unknown>
  if (typeof upstream !== 'string' || typeof name !== 'string' || typeof hash !== 'string' || !KINDS.has(kind as PinnedKind)) return undefined
  return { upstream, kind: kind as PinnedKind, name, hash }
}

const integrityRoutes: FastifyPluginAsync<IntegrityRouteOptions> = async function integrityRoutes (fastify, opts) {
  const route = { logLevel: 'warn' as const, onRequest: opts.guard }
  fastify.get('/admin/integrity', route, async function listIntegrity (_request, reply) {
    const integrity = opts.integrity()
    return await reply.header('cache-control', 'no-store').send(integrity === undefined
      ? { enabled: false, entries: [] }
      : { enabled: true, store: integrity.where, quarantined: integrity.quarantined(), entries: integrity.entries() })
  })
  for (const action of ['approve', 'reject'] as const) {
    fastify.post(`/admin/integrity/${action}`, route, async function decide (request, reply) {
      const integrity = opts.integrity()
      if (integrity === undefined) return await reply.code(integrityStatus('unavailable')).send({ status: 'unavailable', reason: 'no upstream is pinned (integrity.pin is off)' })
      const decision = decisionOf(request.body)
      if (decision === undefined) return await reply.code(integrityStatus('invalid')).send({ status: 'invalid', reason: 'the body must be {"upstream", "name", "hash"} strings, and "kind" tool, prompt or template (default tool)' })
      const { upstream, kind, name, hash } = decision
      try {
        const outcome = await integrity[action](upstream, kind, name, hash, await opts.who(request))
        if (outcome.kind === 'done') return await reply.code(integrityStatus('done')).send({ status: action === 'approve' ? 'approved' : 'rejected', ...outcome.entry })
        if (outcome.kind === 'stale') return await reply.code(integrityStatus('stale')).send({ status: 'stale', reason: `the definition seen now has hash ${outcome.hash}; look again before deciding`, hash: outcome.hash })
        return await reply.code(integrityStatus('unknown')).send({ status: 'unknown', reason: `no changed ${kind} ${name} on upstream ${upstream}` })
      } catch (err) {
        request.log.error({ err }, 'integrity: the pin store failed')
        return await reply.code(integrityStatus('unavailable')).send({ status: 'unavailable', reason: 'the pin store could not be written' })
      }
    })
  }
}

export default integrityRoutes
