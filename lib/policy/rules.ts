/**
 * Per-caller policy (docs/policy.md › Policy): which tools, prompts and resources a caller
 * sees and may use on an endpoint. Pure of Fastify and of transports: the dispatcher
 * (lib/dispatch/dispatcher.ts) is the one place it is enforced, for HTTP in both eras (batches included) and
 * for stdio alike.
 *
 * Model:
 * - a rule applies to a caller on an endpoint when its `principals` match the caller (every key
 *   given must match; no `principals` matches everyone) and its `servers` name the endpoint (no
 *   `servers`: every endpoint, `/mcp` included);
 * - a thing is visible when some applying rule allows it (glob of its kind) and no applying rule
 *   denies it (deny wins). An absent `allow` of a kind allows nothing of that kind;
 * - `default: "allow"` adds an implicit first rule that allows everything to everyone (rules then
 *   only deny); `"deny"` (the default) adds nothing.
 *
 * Skills (the Skills extension, SEP-2640) match by the URI of their `SKILL.md` as `/mcp` lists it.
 * Names are catalogue names (the prefixed names `/mcp` lists, before any rename); resources and
 * resource templates match by URI (template: its `uriTemplate` text), and a concrete URI also by the
 * uriTemplate of each catalogue template it expands (GlobAccess.testExpansion). Globs: `*` is any run of
 * characters (`/` and `:` included: names and URIs are not paths), `?` one character, everything
 * else literal. Home-made on purpose: path glob libraries give `*` and `/` path meanings these
 * names do not have, and the whole syntax is two characters.
 *
 * Views are cached: per principal object (WeakMap) and endpoint, and per set of applying rules,
 * so a request costs a WeakMap lookup and one RegExp test per name.
 */
import type { Principal } from '../auth/principal.js'
import type { Expansions } from './expansions.js'
import { ConfirmSelection, type ConfirmConfig } from './confirm.js'

/** The kinds of things a policy governs. */
export type PolicyKind = 'tools' | 'prompts' | 'resources' | 'skills'

/** Globs per kind (catalogue names; resources by URI; skills by their `SKILL.md` URI). */
export type KindGlobs = Partial<Record<PolicyKind, string[]>>

/** Who a rule is for (every key given must match). */
export interface PrincipalMatch {
  /** Names of static tokens (`auth.tokens[].name`). */
  tokens?: string[]
  /** OAuth callers by issuer and subject. */
  subjects?: Array<{ issuer: string, subject: string }>
  /** Every scope listed must be held (OAuth scopes, or a static token's configured `scopes`). */
  scopes?: string[]
  /** Each value must equal the claim, or be contained in it (an array claim). OAuth callers only. */
  claims?: Record<string, string | number | boolean>
  /** `true`: the stdio caller (`mcpx serve`). */
  local?: boolean
}

/** A per-caller rate limit: `calls` per `per` ms, per (principal, tool). */
export interface RateLimitConfig { calls: number, per: number }

/** One rule of `policy.rules`. */
export interface PolicyRule {
  principals?: PrincipalMatch
  /** Endpoints (curated server names) it applies on; absent: every endpoint, `/mcp` included. */
  servers?: string[]
  allow?: KindGlobs
  deny?: KindGlobs
  /** Counted per (principal, tool) for the tools this rule allows (docs/policy.md › Rate limits). */
  rateLimit?: RateLimitConfig
  /** Calls of these tools need a human's yes first (docs/policy.md › Confirmation; lib/policy/confirm.ts). */
  confirm?: ConfirmConfig
}

/** `policy` as loaded (lib/config/load.ts; `per` in ms). */
export interface PolicyConfig {
  default: 'allow' | 'deny'
  rules: PolicyRule[]
}

/** The endpoint key of `/mcp` itself (and of `mcpx serve` without `--server`). */
export const WHOLE_CATALOGUE = ''

const KINDS: readonly PolicyKind[] = ['tools', 'prompts', 'resources', 'skills']

/**
 * Compiles globs into one anchored RegExp (`*` any run, `?` one character), or null when the list
 * is empty (matches nothing). Never throws.
 */
export function compileGlobs (globs: readonly string[]): RegExp | null {
  if (globs.length === 0) return null
  const alternatives = globs.map(glob => glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replaceAll('*', '[\\s\\S]*').replaceAll('?', '[\\s\\S]'))
  return new RegExp(`^(?:${alternatives.join('|')})$`)
}

/**
 * One allow/deny pair of globs, compiled: a name is visible when `allow` matches it and `deny` does
 * not (an empty `allow` allows nothing). Used per kind by the policy and by the curated endpoints.
 */
export class GlobAccess {
  private readonly allow: RegExp | null
  private readonly deny: RegExp | null
  private readonly everything: boolean
  /** {@link filterUris}'s last answer per input array, with the templates it was judged under. */
  private readonly byExpansions = new WeakMap<readonly object[], { expansions: Expansions, out: unknown[] }>()
  constructor (allow: readonly string[], deny: readonly string[]) {
    this.allow = compileGlobs(allow)
    this.deny = compileGlobs(deny)
    this.everything = this.deny === null && allow.includes('*')
  }

  /** Whether `name` (catalogue name, URI or uriTemplate) is visible. Never throws. */
  test (name: string): boolean {
    if (this.everything) return true
    return this.allow !== null && this.allow.test(name) && (this.deny === null || !this.deny.test(name))
  }

  /**
   * Whether the concrete URI `uri` is visible, judged under its own name and under the uriTemplate
   * of each catalogue template it expands (`templates`, lib/policy/expansions.ts): visible when one of
   * these names is allowed and none is denied (docs/policy.md › Templates and their expansions).
   * Never throws.
   */
  testExpansion (uri: string, templates: readonly string[]): boolean {
    if (templates.length === 0) return this.test(uri)
    if (this.everything) return true
    const { allow, deny } = this
    if (allow === null || !(allow.test(uri) || templates.some(name => allow.test(name)))) return false
    return deny === null || !(deny.test(uri) || templates.some(name => deny.test(name)))
  }

  /**
   * The items of a `resources/list` visible here, each URI judged as {@link testExpansion} with the
   * templates it expands. Cached per `items` array while the templates are the same. Never throws.
   */
  filterUris<T extends Record<string, unknown>> (items: readonly T[], expansions: Expansions): T[] {
    const cached = this.byExpansions.get(items)
    if (cached?.expansions === expansions) return cached.out as T[]
    const out = items.filter(item => typeof item.uri === 'string' && this.testExpansion(item.uri, expansions.of(item.uri)))
    this.byExpansions.set(items, { expansions, out })
    return out
  }
}

/**
 * A rate limit that applies to a call (lib/policy/rate-limit.ts), with the rule it came from.
 * `id` names its counters: `<rule index>:<calls>/<per>` (a reload that changes a limit starts it afresh).
 */
export interface AppliedLimit { rule: number, id: string, calls: number, per: number, allows: RegExp | null }

const NO_LIMITS: readonly AppliedLimit[] = Object.freeze([])

/** Most tool names whose applying limits a view keeps computed (bounded memory; names are catalogue names). */
const MAX_LIMIT_CACHE = 4096

/**
 * What one caller may see on one endpoint. Filtering keeps the catalogue's objects (no copy) and
 * is cached per list array (the registry replaces its arrays when a list changes).
 */
export class PolicyView {
  private readonly kinds: Record<PolicyKind, GlobAccess>
  private readonly filtered = new WeakMap<readonly object[], unknown[]>()
  private readonly limitsByTool = new Map<string, readonly AppliedLimit[]>()

  /**
   * @param limits the rate limits of the applying rules (rule index, calls, per ms, the tools they allow)
   * @param confirm the tools the applying rules' `confirm` selects (ConfirmSelection.NONE: none)
   */
  constructor (allow: Record<PolicyKind, string[]>, deny: Record<PolicyKind, string[]>, readonly limits: readonly AppliedLimit[], readonly confirm: ConfirmSelection = ConfirmSelection.NONE) {
    this.kinds = {
      tools: new GlobAccess(allow.tools, deny.tools),
      prompts: new GlobAccess(allow.prompts, deny.prompts),
      resources: new GlobAccess(allow.resources, deny.resources),
      skills: new GlobAccess(allow.skills, deny.skills)
    }
  }

  /** Whether the thing of `kind` called `name` (catalogue name; resources: URI or uriTemplate) is visible. */
  allows (kind: PolicyKind, name: string): boolean {
    return this.kinds[kind].test(name)
  }

  /** Whether the concrete resource `uri`, an expansion of the catalogue templates `templates`, is visible (GlobAccess.testExpansion). */
  allowsUri (uri: string, templates: readonly string[]): boolean {
    return this.kinds.resources.testExpansion(uri, templates)
  }

  /**
   * The visible items of `resources/list`, each judged as {@link allowsUri} with the templates
   * it expands. Cached per `items` array while the templates are the same. Never throws.
   */
  filterUris<T extends Record<string, unknown>> (items: readonly T[], expansions: Expansions): T[] {
    if (expansions.empty) return this.filter('resources', items, 'uri')
    return this.kinds.resources.filterUris(items, expansions)
  }

  /**
   * The visible items of a catalogue list. `key` is the field that names them (`name`, `uri`,
   * `uriTemplate`). Cached per `items` array. Never throws.
   */
  filter<T extends Record<string, unknown>> (kind: PolicyKind, items: readonly T[], key: 'name' | 'uri' | 'uriTemplate'): T[] {
    const cached = this.filtered.get(items)
    if (cached !== undefined) return cached as T[]
    const access = this.kinds[kind]
    const out = items.filter(item => typeof item[key] === 'string' && access.test(item[key]))
    this.filtered.set(items, out)
    return out
  }

  /**
   * The rate limits that count a call of tool `name` (catalogue name): those of the applying rules
   * whose `allow.tools` match it. Empty (a shared frozen array) when none. Cached per name. Never throws.
   */
  limitsFor (name: string): readonly AppliedLimit[] {
    if (this.limits.length === 0) return NO_LIMITS
    let found = this.limitsByTool.get(name)
    if (found === undefined) {
      const matching = this.limits.filter(limit => limit.allows !== null && limit.allows.test(name))
      found = matching.length === 0 ? NO_LIMITS : matching
      if (this.limitsByTool.size >= MAX_LIMIT_CACHE) this.limitsByTool.clear()
      this.limitsByTool.set(name, found)
    }
    return found
  }
}

/** A compiled rule. */
interface CompiledRule {
  principals: PrincipalMatch | undefined
  servers: ReadonlySet<string> | undefined
  allow: KindGlobs
  deny: KindGlobs
  rateLimit: RateLimitConfig | undefined
  allowsTools: RegExp | null
  confirm: ConfirmConfig | undefined
}

/** Most distinct rule combinations kept compiled; past it the cache starts over (bounded memory). */
const MAX_VIEWS = 1024

/** Duck-types a Principal (DispatchContext.caller is `unknown` to stay additive). */
export function asPrincipal (caller: unknown): Principal | undefined {
  if (typeof caller !== 'object' || caller === null) return undefined
  const kind = (caller as { kind?: unknown }).kind
  return kind === 'oauth' || kind === 'token' || kind === 'local' ? caller as Principal : undefined
}

/**
 * The key a caller's rate-limit counters (lib/policy/rate-limit.ts) and 2025-11-25/2026 tasks (lib/dispatch/tasks.ts
 * owner) go under: its principal's `key`, or `anonymous` for every caller without one (HTTP
 * without auth), who all share them. Never throws.
 */
export function callerKey (caller: unknown): string {
  return asPrincipal(caller)?.key ?? 'anonymous'
}

function claimHolds (claim: unknown, wanted: string | number | boolean): boolean {
  if (claim === wanted) return true
  return Array.isArray(claim) && claim.includes(wanted)
}

/** Whether `match` matches `principal` (undefined: an anonymous caller, matched only by a rule without principals). */
export function principalMatches (match: PrincipalMatch | undefined, principal: Principal | undefined): boolean {
  if (match === undefined) return true
  const { tokens, subjects, scopes, claims, local } = match
  if (tokens === undefined && subjects === undefined && scopes === undefined && claims === undefined && local === undefined) return true
  if (principal === undefined) return false
  if (tokens !== undefined && !(principal.kind === 'token' && tokens.includes(principal.name))) return false
  if (subjects !== undefined && !(principal.kind === 'oauth' && subjects.some(s => s.issuer === principal.issuer && s.subject === principal.subject))) return false
  if (scopes !== undefined && !scopes.every(scope => principal.scopes.includes(scope))) return false
  if (claims !== undefined) {
    if (principal.kind !== 'oauth') return false
    for (const [key, wanted] of Object.entries(claims)) if (!claimHolds(principal.claims[key], wanted)) return false
  }
  if (local !== undefined && (principal.kind === 'local') !== local) return false
  return true
}

/**
 * A compiled `policy`. {@link viewOf} gives what a caller sees on an endpoint. Immutable: a config
 * reload compiles a new one and swaps it in (Dispatcher.setPolicy).
 */
export class Policy {
  private readonly rules: CompiledRule[]
  private readonly byPrincipal = new WeakMap<object, Map<string, PolicyView>>()
  private readonly anonymous = new Map<string, PolicyView>()
  private readonly byRuleSet = new Map<string, PolicyView>()
  /** Whether any rule has a `rateLimit` (then the dispatcher needs a rate limiter, lib/policy/rate-limit.ts). */
  readonly hasLimits: boolean

  constructor (config: PolicyConfig) {
    this.hasLimits = config.rules.some(rule => rule.rateLimit !== undefined)
    const rules = config.default === 'allow' ? [{ allow: { tools: ['*'], prompts: ['*'], resources: ['*'], skills: ['*'] } } as PolicyRule, ...config.rules] : config.rules
    this.rules = rules.map(rule => ({
      principals: rule.principals,
      servers: rule.servers === undefined ? undefined : new Set(rule.servers),
      allow: rule.allow ?? {},
      deny: rule.deny ?? {},
      rateLimit: rule.rateLimit,
      allowsTools: compileGlobs(rule.allow?.tools ?? []),
      confirm: rule.confirm
    }))
  }

  /**
   * What `caller` sees on `endpoint`. Never throws.
   * @param caller the request's Principal (DispatchContext.caller); undefined: anonymous (HTTP without auth)
   * @param endpoint a curated server's name, or {@link WHOLE_CATALOGUE} for `/mcp`
   */
  viewOf (caller: unknown, endpoint: string = WHOLE_CATALOGUE): PolicyView {
    const principal = asPrincipal(caller)
    let views = principal === undefined ? this.anonymous : this.byPrincipal.get(principal)
    if (views === undefined) { views = new Map(); this.byPrincipal.set(principal as object, views) }
    let view = views.get(endpoint)
    if (view === undefined) {
      view = this.compute(principal, endpoint)
      if (views.size < 64) views.set(endpoint, view)
    }
    return view
  }

  private compute (principal: Principal | undefined, endpoint: string): PolicyView {
    const applying: number[] = []
    this.rules.forEach((rule, i) => {
      if (rule.servers !== undefined && !rule.servers.has(endpoint)) return
      if (principalMatches(rule.principals, principal)) applying.push(i)
    })
    const key = applying.join(',')
    const cached = this.byRuleSet.get(key)
    if (cached !== undefined) return cached
    const allow = { tools: [] as string[], prompts: [] as string[], resources: [] as string[], skills: [] as string[] }
    const deny = { tools: [] as string[], prompts: [] as string[], resources: [] as string[], skills: [] as string[] }
    const limits: AppliedLimit[] = []
    for (const i of applying) {
      const rule = this.rules[i]
      for (const kind of KINDS) {
        allow[kind].push(...rule.allow[kind] ?? [])
        deny[kind].push(...rule.deny[kind] ?? [])
      }
      const limit = rule.rateLimit
      if (limit !== undefined) limits.push({ rule: i, id: `${i}:${limit.calls}/${limit.per}`, calls: limit.calls, per: limit.per, allows: rule.allowsTools })
    }
    const view = new PolicyView(allow, deny, limits, ConfirmSelection.union(applying.map(i => this.rules[i].confirm)))
    if (this.byRuleSet.size >= MAX_VIEWS) this.byRuleSet.clear()
    this.byRuleSet.set(key, view)
    return view
  }
}

/** Compiles `policy` from config; undefined when there is none (everything allowed, at no cost). */
export function compilePolicy (config: PolicyConfig | undefined): Policy | undefined {
  return config === undefined ? undefined : new Policy(config)
}
