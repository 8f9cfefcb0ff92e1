/**
 * `mcpx integrity list|approve|reject` (docs/policy.md › Integrity › Approving): against a running
 * daemon's admin API (routes/admin/integrity.ts), or, with `--store FILE`, on a pin store file
 * directly (lib/policy/pin-store.ts; a running `mcpx serve` watches the file and applies the
 * decision). Offline decisions are audited to the config's `audit.file` when one is set, with the
 * principal `local:<user>`. Never prints a token.
 */
import { userInfo } from 'node:os'
import type { McpxConfig } from '../config/types.js'
import { createAuditTrail } from '../policy/audit.js'
import { readPinFile, recordKey, writePinFile, type PinRecord, type PinnedKind } from '../policy/pin-store.js'
import { createLogger } from '../telemetry/log.js'

/** What the command asks. */
export interface IntegrityRequest { action: string, upstream?: string, kind: string, name?: string, hash?: string }

/** Its answer: the JSON body, or a one-line error. */
export interface IntegrityAnswer { body?: unknown, error?: string }

/**
 * Through the daemon: GET /admin/integrity, then (approve, reject) POST with the hash given, else
 * the one waiting. @param token the admin token (MCPX_ADMIN_TOKEN); absent: none sent. Never rejects.
 */
export async function integrityOnline (base: string, token: string | undefined, request: IntegrityRequest): Promise<IntegrityAnswer> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(token !== undefined && token !== '' ? { authorization: `Bearer ${token}` } : {}) }
  const ask = async (method: string, path: string, body?: unknown): Promise<{ status: number, json: Record<string, unknown> }> => {
    const response = await fetch(new URL(path, base), { method, headers: method === 'GET' ? { authorization: headers.authorization ?? '' } : headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) })
    const text = await response.text()
    let json: Record<string, unknown> = {}
    try { json = JSON.parse(text) as Record<string, unknown> } catch { json = { reason: text.slice(0, 200) } }
    return { status: response.status, json }
  }
  try {
    const listed = await ask('GET', '/admin/integrity')
    if (listed.status !== 200) return { error: `${base}/admin/integrity answered ${listed.status}: ${String(listed.json.reason ?? (listed.json.error as { message?: string } | undefined)?.message ?? '')}${listed.status === 401 ? ' (set MCPX_ADMIN_TOKEN)' : ''}` }
    if (request.action === 'list') return { body: listed.json }
    let hash = request.hash
    if (hash === undefined) {
      const entries = (listed.json.entries ?? []) as Array<{ upstream: string, kind: string, name: string, state: string, hash: string }>
      hash = entries.find(e => e.upstream === request.upstream && e.kind === request.kind && e.name === request.name && e.state !== 'pinned')?.hash
      if (hash === undefined) return { error: `no changed ${request.kind} ${request.name ?? ''} on upstream ${request.upstream ?? ''}` }
    }
    const decided = await ask('POST', `/admin/integrity/${request.action}`, { upstream: request.upstream, kind: request.kind, name: request.name, hash })
    if (decided.status !== 200) return { error: `${request.action} answered ${decided.status}: ${String(decided.json.reason ?? '')}` }
    return { body: decided.json }
  } catch (err) {
    return { error: `cannot reach the daemon at ${base}: ${(err as Error).message}` }
  }
}

/**
 * On a store file: list its records that wait for a decision (and the rejected ones), or decide one.
 * Never rejects; a store that is not one is an error answer.
 */
export async function integrityOffline (file: string, config: McpxConfig, request: IntegrityRequest): Promise<IntegrityAnswer> {
  let records: PinRecord[]
  try { records = readPinFile(file) } catch (err) { return { error: (err as Error).message.replace(/^mcpx: /, '') } }
  if (request.action === 'list') {
    const entries = records.filter(r => r.name !== '').map(r => ({
      upstream: r.upstream,
      kind: r.kind,
      name: r.name,
      state: r.pending !== undefined ? r.pending.change : r.rejected !== undefined ? 'rejected' : 'pinned',
      hash: r.pending?.hash ?? r.rejected?.hash ?? r.pinned?.hash ?? '',
      ...(r.pending?.renamedFrom !== undefined ? { renamedFrom: r.pending.renamedFrom } : {}),
      ...(r.pending !== undefined && r.pinned !== undefined ? { pinned: r.pinned } : {})
    }))
    return { body: { enabled: true, store: file, entries } }
  }
  const kind = request.kind as PinnedKind
  const key = recordKey(request.upstream ?? '', kind, request.name ?? '')
  const index = records.findIndex(r => recordKey(r.upstream, r.kind, r.name) === key)
  const record = index >= 0 ? records[index] : undefined
  const pending = record?.pending
  if (record === undefined || pending === undefined) return { error: `no changed ${kind} ${request.name ?? ''} on upstream ${request.upstream ?? ''} in ${file}` }
  if (request.hash !== undefined && request.hash !== pending.hash) return { error: `the definition waiting has hash ${pending.hash}, not ${request.hash}; look again before deciding` }
  const by = `local:${userInfo().username}`
  const at = new Date().toISOString()
  const next: PinRecord = request.action === 'approve'
    ? { upstream: record.upstream, kind, name: record.name, pinned: { hash: pending.hash, definition: pending.definition, at, by } }
    : { upstream: record.upstream, kind, name: record.name, ...(record.pinned !== undefined ? { pinned: record.pinned } : {}), rejected: { hash: pending.hash, at, by } }
  records[index] = next
  try { writePinFile(file, records) } catch (err) { return { error: `${file} cannot be written: ${(err as Error).message}` } }
  const audit = createAuditTrail(config.audit, { logger: createLogger('stdio', { level: 'error' }), stdio: true })
  if (audit !== undefined) {
    audit.recordIntegrity({ event: request.action === 'approve' ? 'definition_approved' : 'definition_rejected', upstream: record.upstream, kind, name: record.name, hash: pending.hash, ...(record.pinned !== undefined ? { pinnedHash: record.pinned.hash } : {}), principal: by })
    await audit.close()
  }
  return { body: { status: request.action === 'approve' ? 'approved' : 'rejected', upstream: record.upstream, kind, name: record.name, hash: pending.hash } }
}
