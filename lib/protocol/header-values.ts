/**
 * Header values for the 2026-07-28 mirrored headers: which bytes a value may carry, how one
 * header is read from Node's header bag, and the `=?base64?…?=` sentinel in both directions.
 * Pure and shared by the server side (lib/protocol/modern-headers, lib/protocol/param-headers) and the client side
 * (mcpx calling a 2026-07-28 upstream).
 *
 * Sources: seed › Streamable HTTP, 2026-07-28 › Mirrored headers ("anything outside visible ASCII,
 * space and tab"; "the Base64 is strict – padding required, alphabet only"); DIGEST §6d "Allowed
 * byte set and Base64 sentinel", tables D1–D3; DIGEST §9 A4 (duplicates), A17 (short sentinel,
 * invalid UTF-8). RFC 9110 §5.5 (field-value), RFC 4648 §4 (base64), §3.5 (canonical encoding).
 */

import { HEADER_MISMATCH } from './jsonrpc.js'

/**
 * Incoming headers as Node gives them (`IncomingMessage.headers` or `headersDistinct`): names
 * lowercased; a repeated header may be an array. Values are the raw field values, untrimmed.
 */
export type HeaderBag = Record<string, string | string[] | undefined>

/** The outcome of {@link readHeader}. `value` is trimmed of surrounding SP/HTAB and carries only allowed bytes. */
export type HeaderRead =
  | { kind: 'absent' }
  | { kind: 'duplicate' }
  | { kind: 'invalid' }
  | { kind: 'value', value: string }

/** The outcome of {@link decodeHeaderValue}: the decoded text, or why the sentinel payload is refused. */
export type DecodedHeader = { ok: true, value: string } | { ok: false, reason: string }

/** A refused mirrored header: always `code` -32020 (HeaderMismatch; HTTP 400 via lib/protocol/http-status). */
export interface HeaderRejection {
  code: number
  message: string
}

/** Why a mirrored header is refused; see {@link headerMismatch} for the message each one gives. */
export type HeaderFault = 'missing' | 'duplicate' | 'invalid' | 'undecodable' | 'mismatch' | 'unexpected'

/** RFC 9110 field-value without obs-text: HTAB, SP, VCHAR (0x21–0x7E). Stricter than undici's (STYLE §3 Performance). */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/

/** What a client may send without encoding: 0x20–0x7E only (no TAB, no control character). */
const PLAIN_SAFE = /^[\x20-\x7e]*$/

/**
 * Strict, canonical RFC 4648 §4 base64: standard alphabet, `=` padding required, and the unused
 * bits of the last symbol zero (RFC 4648 §3.5 lets a decoder refuse non-zero pad bits; with them
 * refused, every accepted payload is the one encoding of its bytes). An empty payload is valid.
 */
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$/

const SENTINEL_PREFIX = '=?base64?'
const SENTINEL_SUFFIX = '?='
/** `=?base64?` + `?=`: a shorter value only looks like a sentinel because the markers overlap (A17). */
const SENTINEL_MIN_LENGTH = SENTINEL_PREFIX.length + SENTINEL_SUFFIX.length

/** Fatal: invalid UTF-8 throws instead of becoming U+FFFD. ignoreBOM: a leading U+FEFF is data, not stripped. */
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

const ABSENT: HeaderRead = Object.freeze({ kind: 'absent' })
const DUPLICATE: HeaderRead = Object.freeze({ kind: 'duplicate' })
const INVALID: HeaderRead = Object.freeze({ kind: 'invalid' })

const REASON_BAD_BASE64 = 'the =?base64?…?= payload is not strict base64 (standard alphabet, = padding required)'
const REASON_BAD_UTF8 = 'the =?base64?…?= payload does not decode to valid UTF-8'

/**
 * True when every character is HTAB, SP or 0x21–0x7E (RFC 9110 field-value minus obs-text):
 * a value that carries anything else (0x7F, a control character such as CR, non-ASCII) is refused.
 * The empty string is valid. Never throws. Seed › Mirrored headers; DIGEST §6d.
 */
export function isValidHeaderValue (value: string): boolean {
  return HEADER_VALUE.test(value)
}

/**
 * Reads one header from Node's header bag.
 * @param headers the incoming headers (names lowercased by Node)
 * @param lowercaseName the header name, lowercase, e.g. `'mcp-method'`
 * @returns `absent` when not sent; `duplicate` when sent more than once (an array of two or more
 *          values — DIGEST A4 leaves duplicates open, mcpx refuses them since it cannot tell which
 *          instance an intermediary routed on; a one-element array, as `headersDistinct` gives, is
 *          one value; `req.headers` instead joins repeats with `, `, which then fails the
 *          comparison with the body); `invalid` when the raw value carries a byte outside {@link isValidHeaderValue}
 *          (or is not a string); else the value with surrounding SP/HTAB trimmed (RFC 9110 §5.5).
 *          Never throws. Seed › Mirrored headers; DIGEST §6d, table D4.
 */
export function readHeader (headers: HeaderBag, lowercaseName: string): HeaderRead {
  let raw: unknown = headers[lowercaseName]
  if (raw === undefined) return ABSENT
  if (Array.isArray(raw)) {
    if (raw.length === 0) return ABSENT
    if (raw.length > 1) return DUPLICATE
    raw = raw[0]
  }
  if (typeof raw !== 'string' || !HEADER_VALUE.test(raw)) return INVALID
  return { kind: 'value', value: trimOws(raw) }
}

/** Trims SP and HTAB only (RFC 9110 OWS), unlike String#trim, which also strips Unicode spaces. */
function trimOws (value: string): string {
  let start = 0
  let end = value.length
  while (start < end && isOws(value.charCodeAt(start))) start++
  while (end > start && isOws(value.charCodeAt(end - 1))) end--
  return start === 0 && end === value.length ? value : value.slice(start, end)
}

function isOws (c: number): boolean { return c === 0x20 || c === 0x09 }

/** True when `value` has the sentinel shape the server decodes: lowercase markers and at least 11 characters (A17). */
function isSentinel (value: string): boolean {
  return value.length >= SENTINEL_MIN_LENGTH && value.startsWith(SENTINEL_PREFIX) && value.endsWith(SENTINEL_SUFFIX)
}

/**
 * Decodes a (trimmed, byte-checked) header value, server side.
 * A value of 11 characters or more that starts with `=?base64?` and ends with `?=` (markers
 * lowercase, case-sensitive) is a sentinel: its payload must match strict canonical base64 (checked
 * by regex before decoding, because Node's `Buffer.from(s, 'base64')` accepts missing padding and
 * stray characters), and the bytes must be valid UTF-8 (decoded with a fatal TextDecoder; a leading
 * BOM is kept). Anything else — no prefix, no suffix, `=?BASE64?`, or a shorter `=?base64?=` (A17)
 * — is literal and returned unchanged.
 * @returns `{ ok: true, value }` or `{ ok: false, reason }` (reason is a sentence for an error
 *          message). Never throws. Seed › Mirrored headers; DIGEST §6d table D3, A17.
 */
export function decodeHeaderValue (raw: string): DecodedHeader {
  if (!isSentinel(raw)) return { ok: true, value: raw }
  const payload = raw.slice(SENTINEL_PREFIX.length, raw.length - SENTINEL_SUFFIX.length)
  if (!STRICT_BASE64.test(payload)) return { ok: false, reason: REASON_BAD_BASE64 }
  try {
    return { ok: true, value: utf8Decoder.decode(Buffer.from(payload, 'base64')) }
  } catch {
    return { ok: false, reason: REASON_BAD_UTF8 }
  }
}

/**
 * Encodes a string for a mirrored header, client side (DIGEST §6d "Allowed byte set and Base64
 * sentinel", tables D1 and D2). Sent plain when every character is 0x20–0x7E (so no control
 * character, not even an inner TAB), there is no leading or trailing SP, and the value does not
 * start with `=?base64?` and end with `?=` (checked without the length rule, so even the 10-char
 * `=?base64?=` is encoded: the server accepts either form). Otherwise
 * `=?base64?` + base64(UTF-8 bytes, standard alphabet, padded) + `?=`. `''` stays `''`.
 * A lone surrogate cannot be UTF-8 and is sent as U+FFFD (so it will not match the body).
 * @returns the header value, always valid per {@link isValidHeaderValue}. Never throws.
 */
export function encodeHeaderValue (value: string): string {
  const n = value.length
  if (PLAIN_SAFE.test(value) &&
      (n === 0 || (value.charCodeAt(0) !== 0x20 && value.charCodeAt(n - 1) !== 0x20)) &&
      !(value.startsWith(SENTINEL_PREFIX) && value.endsWith(SENTINEL_SUFFIX))) {
    return value
  }
  return SENTINEL_PREFIX + Buffer.from(value, 'utf8').toString('base64') + SENTINEL_SUFFIX
}

/**
 * Builds the -32020 rejection for one header and fault. Messages name the header (spec casing, e.g.
 * `Mcp-Param-Region`) and the fault, never the value: Mcp-Name and Mcp-Param-* values are user data.
 * @param header the header's name as the spec spells it
 * @param fault what is wrong with it
 * @param detail for `undecodable`, the reason from {@link decodeHeaderValue}; for `mismatch`,
 *        `unexpected` and (optionally) `missing`, the body field concerned (e.g. `method`, `arguments.region`)
 * @returns `{ code: -32020, message }`. Never throws. DIGEST §6d "Validation failures".
 */
export function headerMismatch (header: string, fault: HeaderFault, detail = ''): HeaderRejection {
  let message: string
  switch (fault) {
    case 'missing': message = detail === '' ? `${header} header is missing` : `${header} header is missing while the body has a value at ${detail}`; break
    case 'duplicate': message = `${header} header is sent more than once`; break
    case 'invalid': message = `${header} header carries bytes a header may not carry (allowed: visible ASCII, space, tab)`; break
    case 'undecodable': message = `${header} header: ${detail}`; break
    case 'mismatch': message = `${header} header does not match the body's ${detail}`; break
    case 'unexpected': message = `${header} header is present but the body has no value at ${detail}`; break
  }
  return { code: HEADER_MISMATCH, message: 'Header mismatch: ' + message }
}
