/**
 * Loading the config: one JSON document, validated with ajv against lib/config/schema.ts's
 * CONFIG_SCHEMA (`allErrors`, `useDefaults`; precompiled by the build, lib/config/validator.ts),
 * durations turned into ms, and the checks a schema cannot express. The same validator checks the
 * options a host app passes to the Fastify plugin. An invalid config's message names every issue by
 * its path ({@link loadConfig}).
 *
 * Resolution (docs/configuration.md › Configuration): `--config PATH`, else `MCPX_CONFIG`, else `./mcpx.config.json`,
 * else the embedded default ({@link defaultConfig}).
 */
import { readFileSync, existsSync } from 'node:fs'
import { resolve as resolvePath } from 'node:path'
import { isIP } from 'node:net'
import { createRequire } from 'node:module'
import type { ErrorObject, ValidateFunction } from 'ajv'
import { McpxError } from '../base/errors.js'
import { parseDuration } from '../base/duration.js'
import { issuerProblem, resourceProblem } from '../auth/oauth-metadata.js'
import type { RedisTarget } from '../base/redis.js'
import { serversProblems } from '../policy/endpoints.js'
import { CONFIG_SCHEMA, DEFAULT_REDIS_URL } from './schema.js'
import { configValidator } from './validator.js'
import type { McpxConfig } from './types.js'

/** The config validator, made on the first config loaded (lib/config/validator.ts): a process that loads none pays nothing. */
let validator: ValidateFunction | undefined

/**
 * Checks one `daemon.trustProxy` entry: an IPv4 or IPv6 address, or a CIDR `address/prefix`
 * (prefix 1…32 for IPv4, 1…128 for IPv6). A /0 is refused: it trusts every peer, so any client
 * could write the address mcpx logs (and, later, audits and rate-limits by) into X-Forwarded-For.
 * @throws McpxError MCPX_ERR_CONFIG naming `daemon.trustProxy[index]`
 */
function checkTrustedProxy (entry: string, index: number): void {
  const slash = entry.indexOf('/')
  const address = slash < 0 ? entry : entry.slice(0, slash)
  const family = isIP(address)
  const prefixText = slash < 0 ? undefined : entry.slice(slash + 1)
  const prefix = prefixText !== undefined && /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : undefined
  const where = `mcpx: daemon.trustProxy[${index}]`
  if (family === 0 || (prefixText !== undefined && (prefix === undefined || prefix > (family === 4 ? 32 : 128)))) {
    throw new McpxError('MCPX_ERR_CONFIG', `${where} must be an IP address or a CIDR such as "10.0.0.0/8", got ${JSON.stringify(entry)}`)
  }
  if (prefix === 0) {
    throw new McpxError('MCPX_ERR_CONFIG', `${where} ${JSON.stringify(entry)} trusts every address: any client could forge X-Forwarded-For; list your proxies' addresses`)
  }
}

/** The JSON value at a JSON Pointer (ajv's `instancePath` or the part of a `schemaPath` after `#`); undefined when absent. */
function atPointer (root: unknown, pointer: string): unknown {
  let value = root
  for (const raw of pointer.split('/').slice(1)) {
    if (value === null || typeof value !== 'object') return undefined
    value = (value as Record<string, unknown>)[raw.replaceAll('~1', '/').replaceAll('~0', '~')]
  }
  return value
}

function jsonType (value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value
}

/** True when `value` has the schema's `type` (or the schema names none). */
function typeMatches (schema: Record<string, unknown>, value: unknown): boolean {
  const types = schema.type === undefined ? undefined : ([] as unknown[]).concat(schema.type)
  if (types === undefined) return true
  const actual = jsonType(value)
  return types.includes(actual) || (actual === 'integer' && types.includes('number'))
}

/**
 * The branches of a failed oneOf/anyOf the value meant: those whose `type` it has, then, among
 * them, those one of whose `required` keys it has (an upstream with `command` meant the stdio
 * branch, one with `url` the HTTP branch). `undefined` when no branch is singled out.
 */
function meantBranches (branches: Array<Record<string, unknown>>, value: unknown): Set<number> | undefined {
  let meant = branches.map((_, i) => i)
  const typed = meant.filter(i => typeMatches(branches[i], value))
  if (typed.length > 0) meant = typed
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const keyed = meant.filter(i => Array.isArray(branches[i].required) && (branches[i].required as string[]).some(k => Object.hasOwn(value, k)))
    if (keyed.length > 0) meant = keyed
  }
  return meant.length === branches.length ? undefined : new Set(meant)
}

/**
 * One line per config issue, each with its path. Only the branch of a oneOf/anyOf that the value
 * meant is reported: ajv (allErrors) reports every branch, so a bad stdio upstream also printed
 * the HTTP branch's `required property 'url'` and `additional properties (command)`, and a bad
 * duration string `must be number`. A propertyNames error names the offending key.
 * @param data the config as validated (defaults applied)
 */
function formatIssues (errors: ErrorObject[] | null | undefined, data: unknown): string {
  const all = errors ?? []
  // Each failed combinator, by its schema path and the instance it applied to.
  const combinators = all.filter(e => e.keyword === 'oneOf' || e.keyword === 'anyOf')
  function isMeant (e: ErrorObject): boolean {
    for (const c of combinators) {
      const prefix = c.schemaPath + '/'
      if (!e.schemaPath.startsWith(prefix)) continue
      if (e.instancePath !== c.instancePath && !e.instancePath.startsWith(c.instancePath + '/')) continue
      const branches = atPointer(CONFIG_SCHEMA, c.schemaPath.slice(1)) as Array<Record<string, unknown>> | undefined
      if (!Array.isArray(branches)) continue
      const meant = meantBranches(branches, atPointer(data, c.instancePath))
      const branch = Number(e.schemaPath.slice(prefix.length).split('/')[0])
      if (meant !== undefined && !meant.has(branch)) return false
    }
    return true
  }
  const lines = all
    .filter(e => e.keyword !== 'oneOf' && e.keyword !== 'anyOf' && e.keyword !== 'propertyNames' && isMeant(e))
    .map(e => {
      const at = e.instancePath === '' ? '(root)' : e.instancePath.slice(1).replaceAll('/', '.')
      const extra = e.keyword === 'additionalProperties' ? ` (${String((e.params as { additionalProperty: string }).additionalProperty)})` : ''
      // propertyNames: ajv puts the offending key in `propertyName`; the summary error is dropped above.
      const key = e.propertyName !== undefined ? ` key ${JSON.stringify(e.propertyName)}` : ''
      return `  ${at}:${key} ${e.message ?? 'is invalid'}${extra}`
    })
  return [...new Set(lines)].join('\n')
}

/**
 * Validates a raw config object and fills in defaults.
 * @param raw parsed JSON (not mutated)
 * @returns the config with durations in ms
 * @throws McpxError MCPX_ERR_CONFIG naming every bad field by its path
 */
export function loadConfig (raw: unknown): McpxConfig {
  const config = structuredClone(raw ?? {}) as Record<string, unknown>
  const validate = validator ??= configValidator().validate
  if (!validate(config)) {
    throw new McpxError('MCPX_ERR_CONFIG', `mcpx: invalid config:\n${formatIssues(validate.errors, config)}`)
  }
  const c = config as unknown as McpxConfig
  c.daemon.shutdownTimeout = parseDuration(c.daemon.shutdownTimeout, 'daemon.shutdownTimeout')
  c.daemon.trustProxy.forEach(checkTrustedProxy)
  c.transport.sseKeepAlive = parseDuration(c.transport.sseKeepAlive, 'transport.sseKeepAlive')
  c.transport.catalogueTtl = parseDuration(c.transport.catalogueTtl, 'transport.catalogueTtl')
  c.transport.stdioDrain = parseDuration(c.transport.stdioDrain, 'transport.stdioDrain')
  c.transport.sessionIdleTimeout = parseDuration(c.transport.sessionIdleTimeout, 'transport.sessionIdleTimeout')
  c.transport.headersTimeout = parseDuration(c.transport.headersTimeout, 'transport.headersTimeout')
  c.transport.bodyTimeout = parseDuration(c.transport.bodyTimeout, 'transport.bodyTimeout')
  c.transport.keepAliveTimeout = parseDuration(c.transport.keepAliveTimeout, 'transport.keepAliveTimeout')
  if (c.transport.streamBufferMaxBytes < c.transport.streamBufferBytes) {
    throw new McpxError('MCPX_ERR_CONFIG', `mcpx: invalid config:\n  transport.streamBufferMaxBytes: must be at least transport.streamBufferBytes (${c.transport.streamBufferBytes})`)
  }
  c.sessions.streamLease = parseDuration(c.sessions.streamLease, 'sessions.streamLease')
  const sessions = c.sessions as McpxConfig['sessions'] & { redis?: RedisTarget, redisUrl?: string }
  if (sessions.redis !== undefined && sessions.redisUrl !== undefined) {
    throw new McpxError('MCPX_ERR_CONFIG', 'mcpx: invalid config:\n  sessions: give sessions.redis or sessions.redisUrl (its earlier spelling), not both')
  }
  sessions.redis ??= sessions.redisUrl ?? DEFAULT_REDIS_URL
  delete sessions.redisUrl // loading a loaded config again (the daemon, then the plugin) is then a no-op
  c.upstreamTimeout = parseDuration(c.upstreamTimeout, 'upstreamTimeout')
  c.mrtr.parkTimeout = parseDuration(c.mrtr.parkTimeout, 'mrtr.parkTimeout')
  c.mrtr.stateTtl = parseDuration(c.mrtr.stateTtl, 'mrtr.stateTtl')
  c.confirmation.expiry = parseDuration(c.confirmation.expiry, 'confirmation.expiry')
  if (c.confirmation.expiry <= 0) throw new McpxError('MCPX_ERR_CONFIG', 'mcpx: invalid config:\n  confirmation.expiry: must be more than 0 ms')
  const oauth = c.auth.oauth
  if (oauth !== undefined) {
    const issues = [['issuer', issuerProblem(oauth.issuer)], ['resource', resourceProblem(oauth.resource)]].filter(([, p]) => p !== undefined)
    if (issues.length > 0) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: invalid config:\n${issues.map(([k, p]) => `  auth.oauth.${k ?? ''}: ${p ?? ''}`).join('\n')}`)
    oauth.audience ??= [oauth.resource]
    oauth.clockTolerance = parseDuration(oauth.clockTolerance, 'auth.oauth.clockTolerance')
    oauth.jwksCooldown = parseDuration(oauth.jwksCooldown, 'auth.oauth.jwksCooldown')
    if (oauth.dpopProofMaxAge !== undefined) oauth.dpopProofMaxAge = parseDuration(oauth.dpopProofMaxAge, 'auth.oauth.dpopProofMaxAge')
  }
  if (c.admin.scopes.length > 0 && oauth === undefined) {
    throw new McpxError('MCPX_ERR_CONFIG', 'mcpx: invalid config:\n  admin.scopes: needs auth.oauth (the scopes are those of an OAuth access token)')
  }
  if (c.integrity.store !== undefined && c.sessions.store === 'redis') {
    // One place for the pins: replicas sharing Redis must agree, a file per replica would not (docs/policy.md › Integrity).
    throw new McpxError('MCPX_ERR_CONFIG', 'mcpx: invalid config:\n  integrity.store: not with sessions.store "redis" (the pins then live in Redis, shared by every replica); remove one')
  }
  const serverIssues = serversProblems(c.servers ?? {})
  if (serverIssues.length > 0) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: invalid config:\n${serverIssues.map(p => '  ' + p).join('\n')}`)
  c.policy?.rules.forEach((rule, i) => {
    if (rule.rateLimit === undefined) return
    rule.rateLimit.per = parseDuration(rule.rateLimit.per, `policy.rules[${i}].rateLimit.per`)
    if (rule.rateLimit.per <= 0) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: invalid config:\n  policy.rules[${i}].rateLimit.per: must be more than 0 ms`)
  })
  for (const [name, upstream] of Object.entries(c.upstreams)) {
    if ('url' in upstream && upstream.auth?.type === 'id-jag' && oauth === undefined) {
      throw new McpxError('MCPX_ERR_CONFIG', `mcpx: invalid config:\n  upstreams.${name}.auth: type "id-jag" needs auth.oauth (the caller's OAuth access token is the identity assertion exchanged at the IdP)`)
    }
    if (upstream.timeout !== undefined) upstream.timeout = parseDuration(upstream.timeout, `upstreams.${name}.timeout`)
    if (upstream.maxTotalTimeout !== undefined) upstream.maxTotalTimeout = parseDuration(upstream.maxTotalTimeout, `upstreams.${name}.maxTotalTimeout`)
    if (upstream.idleTimeout !== undefined) upstream.idleTimeout = parseDuration(upstream.idleTimeout, `upstreams.${name}.idleTimeout`)
    const personal = personalProblems(name, upstream, c)
    if (personal.length > 0) throw new McpxError('MCPX_ERR_CONFIG', `mcpx: invalid config:\n${personal.map(p => '  ' + p).join('\n')}`)
  }
  return c
}

/**
 * What an `oauth-user` upstream needs (docs/upstreams.md › Upstream identity): a user at the front door
 * (`auth.oauth` or `auth.tokens`: a per-user token needs a user), an explicit `prefix` (its names are
 * known before a caller's first listing), per-principal connections (set when `isolation` is absent),
 * and a callback URL (`redirectUri`, or `auth.oauth.resource` to derive it from). Fills in `isolation`.
 * @returns one line per problem, each naming its field; empty when none (or another auth type)
 */
function personalProblems (name: string, upstream: McpxConfig['upstreams'][string], c: McpxConfig): string[] {
  if (!('url' in upstream) || upstream.auth?.type !== 'oauth-user') return []
  const where = `upstreams.${name}`
  const problems: string[] = []
  if (c.auth.oauth === undefined && (c.auth.tokens ?? []).length === 0) problems.push(`${where}.auth: type "oauth-user" needs auth.oauth or auth.tokens (a per-user token needs a user at the front door)`)
  if (upstream.prefix === undefined || upstream.prefix === '') problems.push(`${where}.prefix: required for an "oauth-user" upstream (its tool names must be known before a caller's first listing)`)
  if (upstream.isolation !== undefined && upstream.isolation !== 'per-principal') problems.push(`${where}.isolation: an "oauth-user" upstream is "per-principal" (each caller's connection carries that caller's token), not "${upstream.isolation}"`)
  if (upstream.auth.redirectUri === undefined && c.auth.oauth === undefined) problems.push(`${where}.auth.redirectUri: required without auth.oauth.resource (mcpx's public /oauth/callback URL)`)
  upstream.isolation = 'per-principal'
  return problems
}

const require = createRequire(import.meta.url)

/**
 * The embedded default: one real upstream, `@modelcontextprotocol/server-everything` over stdio,
 * which ships as a dependency, so `npm start` on a fresh clone serves something real offline.
 */
export function defaultConfig (): McpxConfig {
  const everything = require.resolve('@modelcontextprotocol/server-everything/dist/index.js')
  return loadConfig({ upstreams: { everything: { command: process.execPath, args: [everything, 'stdio'] } } })
}

/**
 * Finds and loads the config (docs/configuration.md › Configuration).
 * @param explicitPath `--config PATH`, if given
 * @throws McpxError MCPX_ERR_CONFIG when a named file is missing, is not JSON, or is invalid
 */
export function resolveConfig (explicitPath?: string, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): { config: McpxConfig, source: string } {
  const path = explicitPath ?? env.MCPX_CONFIG ?? (existsSync(resolvePath(cwd, 'mcpx.config.json')) ? 'mcpx.config.json' : undefined)
  if (path === undefined) return { config: defaultConfig(), source: '(embedded default)' }
  const full = resolvePath(cwd, path)
  let text: string
  try {
    text = readFileSync(full, 'utf8')
  } catch (cause) {
    throw new McpxError('MCPX_ERR_CONFIG', `mcpx: cannot read config file ${full}: ${(cause as Error).message}`, { cause })
  }
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (cause) {
    throw new McpxError('MCPX_ERR_CONFIG', `mcpx: config file ${full} is not JSON: ${(cause as Error).message}`, { cause })
  }
  return { config: loadConfig(raw), source: full }
}
