/**
 * What one caller sees on one endpoint: the caller's policy view (lib/policy/rules.ts) and
 * the endpoint's curation (lib/policy/endpoints.ts), applied in that order: the policy decides on catalogue
 * names, the endpoint then filters, renames, overrides and fills in defaults. The dispatcher
 * (lists, calls), the Mcp-Param-* check (plugins/modern-headers via Dispatcher.findTool) and the
 * notification listeners (list_changed, resources/updated) all ask this one object.
 *
 * Lists are cached per input array at each step (the registry replaces an array when its list
 * changes), so a list costs a WeakMap lookup once computed, and its fingerprint (for list_changed
 * per view) is computed once per distinct array.
 */
import type { ListKind, JsonObject } from '../protocol/jsonrpc.js'
import type { UpstreamRegistry } from '../upstreams/contract.js'
import type { PolicyView } from './rules.js'
import type { CuratedServer } from './endpoints.js'

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

  constructor (readonly policy: PolicyView | undefined, readonly server: CuratedServer | undefined) {}

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

  /** `resources/list` (`key` 'uri') or `resources/templates/list` (`key` 'uriTemplate'). */
  resources (items: readonly JsonObject[], key: 'uri' | 'uriTemplate'): JsonObject[] {
    const allowed = this.policy === undefined ? items : this.policy.filter('resources', items, key)
    return this.server === undefined ? allowed as JsonObject[] : this.server.filter('resources', allowed, key)
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

  /** Whether the resource (URI, or a template's uriTemplate) is visible. */
  resource (uri: string): boolean {
    return (this.server === undefined || this.server.allowsResource(uri)) && (this.policy === undefined || this.policy.allows('resources', uri))
  }

  /** The arguments sent upstream for a call of catalogue tool `name` (endpoint defaults filled in). */
  argumentsFor (name: string, args: JsonObject | undefined): JsonObject | undefined {
    return this.server === undefined ? args : this.server.argumentsFor(name, args)
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
      case 'resources': return this.resource(key)
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
