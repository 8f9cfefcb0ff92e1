/**
 * The one reader of the `Accept` header on /mcp (RFC 9110 §12.5.1), pure.
 *
 * A media range admits a media type when it names it exactly (`application/json`, compared
 * case-insensitively, parameters other than `q` ignored), or by wildcard (`application/*`,
 * `text/*`, `*\/*`). Of the ranges that match a type, the most specific decides, and a weight of
 * `q=0` means "not acceptable": `application/json, text/event-stream;q=0` admits JSON only, and
 * `application/jsonx` is not `application/json`.
 *
 * What mcpx makes of it (seed › Streamable HTTP: responses are JSON or SSE as Accept allows):
 * - 406 when neither `application/json` nor `text/event-stream` is admitted (wildcards count);
 *   no Accept at all (or an empty one) is tolerated and admits JSON.
 * - A reply turns into an event stream only when the client named `text/event-stream` itself
 *   with a non-zero weight; a wildcard admits SSE for the 406 check but never asks for a stream,
 *   so `Accept: *\/*` keeps getting plain JSON.
 */

/** What one Accept header admits. */
export interface AcceptVerdict {
  /** `application/json` is acceptable (also when there is no Accept). */
  readonly json: boolean
  /** The client named `text/event-stream` with a non-zero weight: it may be answered with a stream. */
  readonly sse: boolean
  /** Neither JSON nor SSE is acceptable, counting wildcards: 406. */
  readonly refused: boolean
}

interface MediaRange { type: string, subtype: string, q: number }

/** A weight: `0`…`1` with up to three decimals (RFC 9110 §12.4.2). */
const WEIGHT = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/

const NO_ACCEPT: AcceptVerdict = Object.freeze({ json: true, sse: false, refused: false })

/**
 * Reads an Accept header (repeated headers count as one list).
 * @returns the verdict. Never throws; a range that is not `type/subtype` is ignored, and a
 *          malformed weight counts as 1 (lenient, as before q-values were read).
 */
export function readAccept (accept: string | readonly string[] | undefined): AcceptVerdict {
  const text = Array.isArray(accept) ? accept.join(',') : (accept as string | undefined) ?? ''
  const known = VERDICTS.get(text)
  if (known !== undefined) return known
  const verdict = judge(text)
  // A client sends the same Accept on every request: read each distinct header once (a hot path).
  if (text.length <= MAX_REMEMBERED_ACCEPT_CHARS) {
    if (VERDICTS.size >= MAX_REMEMBERED_ACCEPTS) VERDICTS.clear()
    VERDICTS.set(text, verdict)
  }
  return verdict
}

/** Verdicts of recent Accept headers, by header text; at most {@link MAX_REMEMBERED_ACCEPTS}, cleared when full. */
const VERDICTS = new Map<string, AcceptVerdict>()
/** Most distinct Accept headers remembered at once. */
const MAX_REMEMBERED_ACCEPTS = 64
/** Longest Accept header remembered, characters (a longer one is read every time). */
const MAX_REMEMBERED_ACCEPT_CHARS = 256

function judge (text: string): AcceptVerdict {
  if (text.trim() === '') return NO_ACCEPT
  const ranges = parseRanges(text)
  const json = weightOf(ranges, 'application', 'json') > 0
  const sseWeight = weightOf(ranges, 'text', 'event-stream')
  const sse = sseWeight > 0 && ranges.some(r => r.type === 'text' && r.subtype === 'event-stream' && r.q > 0)
  return Object.freeze({ json, sse, refused: !json && sseWeight <= 0 })
}

function parseRanges (text: string): MediaRange[] {
  const ranges: MediaRange[] = []
  for (const part of text.split(',')) {
    const [mediaType, ...params] = part.split(';')
    const slash = mediaType.indexOf('/')
    if (slash <= 0) continue
    const type = mediaType.slice(0, slash).trim().toLowerCase()
    const subtype = mediaType.slice(slash + 1).trim().toLowerCase()
    if (type === '' || subtype === '' || (type === '*' && subtype !== '*')) continue
    let q = 1
    for (const param of params) {
      const eq = param.indexOf('=')
      if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== 'q') continue
      const value = param.slice(eq + 1).trim()
      if (WEIGHT.test(value)) q = Number(value)
    }
    ranges.push({ type, subtype, q })
  }
  return ranges
}

/** The weight the most specific matching range gives `type/subtype`; 0 when none matches. */
function weightOf (ranges: readonly MediaRange[], type: string, subtype: string): number {
  let best = -1
  let q = 0
  for (const range of ranges) {
    const specificity = range.type === type && range.subtype === subtype ? 2 : range.type === type && range.subtype === '*' ? 1 : range.type === '*' ? 0 : -1
    if (specificity < 0) continue
    // Equal specificity (the same range twice): the higher weight wins, as a lenient reading.
    if (specificity > best || (specificity === best && range.q > q)) { best = specificity; q = range.q }
  }
  return q
}
