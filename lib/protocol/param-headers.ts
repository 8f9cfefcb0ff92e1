/**
 * The 2026-07-28 `x-mcp-header` schema extension and its `Mcp-Param-*` headers, server side:
 * scanning a tool's inputSchema for annotations and checking a `tools/call`'s headers against its
 * arguments. (mcpx's upstream calls get their mirrored headers from lib/upstreams/link.ts, which
 * builds the Mcp-Param-* ones with lib/upstreams/mirror-headers.ts; the test clients' builders live
 * in test/helpers/param-headers.ts.) Pure; shared codec in lib/header-values.
 *
 * Sources: seed › Streamable HTTP, 2026-07-28 › Mcp-Param-* headers (mcpx re-lists upstream
 * schemas verbatim, so an upstream's annotation counts); DIGEST §6d "x-mcp-header annotation rules",
 * "Type coercion (client side)", tables D2, D5, D6; DIGEST §9 A4, A5, A6, A17, A18.
 */

import { isObject } from './jsonrpc.js'
import { decodeHeaderValue, headerMismatch, readHeader, type HeaderBag, type HeaderRejection } from './header-values.js'

/** One valid `x-mcp-header` annotation of a tool's inputSchema. */
export interface ParamHeader {
  /** The annotation value as written, e.g. `'Region'`; the header is `Mcp-Param-Region`. */
  header: string
  /** The `properties` path from the root to the annotated property, e.g. `['target', 'zone']`. */
  path: string[]
  /** The annotated property's JSON Schema type; the only three allowed. */
  type: 'string' | 'integer' | 'boolean'
}

/** The outcome of {@link scanParamHeaders}. `params` is in schema order and frozen (it is cached and shared). */
export type ParamHeaderScan = { ok: true, params: ParamHeader[] } | { ok: false, reason: string }

/** A {@link ParamHeader} with the strings the hot path needs, built once per schema. */
interface CompiledParam {
  /** `Mcp-Param-<annotation>`, spec casing, for messages and outgoing headers. */
  name: string
  /** `mcp-param-<annotation>` lowercased, the key Node files the incoming header under. */
  lowercaseName: string
  path: readonly string[]
  type: ParamHeader['type']
  /** `arguments.<path joined by .>`, for messages. */
  field: string
}

interface Scan {
  result: ParamHeaderScan
  compiled: readonly CompiledParam[]
}

const ANNOTATION = 'x-mcp-header'
const PARAM_PREFIX = 'Mcp-Param-'

/** RFC 9110 §5.6.2 token: 1*tchar. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/

/**
 * A decimal number as a header may carry an integer: optional sign, digits, optional fraction,
 * optional exponent (`42`, `-7`, `42.0`, `4.2e1`). Refuses what `Number()` would quietly accept:
 * `''`, spaces, `0x2A`, `Infinity`, `42abc`.
 */
const DECIMAL = /^[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$/

/** Keywords whose values are data, not subschemas: an `x-mcp-header` key inside them is not an annotation. */
const DATA_KEYWORDS: ReadonlySet<string> = new Set(['const', 'enum', 'default', 'examples'])

/** Keywords whose values map names to subschemas; the names are not keywords. */
const MAP_KEYWORDS: ReadonlySet<string> = new Set(['$defs', 'definitions', 'patternProperties', 'dependentSchemas', 'dependencies'])

/** Deeper than this, a schema is refused rather than risking the stack (nothing real comes close). */
const MAX_SCHEMA_DEPTH = 128

const EMPTY_SCAN: Scan = Object.freeze({ result: Object.freeze({ ok: true as const, params: Object.freeze([]) as unknown as ParamHeader[] }), compiled: Object.freeze([]) })

/** Results per schema object. Weak: a schema dropped by a tools/list refresh takes its entry with it. */
const scans = new WeakMap<object, Scan>()

/**
 * Scans a tool's inputSchema for `x-mcp-header` annotations (DIGEST §6d "x-mcp-header annotation
 * rules", table D5).
 *
 * Valid annotations sit on a property schema reachable from the root through `properties` keys
 * only; nesting is fine (`properties.target.properties.zone`: the final spec, not SEP-2243's
 * "reject inside object" row, settles A6). An annotation anywhere else — on the root, or under
 * `items`, `prefixItems`, `anyOf`/`oneOf`/`allOf`/`not`, `if`/`then`/`else`, `$ref` targets in
 * `$defs`/`definitions`, `additionalProperties`, `patternProperties` or any other keyword —
 * invalidates the whole tool. Keys inside data keywords (`const`, `enum`, `default`, `examples`)
 * are data, not annotations. Each value must be a non-empty RFC 9110 token, unique
 * case-insensitively; the annotated property's `type` must be exactly `"string"`, `"integer"` or
 * `"boolean"`. `number` is forbidden even though SEP-2243's table shows `3.14159` (A5); `array`,
 * `object`, `null`, any type array (even a one-element one, and `["string","null"]`), and no `type`
 * at all (an `enum`/`const`-only schema, A5) are refused. A cyclic or over-deep (> 128 levels)
 * object graph is refused too.
 *
 * Results are cached per schema object (WeakMap): a schema must not be mutated after its first scan.
 * @param inputSchema the tool's inputSchema as listed (any JSON value; a non-object has no annotations)
 * @returns `{ ok: true, params }` (possibly empty, frozen, in schema order) or `{ ok: false, reason }`
 *          where `reason` names the JSON pointer and the rule broken, fit for the warning a client
 *          SHOULD log when it drops the tool. Never throws.
 */
export function scanParamHeaders (inputSchema: unknown): ParamHeaderScan {
  return scanOf(inputSchema).result
}

function scanOf (inputSchema: unknown): Scan {
  if (typeof inputSchema !== 'object' || inputSchema === null) return EMPTY_SCAN
  let scan = scans.get(inputSchema)
  if (scan === undefined) {
    scan = compile(inputSchema)
    scans.set(inputSchema, scan)
  }
  return scan
}

interface WalkState {
  params: ParamHeader[]
  compiled: CompiledParam[]
  /** Lowercased annotation → the pointer of its first use. */
  seen: Map<string, string>
  /** Objects on the current descent path, to refuse cycles without refusing shared subschemas. */
  ancestors: Set<object>
}

function compile (schema: object): Scan {
  const state: WalkState = { params: [], compiled: [], seen: new Map(), ancestors: new Set() }
  let reason: string | undefined
  try {
    reason = walk(schema, true, [], '#', 0, state)
  } catch {
    reason = 'inputSchema could not be read' // a throwing getter or proxy; JSON never gets here
  }
  if (reason !== undefined) return { result: Object.freeze({ ok: false as const, reason }), compiled: EMPTY_SCAN.compiled }
  return { result: Object.freeze({ ok: true as const, params: Object.freeze(state.params) as ParamHeader[] }), compiled: Object.freeze(state.compiled) }
}

/**
 * Visits one schema position. `reachable`: the position is the root or was reached through
 * `properties` keys only. Returns the reason the tool is invalid, or undefined.
 */
function walk (node: unknown, reachable: boolean, path: string[], pointer: string, depth: number, state: WalkState): string | undefined {
  if (typeof node !== 'object' || node === null) return undefined
  if (depth > MAX_SCHEMA_DEPTH) return `inputSchema is nested more than ${MAX_SCHEMA_DEPTH} levels deep at ${pointer}`
  if (state.ancestors.has(node)) return `inputSchema contains a cycle at ${pointer}`
  state.ancestors.add(node)
  try {
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const reason = walk(node[i], false, path, pointer + '/' + i, depth + 1, state)
        if (reason !== undefined) return reason
      }
      return undefined
    }
    const schema = node as Record<string, unknown>
    if (Object.hasOwn(schema, ANNOTATION)) {
      const reason = annotate(schema, reachable && path.length > 0, path, pointer, state)
      if (reason !== undefined) return reason
    }
    for (const key of Object.keys(schema)) {
      if (key === ANNOTATION || DATA_KEYWORDS.has(key)) continue
      const value = schema[key]
      const at = pointer + '/' + escapePointer(key)
      const isProperties = key === 'properties'
      if ((isProperties || MAP_KEYWORDS.has(key)) && isObject(value)) {
        for (const name of Object.keys(value)) {
          const reason = isProperties
            ? walk(value[name], reachable, [...path, name], at + '/' + escapePointer(name), depth + 1, state)
            : walk(value[name], false, path, at + '/' + escapePointer(name), depth + 1, state)
          if (reason !== undefined) return reason
        }
      } else {
        const reason = walk(value, false, path, at, depth + 1, state)
        if (reason !== undefined) return reason
      }
    }
    return undefined
  } finally {
    state.ancestors.delete(node)
  }
}

/** Validates the annotation on `schema` and records it. Returns the reason the tool is invalid, or undefined. */
function annotate (schema: Record<string, unknown>, reachable: boolean, path: string[], pointer: string, state: WalkState): string | undefined {
  if (!reachable) return `x-mcp-header at ${pointer} is not on a property reachable from the root through properties only`
  const value = schema[ANNOTATION]
  if (typeof value !== 'string') return `x-mcp-header at ${pointer} must be a string`
  if (!TOKEN.test(value)) return `x-mcp-header ${JSON.stringify(value)} at ${pointer} is not a non-empty RFC 9110 token`
  const type = schema.type
  if (type !== 'string' && type !== 'integer' && type !== 'boolean') {
    const got = typeof type === 'string' ? JSON.stringify(type) : Array.isArray(type) ? 'a type array' : type === undefined ? 'no type' : 'a non-string type'
    return `x-mcp-header ${JSON.stringify(value)} at ${pointer} annotates a property whose type must be "string", "integer" or "boolean" (got ${got})`
  }
  const lowercase = value.toLowerCase()
  const first = state.seen.get(lowercase)
  if (first !== undefined) return `x-mcp-header ${JSON.stringify(value)} at ${pointer} repeats the one at ${first} (names are case-insensitive)`
  state.seen.set(lowercase, pointer)
  const frozenPath = Object.freeze(path.slice()) as string[]
  state.params.push(Object.freeze({ header: value, path: frozenPath, type }))
  state.compiled.push({
    name: PARAM_PREFIX + value,
    lowercaseName: PARAM_PREFIX.toLowerCase() + lowercase,
    path: frozenPath,
    type,
    field: 'arguments.' + path.join('.'),
  })
  return undefined
}

/** RFC 6901: `~` → `~0`, `/` → `~1`. */
function escapePointer (key: string): string {
  return key.includes('~') || key.includes('/') ? key.replaceAll('~', '~0').replaceAll('/', '~1') : key
}

/** The argument at a `properties` path: undefined when absent or when something on the way is not an object. Never throws. */
export function valueAt (args: unknown, path: readonly string[]): unknown {
  let value = args
  for (const key of path) {
    if (!isObject(value) || !Object.hasOwn(value, key)) return undefined
    value = value[key]
  }
  return value
}

/** Whether a decoded header value agrees with the body value, by the annotated type (DIGEST §6d, A18). */
function agrees (type: ParamHeader['type'], header: string, body: unknown): boolean {
  switch (type) {
    case 'string':
      return typeof body === 'string' && header === body
    case 'integer':
      // "Integers SHOULD be compared numerically": any decimal spelling of the same number
      // ("42.0", "4.2e1") agrees with 42; a non-numeric header ("42abc", "0x2A", "") never does.
      // Numbers beyond ±(2^53−1) are outside what the spec allows and compare as doubles.
      return typeof body === 'number' && DECIMAL.test(header) && Number(header) === body
    case 'boolean':
      // Exactly `true`/`false`: A18 leaves `True` open; mcpx is strict, as clients must send lowercase.
      return typeof body === 'boolean' && header === (body ? 'true' : 'false')
  }
}

/**
 * Checks a `tools/call`'s Mcp-Param-* headers against its arguments, server side (seed ›
 * Streamable HTTP, 2026-07-28 › Mcp-Param-* headers; DIGEST §6d, tables D4, D6).
 *
 * For every annotation of the tool, in schema order, the first of these faults is refused:
 * the header sent twice or carrying bytes outside visible ASCII/SP/HTAB; its `=?base64?…?=` value
 * failing to decode; the header missing while the body has a non-null value; the header present
 * while the body has none (absent or `null` — the seed refuses this, settling A4); the decoded value
 * not agreeing with the body value. Agreement is by the annotated type: strings exactly
 * (case-sensitive); integers numerically (`"42.0"` agrees with 42, `"42abc"` does not); booleans
 * only as exactly `true`/`false` (A18: strict). A body value of the wrong JSON type never agrees.
 * Every value is decoded before it is interpreted, so a sentinel-encoded `true` is `true`. An empty
 * header agrees with `""`; an absent one does not (D6, though A17 notes some stacks drop empty headers).
 * Mcp-Param-* headers with no annotation are ignored (intermediaries forward them; nothing to check).
 * A schema that {@link scanParamHeaders} refuses yields undefined: such a tool is never listed, so
 * the call fails later as an unknown tool.
 *
 * @param headers the incoming headers (Node's bag: lowercase names, arrays for repeats)
 * @param inputSchema the called tool's inputSchema, the same object it was listed with (cache key)
 * @param args the call's `params.arguments` (anything; a non-object has no values)
 * @returns undefined when every annotated header agrees, else `{ code: -32020, message }` naming
 *          the header and the argument path (never the value: it may be user data). Never throws.
 */
export function checkParamHeaders (headers: HeaderBag, inputSchema: unknown, args: unknown): HeaderRejection | undefined {
  const scan = scanOf(inputSchema)
  if (!scan.result.ok) return undefined
  for (const param of scan.compiled) {
    const body = valueAt(args, param.path)
    const hasValue = body !== undefined && body !== null
    const read = readHeader(headers, param.lowercaseName)
    if (read.kind === 'absent') {
      if (hasValue) return headerMismatch(param.name, 'missing', param.field)
      continue
    }
    if (read.kind !== 'value') return headerMismatch(param.name, read.kind)
    const decoded = decodeHeaderValue(read.value)
    if (!decoded.ok) return headerMismatch(param.name, 'undecodable', decoded.reason)
    // Seed wins over the spec here: the spec only refuses a header that differs from "the
    // corresponding body value" (A4); the seed also refuses one "present while the body has none".
    if (!hasValue) return headerMismatch(param.name, 'unexpected', param.field)
    if (!agrees(param.type, decoded.value, body)) return headerMismatch(param.name, 'mismatch', param.field)
  }
  return undefined
}
