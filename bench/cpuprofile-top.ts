/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`): the top functions by self time, and self
 * time by package/file. For the "make it fast" loop (profile, change, measure); profiles themselves are never committed.
 *
 * Usage: node dist/bench/cpuprofile-top.js FILE.cpuprofile [--top N] [--callers NAME [--depth D]]
 *   --callers NAME: for the functions named NAME, their self time split by caller chain (D frames up, default 4).
 *   --inclusive: the top functions by inclusive time (self + everything they called).
 */
import { readFileSync } from 'node:fs'
import { parseFlags, positiveInt, usageError } from './harness.js'

interface ProfileNode { id: number, callFrame: { functionName: string, url: string, lineNumber: number }, children?: number[] }
interface Profile { nodes: ProfileNode[], samples: number[], timeDeltas: number[], startTime: number, endTime: number }

const USAGE = 'usage: node dist/bench/cpuprofile-top.js FILE.cpuprofile [--top N] [--inclusive] [--callers NAME [--depth D]]'

const { values, positionals } = parseFlags('cpuprofile-top', USAGE, { top: { type: 'string', default: '30' }, callers: { type: 'string' }, depth: { type: 'string', default: '4' }, inclusive: { type: 'boolean', default: false } }, true)
const file = positionals[0] ?? usageError('cpuprofile-top', USAGE, 'FILE.cpuprofile is required')
const top = positiveInt('cpuprofile-top', USAGE, 'top', values.top)
const depth = positiveInt('cpuprofile-top', USAGE, 'depth', values.depth)
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
const byId = new Map(profile.nodes.map(n => [n.id, n]))
const selfUs = new Map<number, number>()
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
}
const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0)

/** Where a frame lives: `node_modules/<package>` or the path under dist/, else the url or `(native)`. */
function place (url: string): string {
  if (url === '') return '(native/V8)'
  const modules = url.lastIndexOf('node_modules/')
  if (modules !== -1) {
    const rest = url.slice(modules + 'node_modules/'.length).split('/')
    return 'node_modules/' + (rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0])
  }
  const dist = url.indexOf('/dist/')
  if (dist !== -1) return url.slice(dist + 1)
  return url.replace(/^file:\/\//, '')
}

const byFunction = new Map<string, number>()
const byPlace = new Map<string, number>()
for (const [id, us] of selfUs) {
  const node = byId.get(id)
  if (node === undefined) continue
  const { functionName, url, lineNumber } = node.callFrame
  const where = place(url)
  const key = `${functionName === '' ? '(anonymous)' : functionName}  ${where}${url === '' ? '' : `:${lineNumber + 1}`}`
  byFunction.set(key, (byFunction.get(key) ?? 0) + us)
  byPlace.set(where, (byPlace.get(where) ?? 0) + us)
}

function label (node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame
  return `${functionName === '' ? '(anonymous)' : functionName} ${place(url)}${url === '' ? '' : `:${lineNumber + 1}`}`
}

if (values.callers !== undefined) {
  const parent = new Map<number, ProfileNode>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node)
  const chains = new Map<string, number>()
  let matched = 0
  for (const [id, us] of selfUs) {
    const node = byId.get(id)
    if (node === undefined || node.callFrame.functionName !== values.callers) continue
    matched += us
    const chain: string[] = []
    let up = parent.get(id)
    for (let d = 0; d < depth && up !== undefined; d++, up = parent.get(up.id)) chain.push(label(up))
    const key = chain.join('  ←  ')
    chains.set(key, (chains.get(key) ?? 0) + us)
  }
  const lines = [`${values.callers}: ${(matched / 1000).toFixed(0)} ms self; by caller chain:`]
  for (const [key, us] of [...chains].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`${(us / 1000).toFixed(0).padStart(6)} ms  ${key}`)
  process.stdout.write(lines.join('\n') + '\n')
  process.exit(0)
}

if (values.inclusive === true) {
  const parent = new Map<number, ProfileNode>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node)
  const inclusive = new Map<string, number>()
  for (const [id, us] of selfUs) {
    const seen = new Set<string>()
    for (let node = byId.get(id); node !== undefined; node = parent.get(node.id)) {
      const key = label(node)
      if (seen.has(key)) continue // recursion counts once
      seen.add(key)
      inclusive.set(key, (inclusive.get(key) ?? 0) + us)
    }
  }
  const lines = [`${file}: ${(totalUs / 1000).toFixed(0)} ms sampled; top ${top} by inclusive time:`]
  for (const [key, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`${(us / totalUs * 100).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(6)} ms  ${key}`)
  process.stdout.write(lines.join('\n') + '\n')
  process.exit(0)
}

const pct = (us: number): string => (us / totalUs * 100).toFixed(1).padStart(5) + ' %'
const out: string[] = [`${file}: ${(totalUs / 1000).toFixed(0)} ms sampled`, '', `top ${top} functions by self time:`]
for (const [key, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) out.push(`${pct(us)}  ${(us / 1000).toFixed(0).padStart(6)} ms  ${key}`)
out.push('', 'self time by package / file:')
for (const [key, us] of [...byPlace].sort((a, b) => b[1] - a[1]).slice(0, top)) out.push(`${pct(us)}  ${(us / 1000).toFixed(0).padStart(6)} ms  ${key}`)
process.stdout.write(out.join('\n') + '\n')
