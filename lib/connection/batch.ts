/**
 * A JSON-RPC batch's request members, as both transports take them: a POST /mcp batch
 * (lib/http/exchange.ts) and a batch line of `mcpx serve` (lib/stdio/server.ts). Which member is
 * answered in place rather than served ({@link batchedRequestRefusal}), and how many are in progress
 * at once ({@link serveBounded}; seed › Batches: 2025-03-26 only).
 *
 * A batch may hold up to transport.maxBatchMembers members (1,000 by default; lib/protocol/jsonrpc.ts
 * parseBody refuses a longer one whole), and an operator may raise that: a 4 MiB body of small
 * `tools/call`s is ~36,000. Started all at once, each waiting member held its dispatch state (context, cancellation,
 * listeners; ~9 KB) until the whole batch answered: four such POSTs without a session took a
 * daemon from 114 MB to 1.3 GB of RSS, as nothing else bounds the members of a sessionless batch
 * (transport.maxConcurrentRequests counts POSTs; transport.maxRequestsPerSession a session's
 * requests). Here at most `transport.maxBatchInFlight` members are in progress; the rest wait, not
 * started and holding nothing but their parsed JSON, and are taken in batch order as slots free.
 */

import type { JsonRpcErrorResponse, JsonRpcRequest } from '../protocol/jsonrpc.js'
import { batchedInitialize } from './peer.js'

/**
 * The answer a request member of a batch gets in place of being served, the same on both faces;
 * undefined: serve it, as a legacy request of the batch's revision.
 * - `initialize` is refused as that element, -32600, and initializes and mints nothing (2025-03-26
 *   lifecycle: it MUST NOT be batched; seed › Streamable HTTP, 2025-03-26 … 2025-11-25 and
 *   seed › stdio, every revision).
 * - Every other request is served. Batches exist only in 2025-03-26 (DIGEST §3b), so a member is a
 *   legacy request, whatever its method: a modern-only one (`subscriptions/listen`, `server/discover`;
 *   DIGEST §6h) is answered -32601 by the dispatcher's envelope check (lib/dispatch/envelope.ts
 *   checkEnvelope), as it is in any legacy request; neither face answers it itself. A member with
 *   modern `_meta` never gets here: it refuses the whole batch (lib/connection/peer.ts batchRefusal).
 * @param request a request member of an accepted batch
 * @returns the member's error response, or undefined. Never throws.
 */
export function batchedRequestRefusal (request: JsonRpcRequest): JsonRpcErrorResponse | undefined {
  return request.method === 'initialize' ? batchedInitialize(request.id) : undefined
}

/** Members of one batch in progress at once when the options name none (the config's transport.maxBatchInFlight default). */
export const DEFAULT_MAX_BATCH_IN_FLIGHT = 64

/**
 * Serves `count` members with at most `bound` in progress at once: `bound` workers (or fewer, for
 * a smaller batch) take the next index in order, so only that many calls of `serveOne` are
 * unsettled at any time and no promise or closure exists for a member not yet taken.
 * @param count members in the batch
 * @param bound most members in progress at once (≥ 1; a smaller value is taken as 1)
 * @param serveOne serves member `index`; its value is that member's outcome
 * @returns the outcomes, in batch order (index i holds member i's). Rejects only if `serveOne`
 *          throws (the first error; the other workers still finish their current member and stop).
 */
export async function serveBounded<R> (count: number, bound: number, serveOne: (index: number) => R | Promise<R>): Promise<R[]> {
  const outcomes = new Array<R>(count)
  let next = 0
  let failed = false
  const worker = async (): Promise<void> => {
    while (next < count && !failed) {
      const index = next++
      try {
        outcomes[index] = await serveOne(index)
      } catch (err) {
        failed = true
        throw err
      }
    }
  }
  const workers: Array<Promise<void>> = []
  for (let n = Math.min(Math.max(1, bound), count); n > 0; n--) workers.push(worker())
  await Promise.all(workers)
  return outcomes
}
