/**
 * The status page's HTML (docs/operating.md › The status page): one self-contained document rendered from a
 * {@link StatusReport} (lib/ops/status-model.ts). Pure of Fastify.
 *
 * No external assets: one inline `<style>` and one small inline `<script>`, both allowed by their
 * SHA-256 hash in a strict Content-Security-Policy ({@link STATUS_PAGE_HEADERS}: `default-src
 * 'none'`, no 'unsafe-inline', no style attributes, `connect-src 'self'` for the refresh). The
 * script refreshes the page by itself every {@link STATUS_REFRESH_MS}: it fetches the page's own
 * URL and swaps in the new `<main>` (parsed by DOMParser, never through innerHTML); when that fails
 * the page says so and keeps the last data. Every value from the report is HTML-escaped
 * ({@link escapeHtml}); upstream names, URLs and error texts are text, never markup.
 */
import { createHash } from 'node:crypto'
import type { StatusReport, UpstreamReport } from './status-model.js'
import type { IntegrityEntry } from '../policy/integrity.js'

/** How often the page refreshes itself, ms. */
export const STATUS_REFRESH_MS = 5_000

const STYLE = `
:root{color-scheme:light dark;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--line:#8884;--muted:#777}
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;max-width:100rem}
header{display:flex;gap:1rem;align-items:baseline;flex-wrap:wrap}
h1{font-size:1.4rem;margin:0}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
.muted,#refreshed{color:var(--muted)}body.stale #refreshed{color:var(--bad);font-weight:600}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:1rem 0}dt{color:var(--muted)}dd{margin:0}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid var(--line);padding:.3rem .5rem;text-align:left;vertical-align:top}
th{font-weight:600;white-space:nowrap}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}td.n,td[data-field=revision]{white-space:nowrap}
code{font-size:.9em;overflow-wrap:anywhere}.err{color:var(--bad);overflow-wrap:anywhere;max-width:30rem}
.state{font-weight:600}.state-ready{color:var(--ok)}.state-down,.state-closed{color:var(--bad)}.state-connecting{color:var(--warn)}
.pin-pinned{color:var(--ok)}.pin-changed,.pin-new,.pin-renamed,.pin-rejected{color:var(--bad);font-weight:600}
.defs{display:grid;grid-template-columns:1fr 1fr;gap:.5rem}.defs pre{margin:0;padding:.4rem;border:1px solid var(--line);white-space:pre-wrap;overflow-wrap:anywhere;max-height:20rem;overflow:auto}
form.decide{display:inline-block;margin:.3rem .5rem 0 0}
`

// Refreshes <main> from the page's own URL (same origin, same credentials), never through innerHTML.
const SCRIPT = `
(function () {
  var every = ${STATUS_REFRESH_MS};
  var note = document.getElementById('refreshed');
  function again () { setTimeout(refresh, every); }
  function refresh () {
    fetch(location.href, { cache: 'no-store', headers: { accept: 'text/html' } }).then(function (res) {
      if (!res.ok) throw new Error('HTTP ' + res.status);
      return res.text();
    }).then(function (html) {
      var next = new DOMParser().parseFromString(html, 'text/html').querySelector('main');
      if (next === null) throw new Error('no data in the answer');
      document.querySelector('main').replaceWith(document.adoptNode(next));
      document.body.classList.remove('stale');
      note.textContent = 'refreshed ' + new Date().toLocaleTimeString() + ', every ' + every / 1000 + ' s';
    }).catch(function (err) {
      document.body.classList.add('stale');
      note.textContent = 'refresh failed (' + err.message + '); showing data from before';
    }).then(again);
  }
  again();
})();
`

function sha256 (text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`
}

/**
 * The Content-Security-Policy of the page: nothing but its own hashed style and script, and
 * fetches of its own origin (the refresh). The icon is an empty `data:` image, so the browser asks
 * for no /favicon.ico.
 */
export const STATUS_PAGE_CSP = [
  "default-src 'none'",
  `style-src ${sha256(STYLE)}`,
  `script-src ${sha256(SCRIPT)}`,
  "connect-src 'self'",
  'img-src data:',
  "base-uri 'none'",
  // The integrity forms (approve, reject) post to this origin only (routes/status: CSRF token and same-origin check).
  "form-action 'self'",
  "frame-ancestors 'none'"
].join('; ')

/** Response headers of `GET /status` (the HTML); `/status.json` takes the last three. */
export const STATUS_PAGE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': STATUS_PAGE_CSP,
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store'
})

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Text safe inside HTML elements and quoted attributes (& < > " ' escaped). Never throws. */
export function escapeHtml (value: unknown): string {
  return String(value).replace(/[&<>"']/g, c => ESCAPES[c])
}

/** A duration in ms for people: `0.42 ms`, `12.5 ms`, `3.2 s`; `–` when absent. */
function ms (value: number | undefined): string {
  if (value === undefined) return '–'
  return value >= 1000 ? `${Number((value / 1000).toPrecision(3))} s` : `${value} ms`
}

function td (value: unknown, cls?: string): string {
  return `<td${cls !== undefined ? ` class="${cls}"` : ''}>${escapeHtml(value)}</td>`
}

function upstreamRow (u: UpstreamReport): string {
  const era = u.revision !== undefined ? `${u.era ?? ''} ${u.revision}` : '–'
  const where = u.kind === 'http' ? `<code>${escapeHtml(u.url ?? '')}</code>` : u.pid !== undefined ? `pid ${u.pid}` : 'stdio (no process)'
  const legacy = u.legacy !== undefined ? `<br><span class="muted">legacy connection: ${escapeHtml(u.legacy.state)}${u.legacy.revision !== undefined ? ' ' + escapeHtml(u.legacy.revision) : ''}</span>` : ''
  const isolation = u.isolation !== undefined ? `<br><span class="muted">isolation ${escapeHtml(u.isolation)}</span>` : ''
  const errors = [u.lastError, u.legacy?.lastError !== undefined ? `legacy: ${u.legacy.lastError}` : undefined].filter(e => e !== undefined)
  return `<tr data-upstream="${escapeHtml(u.name)}">` +
    `<th scope="row">${escapeHtml(u.name)}</th>` +
    `<td data-field="state" class="state state-${escapeHtml(u.state)}">${escapeHtml(u.state)}</td>` +
    `<td data-field="revision">${escapeHtml(era)}${legacy}</td>` +
    `<td data-field="where">${where}${isolation}</td>` +
    `<td data-field="restarts" class="n">${u.restarts}</td>` +
    `<td data-field="lastError" class="err">${errors.length > 0 ? escapeHtml(errors.join('; ')) : '–'}</td>` +
    `<td data-field="tools" class="n">${u.tools}</td>` +
    `<td data-field="prompts" class="n">${u.prompts}</td>` +
    `<td data-field="resources" class="n">${u.resources}${u.resourceTemplates > 0 ? ` <span class="muted">+${u.resourceTemplates} templates</span>` : ''}${u.skills !== undefined ? ` <span class="muted">+${u.skills} skills</span>` : ''}</td>` +
    `<td data-field="calls" class="n">${u.calls}</td>` +
    `<td data-field="errors" class="n">${u.errors}</td>` +
    `<td data-field="windowCalls" class="n">${u.window.calls}</td>` +
    `${td(ms(u.window.p50Ms), 'n')}${td(ms(u.window.p99Ms), 'n')}` +
    `<td data-field="inFlight" class="n">${u.inFlight}${u.queued > 0 ? ` <span class="muted">+${u.queued} queued</span>` : ''}</td>` +
    '</tr>'
}

/** One item of a pinned upstream; a change also gets its old and new definitions side by side, and the decision forms. */
function integrityRow (e: IntegrityEntry, csrf: string | undefined): string {
  const id = `${e.upstream}/${e.kind}/${e.name}`
  const note = [e.renamedFrom !== undefined ? `renamed from ${e.renamedFrom}` : '', ...(e.shadows ?? []).map(s => `copies the ${s.by} of ${s.upstream}'s`), e.seenHere ? '' : 'seen by another replica'].filter(n => n !== '').join('; ')
  let row = `<tr data-pin="${escapeHtml(id)}">${td(e.upstream)}${td(e.kind)}<td><code>${escapeHtml(e.name)}</code></td>` +
    `<td data-field="pin" class="pin-${escapeHtml(e.state)}">${escapeHtml(e.state)}</td>${td(e.hidden ? 'hidden' : 'served')}<td><code>${escapeHtml(e.hash.slice(0, 16))}</code></td>${td(note === '' ? '–' : note)}</tr>`
  if (e.state === 'pinned') return row
  const decide = (action: 'approve' | 'reject', label: string): string => csrf === undefined
    ? ''
    : `<form class="decide" method="post" action="status/integrity"><input type="hidden" name="action" value="${action}">` +
      `<input type="hidden" name="upstream" value="${escapeHtml(e.upstream)}"><input type="hidden" name="kind" value="${escapeHtml(e.kind)}">` +
      `<input type="hidden" name="name" value="${escapeHtml(e.name)}"><input type="hidden" name="hash" value="${escapeHtml(e.hash)}">` +
      `<input type="hidden" name="csrf" value="${escapeHtml(csrf)}"><button type="submit" data-decide="${action}">${label}</button></form>`
  row += `<tr data-change="${escapeHtml(id)}"><td colspan="7"><div class="defs">` +
    `<div><strong>Pinned</strong>${e.pinned !== undefined ? ` <span class="muted">${escapeHtml(e.pinned.hash.slice(0, 16))}, by ${escapeHtml(e.pinned.by)}</span><pre data-def="pinned">${escapeHtml(JSON.stringify(e.pinned.definition, null, 2))}</pre>` : '<p class="muted">none (a new item)</p>'}</div>` +
    `<div><strong>Now</strong> <span class="muted">${escapeHtml(e.hash.slice(0, 16))}</span><pre data-def="now">${escapeHtml(JSON.stringify(e.definition, null, 2))}</pre></div>` +
    `</div>${decide('approve', 'Approve this definition')}${decide('reject', 'Reject')}</td></tr>`
  return row
}

/** The catalogue integrity section (when any upstream is pinned). */
function integritySection (report: StatusReport, csrf: string | undefined): string {
  const integrity = report.integrity
  if (integrity === undefined) return ''
  return `<h2>Catalogue integrity <span class="muted">(${integrity.quarantined} hidden; pins in ${escapeHtml(integrity.store)})</span></h2>` +
    (integrity.entries.length === 0
      ? '<p class="muted" id="no-pins">No pinned upstream lists anything yet.</p>'
      : '<table id="integrity"><thead><tr><th>Upstream</th><th>Kind</th><th>Name</th><th>Pin</th><th>Served</th><th>Hash</th><th>Note</th></tr></thead><tbody>' +
        integrity.entries.map(e => integrityRow(e, csrf)).join('') + '</tbody></table>')
}

/**
 * The page for a report.
 * @param options.csrf the token the integrity forms carry (routes/status); absent: no forms
 * @returns a complete HTML document (UTF-8), to be sent with {@link STATUS_PAGE_HEADERS}. Never throws.
 */
export function renderStatusPage (report: StatusReport, options: { csrf?: string } = {}): string {
  const minutes = report.windowSeconds / 60
  const reload = report.config.lastReload
  const collisions = report.collisions.length === 0
    ? '<p class="muted" id="no-collisions">No name or URI is claimed by two upstreams.</p>'
    : '<table id="collisions"><thead><tr><th>Kind</th><th>Name or URI</th><th>Served by</th><th>Left out of</th></tr></thead><tbody>' +
      report.collisions.map(c => `<tr>${td(c.kind)}<td><code>${escapeHtml(c.name)}</code></td>${td(c.kept)}${td(c.dropped)}</tr>`).join('') +
      '</tbody></table>'
  const up = report.upstreams.filter(u => u.state === 'ready').length
  return '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    '<link rel="icon" href="data:,">' +
    `<title>mcpx status: ${up}/${report.upstreams.length} upstreams ready</title>` +
    `<style>${STYLE}</style></head><body>` +
    `<header><h1>mcpx status</h1><span class="muted">mcpx ${escapeHtml(report.mcpx.version)}</span><span id="refreshed">refreshes every ${STATUS_REFRESH_MS / 1000} s</span></header>` +
    '<main>' +
    '<dl>' +
    `<dt>Server time</dt><dd id="now">${escapeHtml(report.mcpx.now)} (up ${report.mcpx.uptimeSeconds} s, since ${escapeHtml(report.mcpx.startedAt)})</dd>` +
    `<dt>Config</dt><dd><code id="config-source">${escapeHtml(report.config.source)}</code>, loaded ${escapeHtml(report.config.loadedAt)}</dd>` +
    `<dt>Last reload</dt><dd id="last-reload">${reload === undefined ? 'none since start' : `${escapeHtml(reload.outcome)} (${escapeHtml(reload.trigger)}) at ${escapeHtml(reload.at)}${reload.outcome === 'refused' ? '; the reason is in the log' : ''}${reload.kept.map(k => `; <span class="err" data-kept="${escapeHtml(k.name)}">${escapeHtml(k.name)} kept its old config: ${escapeHtml(k.reason)}</span>`).join('')}`}</dd>` +
    `<dt>Sessions</dt><dd id="sessions">${report.sessions}</dd>` +
    `<dt>Open streams</dt><dd id="streams">${report.streams.get} GET, ${report.streams.listen} listen</dd>` +
    '</dl>' +
    `<h2>Upstreams <span class="muted">(${up} of ${report.upstreams.length} ready)</span></h2>` +
    '<table id="upstreams"><thead><tr>' +
    '<th>Upstream</th><th>State</th><th>Era, revision</th><th>Process or URL</th><th class="n">Restarts</th><th>Last error</th>' +
    '<th class="n">Tools</th><th class="n">Prompts</th><th class="n">Resources</th><th class="n">Calls</th><th class="n">Errors</th>' +
    `<th class="n">Calls, last ${minutes} min</th><th class="n">p50</th><th class="n">p99</th><th class="n">In flight</th>` +
    '</tr></thead><tbody>' +
    report.upstreams.map(upstreamRow).join('') +
    '</tbody></table>' +
    '<h2>Name collisions</h2>' + collisions +
    integritySection(report, options.csrf) +
    '</main>' +
    `<footer><p class="muted">The same data as JSON: <a href="status.json">status.json</a>. Calls and errors count since each upstream was configured; p50 and p99 cover the last ${minutes} minutes (within 6.25 %).</p></footer>` +
    `<script>${SCRIPT}</script>` +
    '</body></html>\n'
}
