/**
 * Where pinned tool definitions live (docs/policy.md › Integrity › Where pins live): a JSON file
 * written atomically (a temp file in the same directory, then rename(2), so a reader or a crash
 * sees the old file or the new one, never half of one), or a Redis hash shared by every replica
 * (`sessions.store: "redis"`), or, with neither, this process's memory (pins then last until a
 * restart). Every store holds the same records, one per (upstream, kind, name):
 *
 * - `pinned`: the approved definition (SHA-256 of its RFC 8785 canonical JSON, and the definition
 *   itself, so an operator can compare it with a new one), who pinned it and when;
 * - `pending`: the latest definition seen that differs from `pinned` (or with no `pinned`, a tool
 *   new on an upstream that was already pinned), what kind of change it is, and when it was seen;
 * - `rejected`: the hash an operator refused, by whom, when.
 *
 * Pending changes are stored too, so any replica (and `mcpx integrity --store`, for `mcpx serve`)
 * can list and approve a change another replica saw. Every store tells its owner when records
 * changed elsewhere (the file: fs.watch of its directory; Redis: a pub/sub channel), and the owner
 * re-reads them all: records are few (one per tool, prompt and template of the pinned upstreams).
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync, watch, type FSWatcher } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { McpxError } from '../base/errors.js'
import { createRedisConnection, describeRedisTarget, type RedisConnection, type RedisTarget } from '../base/redis.js'
import type { Logger } from '../telemetry/log.js'
import type { JsonObject } from '../protocol/jsonrpc.js'

/** What is pinned: a tool, a prompt, or a resource template. */
export type PinnedKind = 'tool' | 'prompt' | 'template'

/** How a definition differs from its pin: its hash changed; no pin and none vanished alike; a vanished tool's definition under a new name. */
export type ChangeKind = 'changed' | 'new' | 'renamed'

/** One definition as seen: its SHA-256 (hex) over its RFC 8785 canonical JSON, and the definition (the hashed fields only). */
export interface SeenDefinition {
  hash: string
  definition: JsonObject
}

/** One record of a store (see the module comment). Times are ISO 8601. */
export interface PinRecord {
  upstream: string
  kind: PinnedKind
  name: string
  pinned?: SeenDefinition & { at: string, by: string }
  pending?: SeenDefinition & { change: ChangeKind, renamedFrom?: string, at: string }
  rejected?: { hash: string, at: string, by: string }
}

/** The key of a record: upstream, kind and name, NUL-separated (none of them can hold a NUL that JSON would keep apart). */
export function recordKey (upstream: string, kind: PinnedKind, name: string): string {
  return `${upstream}\u0000${kind}\u0000${name}`
}

/** A pin store. Every method resolves once the record is stored where the other replicas read it; rejects on an I/O failure. */
export interface PinStore {
  /** Where, for logs and the status page (a Redis URL is redacted). */
  readonly where: string
  /** Every record. */
  load: () => Promise<PinRecord[]>
  /** Every record, known without waiting (memory and file stores); absent: call {@link load}. */
  loadSync?: () => PinRecord[]
  /** Writes `record` whole (replacing the one of its key). */
  put: (record: PinRecord) => Promise<void>
  /**
   * Writes `record` only when its key has no `pinned` yet (the first definition seen wins, on every
   * replica alike); @returns the record stored now (this one, or the one that was there).
   */
  putIfUnpinned: (record: PinRecord) => Promise<PinRecord>
  /** Calls `listener` when records changed elsewhere (another replica, the CLI). One listener. */
  watch: (listener: () => void) => void
  close: () => Promise<void>
}

/** Records in memory only: lost at restart. */
export class MemoryPinStore implements PinStore {
  readonly where: string = 'memory'
  protected readonly records = new Map<string, PinRecord>()
  async load (): Promise<PinRecord[]> { return [...this.records.values()] }
  loadSync (): PinRecord[] { return [...this.records.values()] }
  async put (record: PinRecord): Promise<void> { this.records.set(recordKey(record.upstream, record.kind, record.name), record) }
  async putIfUnpinned (record: PinRecord): Promise<PinRecord> {
    const key = recordKey(record.upstream, record.kind, record.name)
    const existing = this.records.get(key)
    if (existing?.pinned !== undefined) return existing
    this.records.set(key, record)
    return record
  }

  watch (_listener: () => void): void {}
  async close (): Promise<void> {}
}

/** The file's shape: `{ "version": 1, "records": [PinRecord, …] }`. */
const FILE_VERSION = 1

/**
 * Parses a store file's text. @throws McpxError MCPX_ERR_CONFIG naming the file when it is not a
 * pin store (never overwritten then: an operator's pins are not lost to a typo).
 */
export function parsePinFile (text: string, file: string): PinRecord[] {
  let parsed: unknown
  try { parsed = JSON.parse(text) } catch (err) {
    throw new McpxError('MCPX_ERR_CONFIG', `mcpx: integrity.store ${file} is not JSON (${(err as Error).message}); fix or remove it`, { cause: err })
  }
  const shape = parsed as { version?: unknown, records?: unknown }
  if (typeof parsed !== 'object' || parsed === null || shape.version !== FILE_VERSION || !Array.isArray(shape.records)) {
    throw new McpxError('MCPX_ERR_CONFIG', `mcpx: integrity.store ${file} is not an mcpx pin store (expected {"version":1,"records":[…]})`)
  }
  for (const record of shape.records as unknown[]) {
    const r = record as Partial<PinRecord> | null
    if (r === null || typeof r !== 'object' || typeof r.upstream !== 'string' || typeof r.name !== 'string' || !['tool', 'prompt', 'template'].includes(r.kind as string)) {
      throw new McpxError('MCPX_ERR_CONFIG', `mcpx: integrity.store ${file} holds a record without upstream, kind and name: ${JSON.stringify(record).slice(0, 200)}`)
    }
  }
  return shape.records as PinRecord[]
}

/**
 * Reads a store file: [] when it does not exist. @throws McpxError MCPX_ERR_CONFIG as {@link parsePinFile},
 * or when it cannot be read.
 */
export function readPinFile (file: string): PinRecord[] {
  let text: string
  try { text = readFileSync(file, 'utf8') } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw new McpxError('MCPX_ERR_CONFIG', `mcpx: integrity.store ${file} cannot be read: ${(err as Error).message}`, { cause: err })
  }
  return parsePinFile(text, file)
}

/** Writes every record to `file` atomically (temp file + rename in its directory; the directory is created). Throws on an I/O failure. */
export function writePinFile (file: string, records: readonly PinRecord[]): void {
  mkdirSync(dirname(file), { recursive: true })
  const temp = join(dirname(file), `.${basename(file)}.${process.pid}.${Date.now()}.tmp`)
  writeFileSync(temp, JSON.stringify({ version: FILE_VERSION, records }, null, 1) + '\n', { mode: 0o600 })
  renameSync(temp, file)
}

/**
 * Records in a file (`integrity.store`), read once at construction (so pins are known before the
 * first list is judged) and again whenever the file changes (the CLI approving for `mcpx serve`).
 * Writes are synchronous and whole-file: pins change rarely (a new upstream, an approval).
 */
export class FilePinStore extends MemoryPinStore {
  override readonly where: string
  private watcher: FSWatcher | undefined
  /** The text last written or read, so our own write's watch event reads as "no change". */
  private lastText = ''

  /** @throws McpxError MCPX_ERR_CONFIG when the file exists and is not a pin store */
  constructor (private readonly file: string, private readonly logger: Logger) {
    super()
    this.where = file
    for (const record of readPinFile(file)) this.records.set(recordKey(record.upstream, record.kind, record.name), record)
  }

  /** The write every change made meanwhile waits for (one whole-file write per event-loop turn, however many pins changed). */
  private flushing: Promise<void> | undefined

  override async put (record: PinRecord): Promise<void> {
    await super.put(record)
    await this.flush()
  }

  override async putIfUnpinned (record: PinRecord): Promise<PinRecord> {
    const stored = await super.putIfUnpinned(record)
    if (stored === record) await this.flush()
    return stored
  }

  private async flush (): Promise<void> {
    this.flushing ??= new Promise<void>((resolve, reject) => {
      setImmediate(() => {
        this.flushing = undefined
        try {
          writePinFile(this.file, [...this.records.values()])
          try { this.lastText = readFileSync(this.file, 'utf8') } catch { this.lastText = '' }
          resolve()
        } catch (err) { reject(err) }
      })
    })
    await this.flushing
  }

  override watch (listener: () => void): void {
    const name = basename(this.file)
    try {
      mkdirSync(dirname(this.file), { recursive: true })
      // The directory, not the file: an atomic rename replaces the file's inode.
      this.watcher = watch(dirname(this.file), (_event, changed) => {
        if (changed !== null && changed !== name) return
        let text: string
        try { text = readFileSync(this.file, 'utf8') } catch { return }
        if (text === this.lastText) return
        try {
          const records = parsePinFile(text, this.file)
          this.lastText = text
          this.records.clear()
          for (const record of records) this.records.set(recordKey(record.upstream, record.kind, record.name), record)
          listener()
        } catch (err) {
          this.logger.warn({ err, file: this.file }, 'integrity store changed on disk but is not a pin store; keeping the pins in memory')
        }
      })
      this.watcher.unref()
    } catch (err) {
      this.logger.warn({ err, file: this.file }, 'integrity store cannot be watched; pins approved from the CLI apply at the next reload')
    }
  }

  override async close (): Promise<void> { this.watcher?.close() }
}

/**
 * Records in Redis, shared by replicas: the hash `<keyPrefix>integrity:pins` (field: the record key,
 * value: the record as JSON), and the channel `<keyPrefix>integrity:changed` announcing a change.
 * `putIfUnpinned` is one Lua script (no replica can pin over another's first pin).
 */
export class RedisPinStore implements PinStore {
  readonly where: string
  private readonly redis: RedisConnection
  private readonly subscriber: RedisConnection
  private readonly hashKey: string
  private readonly channel: string
  private listener: (() => void) | undefined
  private readonly connecting: Promise<void>

  /** @throws McpxError MCPX_ERR_CONFIG as lib/base/redis createRedisConnection (an unset password variable) */
  constructor (target: RedisTarget, keyPrefix: string, private readonly logger: Logger) {
    this.where = describeRedisTarget(target)
    this.hashKey = `${keyPrefix}integrity:pins`
    this.channel = `${keyPrefix}integrity:changed`
    this.redis = createRedisConnection(target, { commandTimeoutMs: 2_000 })
    this.subscriber = createRedisConnection(target, { commandTimeoutMs: 2_000 })
    this.redis.defineCommand('mcpxPinIfUnpinned', {
      numberOfKeys: 1,
      // Sets the field unless it holds a record with `pinned`; returns the record stored after.
      lua: "local v = redis.call('HGET', KEYS[1], ARGV[1]) if v and string.find(v, '\"pinned\"', 1, true) then return v end redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) return ARGV[2]"
    })
    for (const connection of [this.redis, this.subscriber]) connection.on('error', (err: Error) => { this.logger.debug({ err }, 'integrity store (Redis) error') })
    this.subscriber.on('message', (channel: string) => { if (channel === this.channel) this.listener?.() })
    this.subscriber.on('ready', () => { void this.subscriber.subscribe(this.channel).catch(() => {}) })
    this.connecting = Promise.all([this.redis.connect(), this.subscriber.connect()]).then(() => {}, (err: unknown) => {
      this.logger.warn({ err, redis: this.where }, 'integrity store (Redis) unreachable: quarantined upstreams hide their items until it answers')
    })
  }

  async load (): Promise<PinRecord[]> {
    await this.connecting
    const all = await this.redis.hgetall(this.hashKey)
    const records: PinRecord[] = []
    for (const value of Object.values(all)) {
      try { records.push(JSON.parse(value) as PinRecord) } catch { this.logger.warn({ key: this.hashKey }, 'integrity store (Redis) holds a record that is not JSON; ignored') }
    }
    return records
  }

  async put (record: PinRecord): Promise<void> {
    await this.connecting
    await this.redis.hset(this.hashKey, recordKey(record.upstream, record.kind, record.name), JSON.stringify(record))
    await this.redis.publish(this.channel, '1')
  }

  async putIfUnpinned (record: PinRecord): Promise<PinRecord> {
    await this.connecting
    const run = (this.redis as unknown as { mcpxPinIfUnpinned: (key: string, field: string, value: string) => Promise<string> }).mcpxPinIfUnpinned
    const stored = await run.call(this.redis, this.hashKey, recordKey(record.upstream, record.kind, record.name), JSON.stringify(record))
    return JSON.parse(stored) as PinRecord
  }

  watch (listener: () => void): void { this.listener = listener }

  async close (): Promise<void> {
    this.listener = undefined
    for (const connection of [this.redis, this.subscriber]) {
      if (connection.status === 'ready') await Promise.race([connection.quit().catch(() => {}), new Promise(resolve => setTimeout(resolve, 500).unref())])
      connection.disconnect()
    }
  }
}

/** What {@link createPinStore} reads of a loaded config. */
export interface PinStoreConfig {
  integrity: { store?: string }
  sessions: { store: 'memory' | 'redis', redis: RedisTarget, keyPrefix: string }
}

/**
 * The store of a loaded config: Redis with `sessions.store: "redis"`, else the `integrity.store`
 * file, else memory (logged once: pins then last until a restart).
 * @throws McpxError MCPX_ERR_CONFIG for a store file that is not a pin store, or an unset Redis password variable
 */
export function createPinStore (config: PinStoreConfig, logger: Logger): PinStore {
  if (config.sessions.store === 'redis') return new RedisPinStore(config.sessions.redis, config.sessions.keyPrefix, logger)
  if (config.integrity.store !== undefined) return new FilePinStore(config.integrity.store, logger)
  logger.warn('integrity: no integrity.store and no Redis: pins live in memory and are taken again from scratch at the next start')
  return new MemoryPinStore()
}
