/**
 * The status page in a real browser (docs/operating.md › The status page): Debian's
 * `chromium` (the system binary; a browser download cannot work here) driven by playwright-core,
 * against a real daemon (`node dist/cli.js daemon`) with two upstreams, one of them down. The test
 * reads the table as rendered, checks that the page raised no CSP violation and no script error,
 * waits for the page's own refresh to show a call made after it loaded, and takes a screenshot
 * (docs/status.png, shown in docs/operating.md, with MCPX_UPDATE_SCREENSHOT=1, see SCREENSHOT).
 *
 * Missing chromium: under `npm test` the test is skipped with the command that installs it; under
 * CI (`CI=true`, which .ci/run sets) it runs and fails. .ci/run installs the package when missing.
 */
import t from 'tap'
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type BrowserContext } from 'playwright-core'
import { fixtureCommand } from '../helpers/fixture.js'
import { modernHeaders, type Teardown } from '../helpers/app.js'
import { startDaemon } from '../helpers/daemon.js'
import { modernBody, post } from '../helpers/modern-wire.js'
import { STATUS_REFRESH_MS } from '../../lib/ops/status-page.js'

/** Debian's chromium package installs the browser here. */
const CHROMIUM = process.env.MCPX_CHROMIUM ?? '/usr/bin/chromium'
const SKIP: string | false = !existsSync(CHROMIUM) && process.env.CI !== 'true'
  ? `chromium is not installed: apt-get install chromium (Debian's package; .ci/run installs it in CI)`
  : false
/**
 * Where the screenshot goes: docs/status.png of this checkout (tests run from dist/test/e2e/), the
 * image docs/operating.md shows, with MCPX_UPDATE_SCREENSHOT=1; otherwise a temp file, so that a test run
 * leaves the checkout as it was.
 */
const SCREENSHOT = process.env.MCPX_UPDATE_SCREENSHOT === '1'
  ? fileURLToPath(new URL('../../../docs/status.png', import.meta.url))
  : join(mkdtempSync(join(tmpdir(), 'mcpx-status-shot-')), 'status.png')

/**
 * The part of the page's `document` the predicates use (this project's TypeScript has no DOM types;
 * predicates are functions, since a string predicate is eval'd and the page's CSP forbids eval).
 */
interface BrowserDocument { querySelector: (selector: string) => { textContent: string | null } | null }

/** A headless chromium with a fresh profile; closed (and its profile removed) at teardown. */
async function browser (t: Teardown): Promise<BrowserContext> {
  if (!existsSync(CHROMIUM)) throw new Error(`chromium is not installed at ${CHROMIUM} (apt-get install chromium); CI must install it (.ci/run)`)
  const profile = mkdtempSync(join(tmpdir(), 'mcpx-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1440, height: 560 },
    timeout: 60_000
  })
  t.teardown(async () => {
    await context.close()
    rmSync(profile, { recursive: true, force: true })
  })
  return context
}

t.test('ops/status/browser-shows-upstreams-and-refreshes', { skip: SKIP, timeout: 180_000 }, async t => {
  const daemon = await startDaemon(t, {
    upstreams: {
      fixture: fixtureCommand(),
      // Down on purpose: the child exits at once, every restart.
      crashing: { command: '/bin/sh', args: ['-c', 'echo starting >&2; exit 3'] }
    }
  })
  // The down one has failed at least once (its lastError is set) before the page is loaded.
  const deadline = Date.now() + 30_000
  for (;;) {
    const r = await (await fetch(`${daemon.base}/status.json`)).json() as { upstreams: Array<{ name: string, state: string, lastError?: string }> }
    if (r.upstreams[0].state === 'ready' && r.upstreams[1].lastError !== undefined) break
    if (Date.now() > deadline) throw new Error(`upstreams never settled: ${JSON.stringify(r)}`)
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  const tools = (await (await post(daemon.base, modernBody(1, 'tools/list'), modernHeaders('tools/list'))).json as { result: { tools: Array<{ name: string }> } }).result.tools
  const fixtureTools = tools.filter(tool => tool.name.startsWith('fixture__')).length
  t.ok(fixtureTools > 0)

  const context = await browser(t)
  const page = await context.newPage()
  const problems: string[] = []
  page.on('pageerror', err => problems.push(`pageerror: ${err.message}`))
  page.on('console', message => { if (message.type() === 'error' || message.type() === 'warning') problems.push(`console ${message.type()}: ${message.text()}`) })
  // Every CSP violation the page sees, as the document reports it (the event fires for style and script alike).
  // (Browser-side code is passed as text: this project's TypeScript has no DOM types.)
  await page.addInitScript({ content: "globalThis.cspViolations = []; document.addEventListener('securitypolicyviolation', e => { globalThis.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI) })" })
  const requests: string[] = []
  page.on('request', request => requests.push(request.url()))
  const response = await page.goto(`${daemon.base}/status`, { waitUntil: 'load' })
  t.equal(response?.status(), 200)

  const cell = async (upstream: string, field: string): Promise<string> =>
    (await page.locator(`tr[data-upstream="${upstream}"] td[data-field="${field}"]`).textContent())?.trim() ?? ''
  t.equal(await cell('fixture', 'state'), 'ready')
  t.equal(await cell('fixture', 'tools'), String(fixtureTools), 'the up one\'s tool count, as a client lists it')
  t.equal(await cell('fixture', 'calls'), '0')
  // It restarts with backoff (connecting, then down again): the page's own refresh shows it down with its error.
  await page.waitForFunction(() => (globalThis as unknown as { document: BrowserDocument }).document.querySelector('tr[data-upstream="crashing"] td[data-field="state"]')?.textContent?.trim() === 'down', undefined, { timeout: 30_000 })
  t.equal(await cell('crashing', 'state'), 'down')
  t.match(await cell('crashing', 'lastError'), /child exited: code 3/, 'the down one\'s last error')
  t.equal(await cell('crashing', 'tools'), '0')
  t.match(await page.title(), /1\/2 upstreams ready/)
  // The style applied (a hashed inline <style> under the CSP): a down state is painted red.
  const color = await page.locator('tr[data-upstream="crashing"] td[data-field="state"]').evaluate(el => (globalThis as unknown as { getComputedStyle: (e: unknown) => { color: string } }).getComputedStyle(el).color)
  t.equal(color, 'rgb(207, 34, 46)', 'the inline style is applied')

  // A call after the page loaded: the page's own refresh (every STATUS_REFRESH_MS) shows it, without a navigation.
  let navigations = 0
  page.on('framenavigated', frame => { if (frame === page.mainFrame()) navigations++ })
  const reply = await post(daemon.base, modernBody(2, 'tools/call', { name: 'fixture__echo', arguments: { text: 'seen by the page' } }), modernHeaders('tools/call', 'fixture__echo'))
  t.equal(reply.status, 200)
  await page.waitForFunction(() => (globalThis as unknown as { document: BrowserDocument }).document.querySelector('tr[data-upstream="fixture"] td[data-field="calls"]')?.textContent?.trim() === '1', undefined, { timeout: STATUS_REFRESH_MS * 3 })
  t.pass('the refreshed table shows the call')
  t.equal(await cell('fixture', 'windowCalls'), '1')
  t.equal(navigations, 0, 'refreshed in place, not reloaded')
  t.match(await page.locator('#refreshed').textContent(), /^refreshed /)

  t.same(await page.evaluate('globalThis.cspViolations'), [], 'no CSP violation')
  t.same(problems, [], 'no script error, no console error or warning')
  const foreign = requests.filter(url => !url.startsWith(daemon.base) && !url.startsWith('data:'))
  t.same(foreign, [], 'nothing loaded from anywhere else')

  mkdirSync(join(SCREENSHOT, '..'), { recursive: true })
  await page.screenshot({ path: SCREENSHOT, fullPage: true })
  t.ok(statSync(SCREENSHOT).size > 10_000, `screenshot saved to ${SCREENSHOT}`)
  if (process.env.MCPX_UPDATE_SCREENSHOT !== '1') t.teardown(() => { rmSync(join(SCREENSHOT, '..'), { recursive: true, force: true }) })

  // The detector works: an inline style attribute (not allowed by the CSP) is reported as a violation.
  await page.evaluate("document.body.insertAdjacentHTML('beforeend', '<p style=\"color: red\">x</p>')")
  await page.waitForFunction(() => (globalThis as unknown as { cspViolations: string[] }).cspViolations.length > 0, undefined, { timeout: 5_000 })
  t.match(await page.evaluate('globalThis.cspViolations'), [/^style-src/], 'a style attribute is refused by the CSP and seen here')
})
