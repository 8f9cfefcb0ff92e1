/**
 * mcpx-streams: tracks the long-lived SSE streams of this /mcp scope (legacy GET notification
 * streams and 2026-07-28 `subscriptions/listen` streams), counts them for metrics, and ends them
 * cleanly when the instance closes.
 *
 * Why `preClose`: Fastify's `onClose` hooks run only after the HTTP server has closed, and the
 * server waits for every open connection; an SSE stream never ends by itself, so closing it in
 * onClose would hang `app.close()`. preClose runs before the server closes: each stream gets its
 * final chunk (a clean end, not a reset), and its connection is ended, so the server's close can
 * complete. In-flight POST replies (SSE or JSON) are not touched: they finish on their own.
 */
import fp from 'fastify-plugin'
import type { ServerResponse } from 'node:http'

/** Kinds of long-lived streams. */
export type StreamKind = 'get' | 'listen'

declare module 'fastify' {
  interface FastifyInstance {
    /** Open long-lived SSE streams of this mcpx scope, by kind. */
    mcpStreams: { count: (kind: StreamKind) => number }
  }
}

/**
 * True while a tracked response is an open stream: its head was written and it has not ended.
 * (An SSE head goes out through writeHead(status, headers), which getHeader() cannot see; a
 * refused GET or listen ends at once, so "head sent, not ended" is the stream's state.)
 */
function isOpenSse (res: ServerResponse): boolean {
  return res.headersSent && !res.writableEnded && !res.destroyed
}

export default fp(async function mcpxStreams (fastify) {
  const open: Record<StreamKind, Set<ServerResponse>> = { get: new Set(), listen: new Set() }
  fastify.decorate('mcpStreams', {
    count (kind: StreamKind): number {
      let n = 0
      for (const res of open[kind]) if (isOpenSse(res)) n++
      return n
    }
  })

  fastify.addHook('onRequest', async function trackStream (request, reply) {
    const kind: StreamKind | undefined = request.method === 'GET'
      ? 'get'
      : request.method === 'POST' && request.headers['mcp-method'] === 'subscriptions/listen' ? 'listen' : undefined
    if (kind === undefined) return
    const set = open[kind]
    const res = reply.raw
    set.add(res)
    res.once('close', () => set.delete(res))
  })

  fastify.addHook('preClose', async function endStreams () {
    const ended: Array<Promise<void>> = []
    for (const set of Object.values(open)) {
      for (const res of set) {
        if (!isOpenSse(res)) continue
        const socket = res.socket
        ended.push(new Promise<void>(resolve => {
          res.once('close', () => resolve())
          // End the stream, then its connection: an idle keep-alive socket would hold server.close().
          res.end(() => { socket?.end() })
        }))
      }
    }
    if (ended.length > 0) fastify.log.debug({ streams: ended.length }, 'mcpx: ending open SSE streams')
    await Promise.all(ended)
  })
}, { name: 'mcpx-streams', fastify: '5.x' })
