/**
 * Paged catalogues (docs/wire.md › Paged catalogues): `tools/list`, `prompts/list`, `resources/list`
 * and `resources/templates/list` cut into pages of `transport.pageSize` items, with opaque
 * cursors (every revision: 2024-11-05…2026-07-28 `PaginatedRequestParams.cursor`,
 * `PaginatedResult.nextCursor`; a bad cursor is -32602, DIGEST §6e).
 *
 * A cursor is base64url of `{"v":1,"l":<list>,"o":<offset>,"k":<key>}`: the list it belongs to,
 * how many items the pages before it held, and the key (tool/prompt `name`, resource `uri`,
 * template `uriTemplate`) of the last item served. It holds no replica-local state, so any replica
 * (and a restarted mcpx) resumes it. The next page starts right after the item named `k`, wherever
 * that item is now (`o` only spares the search when nothing moved): a catalogue change elsewhere in
 * the list does not invalidate a cursor. When the item named `k` is gone from the list (its
 * upstream dropped it, went down, or the caller may no longer see it), the cursor is outdated:
 * -32602 asking the client to list again from the start. mcpx does not restart silently: a client
 * concatenating pages would get duplicates with no sign that it should start over.
 *
 * The keys are the ones the caller sees (after policy and curated-endpoint renames), so a forged
 * cursor naming a hidden item is answered exactly as an outdated one.
 */
import { INVALID_PARAMS, UpstreamRpcError, type JsonObject } from '../protocol/jsonrpc.js'

/** The paged lists, by their result key (`skills`: the Skills extension's `skills/list`, SEP-2640, keyed by `SKILL.md` URI). */
export type PagedList = 'tools' | 'prompts' | 'resources' | 'resourceTemplates' | 'skills'

/** The field that names an item of each list (unique within a merged list). */
const KEY_FIELD: Readonly<Record<PagedList, 'name' | 'uri' | 'uriTemplate'>> = {
  tools: 'name', prompts: 'name', resources: 'uri', resourceTemplates: 'uriTemplate', skills: 'uri'
}

/** A cursor longer than this (characters) is malformed: mcpx never issues one (keys are bounded by what upstreams send). */
const MAX_CURSOR_CHARS = 16_384

/** base64url alphabet, no padding. */
const BASE64URL = /^[A-Za-z0-9_-]*$/

/** What a cursor mcpx issued holds. */
interface CursorState { list: PagedList, offset: number, key: string }

/** Encodes a cursor (see the module comment). Never throws. */
export function encodeCursor (list: PagedList, offset: number, key: string): string {
  return Buffer.from(JSON.stringify({ v: 1, l: list, o: offset, k: key }), 'utf8').toString('base64url')
}

/**
 * Decodes a cursor mcpx issued for `list`.
 * @returns the state, or a reason (for the -32602 message) when the cursor is malformed or belongs
 *          to another list. Never throws.
 */
export function decodeCursor (list: PagedList, cursor: unknown): CursorState | string {
  if (typeof cursor !== 'string') return 'cursor must be a string'
  if (cursor === '' || cursor.length > MAX_CURSOR_CHARS || !BASE64URL.test(cursor)) return 'malformed cursor (not one mcpx issued)'
  let state: unknown
  try { state = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) } catch { return 'malformed cursor (not one mcpx issued)' }
  if (typeof state !== 'object' || state === null || Array.isArray(state)) return 'malformed cursor (not one mcpx issued)'
  const { v, l, o, k } = state as Record<string, unknown>
  if (v !== 1 || typeof l !== 'string' || !Number.isSafeInteger(o) || (o as number) < 1 || typeof k !== 'string') return 'malformed cursor (not one mcpx issued)'
  if (l !== list) return `cursor belongs to another list (${l}), not ${list}`
  return { list, offset: o as number, key: k }
}

/**
 * One page of a list result.
 * @param list which list (the result key)
 * @param items the whole list as the caller sees it, in its order
 * @param pageSize items per page; 0 = no paging (the whole list, or with a cursor the rest of it)
 * @param cursor the request's `params.cursor` (undefined: the first page)
 * @returns `{ [list]: page, nextCursor? }`
 * @throws UpstreamRpcError -32602 for a malformed cursor, another list's cursor, or an outdated one
 *         (its last item is no longer listed)
 */
export function pageOf (list: PagedList, items: readonly JsonObject[], pageSize: number, cursor: unknown): JsonObject {
  let start = 0
  if (cursor !== undefined) {
    const state = decodeCursor(list, cursor)
    if (typeof state === 'string') throw new UpstreamRpcError(INVALID_PARAMS, `Invalid params: ${state}`)
    start = resumeAt(list, items, state)
  }
  if (pageSize <= 0 || items.length - start <= pageSize) {
    return { [list]: start === 0 ? items as JsonObject[] : items.slice(start) }
  }
  const end = start + pageSize
  const page = items.slice(start, end)
  return { [list]: page, nextCursor: encodeCursor(list, end, String(page[page.length - 1][KEY_FIELD[list]])) }
}

/** Index of the item after the cursor's last one; throws -32602 when that item is gone. */
function resumeAt (list: PagedList, items: readonly JsonObject[], state: CursorState): number {
  const field = KEY_FIELD[list]
  if (state.offset <= items.length && items[state.offset - 1][field] === state.key) return state.offset
  const index = items.findIndex(item => item[field] === state.key)
  if (index === -1) {
    throw new UpstreamRpcError(INVALID_PARAMS, `Invalid params: outdated cursor: the ${list} list changed and no longer holds the item this cursor resumes after; list again without a cursor`)
  }
  return index + 1
}
