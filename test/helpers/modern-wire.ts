/**
 * Wire helpers for the 2026-07-28 HTTP tests (test/http/modern.test.ts, test/e2e/modern-http.test.ts):
 * request bodies with the `_meta` envelope, a fetch wrapper that keeps the raw body text (ids
 * such as 9007199254740993 must be checked in the text), a raw-socket POST for header bytes that
 * fetch refuses to send, an incremental SSE reader, and the 2026-07-28 schema as a test-only oracle.
 */
import { connect } from 'node:net'
import { request as httpRequest } from 'node:http'
import { Readable } from 'node:stream'
import { readFileSync } from 'node:fs'
import Ajv2020 from 'ajv/dist/2020.js'
import { modernMeta } from './app.js'

/** The id that JSON.parse cannot hold; written into bodies verbatim and looked for in the raw reply text. */
export const BIG_ID_TEXT = '9007199254740993'
const BIG_ID_PLACEHOLDER = '"__mcpx_big_id__"'

/** An id for a test request: a plain id, or `'big'` for {@link BIG_ID_TEXT} as a raw JSON number. */
export type TestId = string | number | 'big'

/** A JSON-RPC request body text with the modern `_meta` envelope (override or drop `_meta` keys with `meta`). */
export function modernBody (id: TestId | undefined, method: string, params: Record<string, unknown> = {}, meta: Record<string, unknown> | null = modernMeta()): string {
  const p = meta === null ? { ...params } : { ...params, _meta: { ...meta, ...(params._meta as Record<string, unknown> | undefined) } }
  const message: Record<string, unknown> = { jsonrpc: '2.0', method, params: p }
  if (id !== undefined) message.id = id === 'big' ? '__mcpx_big_id__' : id
  return JSON.stringify(message).replace(BIG_ID_PLACEHOLDER, BIG_ID_TEXT)
}

/** The id as it must appear in a reply's raw text, e.g. `"id":0`, `"id":"abc"`, `"id":9007199254740993`. */
export function idText (id: TestId): string {
  return '"id":' + (id === 'big' ? BIG_ID_TEXT : JSON.stringify(id))
}

export interface WireReply {
  status: number
  headers: Headers
  text: string
  /** The body parsed as JSON (undefined when not JSON). */
  json: any
}

/** POSTs to `<base>/mcp` and reads the whole reply. */
export async function post (base: string, body: string, headers: Record<string, string>): Promise<WireReply> {
  const res = await fetch(`${base}/mcp`, { method: 'POST', headers, body })
  const text = await res.text()
  let json: unknown
  try { json = JSON.parse(text) } catch { json = undefined }
  return { status: res.status, headers: res.headers, text, json }
}

export interface RawReply {
  status: number
  /** Header names lowercased; repeated headers joined with ', '. */
  headers: Record<string, string>
  text: string
  json: any
}

/**
 * POSTs over a bare TCP socket, so header values carry exactly the bytes given (latin1: each
 * char is one byte, e.g. '\x80'), and header names keep their case. `Connection: close`.
 * Only for replies with a Content-Length (JSON); never throws for a well-formed reply.
 */
export async function rawPost (base: string, headerLines: string[], body: string): Promise<RawReply> {
  const url = new URL(base)
  const bodyBytes = Buffer.from(body, 'utf8')
  const head = [
    'POST /mcp HTTP/1.1',
    `Host: ${url.host}`,
    'Content-Type: application/json',
    'Accept: application/json, text/event-stream',
    `Content-Length: ${bodyBytes.length}`,
    'Connection: close',
    ...headerLines
  ].join('\r\n') + '\r\n\r\n'
  const chunks: Buffer[] = []
  await new Promise<void>((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.write(Buffer.from(head, 'latin1'))
      socket.write(bodyBytes)
    })
    socket.on('data', chunk => chunks.push(chunk))
    socket.on('end', () => resolve())
    socket.on('error', reject)
  })
  const raw = Buffer.concat(chunks).toString('utf8')
  const split = raw.indexOf('\r\n\r\n')
  const [statusLine, ...lines] = raw.slice(0, split).split('\r\n')
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    const name = line.slice(0, colon).toLowerCase()
    const value = line.slice(colon + 1).trim()
    headers[name] = headers[name] === undefined ? value : headers[name] + ', ' + value
  }
  const text = raw.slice(split + 4)
  let json: unknown
  try { json = JSON.parse(text) } catch { json = undefined }
  return { status: Number(statusLine.split(' ')[1]), headers, text, json }
}

/**
 * Reads an SSE response body incrementally. `next(predicate)` resolves with the first parsed
 * `data:` message (after those already consumed) that satisfies the predicate; the raw text
 * seen so far stays in `raw` (comments and all), so tests can look for `:` comments and `id:` lines.
 */
export class SseReader {
  raw = ''
  readonly messages: any[] = []
  private buffer = ''
  private consumed = 0
  private ended = false
  private waiters: Array<() => void> = []
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>
  readonly done: Promise<void>

  constructor (body: ReadableStream<Uint8Array>) {
    this.reader = body.getReader()
    this.done = this.pump()
  }

  private async pump (): Promise<void> {
    const decoder = new TextDecoder()
    try {
      for (;;) {
        const { done, value } = await this.reader.read()
        if (done) break
        const text = decoder.decode(value, { stream: true })
        this.raw += text
        this.buffer += text
        let end: number
        while ((end = this.buffer.indexOf('\n\n')) !== -1) {
          const block = this.buffer.slice(0, end)
          this.buffer = this.buffer.slice(end + 2)
          const data = block.split('\n').filter(l => l.startsWith('data:')).map(l => l.slice(5).trimStart()).join('\n')
          if (data !== '') this.messages.push(JSON.parse(data))
        }
        this.wake()
      }
    } catch {
      // aborted by the test
    } finally {
      this.ended = true
      this.wake()
    }
  }

  private wake (): void {
    const waiters = this.waiters
    this.waiters = []
    for (const w of waiters) w()
  }

  /** Resolves when `raw` satisfies the predicate; rejects if the stream ends first. */
  async until (predicate: (raw: string) => boolean): Promise<void> {
    for (;;) {
      if (predicate(this.raw)) return
      if (this.ended) throw new Error('SSE stream ended before the expected text; got: ' + this.raw)
      await new Promise<void>(resolve => this.waiters.push(resolve))
    }
  }

  /** Resolves with the next message satisfying the predicate; rejects if the stream ends first. */
  async next (predicate: (message: any) => boolean = () => true): Promise<any> {
    for (;;) {
      while (this.consumed < this.messages.length) {
        const message = this.messages[this.consumed++]
        if (predicate(message)) return message
      }
      if (this.ended) throw new Error('SSE stream ended before the expected message; got: ' + JSON.stringify(this.messages))
      await new Promise<void>(resolve => this.waiters.push(resolve))
    }
  }
}

/** An SSE reply opened with {@link openSse}. */
export interface OpenSse {
  status: number
  /** Response headers, names lowercased. */
  headers: Record<string, string | string[] | undefined>
  reader: SseReader
  /** Closes the connection (the client going away). */
  close: () => void
}

/**
 * POSTs to `<base>/mcp` over its own connection (node:http, no agent: nothing pooled, nothing
 * left open by the client after `close()`), and reads the reply as SSE.
 */
export async function openSse (base: string, body: string, headers: Record<string, string>): Promise<OpenSse> {
  const url = new URL('/mcp', base)
  return await new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers, agent: false }, res => {
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        reader: new SseReader(Readable.toWeb(res) as ReadableStream<Uint8Array>),
        close: () => { req.destroy() }
      })
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** The 2026-07-28 schema (shared/spec), compiled with ajv 2020-12: a test-only oracle. */
const SCHEMA_URL = new URL('../../../../shared/spec/2026-07-28/schema.json', import.meta.url)
const Ajv = Ajv2020 as unknown as typeof Ajv2020.default
const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false })
ajv.addSchema(JSON.parse(readFileSync(SCHEMA_URL, 'utf8')), 'mcp-2026-07-28')

/** Validates `value` against `$defs/<definition>` of the 2026-07-28 schema; returns the errors text, or '' when valid. */
export function schemaErrors (definition: string, value: unknown): string {
  const validate = ajv.getSchema(`mcp-2026-07-28#/$defs/${definition}`)
  if (validate === undefined) throw new Error(`no $defs/${definition} in the 2026-07-28 schema`)
  return validate(value) ? '' : ajv.errorsText(validate.errors)
}
