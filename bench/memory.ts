/**
 * Bench scenario 7, "memory": resident bytes of the mcpx daemon per idle legacy session and per
 * open GET notification stream, measured from outside (RSS of the daemon's pid, /proc).
 *
 * 1. Baseline RSS after a warm-up of `warmupSessions` initializes (so the code paths are compiled).
 * 2. Mint `sessions` more sessions via `initialize` (2025-11-25), `concurrency` in flight, on
 *    keep-alive connections; RSS again → (after − before) / sessions.
 * 3. Open `streams` GET streams, one per session, each on its own connection, and wait for every
 *    200; RSS again → (after − before) / streams.
 * Each reading is taken after a short settle (GC has had a chance; RSS is still noisy: it counts
 * pages the heap has not returned, so treat the figures as ±10 %).
 */
import { Agent, request as httpRequest, type ClientRequest } from 'node:http'
import { postOnce, rssBytes, sleep } from './harness.js'
import { INITIALIZE_BODY, legacyHeaders } from './wire.js'

export interface MemoryOptions {
  pid: number
  port: number
  sessions: number
  streams: number
  warmupSessions: number
  concurrency: number
  settleMs: number
}

export interface MemoryFigures {
  sessions: number
  streams: number
  baselineRssBytes: number
  afterSessionsRssBytes: number
  afterStreamsRssBytes: number
  bytesPerSession: number
  bytesPerStream: number
  errors: number
  mintSeconds: number
}

async function mint (agent: Agent, port: number, count: number, concurrency: number): Promise<{ ids: string[], errors: number }> {
  const ids: string[] = []
  let errors = 0
  let left = count
  async function worker (): Promise<void> {
    while (left > 0) {
      left--
      const reply = await postOnce(agent, port, '/mcp', legacyHeaders(undefined), INITIALIZE_BODY)
      const id = reply.headers['mcp-session-id']
      if (reply.status !== 200 || typeof id !== 'string' || reply.body.includes('"error"')) errors++
      else ids.push(id)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, async () => await worker()))
  return { ids, errors }
}

function openStream (port: number, sessionId: string): Promise<ClientRequest> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/mcp', method: 'GET', agent: false, headers: { accept: 'text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' } }, res => {
      if (res.statusCode !== 200) { res.resume(); reject(new Error(`GET stream: ${res.statusCode}`)); return }
      res.on('data', () => {})
      res.on('error', () => {})
      resolve(req)
    })
    req.on('error', reject)
    req.end()
  })
}

/** Runs the three readings against a running daemon. Never leaves a stream open. */
export async function measureMemory (options: MemoryOptions): Promise<MemoryFigures> {
  const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency })
  try {
    const warm = await mint(agent, options.port, options.warmupSessions, options.concurrency)
    await sleep(options.settleMs)
    const baselineRssBytes = rssBytes(options.pid)
    const t0 = performance.now()
    const minted = await mint(agent, options.port, options.sessions, options.concurrency)
    const mintSeconds = (performance.now() - t0) / 1000
    await sleep(options.settleMs)
    const afterSessionsRssBytes = rssBytes(options.pid)
    const streams: ClientRequest[] = []
    let errors = warm.errors + minted.errors
    try {
      // Opened in groups, so the bench never has more than `concurrency` handshakes in flight.
      const ids = minted.ids.slice(0, options.streams)
      for (let i = 0; i < ids.length; i += options.concurrency) {
        const group = await Promise.allSettled(ids.slice(i, i + options.concurrency).map(async id => await openStream(options.port, id)))
        for (const outcome of group) {
          if (outcome.status === 'fulfilled') streams.push(outcome.value)
          else errors++
        }
      }
      await sleep(options.settleMs)
      const afterStreamsRssBytes = rssBytes(options.pid)
      return {
        sessions: minted.ids.length,
        streams: streams.length,
        baselineRssBytes,
        afterSessionsRssBytes,
        afterStreamsRssBytes,
        bytesPerSession: (afterSessionsRssBytes - baselineRssBytes) / Math.max(1, minted.ids.length),
        bytesPerStream: (afterStreamsRssBytes - afterSessionsRssBytes) / Math.max(1, streams.length),
        errors,
        mintSeconds
      }
    } finally {
      for (const req of streams) req.destroy()
    }
  } finally {
    agent.destroy()
  }
}
