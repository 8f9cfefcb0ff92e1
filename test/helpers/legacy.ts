/**
 * Helpers for the legacy Streamable HTTP tests (seed › Streamable HTTP, 2025-03-26 …
 * 2025-11-25): the legacy revisions, initialize over inject or fetch, an SSE reader for real
 * sockets, bounded polling, the fixture's FIXTURE_LOG, and the spec schemas as a test-only oracle.
 */
import { readFileSync, existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Ajv } from 'ajv'
import { Ajv2020 } from 'ajv/dist/2020.js'
import type { FastifyInstance } from 'fastify'
import { legacyHeaders } from './app.js'

/** Every legacy revision mcpx serves over Streamable HTTP (2024-11-05 clients included). */
export const LEGACY = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'] as const
export type LegacyRevision = typeof LEGACY[number]

/** Where the spec schemas live: shared/ beside the checkout (read-only), as in CI. This file runs as dist/test/helpers/legacy.js. */
const SPEC_DIR = fileURLToPath(new URL('../../../../shared/spec', import.meta.url))

const validators = new Map<string, (def: string, value: unknown) => string[]>()

/**
 * Validates `value` against definition `def` of shared/spec/<revision>/schema.json
 * (draft-07 up to 2025-06-18, 2020-12 for 2025-11-25). @returns the ajv error texts ([] = valid).
 */
export function schemaErrors (revision: string, def: string, value: unknown): string[] {
  let check = validators.get(revision)
  if (check === undefined) {
    const schema = JSON.parse(readFileSync(join(SPEC_DIR, revision, 'schema.json'), 'utf8')) as Record<string, unknown>
    const draft2020 = schema.$defs !== undefined
    const ajv = draft2020 ? new Ajv2020({ strict: false, allErrors: true, validateFormats: false }) : new Ajv({ strict: false, allErrors: true, validateFormats: false })
    ajv.addSchema({ ...schema, $id: `mcp-${revision}` })
    check = (name, data) => {
      const validate = ajv.getSchema(`mcp-${revision}#/${draft2020 ? '$defs' : 'definitions'}/${name}`)
      if (validate === undefined) return [`no definition ${name} in ${revision}`]
      return validate(data) ? [] : (validate.errors ?? []).map(e => `${e.instancePath} ${e.message ?? ''}`)
    }
    validators.set(revision, check)
  }
  return check(def, value)
}

/** An initialize request body. */
export function initializeBody (revision: string, capabilities: Record<string, unknown> = {}, id: number | string = 1): Record<string, unknown> {
  return { jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: revision, capabilities, clientInfo: { name: 'mcpx-legacy-test', version: '0.0.0' } } }
}

/** A tools/call request body. */
export function callBody (id: number | string, name: string, args: Record<string, unknown> = {}): Record<string, unknown> {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }
}

/** Initializes over inject; returns the session id and the reply. Throws when no session was minted. */
export async function injectSession (app: FastifyInstance, revision: string, capabilities: Record<string, unknown> = {}): Promise<{ sid: string, body: Record<string, unknown> }> {
  const res = await app.inject({ method: 'POST', url: '/mcp', headers: legacyHeaders(), payload: initializeBody(revision, capabilities) })
  const sid = res.headers['mcp-session-id']
  if (res.statusCode !== 200 || typeof sid !== 'string') throw new Error(`initialize failed: ${res.statusCode} ${res.body}`)
  return { sid, body: res.json() }
}

/** Headers of a request in a session, with the negotiated MCP-Protocol-Version unless `version` is null. */
export function sessionHeaders (sid: string, version: string | null, extra: Record<string, string> = {}): Record<string, string> {
  const headers: Record<string, string> = { 'mcp-session-id': sid }
  if (version !== null) headers['mcp-protocol-version'] = version
  return legacyHeaders({ ...headers, ...extra })
}

/** POSTs a JSON body to `${base}/mcp`. */
export async function post (base: string, body: unknown, headers: Record<string, string> = legacyHeaders(), signal?: AbortSignal): Promise<Response> {
  return await fetch(`${base}/mcp`, { method: 'POST', headers, body: JSON.stringify(body), ...(signal !== undefined ? { signal } : {}) })
}

/** Initializes over a real socket; returns the session id. Throws when no session was minted. */
export async function fetchSession (base: string, revision: string, capabilities: Record<string, unknown> = {}): Promise<string> {
  const res = await post(base, initializeBody(revision, capabilities))
  const sid = res.headers.get('mcp-session-id')
  await res.text()
  if (res.status !== 200 || sid === null) throw new Error(`initialize failed: ${res.status}`)
  return sid
}

/** Polls `check` every 25 ms until it returns a value other than undefined/false; throws after `boundMs`. */
export async function pollUntil<T> (what: string, check: () => T | undefined | false | Promise<T | undefined | false>, boundMs = 10_000): Promise<T> {
  const deadline = Date.now() + boundMs
  for (;;) {
    const value = await check()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${boundMs} ms waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 25))
  }
}

/** One line of the fixture's FIXTURE_LOG. */
export interface FixtureEvent { event: 'started' | 'cancelled', tool: string, id: unknown, at: number }

/** A fresh FIXTURE_LOG path (the file itself is created by the fixture on its first record). */
export function fixtureLogPath (): string {
  return join(mkdtempSync(join(tmpdir(), 'mcpx-legacy-')), 'fixture.log')
}

/** The fixture's records so far. */
export function fixtureEvents (file: string): FixtureEvent[] {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8').split('\n').filter(l => l !== '').map(l => JSON.parse(l) as FixtureEvent)
}

/**
 * Reads an SSE response body off a real socket: the raw text as it arrives, the parsed `data:`
 * messages, and whether the stream ended.
 */
export class SseReader {
  raw = ''
  readonly messages: Array<Record<string, unknown>> = []
  ended = false
  private readonly waiters = new Set<() => void>()
  private buffer = ''
  readonly done: Promise<void>

  constructor (readonly response: Response) {
    if (response.body === null) throw new Error('response has no body')
    const reader = response.body.getReader()
    const decoder = new TextDecoder()
    this.done = (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read()
          if (done) break
          const text = decoder.decode(value, { stream: true })
          this.raw += text
          this.buffer += text
          let cut: number
          while ((cut = this.buffer.indexOf('\n\n')) >= 0) {
            const block = this.buffer.slice(0, cut)
            this.buffer = this.buffer.slice(cut + 2)
            const data = block.split('\n').filter(l => l.startsWith('data:')).map(l => l.slice(5).trimStart()).join('\n')
            if (data !== '') this.messages.push(JSON.parse(data) as Record<string, unknown>)
          }
          this.wake()
        }
      } catch {
        // aborted by the test or the peer
      } finally {
        this.ended = true
        this.wake()
      }
    })()
  }

  private wake (): void { for (const fn of this.waiters) fn() }

  /** Waits (bounded) until `check` holds, re-checking on every chunk. */
  async until (what: string, check: () => boolean, boundMs = 10_000): Promise<void> {
    if (check()) return
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => { this.waiters.delete(onChunk); reject(new Error(`timed out after ${boundMs} ms waiting for ${what}; got ${JSON.stringify(this.raw)}`)) }, boundMs)
      const onChunk = (): void => {
        if (check()) { clearTimeout(timer); this.waiters.delete(onChunk); resolve() }
        else if (this.ended) { clearTimeout(timer); this.waiters.delete(onChunk); reject(new Error(`stream ended while waiting for ${what}; got ${JSON.stringify(this.raw)}`)) }
      }
      this.waiters.add(onChunk)
    })
  }

  /** Waits for the first message matching `match` and returns it. */
  async message (what: string, match: (m: Record<string, unknown>) => boolean, boundMs = 10_000): Promise<Record<string, unknown>> {
    await this.until(what, () => this.messages.some(match), boundMs)
    return this.messages.find(match) as Record<string, unknown>
  }

  /** Waits (bounded) for the stream to end. */
  async end (boundMs = 10_000): Promise<void> {
    await this.until('end of stream', () => this.ended, boundMs).catch(err => { if (!this.ended) throw err })
  }
}
