/**
 * Bench scenario 6, "stdio": round trips through `mcpx serve` with a pipelined client. The
 * client keeps `inFlight` modern `tools/call echo` requests outstanding on the child's stdin
 * (each with its own id and the `_meta` envelope), matches replies by id, and records the
 * latency of every request (write → reply line parsed), in ms.
 */
import { Samples, cpuPerRequest, groupCpuMs, sleep, type Child, type Row } from './harness.js'
import { ECHO_TEXT, MODERN_META } from './wire.js'

export interface StdioLoadOptions {
  child: Child
  inFlight: number
  durationS: number
  warmupS: number
}

function requestLine (id: number): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: ECHO_TEXT }, _meta: MODERN_META } }) + '\n'
}

/**
 * Runs the pipelined client against a started `mcpx serve` (stdin and stdout piped).
 * Errors = replies with `error`, replies without the echo text, unknown ids, unparsable lines,
 * and requests still unanswered 5 s after the run stopped sending; warm-up included.
 */
export async function stdioLoad (options: StdioLoadOptions): Promise<Row> {
  const { child } = options
  const stdin = child.proc.stdin
  const stdout = child.proc.stdout
  if (stdin === null || stdout === null) throw new Error('bench: mcpx serve needs piped stdin and stdout')
  const sentAt = new Map<number, number>()
  let nextId = 1
  let measuring = false
  let sending = true
  let completed = 0
  let errors = 0
  let samples = new Samples()
  let buffer = ''
  let settle: (() => void) | undefined

  stdout.setEncoding('utf8')
  stdout.on('data', (chunk: string) => {
    buffer += chunk
    let out = ''
    let newline: number
    while ((newline = buffer.indexOf('\n')) !== -1) {
      const line = buffer.slice(0, newline)
      buffer = buffer.slice(newline + 1)
      if (line === '') continue
      const now = performance.now()
      let reply: { id?: unknown, error?: unknown, result?: { content?: Array<{ text?: unknown }> } }
      try { reply = JSON.parse(line) } catch { errors++; continue }
      const started = typeof reply.id === 'number' ? sentAt.get(reply.id) : undefined
      if (started === undefined) { errors++; continue }
      sentAt.delete(reply.id as number)
      if (reply.error !== undefined || reply.result?.content?.[0]?.text !== ECHO_TEXT) errors++
      if (measuring) { completed++; samples.add(now - started) }
      if (sending) {
        const id = nextId++
        sentAt.set(id, performance.now())
        out += requestLine(id)
      }
    }
    // One write per chunk of replies: the client batches its own writes.
    if (out !== '') stdin.write(out)
    if (!sending && sentAt.size === 0) settle?.()
  })

  let first = ''
  for (let i = 0; i < options.inFlight; i++) {
    const id = nextId++
    sentAt.set(id, performance.now())
    first += requestLine(id)
  }
  stdin.write(first)
  await sleep(options.warmupS * 1000)
  samples = new Samples()
  measuring = true
  const cpuBefore = groupCpuMs(child.pid)
  const startedAt = performance.now()
  await sleep(options.durationS * 1000)
  measuring = false
  const cpuAfter = groupCpuMs(child.pid)
  const elapsedS = (performance.now() - startedAt) / 1000
  sending = false
  if (sentAt.size > 0) {
    await Promise.race([new Promise<void>(resolve => { settle = resolve }), sleep(5000)])
  }
  errors += sentAt.size
  const [p50, p99, p999] = samples.percentiles(50, 99, 99.9)
  return { scenario: '6 stdio: mcpx serve → fixture (stdio)', load: `${options.inFlight} in flight`, requests: completed, rps: completed / elapsedS, p50Ms: p50, p99Ms: p99, p999Ms: p999, errors, ...cpuPerRequest(cpuBefore, cpuAfter, completed) }
}
