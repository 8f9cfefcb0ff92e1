/**
 * Whether a URI is an expansion of a resource template (`resources/templates/list` items carry
 * "a URI template (according to RFC 6570)": shared/spec/2025-06-18/schema.json ResourceTemplate).
 * One matcher for two readers: the registry routes a URI through the first template it matches
 * (lib/upstreams/registry.ts), and the policy judges a URI under the templates it matches
 * (lib/policy/visibility.ts), so a URI the gateway would route through a template is always judged
 * as that template too.
 *
 * Each expression matches every string RFC 6570 §3.2 can expand it to (levels 1 to 4: any values,
 * lists, explode, prefixes, undefined variables), and is lenient on characters a client leaves
 * unencoded, the way SDK servers match (`[^/]+` for a simple variable):
 *
 * | expression | matches (RFC 6570 section) |
 * | --- | --- |
 * | `{var}` | any run without `/`, the empty one too (§3.2.2) |
 * | `{+var}` | any run (§3.2.3: reserved characters pass through, `/` included) |
 * | `{#var}` | nothing, or `#` then any run (§3.2.4) |
 * | `{.var}` | nothing, or `.` then a run without `/` (§3.2.5) |
 * | `{/var}` | nothing, or `/` then any run (§3.2.6: one or more `/`-led segments) |
 * | `{;var}` | nothing, or `;` then a run without `/` (§3.2.7) |
 * | `{?var}` | nothing, or `?` then a run without `#` (§3.2.8) |
 * | `{&var}` | nothing, or `&` then a run without `#` (§3.2.9) |
 * | `{=var}` `{,var}` `{!var}` `{@var}` `{\|var}` | any run (operators reserved for future extensions, §2.2) |
 *
 * Everything outside braces is literal; an unclosed `{` is literal too. No RegExp: the template
 * comes from an upstream and the URI from a client, and a RegExp of several unbounded runs
 * backtracks polynomially (ReDoS). The match walks the set of reachable URI offsets part by part:
 * O(URI length × parts), whatever either side sends.
 */

/** A compiled template. Immutable; `test` never throws. */
export interface UriTemplateMatcher {
  /** The template text it was compiled from. */
  readonly uriTemplate: string
  /** Whether `uri` is an expansion of the template (see the module comment). */
  test: (uri: string) => boolean
}

/** One part of a template: literal text, or an expression's run. */
type Part =
  | { kind: 'literal', text: string }
  | ({ kind: 'run' } & Run)

/** A run's shape: an optional `lead` character, then characters other than `stop` (undefined: any). */
interface Run { lead: string | undefined, stop: string | undefined }

const ANY: Run = Object.freeze({ lead: undefined, stop: undefined })

/** Operator → the run its expansions make (module comment table). Absent: the simple expression. */
const RUNS: ReadonlyMap<string, Run> = new Map([
  ['+', ANY],
  ['#', { lead: '#', stop: undefined }],
  ['.', { lead: '.', stop: '/' }],
  ['/', { lead: '/', stop: undefined }],
  [';', { lead: ';', stop: '/' }],
  ['?', { lead: '?', stop: '#' }],
  ['&', { lead: '&', stop: '#' }],
  ['=', ANY], [',', ANY], ['!', ANY], ['@', ANY], ['|', ANY]
])
const SIMPLE: Run = Object.freeze({ lead: undefined, stop: '/' })

function partsOf (uriTemplate: string): Part[] {
  const parts: Part[] = []
  let literal = ''
  let at = 0
  for (const match of uriTemplate.matchAll(/\{([^{}]*)\}/g)) {
    literal += uriTemplate.slice(at, match.index)
    at = match.index + match[0].length
    if (literal !== '') parts.push({ kind: 'literal', text: literal })
    literal = ''
    const run = RUNS.get(match[1].charAt(0)) ?? SIMPLE
    parts.push({ kind: 'run', lead: run.lead, stop: run.stop })
  }
  literal += uriTemplate.slice(at)
  if (literal !== '') parts.push({ kind: 'literal', text: literal })
  return parts
}

/**
 * The offsets reachable after `part`, from the offsets `from` (one flag per offset 0…uri.length).
 * One pass over the URI. Never throws.
 */
function step (part: Part, uri: string, from: Uint8Array): Uint8Array {
  const to = new Uint8Array(from.length)
  if (part.kind === 'literal') {
    for (let i = 0; i + part.text.length <= uri.length; i++) if (from[i] === 1 && uri.startsWith(part.text, i)) to[i + part.text.length] = 1
    return to
  }
  const { lead, stop } = part
  // `open`: some run (started at a reachable offset, after its lead if it has one) may end here.
  let open = false
  for (let j = 0; j <= uri.length; j++) {
    if (j > 0) {
      if (open && uri[j - 1] === stop) open = false // a run never holds its stop character
      if (lead !== undefined && from[j - 1] === 1 && uri[j - 1] === lead) open = true // the lead, then a run
    }
    if (lead === undefined && from[j] === 1) open = true // a run may be empty
    if (open || from[j] === 1) to[j] = 1 // with a lead, the expression may expand to nothing
  }
  return to
}

/**
 * Compiles a URI template for matching. Never throws: any text is a template (an unclosed `{` is
 * literal).
 * @param uriTemplate the template text, e.g. `fixture://items/{id}` or `file:///{+path}{?rev}`
 */
export function compileUriTemplate (uriTemplate: string): UriTemplateMatcher {
  const parts = partsOf(uriTemplate)
  // The literal text before the first expression: a URI without it cannot match (a cheap first test).
  const head = parts[0]?.kind === 'literal' ? parts[0].text : ''
  return {
    uriTemplate,
    test (uri: string): boolean {
      if (!uri.startsWith(head)) return false
      let reach: Uint8Array = new Uint8Array(uri.length + 1)
      reach[0] = 1
      for (const part of parts) {
        reach = step(part, uri, reach)
        if (!reach.includes(1)) return false
      }
      return reach[uri.length] === 1
    }
  }
}
