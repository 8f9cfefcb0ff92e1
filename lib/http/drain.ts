/**
 * Reading the rest of a refused request body before answering (a body
 * over transport.maxBodyBytes). Node closes a `Connection: close` response's socket as soon as the
 * response is written; a client still sending its body then gets EPIPE or a reset instead of the
 * 413 (the kernel discards what it had received). So the 413 waits until the body has been read
 * and discarded, within a byte bound and a time bound; past either, it is sent at once and the
 * connection closes (the client may then see the reset: the bound is the answer, documented in docs/security.md › Limits).
 * Node's `IncomingMessage` only: lib/ knows nothing of Fastify.
 */
import type { IncomingMessage } from 'node:http'

/** How many bytes past the limit are read and discarded, as a multiple of transport.maxBodyBytes. */
export const DRAIN_FACTOR = 4

/**
 * Reads and discards the rest of `request`'s body, then resolves: when the body ended, when
 * `maxBytes` more were read, when `timeoutMs` passed, or when the request closed or failed.
 * Resolves at once for a body already read. Never rejects.
 * @param maxBytes most bytes read and discarded (bytes)
 * @param timeoutMs longest wait (ms)
 * @returns how it ended: `ended` (the whole body read), `bound` (a bound was reached) or `closed`
 */
export async function drainRequest (request: IncomingMessage, maxBytes: number, timeoutMs: number): Promise<'ended' | 'bound' | 'closed'> {
  if (request.complete) return 'ended'
  if (request.destroyed) return 'closed'
  return await new Promise(resolve => {
    let read = 0
    const finish = (how: 'ended' | 'bound' | 'closed'): void => {
      clearTimeout(timer)
      request.off('data', onData)
      request.off('end', onEnd)
      request.off('close', onClose)
      request.off('error', onClose)
      resolve(how)
    }
    const onData = (chunk: Buffer): void => {
      read += chunk.length
      if (read > maxBytes) { request.pause(); finish('bound') }
    }
    const onEnd = (): void => finish('ended')
    const onClose = (): void => finish(request.complete ? 'ended' : 'closed')
    const timer = setTimeout(() => { request.pause(); finish('bound') }, timeoutMs)
    timer.unref()
    request.on('data', onData)
    request.once('end', onEnd)
    request.once('close', onClose)
    request.once('error', onClose)
    request.resume()
  })
}
