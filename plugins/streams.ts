/**
 * mcpx-streams: the long-lived SSE streams of this /mcp scope (legacy GET notification streams
 * and 2026-07-28 `subscriptions/listen` streams), through lib/http/sse.ts StreamSlots: their shared cap
 * (transport.maxGetStreams), their count for metrics, and their clean end when the instance closes.
 * The routes claim a slot and track each stream they open; nothing here reads request headers.
 *
 * Why `preClose`: Fastify's `onClose` hooks run only after the HTTP server has closed, and the
 * server waits for every open connection; an SSE stream never ends by itself, so closing it in
 * onClose would hang `app.close()`. preClose runs before the server closes: each stream gets its
 * final chunk (a clean end, not a reset), and its connection is ended, so the server's close can
 * complete. In-flight POST replies (SSE or JSON) are not touched: they finish on their own.
 */
import fp from 'fastify-plugin'
import { StreamSlots } from '../lib/http/sse.js'

export type { StreamKind } from '../lib/http/sse.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The long-lived SSE streams of this mcpx scope: cap, count by kind, end at shutdown. */
    mcpStreams: StreamSlots
  }
}

/** Options of mcpx-streams. */
export interface StreamsOptions {
  /** Most long-lived streams open at once, GET and subscriptions/listen together (transport.maxGetStreams). */
  maxStreams: number
}

export default fp<StreamsOptions>(async function mcpxStreams (fastify, opts) {
  if (!Number.isInteger(opts.maxStreams) || opts.maxStreams < 0) throw new TypeError('mcpx: mcpx-streams needs maxStreams, a non-negative integer')
  const streams = new StreamSlots(opts.maxStreams)
  fastify.decorate('mcpStreams', streams)
  fastify.addHook('preClose', async function endStreams () {
    const ended = await streams.shutdown()
    if (ended > 0) fastify.log.debug({ streams: ended }, 'mcpx: ended open SSE streams')
  })
}, { name: 'mcpx-streams', fastify: '5.x' })
