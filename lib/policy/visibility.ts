/**
 * What one caller sees on one endpoint: the caller's policy view (lib/policy/rules.ts) and
 * the endpoint's curation (lib/policy/endpoints.ts), applied in that order: the policy decides on catalogue
 * names, the endpoint then filters, renames, overrides and fills in defaults. The dispatcher
 * (lists, calls), the Mcp-Param-* check (plugins/modern-headers via Dispatcher.findTool) and the
 * notification listeners (list_changed, resources/updated) all ask this one object.
 *
 * A concrete resource URI is judged under its own name and under the uriTemplate of every catalogue
 * template it expands (lib/policy/expansions.ts; docs/policy.md › Templates and their expansions):
 * `resources/read`, `resources/subscribe`, `resources/list`, listen subscriptions and
 * `notifications/resources/updated` alike, so hiding a template hides what the registry would
 * route through it. A template itself is judged by its own text.
 *
 * Lists are cached per input array at each step (the registry replaces an array when its list
 * changes), so a list costs a WeakMap lookup once computed, and its fingerprint (for list_changed
 * per view) is computed once per distinct array.
 */
import type { ListKind, JsonObject } from '../protocol/jsonrpc.js'
import type { UpstreamRegistry } from '../upstreams/contract.js'
import type { PolicyView } from './rules.js'
import type { CuratedServer } from './endpoints.js'
import { Expansions, expansionsOf } from './expansions.js'
import type { ToolSearch } from './discovery.js'

const fingerprints = new WeakMap<readonly JsonObject[], string>()

/**
 * `resources/list` as a view shows it, without the resources of skills it hides, per the view's
 * filtered array (each such array is one view's: the policy's and the endpoint's caches make them).
 */
const withoutHiddenSkills = new WeakMap<readonly JsonObject[], JsonObject[]>()

const NO_SKILLS: readonly JsonObject[] = Object.freeze([])

function fingerprintOf (items: readonly JsonObject[]): string {
  let print = fingerprints.get(items)
  if (print === undefined) { print = JSON.stringify(items); fingerprints.set(items, print) }
  return print
}

/**
 * A caller's view of the catalogue on an endpoint: a policy view, a curated endpoint, both, or
 * neither ({@link Visibility.ALL}). Immutable; never throws.
 */
export class Visibility {
  /**
   * The null view: neither a policy nor a curated endpoint applies. Every name is visible, the
   * exposed names are the catalogue names, arguments pass unchanged and no rate limit counts (no
   * policy view to take limits from). Each method reads the same as under any other view; lists
   * come back as the registry's own arrays (no copy).
   */
  static readonly ALL = new Visibility(undefined, undefined)

  /**
   * @param catalogue where the resource templates and the skills' owners of URIs come from (the
   *        registry): read at each check, so a long-lived view (a notification stream's) follows the
   *        catalogue. Absent: no templates, no skills.
   * @param search the endpoint's tool search (lib/policy/discovery.ts), when it is in `"mode": "search"`:
   *        tools/list then lists its two meta-tools, and {@link tools} is what they search and call
   */
  constructor (
    readonly policy: PolicyView | undefined,
    readonly server: CuratedServer | undefined,
    private readonly catalogue?: Pick<UpstreamRegistry, 'resourceTemplates' | 'skills' | 'skillOwning'>,
    readonly search?: ToolSearch
  ) {}

  /** The catalogue's templates, compiled (cached per templates array). */
  private expansions (): Expansions {
    return this.catalogue === undefined ? Expansions.NONE : expansionsOf(this.catalogue.resourceTemplates())
  }

  /**
   * The tools this caller may find and call on this endpoint (policy, then the endpoint's curation):
   * `tools/list` in list mode; in search mode what `search_tools` searches and `call_tool` calls.
   */
  tools (items: readonly JsonObject[]): JsonObject[] {
    const allowed = this.policy === undefined ? items : this.policy.filter('tools', items, 'name')
    return this.server === undefined ? allowed as JsonObject[] : this.server.exposeTools(allowed)
  }

  /** `prompts/list`. */
  prompts (items: readonly JsonObject[]): JsonObject[] {
    const allowed = this.policy === undefined ? items : this.policy.filter('prompts', items, 'name')
    return this.server === undefined ? allowed as JsonObject[] : this.server.filter('prompts', allowed, 'name')
  }

  /**
   * `resources/list` (`key` 'uri': each URI judged with the templates it expands, as {@link resource})
   * or `resources/templates/list` (`key` 'uriTemplate': each by its own text).
   */
  resources (items: readonly JsonObject[], key: 'uri' | 'uriTemplate'): JsonObject[] {
    if (this.policy === undefined && this.server === undefined) return items as JsonObject[]
    if (key === 'uriTemplate') {
      const allowed = this.policy === undefined ? items : this.policy.filter('resources', items, key)
      return this.server === undefined ? allowed as JsonObject[] : this.server.filter('resources', allowed, key)
    }
    const expansions = this.expansions()
    const allowed = this.policy === undefined ? items : this.policy.filterUris(items, expansions)
    return this.hidingSkills(this.server === undefined ? allowed as JsonObject[] : this.server.filterUris(allowed, expansions))
  }

  /**
   * `items` (a view's filtered `resources/list`) without the files of the skills this view hides: a
   * hidden skill is absent from `resources/list` too. The items themselves when no upstream lists
   * skills (one length check); cached per array otherwise.
   */
  private hidingSkills (items: JsonObject[]): JsonObject[] {
    const catalogue = this.catalogue
    if (catalogue?.skillOwning === undefined || (catalogue.skills?.() ?? NO_SKILLS).length === 0) return items
    let out = withoutHiddenSkills.get(items)
    if (out === undefined) {
      out = items.filter(item => typeof item.uri !== 'string' || this.skillFile(item.uri))
      withoutHiddenSkills.set(items, out)
    }
    return out
  }

  /** Whether `uri` is no listed skill's, or belongs to a skill this view shows (`registry.skillOwning`). */
  private skillFile (uri: string): boolean {
    const skill = this.catalogue?.skillOwning?.(uri)
    return skill === undefined || this.skill(skill)
  }

  /** `skills/list` (SEP-2640): skills judged by their `SKILL.md` URI, by the policy and by the endpoint. */
  skills (items: readonly JsonObject[]): JsonObject[] {
    const allowed = this.policy === undefined ? items : this.policy.filter('skills', items, 'uri')
    return this.server === undefined ? allowed as JsonObject[] : this.server.filter('skills', allowed, 'uri')
  }

  /**
   * Whether the skill whose `SKILL.md` is at `uri` (as `/mcp` lists it) is visible: `skills/get`,
   * `resources/directory/read` and `resources/read` of its files all ask this (a hidden skill is absent).
   */
  skill (uri: string): boolean {
    return (this.server === undefined || this.server.allowsSkill(uri)) && (this.policy === undefined || this.policy.allows('skills', uri))
  }

  /** The catalogue name of the tool called `exposed` here, or undefined when it is hidden (or renamed away). */
  tool (exposed: string): string | undefined {
    const name = this.server === undefined ? exposed : this.server.catalogueTool(exposed)
    if (name === undefined) return undefined
    return this.policy === undefined || this.policy.allows('tools', name) ? name : undefined
  }

  /** Whether prompt `name` is visible. */
  prompt (name: string): boolean {
    return (this.server === undefined || this.server.allowsPrompt(name)) && (this.policy === undefined || this.policy.allows('prompts', name))
  }

  /**
   * Whether the concrete resource `uri` is visible (`resources/read`, `resources/subscribe`,
   * `resources/unsubscribe`, `notifications/resources/updated`): under its own name and the
   * uriTemplate of each catalogue template it expands, one of them allowed and none denied, by the
   * endpoint and by the policy; and, when it is a file or folder of a listed skill, that skill visible.
   */
  resource (uri: string): boolean {
    if (this.policy === undefined && this.server === undefined) return true
    const templates = this.expansions().of(uri)
    return (this.server === undefined || this.server.allowsUri(uri, templates)) && (this.policy === undefined || this.policy.allowsUri(uri, templates)) && this.skillFile(uri)
  }

  /** Whether the resource template `uriTemplate` is visible (by its own text). */
  template (uriTemplate: string): boolean {
    return (this.server === undefined || this.server.allowsResource(uriTemplate)) && (this.policy === undefined || this.policy.allows('resources', uriTemplate))
  }

  /**
   * Where a key may be either (a completion's `ref/resource` uri, a changed catalogue key): the text
   * of a catalogue template is judged as {@link template}, anything else as the concrete URI the
   * registry would route it as ({@link resource}), as the registry's `complete` routes a ref.
   */
  resourceOrTemplate (key: string): boolean {
    if (this.policy === undefined && this.server === undefined) return true
    return this.expansions().has(key) ? this.template(key) : this.resource(key)
  }

  /** The arguments sent upstream for a call of catalogue tool `name` (endpoint defaults filled in). */
  argumentsFor (name: string, args: JsonObject | undefined): JsonObject | undefined {
    return this.server === undefined ? args : this.server.argumentsFor(name, args)
  }

  /**
   * Whether a call of the tool called `exposed` here (catalogue name `catalogue`) needs a human's
   * yes first (docs/policy.md › Confirmation): the caller's policy rules or the endpoint select it
   * by glob, or by `destructiveHint` as this endpoint lists the tool. Without any `confirm` it
   * costs two property reads. Never throws.
   */
  needsConfirmation (exposed: string, catalogue: string, registry: UpstreamRegistry): boolean {
    const byPolicy = this.policy?.confirm
    const byServer = this.server?.confirm
    const policyAny = byPolicy !== undefined && byPolicy.any
    const serverAny = byServer !== undefined && byServer.any
    if (!policyAny && !serverAny) return false
    const tool = (policyAny && byPolicy.destructive) || (serverAny && byServer.destructive) ? this.findTool(exposed, registry) : undefined
    return (policyAny && byPolicy.selects(catalogue, exposed, tool)) || (serverAny && byServer.selects(catalogue, exposed, tool))
  }

  /**
   * The tool called `exposed` as a direct `tools/call` of it finds it here (its inputSchema decides the
   * Mcp-Param-* headers), or undefined when it is not visible or does not exist. In search mode the
   * two meta-tools' names are the meta-tools.
   */
  findTool (exposed: string, registry: UpstreamRegistry): JsonObject | undefined {
    const meta = this.search?.metaTool(exposed)
    if (meta !== undefined) return meta
    const name = this.tool(exposed)
    if (name === undefined) return undefined
    const item = registry.findTool(name)
    if (item === undefined || this.server === undefined) return item
    return this.server.exposeTool(item)
  }

  /**
   * Whether the catalogue item `key` of `kind` (a tool's or prompt's catalogue name, a resource's
   * URI or a template's uriTemplate) is in this caller's view here: a change to it changes the view.
   */
  seesCatalogue (kind: ListKind, key: string): boolean {
    switch (kind) {
      case 'tools': return this.search === undefined && (this.server === undefined || this.server.allowsTool(key)) && (this.policy === undefined || this.policy.allows('tools', key))
      case 'prompts': return this.prompt(key)
      case 'resources': return this.resourceOrTemplate(key)
    }
  }

  /** Whether notifications/resources/updated for `uri` may reach this caller. */
  seesUri (uri: string): boolean { return this.resource(uri) }

  /**
   * A fingerprint of the list of `kind` as seen here (resources: resources, templates and skills), for
   * list_changed per view: it fires only when this changes. Cheap once computed (cached per array).
   */
  fingerprint (kind: ListKind, registry: UpstreamRegistry): string {
    switch (kind) {
      case 'tools': return fingerprintOf(this.tools(registry.tools()))
      case 'prompts': return fingerprintOf(this.prompts(registry.prompts()))
      case 'resources': return fingerprintOf(this.resources(registry.resources(), 'uri')) + '\n' + fingerprintOf(this.resources(registry.resourceTemplates(), 'uriTemplate')) +
        // The Skills extension signals its changes with resources/list_changed (SEP-2640).
        (registry.skills === undefined ? '' : '\n' + fingerprintOf(this.skills(registry.skills())))
    }
  }
}
