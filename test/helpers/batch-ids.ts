/**
 * A seeded generator of JSON-RPC batches whose request ids take every JSON form (safe and unsafe
 * integers, fractions, exponents, `-0`, `1e400`, strings with escapes and decoys), mixed with
 * members that are not objects (`1`, `"x"`, `null`, `true`, `[]`), invalid members and
 * notifications, written with varied whitespace, key order, escaped `id` keys, duplicate `id` keys
 * and nested decoy `"id"` keys. Each batch comes with the id every member must be answered with,
 * written as JSON text, so a test can compare the parser's ids ({@link expectedIdValue}) or the
 * raw bytes of a reply ({@link replyIdTexts}) without trusting the code under test.
 *
 * JSON-RPC 2.0 §5 and DIGEST §2b: a response's id is its request's; a batch reply answers each
 * request once.
 */

/** One member of a generated batch, and what it must be answered with. */
export type BatchMember =
  /** A request (ping): answered once, with the id whose JSON text is `idText`. */
  | { kind: 'request', text: string, idText: string }
  /** A notification: no reply. */
  | { kind: 'notification', text: string }
  /**
   * Not a valid request (not an object, an id of the wrong type, no jsonrpc): one -32600 reply,
   * carrying the member's id when it has a readable one (`idText`), id-less otherwise.
   */
  | { kind: 'invalid', text: string, idText?: string }

export interface GeneratedBatch { text: string, members: BatchMember[] }

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function prng (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

const NUMBER_IDS = [
  '0', '7', '-1', '-0', '1.5', '-0.25', '1.0', '1e2', '1E2', '2.5e-3', '1e400', '-1e400',
  '9007199254740991', '9007199254740992', '9007199254740993', '-9007199254740993',
  '123456789012345678901234567890', '0.1000000000000000055511151231257827'
]
const STRING_IDS = ['""', '"x"', '"7"', '"1.5"', '"a\\"b"', '"back\\\\slash"', '"\\u00e9t\\u00e9"', '"\\"id\\":1"', '"[1,{\\"id\\":2}]"', '"😀"', '"x,y"']
const NON_OBJECTS = ['1', '"x"', 'null', 'true', 'false', '[]', '[1]', '2.5', '9007199254740993', '"{\\"id\\":3}"']
const BAD_ID_VALUES = ['null', 'true', '{}', '[]', '{"id":1}']
const ID_KEYS = ['"id"', '"\\u0069d"', '"i\\u0064"', '"\\u0069\\u0064"']

/** The JSON text a reply must carry for an id written as `idText`: numbers JSON.parse keeps exactly are re-written, the others go back verbatim; strings as JSON.stringify writes them. */
export function canonicalIdText (idText: string): string {
  const value = JSON.parse(idText) as string | number
  if (typeof value === 'string') return JSON.stringify(value)
  return Number.isSafeInteger(value) ? JSON.stringify(value) : idText
}

/** The id value lib/protocol/jsonrpc's parseBody must give for `idText`: a number, a string, or `{ raw }` for a number kept as text. */
export function expectedIdValue (idText: string): string | number | { raw: string } {
  const value = JSON.parse(idText) as string | number
  if (typeof value === 'string' || Number.isSafeInteger(value)) return value
  return { raw: idText }
}

function pick<T> (rand: () => number, items: readonly T[]): T { return items[Math.floor(rand() * items.length)] }
function space (rand: () => number): string { return rand() < 0.7 ? '' : pick(rand, [' ', '\n', '\t', ' \r\n '] as const) }
function shuffle<T> (rand: () => number, items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]]
  }
  return items
}

/** An object text from `pairs` (key text, value text), in a random order and spacing. */
function object (rand: () => number, pairs: Array<[string, string]>): string {
  return '{' + space(rand) + pairs.map(([k, v]) => `${k}${space(rand)}:${space(rand)}${v}`).join(',' + space(rand)) + space(rand) + '}'
}

function request (rand: () => number): BatchMember {
  const idText = rand() < 0.6 ? pick(rand, NUMBER_IDS) : pick(rand, STRING_IDS)
  const pairs: Array<[string, string]> = shuffle(rand, [['"jsonrpc"', '"2.0"'], ['"method"', '"ping"']])
  if (rand() < 0.3) pairs.push(['"params"', object(rand, [['"_meta"', object(rand, [['"id"', pick(rand, NUMBER_IDS)]])]])]) // a nested decoy
  const at = Math.floor(rand() * (pairs.length + 1))
  if (rand() < 0.15) {
    // Duplicate keys: JSON.parse keeps the last; the first is a decoy of another form.
    pairs.splice(at, 0, ['"id"', pick(rand, [...NUMBER_IDS, ...STRING_IDS])])
    pairs.push([pick(rand, ID_KEYS), idText])
  } else {
    pairs.splice(at, 0, [pick(rand, ID_KEYS), idText])
  }
  return { kind: 'request', text: object(rand, pairs), idText }
}

function member (rand: () => number): BatchMember {
  const r = rand()
  if (r < 0.55) return request(rand)
  if (r < 0.65) return { kind: 'notification', text: object(rand, shuffle(rand, [['"jsonrpc"', '"2.0"'], ['"method"', '"notifications/whatever"']])) }
  if (r < 0.85) return { kind: 'invalid', text: pick(rand, NON_OBJECTS) }
  if (r < 0.95) return { kind: 'invalid', text: object(rand, shuffle(rand, [['"jsonrpc"', '"2.0"'], ['"id"', pick(rand, BAD_ID_VALUES)], ['"method"', '"ping"']])) }
  const idText = pick(rand, NUMBER_IDS)
  return { kind: 'invalid', text: object(rand, [[pick(rand, ID_KEYS), idText], ['"method"', '"ping"']]), idText } // no jsonrpc
}

/**
 * A batch of 1–`maxMembers` members with at least one request, each request id distinct (as a
 * reply id) within the batch, so a reply that carries another member's id is caught.
 */
export function generateBatch (rand: () => number, maxMembers = 8): GeneratedBatch {
  const count = 1 + Math.floor(rand() * maxMembers)
  const members: BatchMember[] = []
  const seen = new Set<string>()
  while (members.length < count || !members.some(m => m.kind === 'request')) {
    const m = member(rand)
    if (m.kind !== 'notification' && m.idText !== undefined) {
      const key = canonicalIdText(m.idText)
      if (seen.has(key)) continue
      seen.add(key)
    }
    members.push(m)
  }
  return { text: '[' + space(rand) + members.map(m => m.text).join(space(rand) + ',' + space(rand)) + space(rand) + ']', members }
}

/**
 * The ids of the replies in `body`, a batch reply as mcpx writes it (lib/protocol/jsonrpc
 * encodeMessage: `{"jsonrpc":"2.0","id":…` first), read from the bytes: `ids` holds each id's JSON
 * text (`null` included), `idless` counts replies with no id member. Independent of the parser
 * under test.
 */
export function replyIdTexts (body: string): { ids: string[], idless: number } {
  const ids = [...body.matchAll(/\{"jsonrpc":"2\.0","id":(null|-?[0-9][0-9.eE+-]*|"(?:[^"\\]|\\.)*")/g)].map(m => m[1])
  const idless = [...body.matchAll(/\{"jsonrpc":"2\.0","error":/g)].length
  return { ids, idless }
}

/**
 * What a batch reply must hold for `batch`: the sorted JSON texts of the ids of the replies that
 * carry one (each request, each invalid member with a readable id), and the number of replies
 * without a usable id (`null` or no id member: the invalid members with none). Notifications
 * have none.
 */
export function expectedReplies (batch: GeneratedBatch): { ids: string[], idless: number } {
  const ids = batch.members.flatMap(m => m.kind !== 'notification' && m.idText !== undefined ? [canonicalIdText(m.idText)] : [])
  return { ids: ids.sort(), idless: batch.members.filter(m => m.kind === 'invalid' && m.idText === undefined).length }
}
