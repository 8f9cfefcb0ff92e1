/**
 * Redaction of upstream URLs before they reach anything mcpx exposes: `status()` (and so
 * `/readyz`), log lines and error texts. An HTTP upstream's URL may carry credentials in its
 * userinfo (`http://user:pass@host/`) or its query string (`?api_key=…`); both are replaced by
 * `***`. The scheme, host, port and path stay, so an operator can still tell which upstream failed.
 */

/** What replaces a userinfo or a query string. */
export const REDACTED = '***'

/** Anything that looks like an absolute URL inside free text (an error message). */
const URL_IN_TEXT = /\b[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^\s"'<>`]+/g

/**
 * One URL with its userinfo and query string replaced by `***`:
 * `http://admin:pw@h:1/mcp?api_key=x#f` → `http://***@h:1/mcp?***#f`.
 * @param url an absolute URL, as text
 * @returns the redacted text; text that does not parse as a URL comes back with everything after
 *          the scheme's `//` authority cut at `@` and `?` as well (never the original secret).
 *          Never throws.
 */
export function redactUrl (url: string): string {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return url.replace(/\/\/[^/?#]*@/, `//${REDACTED}@`).replace(/\?[^#]*/, `?${REDACTED}`)
  }
  if (parsed.username === '' && parsed.password === '' && parsed.search === '') return url
  const userinfo = parsed.username !== '' || parsed.password !== '' ? `${REDACTED}@` : ''
  const query = parsed.search !== '' ? `?${REDACTED}` : ''
  return `${parsed.protocol}//${userinfo}${parsed.host}${parsed.pathname}${query}${parsed.hash}`
}

/**
 * Free text (an error message, a `lastError`) with every URL in it passed through {@link redactUrl}.
 * Never throws.
 */
export function redactText (text: string): string {
  if (!text.includes('://')) return text
  return text.replace(URL_IN_TEXT, match => {
    // Punctuation that ends a sentence ("…/mcp?k=v, then") is not part of the URL.
    const trailing = /[.,;:!)\]]+$/.exec(match)?.[0] ?? ''
    return redactUrl(match.slice(0, match.length - trailing.length)) + trailing
  })
}
