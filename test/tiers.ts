/**
 * The test tiers, in one place.
 *
 * - `npm test` is THE suite: every `dist/test/**\/*.test.js` (.taprc's include), every revision.
 * - `npm run test:quick` is {@link QUICK}: the unit tier (test/lib), the HTTP tier (test/http) and
 *   one e2e file per face (stdio, modern HTTP, legacy HTTP), the legacy one restricted to
 *   {@link QUICK.revisions} through the MCPX_TEST_REVISIONS environment variable (read by the files
 *   that loop over revisions: test/e2e/legacy-http.test.ts).
 *
 * `all/meta/quick-tier-cites-every-family` (test/lib/requirements.test.ts) reads {@link QUICK} to
 * report the requirement ids only the slow tier cites.
 *
 * Run as a program (`node dist/test/tiers.js quick [tap args…]`), it runs tap over the quick tier's
 * compiled files with that environment; `node dist/test/tiers.js quick --list` prints the files.
 */
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

/** A tier: test directories taken whole and single files (paths relative to test/, as sources), and the revisions MCPX_TEST_REVISIONS keeps. */
export interface Tier {
  dirs: readonly string[]
  files: readonly string[]
  /** The revisions the revision-looping files keep (MCPX_TEST_REVISIONS); undefined: all of them. */
  revisions?: readonly string[]
}

export const QUICK: Tier = {
  dirs: ['lib', 'http'],
  files: ['e2e/stdio.test.ts', 'e2e/modern-http.test.ts', 'e2e/legacy-http.test.ts'],
  revisions: ['2025-03-26']
}

/**
 * The manifest entries (test/requirements.ts keys) that only the slow tier cites, known and accepted
 * for now: each is an end-to-end flow (an OAuth authorization server, MRTR state between two eras,
 * experimental tasks through a task-capable upstream) whose only test is an e2e file outside
 * {@link QUICK}. `all/meta/quick-tier-cites-every-family` fails when an entry joins this list
 * (a new id only the slow tier cites) or leaves it (a quick-tier test now cites it: delete it here).
 */
export const SLOW_ONLY: readonly string[] = [
  // test/e2e/dpop.test.ts: real daemons, a real authorization server, replicas on Redis (the refusals
  // themselves are checked in the quick tier by test/http/dpop.test.ts: auth/dpop/bound-token-as-bearer-refused,
  // auth/dpop/two-dpop-headers-refused, auth/dpop/replayed-jti-refused; these ids name the daemon's wire)
  'auth/dpop/daemon-accepts-bound-token-with-proof',
  'auth/dpop/daemon-refuses-bound-token-as-bearer',
  'auth/dpop/daemon-refuses-two-dpop-header-fields',
  'auth/dpop/replay-refused-across-replicas',
  // test/e2e/id-jag.test.ts: a real daemon, a real enterprise IdP and a real upstream authorization server
  'identity-upstream/id-jag/per-principal-upstream-token',
  'identity-upstream/id-jag/cached-until-expiry',
  'identity-upstream/id-jag/new-subject-token-new-exchange',
  'identity-upstream/id-jag/idp-refusal-is-a-clear-error',
  'identity-upstream/id-jag/idp-down-is-a-clear-error',
  'identity-upstream/id-jag/as-down-is-a-clear-error',
  'identity-upstream/id-jag/401-redeems-again-once',
  'identity-upstream/id-jag/no-secret-in-logs',
  // test/e2e/identity-upstream.test.ts
  'identity-upstream/consent/legacy-url-elicitation-then-retry',
  'identity-upstream/stdio/consent-then-retry',
  'identity-upstream/consent/prompts-and-resources-as-the-caller',
  'identity-upstream/consent/modern-input-required-then-retry',
  'identity-upstream/consent/official-v2-client-url-elicitation-then-retry',
  'identity-upstream/consent/without-url-capability-names-the-url',
  'identity-upstream/connections/two-principals-two-identities',
  'identity-upstream/refresh/after-upstream-401',
  'identity-upstream/revocation/admin-api',
  'identity-upstream/revocation/cli',
  'identity-upstream/replicas/grants-shared-through-redis',
  'identity-upstream/audit/consent-events',
  'identity-upstream/secrets/none-in-logs',
  // test/e2e/integrity.test.ts
  'integrity/quarantine/changed-definition-hidden-until-approved',
  'integrity/quarantine/rename-reported-as-rename',
  'integrity/store/pins-survive-a-restart',
  'integrity/serve/changed-definition-hidden-until-approved-from-the-cli',
  'integrity/redis/replicas-agree-on-pins-and-approvals',
  'integrity/warn/changed-definition-served-and-audited',
  'integrity/status/approve-from-the-page-in-chromium',
  'integrity/discovery/quarantined-tool-absent-from-search',
  // test/e2e/reload.test.ts: a reload on a real daemon, with both kinds of stream open
  'ops/reload/open-streams-follow-the-new-view',
  // test/e2e/oauth.test.ts: a token that expires while its streams are open
  'auth/oauth/stream-ends-when-its-token-expires',
  // test/e2e/tasks-legacy.test.ts
  'tasks/legacy-routing/call-get-result-cancel',
  'tasks/legacy-notify/status-reaches-the-owning-session-only',
  'tasks/legacy-sdk/v1-client-drives-a-task',
  'tasks/legacy-stdio/serve-relays-tasks-and-status',
  // test/e2e/tasks.test.ts
  'tasks/e2e/status-notification-on-the-tasks-get-reply',
  // test/e2e/reload.test.ts
  'ops/reload/changed-upstream-make-before-break',
  'ops/reload/changed-upstream-that-cannot-start-keeps-the-old',
  // test/e2e/status.test.ts
  'ops/access/second-host-judged-by-peer-address',
  // test/e2e/upstreams.test.ts: a real mcpx serve in front of the ttl-upstream fixture (the rule itself: test/lib/catalogue-ttl.test.ts)
  'upstreams/catalogue/ttl-refresh-reaches-serve-clients',
  // test/e2e/audit.test.ts
  'audit/lost/full-disk-counts-each-line-lost',
  'audit/lost/retried-write-that-succeeds-loses-nothing',
  // test/e2e/limits-streams.test.ts (a daemon's RSS under 60,000 waiting batch members; the bound itself is
  // checked in the quick tier by limits/batch/members-in-progress-bounded-replies-in-order)
  'limits/batch/sessionless-batches-rss-bounded',
  // test/e2e/policy.test.ts (the rule itself: policy/templates/expansions-judged-with-their-templates, test/lib/policy.test.ts)
  'policy/templates/updates-of-a-hidden-expansion-never-reach-the-caller',
  'policy/templates/daemon-hides-expansions-in-both-eras',
  'policy/templates/serve-hides-expansions-in-both-eras',
  // test/e2e/servers.test.ts
  'servers/templates/a-template-decides-its-expansions',
  // test/e2e/discovery.test.ts
  'discovery/list/two-meta-tools-in-both-eras',
  'discovery/clients/official-v1-and-v2-clients-search-and-call-with-questions',
  'discovery/golden/reference-servers-top-results',
  'discovery/audit/inner-call-audited-with-via',
  'discovery/fresh/index-follows-list-changed',
  'discovery/serve/stdio-server-endpoint-in-search-mode',
  // test/e2e/skills.test.ts
  'skills/list/merged-namespaced-first-wins-paged',
  'skills/client/official-v2-skills-client-verifies-through-mcpx',
  'skills/client/official-v1-client-in-a-legacy-session',
  'skills/upstreams/refresh-on-resources-list-changed',
  'skills/stdio/serve-serves-skills-in-both-eras',
  'skills/servers/curated-endpoint-skills-rule',
  // test/e2e/confirm.test.ts
  'confirm/legacy/unanswered-question-expires',
  'confirm/select/arguments-redacted-and-truncated',
  'confirm/select/destructive-hint-after-overrides',
  'confirm/clients/v1-elicitation-accepts-and-declines',
  'confirm/clients/v2-input-required-accepts-and-declines',
  'confirm/audit/confirmed-and-declined-with-time',
  'confirm/serve/both-eras-accept-decline-refuse',
]

/** Whether the source file `file` (relative to test/, e.g. `e2e/stdio.test.ts`) is in `tier`. */
export function inTier (tier: Tier, file: string): boolean {
  const posix = file.split('\\').join('/')
  return tier.files.includes(posix) || tier.dirs.some(dir => posix.startsWith(`${dir}/`))
}

/**
 * Whether a test named `name` in `file` is registered when the tier runs: the file is in the tier,
 * and a name whose first segment is a revision the tier leaves out is not registered by a file
 * that honours MCPX_TEST_REVISIONS (those files register only revision-scoped names).
 */
export function runsInTier (tier: Tier, file: string, name: string, revisions: readonly string[]): boolean {
  if (!inTier(tier, file)) return false
  if (tier.revisions === undefined || !honoursRevisions(file)) return true
  const scope = name.split('/')[0]
  return !revisions.includes(scope) || tier.revisions.includes(scope)
}

/** The files that read MCPX_TEST_REVISIONS. */
export const REVISION_FILTERED: readonly string[] = ['e2e/legacy-http.test.ts']
function honoursRevisions (file: string): boolean { return REVISION_FILTERED.includes(file.split('\\').join('/')) }

/** The compiled files of `tier` (paths relative to the project root, e.g. `dist/test/lib/x.test.js`), sorted. */
export function compiledFiles (tier: Tier, distTestDir: string, projectRoot: string): string[] {
  const out: string[] = []
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) { if (entry.name !== 'fixtures') walk(path) } else if (entry.name.endsWith('.test.js')) out.push(path)
    }
  }
  for (const dir of tier.dirs) walk(join(distTestDir, dir))
  for (const file of tier.files) out.push(join(distTestDir, file.replace(/\.ts$/, '.js')))
  return out.map(path => relative(projectRoot, path).split('\\').join('/')).sort()
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [tierName, ...rest] = process.argv.slice(2)
  if (tierName !== 'quick') {
    process.stderr.write('usage: node dist/test/tiers.js quick [--list | tap arguments…]\n')
    process.exit(2)
  }
  const distTestDir = fileURLToPath(new URL('.', import.meta.url))
  const projectRoot = fileURLToPath(new URL('../..', import.meta.url))
  const files = compiledFiles(QUICK, distTestDir, projectRoot)
  if (rest.includes('--list')) {
    process.stdout.write(files.join('\n') + '\n')
    process.exit(0)
  }
  const env = { ...process.env, ...(QUICK.revisions !== undefined ? { MCPX_TEST_REVISIONS: QUICK.revisions.join(',') } : {}) }
  const run = spawnSync('npx', ['tap', ...rest, ...files], { cwd: projectRoot, env, stdio: 'inherit' })
  process.exit(run.status ?? 1)
}
