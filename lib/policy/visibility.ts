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

const fingerprints = new WeakMap<readonly JsonObject[], string>()

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
   * @param catalogue where the resource templates come from (the registry): read at each check, so a
   *        long-lived view (a notification stream's) follows the catalogue. Absent: no templates.
   */
  constructor (
    readonly policy: PolicyView | undefined,
    readonly server: CuratedServer | undefined,
    private readonly catalogue?: Pick<UpstreamRegistry, 'resourceTemplates'>
  ) {}

  /** The catalogue's templates, compiled (cached per templates array). */
  private expansions (): Expansions {
    return this.catalogue === undefined ? Expansions.NONE : expansionsOf(this.catalogue.resourceTemplates())
  }

  /** `tools/list` as this caller sees it on this endpoint. */
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
    return this.server === undefined ? allowed as JsonObject[] : this.server.filterUris(allowed, expansions)
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
   * endpoint and by the policy.
   */
  resource (uri: string): boolean {
    if (this.policy === undefined && this.server === undefined) return true
    const templates = this.expansions().of(uri)
    return (this.server === undefined || this.server.allowsUri(uri, templates)) && (this.policy === undefined || this.policy.allowsUri(uri, templates))
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

  /** The tool called `exposed` as listed here, or undefined when it is not visible or does not exist. */
  findTool (exposed: string, registry: UpstreamRegistry): JsonObject | undefined {
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
      case 'tools': return (this.server === undefined || this.server.allowsTool(key)) && (this.policy === undefined || this.policy.allows('tools', key))
      case 'prompts': return this.prompt(key)
      case 'resources': return this.resourceOrTemplate(key)
    }
  }

  /** Whether notifications/resources/updated for `uri` may reach this caller. */
  seesUri (uri: string): boolean { return this.resource(uri) }

  /**
   * A fingerprint of the list of `kind` as seen here (resources: resources and templates), for
   * list_changed per view: it fires only when this changes. Cheap once computed (cached per array).
   */
  fingerprint (kind: ListKind, registry: UpstreamRegistry): string {
    switch (kind) {
      case 'tools': return fingerprintOf(this.tools(registry.tools()))
      case 'prompts': return fingerprintOf(this.prompts(registry.prompts()))
      case 'resources': return fingerprintOf(this.resources(registry.resources(), 'uri')) + '\n' + fingerprintOf(this.resources(registry.resourceTemplates(), 'uriTemplate'))
    }
  }
}
