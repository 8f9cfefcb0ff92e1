/**
 * Bench scenario 18, "instances": what one per-session instance of an isolated upstream costs
 * (the RSS per per-session instance of the fixture), measured from outside.
 *
 * The daemon serves the test fixture (test/fixtures/echo-upstream.ts, stdio) with
 * `isolation: "per-session"`. After a warm-up session (its instance started and stopped by DELETE,
 * so the per-instance code paths are compiled), `instances` legacy sessions (2025-11-25) each call
 * `echo` once, which starts that session's own fixture child. Readings (RSS from /proc, after a
 * settle; ±10 % as for scenario 7):
 * - each new child's RSS (the instance itself: a Node process running the fixture), mean and max;
 * - the daemon's own RSS growth per instance (its connection, client and bookkeeping).
 * The daemon's children are found by their parent pid (/proc/<pid>/stat field 4).
 */
import { Agent, request as httpRequest } from 'node:http'
import { readdirSync, readFileSync } from 'node:fs'
import { postOnce, rssBytes, sleep } from './harness.js'
import { ECHO_TEXT, INITIALIZE_BODY, INITIALIZED_BODY, LEGACY_BODY, legacyHeaders } from './wire.js'

export interface InstanceOptions {
  /** The daemon's pid. */
  pid: number
  port: number
  /** Sessions (so instances) to start; the daemon's maxInstances must allow them. */
  instances: number
  /** Wait before each reading, ms. */
  settleMs: number
}

export interface InstanceFigures {
  instances: number
  /** Mean RSS of one instance child, bytes. */
  childRssMeanBytes: number
  /** Largest RSS of one instance child, bytes. */
  childRssMaxBytes: number
  /** (daemon RSS after − before) / instances, bytes. */
  daemonBytesPerInstance: number
  /** Seconds to start every instance (initialize + first call each, one at a time). */
  startSeconds: number
  /** Failed initializes or calls, and children that did not appear (must be 0). */
  errors: number
}

/** The pids whose parent is `pid` (/proc scan). Never throws for processes that vanish meanwhile. */
export function childPids (pid: number): number[] {
  const out: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      // Field 4 (ppid) follows the command in parentheses, which may itself hold spaces.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === pid) out.push(Number(entry))
    } catch {}
  }
  return out
}

async function session (agent: Agent, port: number): Promise<string | undefined> {
  const reply = await postOnce(agent, port, '/mcp', legacyHeaders(undefined), INITIALIZE_BODY)
  const id = reply.headers['mcp-session-id']
  if (reply.status !== 200 || typeof id !== 'string') return undefined
  await postOnce(agent, port, '/mcp', legacyHeaders(id), INITIALIZED_BODY)
  return id
}

async function callEcho (agent: Agent, port: number, sid: string): Promise<boolean> {
  const reply = await postOnce(agent, port, '/mcp', { ...legacyHeaders(sid), accept: 'application/json' }, LEGACY_BODY)
  return reply.status === 200 && !reply.body.includes('"error"') && reply.body.includes(ECHO_TEXT)
}

/** Runs the readings against a running daemon; leaves the sessions (and instances) to the daemon's stop. */
export async function measureInstances (options: InstanceOptions): Promise<InstanceFigures> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  let errors = 0
  try {
    const warm = await session(agent, options.port)
    if (warm === undefined || !(await callEcho(agent, options.port, warm))) errors++
    if (warm !== undefined) {
      // DELETE ends the warm-up session, which stops its instance (the children counted below are new).
      await new Promise<void>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port: options.port, path: '/mcp', method: 'DELETE', agent, headers: legacyHeaders(warm) }, res => { res.resume(); res.on('end', resolve) })
        req.on('error', reject)
        req.end()
      })
    }
    await sleep(options.settleMs)
    const before = new Set(childPids(options.pid))
    const daemonBefore = rssBytes(options.pid)
    const t0 = performance.now()
    for (let i = 0; i < options.instances; i++) {
      const sid = await session(agent, options.port)
      if (sid === undefined || !(await callEcho(agent, options.port, sid))) errors++
    }
    const startSeconds = (performance.now() - t0) / 1000
    await sleep(options.settleMs)
    const daemonAfter = rssBytes(options.pid)
    const fresh = childPids(options.pid).filter(pid => !before.has(pid))
    if (fresh.length !== options.instances) errors += Math.abs(options.instances - fresh.length)
    const sizes = fresh.map(pid => { try { return rssBytes(pid) } catch { return 0 } })
    const total = sizes.reduce((sum, n) => sum + n, 0)
    return {
      instances: fresh.length,
      childRssMeanBytes: fresh.length === 0 ? Number.NaN : total / fresh.length,
      childRssMaxBytes: Math.max(0, ...sizes),
      daemonBytesPerInstance: (daemonAfter - daemonBefore) / options.instances,
      startSeconds,
      errors
    }
  } finally {
    agent.destroy()
  }
}
