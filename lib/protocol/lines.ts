/**
 * Newline framing with a byte bound per line: the one splitter of both directions of stdio (what a
 * stdio host writes to `mcpx serve`, lib/stdio/server.ts; a stdio upstream's stdout) and of the
 * lines of an upstream's SSE reply. A line over the bound is never
 * buffered whole: its bytes are counted and dropped up to the next newline (the frame boundary,
 * where framing recovers by itself), keeping only its first and last {@link EDGE_BYTES} bytes, from
 * which {@link recoverResponseId} reads the id of the response it carried. Bounded by maxMessageBytes.
 */

/** How many bytes of an oversized line's start and end are kept (to read its id). */
export const EDGE_BYTES = 256

const NEWLINE = 0x0a
const EMPTY = Buffer.alloc(0)

/** Where a {@link LineSplitter} hands its lines. */
export interface LineSink {
  /** One complete line: `bytes[start, end)`, without its '\n' (a '\r' before it is kept). */
  line: (bytes: Buffer, start: number, end: number) => void
  /** A line over the bound ended (or the input did): its length in bytes, and copies of its first and last bytes. */
  oversized: (bytes: number, head: Buffer, tail: Buffer) => void
  /**
   * Optional: a line just went over the bound, before the rest of it is read (called once per such
   * line, ahead of its {@link oversized}). The stdio server answers it here, so a host that never
   * sends the newline is still told at once.
   */
  overflowing?: () => void
}

/** Splits a byte stream into lines of at most `maxLineBytes` bytes (see module comment). */
export class LineSplitter {
  /** The bytes of an incomplete line, waiting for its newline. */
  private partial: Buffer[] = []
  private partialBytes = 0
  /** Inside a line over the bound: its bytes so far, and its edges. */
  private skipping = false
  private skipped = 0
  private head: Buffer = EMPTY
  private tail: Buffer = EMPTY

  /** @param maxLineBytes the longest line delivered, bytes (without its newline) */
  constructor (readonly maxLineBytes: number, private readonly sink: LineSink) {}

  /** Takes the next chunk of the stream. Never throws (unless the sink does). */
  push (chunk: Buffer): void {
    let start = 0
    let newline = chunk.indexOf(NEWLINE)
    if (this.skipping) {
      if (newline === -1) { this.skip(chunk, 0, chunk.length); return }
      this.skip(chunk, 0, newline)
      this.endSkip()
      start = newline + 1
      newline = chunk.indexOf(NEWLINE, start)
    } else if (this.partialBytes > 0 && newline !== -1) {
      const lineBytes = this.partialBytes + newline
      if (lineBytes > this.maxLineBytes) {
        this.beginSkip()
        this.skip(chunk, 0, newline)
        this.endSkip()
      } else {
        this.partial.push(chunk.subarray(0, newline))
        const line = Buffer.concat(this.partial, lineBytes)
        this.partial = []
        this.partialBytes = 0
        this.sink.line(line, 0, line.length)
      }
      start = newline + 1
      newline = chunk.indexOf(NEWLINE, start)
    }
    while (newline !== -1) {
      if (newline - start > this.maxLineBytes) {
        this.beginSkip()
        this.skip(chunk, start, newline)
        this.endSkip()
      } else {
        this.sink.line(chunk, start, newline)
      }
      start = newline + 1
      newline = chunk.indexOf(NEWLINE, start)
    }
    if (start === chunk.length) return
    if (this.partialBytes + chunk.length - start > this.maxLineBytes) {
      this.beginSkip()
      this.skip(chunk, start, chunk.length)
      return
    }
    this.partial.push(start === 0 ? chunk : chunk.subarray(start))
    this.partialBytes += chunk.length - start
  }

  /** The stream ended: a last line without its newline is delivered (or reported oversized). */
  end (): void {
    if (this.skipping) { this.endSkip(); return }
    if (this.partialBytes === 0) return
    const line = Buffer.concat(this.partial, this.partialBytes)
    this.partial = []
    this.partialBytes = 0
    this.sink.line(line, 0, line.length)
  }

  /** Turns the incomplete line kept so far into the start of a skipped one. */
  private beginSkip (): void {
    this.sink.overflowing?.()
    this.skipping = true
    this.skipped = 0
    this.head = EMPTY
    this.tail = EMPTY
    const parts = this.partial
    this.partial = []
    this.partialBytes = 0
    for (const part of parts) this.skip(part, 0, part.length)
  }

  /** Counts `bytes[start, end)` of a skipped line, keeping copies of its edges only. */
  private skip (bytes: Buffer, start: number, end: number): void {
    this.skipped += end - start
    if (this.head.length < EDGE_BYTES) {
      this.head = Buffer.concat([this.head, bytes.subarray(start, Math.min(end, start + EDGE_BYTES - this.head.length))])
    }
    if (end - start >= EDGE_BYTES) this.tail = Buffer.from(bytes.subarray(end - EDGE_BYTES, end))
    else if (end > start) {
      const joined = Buffer.concat([this.tail, bytes.subarray(start, end)])
      this.tail = joined.length > EDGE_BYTES ? Buffer.from(joined.subarray(joined.length - EDGE_BYTES)) : joined
    }
  }

  private endSkip (): void {
    const { skipped, head, tail } = this
    this.skipping = false
    this.skipped = 0
    this.head = EMPTY
    this.tail = EMPTY
    this.sink.oversized(skipped, head, tail)
  }
}

/** A JSON-RPC id (string or number) written as JSON text. */
const ID = String.raw`(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|"(?:[^"\\]|\\.)*")`
/** The message starts with `method` (after an optional `jsonrpc`): a request or a notification. */
const STARTS_WITH_METHOD = /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"method"\s*:/
/** The message starts with its `id` (after an optional `jsonrpc`). */
const STARTS_WITH_ID = new RegExp(String.raw`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*${ID}`)
/**
 * The message ends with its top-level `id` (optionally followed by `jsonrpc`), as the SDKs write a
 * response (`{"result":…,"jsonrpc":"2.0","id":7}`). Only a top-level member can be followed by
 * the single closing brace; inside a string the quotes would be escaped.
 */
const ENDS_WITH_ID = new RegExp(String.raw`[{,]\s*"id"\s*:\s*${ID}\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$`)

/**
 * The id of the JSON-RPC response an oversized line carried, read from its first and last bytes
 * only (`id` as the first member, or as the last one as the SDKs write it). Undefined when the
 * line starts with a `method` (a request or notification: no call is answered by it) or when no
 * id can be read from its edges. Never throws.
 * @param head the line's first bytes (for an SSE `data:` line, without the field name)
 * @param tail its last bytes
 */
export function recoverResponseId (head: Buffer, tail: Buffer): string | number | undefined {
  const start = head.toString('utf8')
  if (STARTS_WITH_METHOD.test(start)) return undefined
  const match = STARTS_WITH_ID.exec(start) ?? ENDS_WITH_ID.exec(tail.toString('utf8'))
  if (match === null) return undefined
  try {
    const id: unknown = JSON.parse(match[1])
    return typeof id === 'string' || typeof id === 'number' ? id : undefined
  } catch {
    return undefined
  }
}
