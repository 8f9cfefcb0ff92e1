/**
 * Curated endpoints (docs/policy.md › Curated endpoints; config `servers`): a named subset of the
 * catalogue, served at `<prefix>/mcp/<name>` (both eras) and by `mcpx serve --server <name>`.
 * Pure of Fastify; the dispatcher (lib/dispatch/dispatcher.ts) applies it together with the policy
 * (lib/policy/rules.ts), in one place for every transport.
 *
 * - `tools`/`prompts`/`resources`: `allow`/`deny` globs (lib/policy/rules.ts GlobAccess) on catalogue
 *   names (resources: URIs and uriTemplates; a concrete URI also by the templates it expands); deny
 *   wins; an absent `allow` exposes nothing of the kind.
 * - `skills`: `allow`/`deny` globs on the URI of a skill's `SKILL.md` as `/mcp` lists it (SEP-2640).
 * - `rename` (tools): catalogue name → exposed name. The client sees and calls only the exposed
 *   name; the catalogue name is unknown on this endpoint.
 * - `override` (tools): replaces `description`, `title` and `annotations` in `tools/list`.
 * - `defaults` (tools): arguments filled in when the client leaves them out, and dropped from the
 *   exposed inputSchema's `required`.
 * - `discovery`: `"mode": "search"` lists the two tool-search meta-tools instead of the tools
 *   (lib/policy/discovery.ts; docs/discovery.md › Tool search).
 *
 * Globs, policy rules and the keys of rename/override/defaults all use catalogue names, so one
 * rule covers a tool on every endpoint, whatever it is called there.
 */
import { GlobAccess } from './rules.js'
import { ConfirmSelection, type ConfirmConfig } from './confirm.js'
import type { Expansions } from './expansions.js'
import { toolSearchOf, type DiscoveryConfig, type ToolSearch } from './discovery.js'
import type { JsonObject } from '../protocol/jsonrpc.js'

/** allow/deny globs of one kind. */
export interface ServerGlobs { allow?: string[], deny?: string[] }

/** What `override` may replace. */
export interface ToolOverride { description?: string, title?: string, annotations?: JsonObject }

/** One entry of config `servers`. */
export interface ServerConfig {
  tools?: ServerGlobs
  prompts?: ServerGlobs
  resources?: ServerGlobs
  /** Skills (SEP-2640) by the URI of their `SKILL.md` as `/mcp` lists it. */
  skills?: ServerGlobs
  rename?: Record<string, string>
  override?: Record<string, ToolOverride>
  defaults?: Record<string, JsonObject>
  /** Tool search (docs/discovery.md › Tool search); absent: `"mode": "list"`. */
  discovery?: DiscoveryConfig
  /** Calls of these tools need a human's yes first (docs/policy.md › Confirmation; lib/policy/confirm.ts). */
  confirm?: ConfirmConfig
}

/** A compiled allow/deny pair. */
function globsOf (globs: ServerGlobs | undefined): GlobAccess {
  return new GlobAccess(globs?.allow ?? [], globs?.deny ?? [])
}

/** A compiled curated endpoint. Immutable; a reload compiles a new {@link Servers}. */
export class CuratedServer {
  private readonly tools: GlobAccess
  private readonly prompts: GlobAccess
  private readonly resources: GlobAccess
  private readonly skills: GlobAccess
  /** catalogue → exposed */
  private readonly renamed: ReadonlyMap<string, string>
  /** exposed → catalogue */
  private readonly original: ReadonlyMap<string, string>
  private readonly override: ReadonlyMap<string, ToolOverride>
  private readonly defaults_: ReadonlyMap<string, JsonObject>
  private readonly exposed = new WeakMap<readonly JsonObject[], JsonObject[]>()
  private readonly filtered = new WeakMap<readonly JsonObject[], JsonObject[]>()
  /** This endpoint's tool search; undefined in `"mode": "list"` (the default). */
  readonly search: ToolSearch | undefined
  /** The tools whose calls need a human's yes on this endpoint (ConfirmSelection.NONE: none). */
  readonly confirm: ConfirmSelection

  constructor (readonly name: string, config: ServerConfig) {
    this.search = toolSearchOf(config.discovery)
    this.confirm = ConfirmSelection.union([config.confirm])
    this.tools = globsOf(config.tools)
    this.prompts = globsOf(config.prompts)
    this.resources = globsOf(config.resources)
    this.skills = globsOf(config.skills)
    this.renamed = new Map(Object.entries(config.rename ?? {}))
    this.original = new Map(Object.entries(config.rename ?? {}).map(([from, to]) => [to, from]))
    this.override = new Map(Object.entries(config.override ?? {}))
    this.defaults_ = new Map(Object.entries(config.defaults ?? {}))
  }

  /**
   * The catalogue name of the tool the client calls `exposed` on this endpoint, or undefined when
   * this endpoint has no such tool (not exposed, or a catalogue name that is renamed here).
   */
  catalogueTool (exposed: string): string | undefined {
    const original = this.original.get(exposed)
    const name = original ?? (this.renamed.has(exposed) ? undefined : exposed)
    return name !== undefined && this.tools.test(name) ? name : undefined
  }

  /** The name a catalogue tool has on this endpoint. */
  exposedTool (catalogue: string): string { return this.renamed.get(catalogue) ?? catalogue }

  /** Whether the tool `name` (catalogue name) is exposed here (under its own name or a rename). */
  allowsTool (name: string): boolean { return this.tools.test(name) }

  /** Whether the prompt `name` (catalogue name) is exposed here. */
  allowsPrompt (name: string): boolean { return this.prompts.test(name) }

  /** Whether the skill whose `SKILL.md` is at `uri` (as `/mcp` lists it) is exposed here. */
  allowsSkill (uri: string): boolean { return this.skills.test(uri) }

  /** Whether the resource (URI, or a template's uriTemplate) is exposed here, by its own name alone. */
  allowsResource (uri: string): boolean { return this.resources.test(uri) }

  /** Whether the concrete resource `uri`, an expansion of the catalogue templates `templates`, is exposed here (GlobAccess.testExpansion). */
  allowsUri (uri: string, templates: readonly string[]): boolean { return this.resources.testExpansion(uri, templates) }

  /** `resources/list` as exposed here, each URI judged as {@link allowsUri}. Cached per input array while the templates are the same. */
  filterUris (items: readonly JsonObject[], expansions: Expansions): JsonObject[] {
    if (expansions.empty) return this.filter('resources', items, 'uri')
    return this.resources.filterUris(items, expansions)
  }

  /** The arguments of a call of catalogue tool `name`: `defaults` under what the client sent. */
  argumentsFor (name: string, args: JsonObject | undefined): JsonObject | undefined {
    const defaults = this.defaults_.get(name)
    if (defaults === undefined) return args
    return { ...defaults, ...(args ?? {}) }
  }

  /**
   * The tools list as this endpoint exposes it: filtered, renamed, overridden, defaults dropped
   * from `required`. Cached per input array (the registry and the policy replace arrays on change).
   */
  exposeTools (items: readonly JsonObject[]): JsonObject[] {
    const cached = this.exposed.get(items)
    if (cached !== undefined) return cached
    const out: JsonObject[] = []
    for (const item of items) {
      if (typeof item.name !== 'string' || !this.tools.test(item.name)) continue
      out.push(this.exposeTool(item))
    }
    this.exposed.set(items, out)
    return out
  }

  /** One catalogue tool as exposed here (assumed allowed). */
  exposeTool (item: JsonObject): JsonObject {
    const name = item.name as string
    const renamed = this.renamed.get(name)
    const override = this.override.get(name)
    const defaults = this.defaults_.get(name)
    if (renamed === undefined && override === undefined && defaults === undefined) return item
    const tool: JsonObject = { ...item }
    if (renamed !== undefined) tool.name = renamed
    if (override !== undefined) {
      for (const key of ['description', 'title', 'annotations'] as const) if (override[key] !== undefined) tool[key] = override[key]
    }
    if (defaults !== undefined && isRecord(tool.inputSchema) && Array.isArray(tool.inputSchema.required)) {
      const filled = new Set(Object.keys(defaults))
      tool.inputSchema = { ...tool.inputSchema, required: tool.inputSchema.required.filter(key => typeof key !== 'string' || !filled.has(key)) }
    }
    return tool
  }

  /** Prompts, resources or templates exposed here (no renames), cached per input array. */
  filter (kind: 'prompts' | 'resources' | 'skills', items: readonly JsonObject[], key: 'name' | 'uri' | 'uriTemplate'): JsonObject[] {
    const cached = this.filtered.get(items)
    if (cached !== undefined) return cached
    const globs = kind === 'prompts' ? this.prompts : kind === 'skills' ? this.skills : this.resources
    const out = items.filter(item => typeof item[key] === 'string' && globs.test(item[key]))
    this.filtered.set(items, out)
    return out
  }
}

function isRecord (value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Every curated endpoint, by name. */
export class Servers {
  private readonly byName: ReadonlyMap<string, CuratedServer>
  constructor (config: Record<string, ServerConfig>) {
    this.byName = new Map(Object.entries(config).map(([name, server]) => [name, new CuratedServer(name, server)]))
  }

  /** The endpoint called `name`, or undefined. */
  get (name: string): CuratedServer | undefined { return this.byName.get(name) }

  /** Whether an endpoint by this name is configured. */
  has (name: string): boolean { return this.byName.has(name) }

  /** Configured endpoint names. */
  names (): string[] { return [...this.byName.keys()] }
}

/**
 * Checks a `servers` config beyond its schema: two catalogue names renamed to the same exposed
 * name on one endpoint would make calls ambiguous.
 * @returns the problems, one line each (empty: fine)
 */
export function serversProblems (config: Record<string, ServerConfig>): string[] {
  const problems: string[] = []
  for (const [name, server] of Object.entries(config)) {
    const seen = new Map<string, string>()
    for (const [from, to] of Object.entries(server.rename ?? {})) {
      const other = seen.get(to)
      if (other !== undefined) problems.push(`servers.${name}.rename: ${JSON.stringify(other)} and ${JSON.stringify(from)} are both renamed to ${JSON.stringify(to)}`)
      seen.set(to, from)
    }
  }
  return problems
}
