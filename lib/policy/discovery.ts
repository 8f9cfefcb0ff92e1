/**
 * Tool search (docs/discovery.md › Tool search; config `discovery`, top level and `servers.<name>.discovery`):
 * an endpoint in `"mode": "search"` lists two meta-tools, `search_tools` and `call_tool`, instead of its
 * catalogue. This module holds what is data and ranking: the config, the two tool definitions, and
 * the search over one caller's view of the catalogue. The handlers live in lib/dispatch/methods/discovery.ts;
 * `call_tool` is answered by the one `tools/call` path (lib/dispatch/dispatcher.ts).
 *
 * Ranking is BM25 (minisearch 7: BM25+ with its default k1 1.2, b 0.7, d 0.5) over four fields of
 * each tool as this endpoint exposes it: the exposed name (split on `_`, `-`, `.`, `/`, spaces and
 * camelCase), the title, the description, and the input parameters' names and descriptions. Query
 * terms match by prefix (terms of 2+ characters) and, for terms of 5+ characters, within a
 * Levenshtein distance of 20 % of their length (at most 2). Results are ordered by score (compared at
 * a resolution of 1e-9, {@link SCORE_RESOLUTION}), ties by exposed name (code-unit order), so the
 * same catalogue and view give the same order on every replica and every run, whatever order the
 * upstreams listed their tools in.
 *
 * The index a caller searches is built from that caller's view (Visibility.tools: policy filter, then
 * the endpoint's filter, renames, overrides, defaults): a hidden tool is not in it. Views hand out
 * the same array for the same (catalogue version, view) (the registry replaces its arrays on change;
 * each view step caches per input array), so that array keys the index cache: a catalogue change
 * or a reload yields a new array. The next search then updates the index that view used last in
 * place (the tools that changed are removed and added), or builds one when more than half changed.
 * Nothing is remembered between requests but this cache, which is bounded ({@link MAX_INDEXES},
 * least recently used dropped).
 */
import MiniSearch, { type SearchOptions } from 'minisearch'
import type { JsonObject } from '../protocol/jsonrpc.js'

/** `discovery` as configured (top level for `/mcp` and plain `mcpx serve`, or per curated endpoint). */
export interface DiscoveryConfig {
  /** `list` (default): tools/list lists the catalogue; `search`: the two meta-tools instead. */
  mode?: 'list' | 'search'
  /** Results a search returns when the client gives no `limit`, and at most whatever it gives (1–50). Default 8. */
  maxResults?: number
}

/** The meta-tools' names. */
export const SEARCH_TOOLS = 'search_tools'
export const CALL_TOOL = 'call_tool'

/** Bounds of `search_tools`'s `limit` (its inputSchema). */
export const LIMIT_MIN = 1
export const LIMIT_MAX = 50

/** Default `maxResults`. */
export const DEFAULT_MAX_RESULTS = 8

/** Longest `query` accepted, characters; a longer one is invalid arguments (bounded work per request). */
export const MAX_QUERY_CHARS = 1_000

/**
 * Most per-view indexes kept; past it the least recently used is dropped (rebuilt by its next search).
 * One index of 2,000 tools holds about 3.5 MiB (the tool objects are the catalogue's), so about 112 MiB at most.
 */
export const MAX_INDEXES = 32

/** Field boosts: the name says most about a tool, then its title. */
const BOOST = { name: 3, title: 2, description: 1, params: 1 }

/** camelCase and digit boundaries: `getHTTPStatus2` → `get HTTP Status 2`. */
const CAMEL = /([a-z0-9])([A-Z])|([A-Z])([A-Z][a-z])/g
/** Separators: whitespace, punctuation (`_`, `-`, `.`, `/`, `__`…) and symbols. */
const SEPARATORS = /[\s\p{P}\p{S}]+/u

/**
 * Splits text into lowercase terms: on whitespace, punctuation (so `_`, `-` and `__`) and camelCase.
 * Used for the indexed fields and the query alike. Never throws.
 */
export function termsOf (text: string): string[] {
  const out: string[] = []
  for (const part of text.replace(CAMEL, '$1$3 $2$4').split(SEPARATORS)) if (part !== '') out.push(part.toLowerCase())
  return out
}

const SEARCH_OPTIONS: SearchOptions = {
  boost: BOOST,
  combineWith: 'OR',
  prefix: term => term.length >= 2,
  fuzzy: term => term.length >= 5 ? 0.2 : false,
  maxFuzzy: 2
}

/** One tool as a search result (docs/discovery.md › What the client sees): its tools/list entry's fields. */
export type SearchEntry = JsonObject

/** The fields of a tools/list entry a search result carries, in this order. */
const ENTRY_FIELDS = ['name', 'title', 'description', 'inputSchema', 'annotations'] as const

/** A tools/list entry as a search result: name, title?, description, inputSchema, annotations? (absent ones left out). */
function entryOf (tool: JsonObject): SearchEntry {
  const entry: JsonObject = {}
  for (const field of ENTRY_FIELDS) if (tool[field] !== undefined) entry[field] = tool[field]
  return entry
}

/** The text of a tool's parameters: each top-level property's name and description. */
function paramsText (tool: JsonObject): string {
  const schema = tool.inputSchema
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return ''
  const properties = (schema as JsonObject).properties
  if (typeof properties !== 'object' || properties === null || Array.isArray(properties)) return ''
  const parts: string[] = []
  for (const [name, property] of Object.entries(properties as JsonObject)) {
    parts.push(name)
    const description = typeof property === 'object' && property !== null ? (property as JsonObject).description : undefined
    if (typeof description === 'string') parts.push(description)
  }
  return parts.join(' ')
}

function byName (a: JsonObject, b: JsonObject): number {
  const x = a.name as string
  const y = b.name as string
  return x < y ? -1 : x > y ? 1 : 0
}

/** One indexed document: the fields minisearch indexes, kept as given (its `remove` needs the same values). */
interface ToolDocument { id: number, name: string, title: string, description: string, params: string }

/** Whether two documents index the same text (ids aside). */
function sameText (a: ToolDocument, b: ToolDocument): boolean {
  return a.name === b.name && a.title === b.title && a.description === b.description && a.params === b.params
}

function documentOf (tool: JsonObject, id: number): ToolDocument {
  return {
    id,
    name: tool.name as string,
    title: typeof tool.title === 'string' ? tool.title : '',
    description: typeof tool.description === 'string' ? tool.description : '',
    params: paramsText(tool)
  }
}

/**
 * Scores are compared at this resolution: an index updated in place carries BM25's average field
 * length computed incrementally, which may differ from a fresh build's in the last bits; rounded, that
 * noise cannot reorder results (equal rounded scores fall back to name order).
 */
const SCORE_RESOLUTION = 1e9

/**
 * The search index of one view's tool list. Searches never change it; {@link indexOf} may move it to
 * the view's next list in place ({@link update}: the tools that changed are removed and added).
 */
export class ToolIndex {
  /** The tools in exposed-name order. */
  tools: readonly JsonObject[] = []
  /** The list this index indexes now. */
  list: readonly JsonObject[]
  /** Exposed name → the tool object indexed under it and its document. */
  private readonly byName = new Map<string, { tool: JsonObject, readonly document: ToolDocument }>()
  /** Document id → tool. */
  private readonly byId = new Map<number, JsonObject>()
  private nextId = 0
  private readonly engine: MiniSearch<ToolDocument>

  /**
   * @param tools the view's tools/list (exposed names, overrides and defaults applied); items without a string name are left out
   */
  constructor (tools: readonly JsonObject[]) {
    this.list = tools
    this.engine = new MiniSearch({
      fields: ['name', 'title', 'description', 'params'],
      tokenize: termsOf,
      processTerm: term => term,
      searchOptions: SEARCH_OPTIONS
    })
    const named = tools.filter(tool => typeof tool.name === 'string').sort(byName)
    const documents: ToolDocument[] = []
    for (const tool of named) {
      if (this.byName.has(tool.name as string)) continue // a name listed twice (not from a merged catalogue): the first
      const document = documentOf(tool, this.nextId++)
      this.byName.set(document.name, { tool, document })
      this.byId.set(document.id, tool)
      documents.push(document)
    }
    this.engine.addAll(documents)
    this.tools = named.filter(tool => this.byName.get(tool.name as string)?.tool === tool)
  }

  /**
   * Moves this index to `tools` in place, when at most half of them changed: a tool gone, or one whose
   * indexed text (name, title, description, parameters) changed, is removed; a new or changed one is
   * added; one whose text is the same keeps its document (its entry reads the new object). The
   * registry makes new objects on every merge, so tools are compared by their indexed text, not identity.
   * Costs one pass over the names plus the changed tools.
   * @returns false (the index untouched) when more than half changed: a fresh build costs no more
   */
  update (tools: readonly JsonObject[]): boolean {
    const next = new Map<string, { tool: JsonObject, document: ToolDocument }>()
    let changed = 0
    for (const tool of tools) {
      if (typeof tool.name !== 'string' || next.has(tool.name)) continue
      const document = documentOf(tool, -1)
      const old = this.byName.get(tool.name)
      if (old === undefined || !sameText(old.document, document)) changed++
      next.set(tool.name, { tool, document })
    }
    for (const name of this.byName.keys()) if (!next.has(name)) changed++
    if (changed * 2 > next.size) return false
    for (const [name, { document }] of this.byName) {
      const incoming = next.get(name)
      if (incoming !== undefined && sameText(incoming.document, document)) continue
      this.engine.remove(document)
      this.byName.delete(name)
      this.byId.delete(document.id)
    }
    for (const [name, { tool, document }] of next) {
      const kept = this.byName.get(name)
      if (kept !== undefined) {
        kept.tool = tool
        this.byId.set(kept.document.id, tool)
        continue
      }
      document.id = this.nextId++
      this.engine.add(document)
      this.byName.set(name, { tool, document })
      this.byId.set(document.id, tool)
    }
    this.tools = [...next.values()].map(entry => entry.tool).sort(byName)
    this.list = tools
    return true
  }

  /**
   * The tools matching `query`, best first, at most `limit`.
   * @param query free text; one with no terms (empty, only punctuation) lists tools in name order
   * @param limit most results (≥ 1)
   * @returns the entries (name, title?, description, inputSchema, annotations?). Never throws.
   */
  search (query: string, limit: number): SearchEntry[] {
    const terms = termsOf(query)
    if (terms.length === 0) return this.tools.slice(0, limit).map(entryOf)
    const hits = this.engine.search(terms.join(' ')).map(hit => ({ score: Math.round(hit.score * SCORE_RESOLUTION), tool: this.byId.get(hit.id) as JsonObject }))
    hits.sort((a, b) => b.score - a.score || byName(a.tool, b.tool))
    const out: SearchEntry[] = []
    for (const hit of hits) {
      if (out.length >= limit) break
      out.push(entryOf(hit.tool))
    }
    return out
  }
}

/** Per-view indexes, keyed by the view's tools array, least recently used first (bounded by {@link MAX_INDEXES}). */
const indexes = new Map<readonly JsonObject[], ToolIndex>()

/**
 * The index each view lineage (a policy view and an endpoint, as objects) built last, so its next list
 * updates it in place rather than building anew. Weak: a lineage gone (a reload) takes its entry along;
 * an index dropped from {@link indexes} is dropped here too.
 */
const lineages = new WeakMap<object, WeakMap<object, ToolIndex>>()
const owners = new WeakMap<ToolIndex, { map: WeakMap<object, ToolIndex>, key: object }>()
/** The lineage key part for "no policy view" or "no endpoint". */
const NONE = {}

/**
 * The index of a view's tools list: cached while that array is the view's list (see the module
 * comment). On a miss, the index this view's lineage used last is updated in place when at most half
 * of the tools changed (an upstream's list_changed: the changed tools only), else one is built
 * (about 40 ms of CPU for 2,000 tools: docs/benchmarks.md › Tool search). Never throws.
 * @param lineage what the list is a view of: the policy view and the endpoint (objects), or undefined (no reuse)
 */
export function indexOf (tools: readonly JsonObject[], lineage?: { policy: object | undefined, server: object | undefined }): ToolIndex {
  let index = indexes.get(tools)
  if (index !== undefined) {
    indexes.delete(tools)
    indexes.set(tools, index)
    return index
  }
  let owner: WeakMap<object, ToolIndex> | undefined
  let key: object | undefined
  if (lineage !== undefined) {
    const first = lineage.policy ?? NONE
    owner = lineages.get(first)
    if (owner === undefined) { owner = new WeakMap(); lineages.set(first, owner) }
    key = lineage.server ?? NONE
    const prior = owner.get(key)
    const before = prior?.list
    if (prior !== undefined && before !== undefined && prior.update(tools)) {
      indexes.delete(before)
      index = prior
    }
  }
  index ??= new ToolIndex(tools)
  if (owner !== undefined && key !== undefined) {
    owner.set(key, index)
    owners.set(index, { map: owner, key })
  }
  if (indexes.size >= MAX_INDEXES) {
    const [oldestList, oldest] = indexes.entries().next().value as [readonly JsonObject[], ToolIndex]
    indexes.delete(oldestList)
    const of = owners.get(oldest)
    if (of !== undefined && of.map.get(of.key) === oldest) of.map.delete(of.key)
  }
  indexes.set(tools, index)
  return index
}

/** Number of indexes cached now (tests, metrics). */
export function cachedIndexes (): number { return indexes.size }

/**
 * One endpoint's search mode, compiled from its `discovery` config: the two meta-tools as listed
 * there, and its result bound. Immutable; a reload compiles a new one.
 */
export class ToolSearch {
  /** Results per search when the client gives no limit, and the most it may get. */
  readonly maxResults: number
  /** `tools/list` in search mode: search_tools, call_tool (name order). */
  readonly tools: readonly JsonObject[]
  /** A fingerprint of {@link tools} (list_changed per view: it changes only when this does). */
  readonly fingerprint: string

  constructor (maxResults: number = DEFAULT_MAX_RESULTS) {
    this.maxResults = maxResults
    this.tools = Object.freeze([callToolDefinition(), searchToolsDefinition(maxResults)].sort(byName))
    this.fingerprint = JSON.stringify(this.tools)
  }

  /** The meta-tool called `name`, or undefined. */
  metaTool (name: string): JsonObject | undefined {
    return name === SEARCH_TOOLS ? this.tools.find(tool => tool.name === SEARCH_TOOLS) : name === CALL_TOOL ? this.tools.find(tool => tool.name === CALL_TOOL) : undefined
  }

  /**
   * Searches a view's tools list.
   * @param tools the caller's tools/list on this endpoint (Visibility.tools)
   * @param limit the client's limit (already checked to be an integer 1–50), or undefined; clamped to maxResults
   * @param lineage the view's policy view and endpoint (Visibility), so the next list of the same view updates its index in place
   */
  search (tools: readonly JsonObject[], query: string, limit: number | undefined, lineage?: { policy: object | undefined, server: object | undefined }): SearchEntry[] {
    return indexOf(tools, lineage).search(query, Math.min(limit ?? this.maxResults, this.maxResults))
  }
}

/** The ToolSearch of a `discovery` config, or undefined in `list` mode (the default). Never throws. */
export function toolSearchOf (config: DiscoveryConfig | undefined): ToolSearch | undefined {
  return config?.mode === 'search' ? new ToolSearch(config.maxResults ?? DEFAULT_MAX_RESULTS) : undefined
}

/** `search_tools`'s definition. */
function searchToolsDefinition (maxResults: number): JsonObject {
  const entry = {
    type: 'object',
    properties: {
      name: { type: 'string' },
      title: { type: 'string' },
      description: { type: 'string' },
      inputSchema: { type: 'object' },
      annotations: { type: 'object' }
    },
    required: ['name', 'inputSchema']
  }
  return {
    name: SEARCH_TOOLS,
    title: 'Search tools',
    description: 'Finds the tools of this server that fit a task. Returns the best matches first, each with its name, description and ' +
      'input schema; call one with call_tool. Search with a few keywords (what the tool does, the thing it acts on); an empty query ' +
      'lists tools by name.',
    inputSchema: {
      type: 'object',
      properties: {
        query: { type: 'string', maxLength: MAX_QUERY_CHARS, description: 'Keywords describing the tool you need; empty: list tools by name' },
        limit: { type: 'integer', minimum: LIMIT_MIN, maximum: LIMIT_MAX, description: `How many tools to return (default ${maxResults}; this server returns at most ${maxResults})` }
      },
      required: ['query']
    },
    outputSchema: { type: 'object', properties: { tools: { type: 'array', items: entry } }, required: ['tools'] },
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }
  }
}

/** `call_tool`'s definition. */
function callToolDefinition (): JsonObject {
  return {
    name: CALL_TOOL,
    title: 'Call a tool',
    description: 'Calls a tool of this server found with search_tools, by its name and with arguments as its input schema describes them, ' +
      'and answers exactly what that tool answers.',
    inputSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', description: 'The tool\'s name, as search_tools returned it' },
        arguments: { type: 'object', description: 'The tool\'s arguments', additionalProperties: true }
      },
      required: ['name']
    }
  }
}
