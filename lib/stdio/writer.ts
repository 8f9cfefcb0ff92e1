/**
 * The write side of the stdio server (lib/stdio/server.ts): one JSON-RPC frame per line on stdout
 * (seed › stdio, every revision: "Writes are serialised, one frame per line"; "stdout carries only
 * MCP"), under the flow control every stream shares (lib/connection/flow.ts).
 */
import type { Writable } from 'node:stream'
import type { Logger } from '../telemetry/log.js'
import { encodeMessage, type JsonRpcMessage } from '../protocol/jsonrpc.js'
import { OutboundFlow, type FlowPolicy } from '../connection/flow.js'
import type { MessageSink } from '../connection/peer.js'

/**
 * The one place a stdio connection writes (its {@link MessageSink}): one whole `\n`-terminated
 * frame per `write` call, in order, through an {@link OutboundFlow} (backpressure, coalescing and
 * dropping past the mark, the hard limit). After an output error (EPIPE: the host went away), past
 * the hard limit, or once finished, nothing is written.
 */
export class StdioWriter implements MessageSink {
  /** The output failed (or overflowed): nothing can be answered any more. */
  broken = false
  /** Closing is complete: nothing is written after that. */
  finished = false
  private readonly flow: OutboundFlow
  private readonly onError = (err: NodeJS.ErrnoException): void => {
    if (this.broken) return
    this.broken = true
    this.flow.stop()
    this.log.debug({ err }, 'stdout failed; stopping')
    this.failed()
  }

  /**
   * @param output stdout; receives nothing but JSON-RPC frames
   * @param policy high-water mark and hard limit, bytes (transport.streamBufferBytes / streamBufferMaxBytes)
   * @param failed called once when the output fails or overflows: the connection ends
   */
  constructor (private readonly output: Writable, policy: FlowPolicy, private readonly log: Logger, private readonly failed: () => void) {
    output.on('error', this.onError)
    this.flow = new OutboundFlow(output, stdioFrame, policy, 'stdio', () => {
      // Past the hard limit the host is not reading: the connection ends, like a broken pipe.
      this.broken = true
      this.failed()
    })
  }

  /** Writes (or queues) one frame. Returns false when nothing can be written any more. Never throws. */
  send (message: JsonRpcMessage | JsonRpcMessage[]): boolean {
    if (this.broken || this.finished) return false
    return this.flow.send(message) && !this.broken
  }

  /** Undefined while stdout is under its mark; else resolves once it drains back under it. */
  belowMark (): Promise<void> | undefined {
    return this.broken || this.finished ? undefined : this.flow.belowMark()
  }

  /** Stops writing and waits (at most `ms`) for what was written to be flushed. Never rejects. */
  async finish (ms: number): Promise<void> {
    this.finished = true
    if (!this.broken) await within(this.flow.idle(), ms)
    this.flow.stop()
    this.output.off('error', this.onError)
    // Late errors (EPIPE after we are done) must not crash the process.
    this.output.on('error', () => {})
  }
}

/** One stdio frame: the message's JSON and a newline. */
function stdioFrame (message: JsonRpcMessage | JsonRpcMessage[]): string {
  return encodeMessage(message) + '\n'
}


/** Resolves when `work` settles or after `ms`, whichever comes first. Never rejects. */
export async function within (work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<void>(resolve => { timer = setTimeout(resolve, ms) })
  await Promise.race([work.then(() => {}, () => {}), expired])
  clearTimeout(timer)
}
