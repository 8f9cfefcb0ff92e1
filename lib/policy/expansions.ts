/**
 * Which of the catalogue's resource templates a concrete URI expands (docs/policy.md › Templates and
 * their expansions): the policy and the curated endpoints judge a URI under its own name and under
 * the `uriTemplate` of each of them, so a hidden template hides what the registry would route
 * through it. The matcher is the registry's router's own (lib/protocol/uri-template.ts).
 *
 * Compiled once per catalogue templates array (the registry replaces the array when the resources
 * change), so a check costs one pass of the URI per template.
 */
import { compileUriTemplate, type UriTemplateMatcher } from '../protocol/uri-template.js'
import type { JsonObject } from '../protocol/jsonrpc.js'

const NO_NAMES: readonly string[] = Object.freeze([])

/** The catalogue's templates, compiled. Immutable; never throws. */
export class Expansions {
  /** No templates: every URI is judged by its own name alone. */
  static readonly NONE = new Expansions([])

  private readonly matchers: readonly UriTemplateMatcher[]
  private readonly texts: ReadonlySet<string>

  /** @param templates `resources/templates/list` items; those without a string `uriTemplate` are skipped */
  constructor (templates: readonly JsonObject[]) {
    const matchers: UriTemplateMatcher[] = []
    for (const item of templates) if (typeof item.uriTemplate === 'string') matchers.push(compileUriTemplate(item.uriTemplate))
    this.matchers = matchers
    this.texts = new Set(matchers.map(matcher => matcher.uriTemplate))
  }

  /** Whether `uriTemplate` is the text of one of the templates. */
  has (uriTemplate: string): boolean { return this.texts.has(uriTemplate) }

  /** Whether there are no templates (then {@link of} is always empty). */
  get empty (): boolean { return this.matchers.length === 0 }

  /** The `uriTemplate` of every template `uri` is an expansion of, in catalogue order (a shared empty array when none). */
  of (uri: string): readonly string[] {
    let names: string[] | undefined
    for (const matcher of this.matchers) if (matcher.test(uri)) (names ??= []).push(matcher.uriTemplate)
    return names ?? NO_NAMES
  }
}

const compiled = new WeakMap<readonly JsonObject[], Expansions>()

/** The {@link Expansions} of a catalogue templates array, compiled on first use and cached per array. Never throws. */
export function expansionsOf (templates: readonly JsonObject[]): Expansions {
  if (templates.length === 0) return Expansions.NONE
  let expansions = compiled.get(templates)
  if (expansions === undefined) { expansions = new Expansions(templates); compiled.set(templates, expansions) }
  return expansions
}
