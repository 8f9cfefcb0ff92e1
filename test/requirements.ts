/**
 * The requirement manifest: the transport rules of the seed (shared/seeds/000_b1284d353a3cd686.txt) and of the
 * spec digest (shared/spec/DIGEST.md) that the suite tests, each under the id of the test that verifies it.
 * test/lib/requirements.test.ts fails when an id here is not the name of some test, when a source does not name a
 * real seed section or DIGEST section, or when a test name leaves the scheme below.
 *
 * ## Test names
 * Every test (`t.test(name, …)`, nested ones too) is named `<scope>/<area>/<requirement>`, three segments, each
 * kebab-case (`[a-z0-9]` words joined by `-`). The scope is one of:
 * - a revision, `2024-11-05` `2025-03-26` `2025-06-18` `2025-11-25` `2026-07-28`: a rule of that revision, tested
 *   under it. A rule that holds in several revisions but is checked per revision loops over them and registers one
 *   test each (`for (const revision of LEGACY) t.test(`${revision}/sessions/unknown-404`, …)`), so
 *   `tap --grep 2025-06-18/` selects that revision's surface (tap matches top-level names: the subtests of
 *   `all/stdio/before-initialize-one-child` need a second level, `--grep all/stdio/before --grep 2025-03-26/`);
 * - `all`: a wire rule of every revision that one test checks once because the code path does not depend on the
 *   revision (`all/origin/…`, `all/limits/…`, `all/era/…`, `all/jsonrpc/…`, `all/stdio/…`, `all/http/…`);
 * - a scope for what is not a rule of a protocol revision: `auth` (bearer tokens, OAuth, safe binds), `upstreams`
 *   (mcpx as a client: lists, calls, lifecycle, eras), `replicas` (sessions shared through Redis), `bridge` (MRTR
 *   questions between eras), `config`, `daemon` (process, ops endpoints, shutdown), `plugin` (embedding in a host
 *   Fastify app), `package` (what npm installs), `deploy` (deployment recipes, e.g. `deploy/nginx/…`), `limits`
 *   (the bounds mcpx keeps under hostile peers, e.g. `limits/upstreams/…`), `policy`
 *   (who sees and calls what, rate limits), `servers` (curated endpoints), `audit` (the audit trail), `discovery` (tool search), `skills` (the Skills
 *   extension), `identity-upstream` (each caller's own identity toward an upstream), `integrity` (pinned definitions),
 *   `confirm` (the human confirmation gate).
 *
 * ## Ids
 * An id is a test name. `*` as the first segment is a family, one id per revision in `revisions`
 * (`*` + `/sessions/unknown-404` over the legacy revisions is `2024-11-05/sessions/unknown-404` … `2025-11-25/…`);
 * every member must be cited. Several tests may cite one id; a test name not listed here is fine (not every test is a
 * seed or DIGEST rule).
 */

/** The protocol revisions mcpx serves, oldest first. */
export const REVISIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28'] as const
export type Revision = typeof REVISIONS[number]

/** The revisions that negotiate with initialize (the legacy era). */
export const LEGACY_REVISIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'] as const satisfies readonly Revision[]

/** The first segments a test name may have (see the scheme above). */
export const SCOPES: readonly string[] = [...REVISIONS, 'all', 'auth', 'upstreams', 'replicas', 'isolation', 'paging', 'elicitation-url', 'limits', 'bridge', 'config', 'daemon', 'plugin', 'package', 'deploy', 'redis', 'trace', 'cli', 'ops', 'policy', 'servers', 'audit', 'tasks', 'discovery', 'skills', 'identity-upstream', 'integrity', 'confirm']

/** The seed file the `seed › …` sources name, relative to shared/. */
export const SEED_FILE = 'seeds/000_b1284d353a3cd686.txt'

/** The seed's section headings (lines of the seed file), as cited in a source. */
export type SeedSection =
  | 'Which era a POST belongs to'
  | 'Streamable HTTP, 2026-07-28'
  | 'Streamable HTTP, 2025-03-26 … 2025-11-25'
  | 'Origin (every revision with Streamable HTTP)'
  | 'stdio, every revision'
  | 'Found along the way'

/**
 * Where a requirement comes from: a seed section, a DIGEST section such as `DIGEST §6d`, or, for a gateway rule that
 * no protocol revision states (policy, limits, operator endpoints), the docs/ page and `##`/`###` heading that
 * promises it to users, such as `docs/policy.md › Policy`.
 */
export type Source = `seed › ${SeedSection}` | `DIGEST §${number}${string}` | `docs/${string}.md › ${string}`

/** One requirement: its source, what it says in a line, and for a `*` family the revisions it spans. */
export interface Requirement {
  source: Source
  text: string
  revisions?: readonly Revision[]
}

const ERA: Source = 'seed › Which era a POST belongs to'
const MODERN: Source = 'seed › Streamable HTTP, 2026-07-28'
const LEGACY_HTTP: Source = 'seed › Streamable HTTP, 2025-03-26 … 2025-11-25'
const ORIGIN: Source = 'seed › Origin (every revision with Streamable HTTP)'
const STDIO: Source = 'seed › stdio, every revision'
const LEGACY = LEGACY_REVISIONS
const NO_BATCHES = ['2024-11-05', '2025-06-18', '2025-11-25'] as const satisfies readonly Revision[]

/** id → requirement. Keep the ids in seed order, then DIGEST order, then the docs/ rules. */
export const REQUIREMENTS: Readonly<Record<string, Requirement>> = {
  // ---------------------------------------------------------------- seed › Which era a POST belongs to
  'all/era/body-meta-is-modern': { source: ERA, text: 'a POST whose body carries _meta protocolVersion is modern' },
  'all/era/modern-header-without-meta-refused': { source: ERA, text: 'a modern MCP-Protocol-Version on a body without the _meta field is refused as a header/body disagreement, not served as legacy' },
  'all/era/unimplemented-modern-date-is-32022': { source: ERA, text: 'a modern-era date mcpx does not implement is answered -32022, not treated as legacy' },
  'all/era/no-header-no-meta-is-legacy': { source: ERA, text: 'everything else is legacy' },

  // ---------------------------------------------------------------- seed › Streamable HTTP, 2026-07-28
  '2026-07-28/headers/protocol-version-missing': { source: MODERN, text: 'MCP-Protocol-Version is required on every request POST: 400 -32020 with the id' },
  '2026-07-28/headers/mcp-method-missing': { source: MODERN, text: 'Mcp-Method is required on every request POST' },
  '2026-07-28/headers/mcp-name-missing': { source: MODERN, text: 'Mcp-Name is required on tools/call, prompts/get and resources/read' },
  '2026-07-28/headers/protocol-version-mismatch': { source: MODERN, text: 'MCP-Protocol-Version different from the body is 400 -32020' },
  '2026-07-28/headers/mcp-method-mismatch': { source: MODERN, text: 'Mcp-Method different from the body is 400 -32020' },
  '2026-07-28/headers/mcp-name-mismatch': { source: MODERN, text: 'Mcp-Name different from the body is 400 -32020' },
  '2026-07-28/headers/invalid-bytes': { source: MODERN, text: 'a header carrying bytes outside visible ASCII, space and tab is 400 -32020' },
  '2026-07-28/headers/mcp-name-base64-valid': { source: MODERN, text: 'Mcp-Name in the =?base64?…?= sentinel is decoded before the comparison' },
  '2026-07-28/headers/mcp-name-base64-missing-padding': { source: MODERN, text: 'the Base64 is strict: padding required' },
  '2026-07-28/headers/mcp-name-base64-bad-chars': { source: MODERN, text: 'the Base64 is strict: alphabet only' },
  '2026-07-28/headers/names-case-insensitive': { source: MODERN, text: 'header names match case-insensitively' },
  '2026-07-28/headers/values-case-sensitive': { source: MODERN, text: 'header values match case-sensitively' },
  '2026-07-28/headers/notification-needs-no-headers': { source: MODERN, text: 'a notification POST has no header requirements' },
  '2026-07-28/headers/notification-headers-must-agree': { source: MODERN, text: 'headers a notification does send must still agree with its body' },
  '2026-07-28/param-headers/matching-is-served': { source: MODERN, text: 'Mcp-Param-* headers that agree with the x-mcp-header annotated arguments are served' },
  '2026-07-28/param-headers/invalid-bytes': { source: MODERN, text: 'an Mcp-Param-* header with bytes a header may not carry is 400 -32020' },
  '2026-07-28/param-headers/base64-invalid-utf8': { source: MODERN, text: 'an Mcp-Param-* header that fails to decode is 400 -32020' },
  '2026-07-28/param-headers/mismatch': { source: MODERN, text: 'an Mcp-Param-* header that differs from the body value is 400 -32020' },
  '2026-07-28/param-headers/missing-while-body-has-value': { source: MODERN, text: 'an Mcp-Param-* header missing while the body has a value is 400 -32020' },
  '2026-07-28/param-headers/present-while-body-has-none': { source: MODERN, text: 'an Mcp-Param-* header present while the body has none is 400 -32020' },
  '2026-07-28/param-headers/integers-compare-numerically': { source: MODERN, text: 'integers compare numerically' },
  '2026-07-28/param-headers/sent-upstream-for-the-unprefixed-name': { source: MODERN, text: 'an upstream\'s annotation counts: the shared rules also build the headers mcpx sends upstream' },
  '2026-07-28/status/unknown-method-404': { source: MODERN, text: 'status is a function of the response: -32601 is 404' },
  '2026-07-28/status/invalid-params-400': { source: MODERN, text: 'every -32602 is 400, not only the missing-_meta one' },
  '2026-07-28/status/tool-error-is-200': { source: MODERN, text: 'everything else (a tool error result included) is 200' },
  '2026-07-28/sessions/unknown-session-ignored': { source: MODERN, text: 'an unknown Mcp-Session-Id on a modern request is ignored (no 404)' },
  '2026-07-28/sessions/known-legacy-session-not-bound': { source: MODERN, text: 'a known legacy session id never binds a modern request to it' },
  '2026-07-28/sessions/none-minted': { source: MODERN, text: 'no session id is echoed or minted, server/discover included' },
  '2026-07-28/batches/array-body-400': { source: MODERN, text: 'an array body is 400 -32600' },
  '2026-07-28/notifications/accepted-202-empty': { source: MODERN, text: 'a notification is 202 with no body' },
  '2026-07-28/notifications/not-accepted-400-id-less': { source: MODERN, text: 'a notification that is not accepted is 400 with an id-less error' },
  '2026-07-28/notifications/unknown-method-202': { source: MODERN, text: 'an unknown notification method is ignored (202)' },
  '2026-07-28/cancellation/closing-the-stream-cancels-upstream': { source: MODERN, text: 'closing the stream cancels the upstream call, and nothing is written afterwards' },
  '2026-07-28/sessions/last-event-id-ignored': { source: MODERN, text: 'no Last-Event-ID' },
  '2026-07-28/sessions/sse-events-carry-no-ids': { source: MODERN, text: 'no SSE event ids' },

  // ---------------------------------------------------------------- seed › Streamable HTTP, 2025-03-26 … 2025-11-25
  '*/sessions/initialize-mints-session-id': { source: LEGACY_HTTP, revisions: LEGACY, text: 'sessions are minted by initialize' },
  '*/sessions/unknown-404': { source: LEGACY_HTTP, revisions: LEGACY, text: 'a request naming an unknown session is 404' },
  '*/sessions/expired-404': { source: LEGACY_HTTP, revisions: LEGACY, text: 'a request naming an expired session is 404' },
  '*/sessions/deleted-404': { source: LEGACY_HTTP, revisions: LEGACY, text: 'a request naming a deleted session is 404' },
  '*/delete/with-session-204': { source: LEGACY_HTTP, revisions: LEGACY, text: 'DELETE with a session ends it (204)' },
  '*/get/closes-on-delete': { source: LEGACY_HTTP, revisions: LEGACY, text: 'DELETE closes the session\'s GET stream' },
  '*/delete/without-session-400': { source: LEGACY_HTTP, revisions: LEGACY, text: 'DELETE without a session is 400 (not 405: mcpx allows termination)' },
  '*/delete/unknown-404': { source: LEGACY_HTTP, revisions: LEGACY, text: 'DELETE of an unknown session is 404' },
  '*/sessions/sessionless-served': { source: LEGACY_HTTP, revisions: LEGACY, text: 'a legacy request with no session header is served statelessly' },
  '*/protocol-version/unsupported-400-32022': { source: LEGACY_HTTP, revisions: LEGACY, text: 'MCP-Protocol-Version that is not a legacy revision mcpx implements is 400 -32022 with the legacy list' },
  '2025-03-26/protocol-version/absent-means-2025-03-26': { source: LEGACY_HTTP, text: 'an absent header means 2025-03-26 for a sessionless request' },
  '*/protocol-version/session-governs': { source: LEGACY_HTTP, revisions: LEGACY, text: 'in a session the version negotiated at initialize governs, even if the header names another supported one' },
  '2025-03-26/batch/session-accepted': { source: LEGACY_HTTP, text: 'a batch is accepted when the session negotiated 2025-03-26' },
  '2025-03-26/batch/sessionless-header-accepted': { source: LEGACY_HTTP, text: 'a batch is accepted sessionless with no header or a 2025-03-26 one' },
  '*/batch/refused-400': { source: LEGACY_HTTP, revisions: NO_BATCHES, text: 'otherwise a batch is 400 -32600' },
  '2025-03-26/batch/elements-run-concurrently': { source: LEGACY_HTTP, text: 'batch elements run concurrently' },
  '2025-03-26/batch/answers-delivered-in-a-batch': { source: LEGACY_HTTP, text: 'responses in a batch are delivered to waiting questions' },
  '2025-03-26/batch/streamed-replies-as-separate-events': { source: LEGACY_HTTP, text: 'the reply is a JSON array, or the elements\' replies as separate events if something had to stream' },
  '2025-03-26/batch/notifications-only-202': { source: LEGACY_HTTP, text: 'a batch of only notifications and responses gets 202' },
  '2025-03-26/batch/initialize-element-refused': { source: LEGACY_HTTP, text: 'initialize inside a batch is refused as that element and mints nothing' },
  '*/get/no-session-405': { source: LEGACY_HTTP, revisions: LEGACY, text: 'GET without a session is 405' },
  '*/get/modern-header-405': { source: LEGACY_HTTP, revisions: LEGACY, text: 'GET with a modern header is 405' },
  '*/get/unknown-session-404': { source: LEGACY_HTTP, revisions: LEGACY, text: 'GET with an unknown session is 404' },
  '*/get/opens-stream-keep-alive-409': { source: LEGACY_HTTP, revisions: LEGACY, text: 'GET opens the notification stream (X-Accel-Buffering: no, keep-alive comments); a second one is 409' },
  '*/get/tools-list-changed': { source: LEGACY_HTTP, revisions: LEGACY, text: 'the stream carries list_changed, opted into by mcpx declaring listChanged' },
  '*/get/resources-updated': { source: LEGACY_HTTP, revisions: LEGACY, text: 'the stream carries notifications/resources/updated for resources/subscribe' },
  '*/get/subscription-before-stream-delivers': { source: LEGACY_HTTP, revisions: LEGACY, text: 'a subscription made before the stream opens delivers once it does' },
  '*/get/no-stream-dropped': { source: LEGACY_HTTP, revisions: LEGACY, text: 'with no stream open a notification is dropped' },
  '*/cancel/disconnect-in-session-not-cancel': { source: LEGACY_HTTP, revisions: LEGACY, text: 'in a session a dropped connection is not a cancellation' },
  '*/cancel/notification-cancels-and-withholds': { source: LEGACY_HTTP, revisions: LEGACY, text: 'notifications/cancelled on the session cancels the request and withholds its reply' },
  '*/cancel/sessionless-disconnect-cancels': { source: LEGACY_HTTP, revisions: LEGACY, text: 'without a session the disconnect remains the cancellation signal' },
  '*/questions/notification-202': { source: LEGACY_HTTP, revisions: LEGACY, text: 'responses and notifications: 202 no body' },
  '*/questions/unmatched-response-400': { source: LEGACY_HTTP, revisions: LEGACY, text: 'a response nothing is waiting for is 400' },

  // ---------------------------------------------------------------- seed › Origin (every revision with Streamable HTTP)
  'all/origin/refused-403-every-method-both-eras': { source: ORIGIN, text: 'an Origin present and not allowed is 403, on every method' },
  'all/origin/refused-body-is-id-less-json-rpc': { source: ORIGIN, text: 'the 403 carries an id-less JSON-RPC error' },
  'all/origin/no-origin-allowed': { source: ORIGIN, text: 'no Origin at all is allowed' },
  'all/origin/loopback-any-port-http-https': { source: ORIGIN, text: 'the loopback hosts are allowed at any port over http or https' },
  'all/origin/daemon-address-specific-allowed': { source: ORIGIN, text: 'the daemon\'s own address is allowed when it is a specific address' },
  'all/origin/daemon-address-wildcard-not-an-origin': { source: ORIGIN, text: 'an unspecified daemon address (0.0.0.0, ::) allows no origin' },
  'all/origin/allowed-origins-exact': { source: ORIGIN, text: 'transport.allowedOrigins match exactly' },
  'all/origin/host-header-does-not-help': { source: ORIGIN, text: 'the request\'s Host is not the daemon\'s address (DNS rebinding)' },
  'all/origin/null-refused': { source: ORIGIN, text: 'Origin: null is refused' },

  // ---------------------------------------------------------------- seed › stdio, every revision
  'all/stdio/ping-answered-while-slow-call-runs': { source: STDIO, text: 'requests run concurrently' },
  'all/stdio/cancelled-call-reaches-upstream-and-is-not-answered': { source: STDIO, text: 'notifications/cancelled cancels the upstream call and the reply is suppressed' },
  'all/stdio/notifications-and-responses-never-answered': { source: STDIO, text: 'notifications are never answered, not even with an error' },
  '2025-03-26/stdio/batch-answered-as-array': { source: STDIO, text: 'a batch (2025-03-26, or before any initialize) is answered with an array' },
  '2025-06-18/stdio/batch-refused': { source: STDIO, text: 'after a 2025-06-18 initialize a batch is refused' },
  '2025-03-26/stdio/notifications-only-batch-gets-no-reply': { source: STDIO, text: 'a batch of notifications only gets nothing' },
  '2025-03-26/stdio/initialize-in-batch-is-an-error-element': { source: STDIO, text: 'initialize in a batch is an error element' },
  'all/stdio/eof-after-5-requests-all-answered': { source: STDIO, text: 'EOF stops reading; requests already in flight still get their answers' },
  'all/stdio/eof-drain-expiry-cancels-and-exits': { source: STDIO, text: 'after transport.stdioDrain the rest are cancelled and the process exits' },
  '2024-11-05/stdio/before-initialize-answered-in-oldest-shapes': { source: STDIO, text: 'ping and anything else before initialize is answered under the oldest revision\'s shapes' },
  'all/stdio/stdout-carries-only-jsonrpc-frames': { source: STDIO, text: 'stdout carries only MCP: every line is one JSON-RPC message (a newline in a text included)' },
  '2025-06-18/stdio/list-changed-forwarded-after-initialize': { source: STDIO, text: 'after a legacy initialize, list_changed is forwarded' },

  // ---------------------------------------------------------------- DIGEST
  'all/jsonrpc/exact-ids-round-trip': { source: 'DIGEST §2b', text: 'a response echoes the request id exactly' },
  'all/jsonrpc/batch-member-keeps-its-own-id': { source: 'DIGEST §2b', text: 'in a batch, a member after one that is not an object (1, "x", null, true) keeps its own id' },
  'all/jsonrpc/cancelled-request-id-kept-exact': { source: 'DIGEST §2b', text: 'a cancellation\'s params.requestId that JSON.parse would round is read exactly, so it names the request it means' },
  'all/stdio/cancel-names-an-unsafe-integer-id-exactly': { source: 'DIGEST §2b', text: 'over mcpx serve, cancelling 9007199254740993 stops that request, not the one whose id is 9007199254740992' },
  'all/jsonrpc/batch-ids-fuzzed': { source: 'DIGEST §2b', text: 'seeded batches with ids of every JSON type and size: each member is read with its own id' },
  '2025-03-26/batch/each-reply-carries-its-members-id': { source: 'DIGEST §2b', text: 'over HTTP, in a session and without, each request of a fuzzed batch is answered once with its own id' },
  '2025-03-26/stdio/batch-replies-carry-their-members-ids': { source: 'DIGEST §2b', text: 'over mcpx serve, each request of a fuzzed batch is answered once with its own id' },
  '*/ids/exact': { source: 'DIGEST §2b', revisions: LEGACY, text: 'a response echoes the request id exactly, over legacy HTTP' },
  'all/stdio/ids-echoed-exactly': { source: 'DIGEST §2b', text: 'a response echoes the request id exactly, over stdio' },
  'all/jsonrpc/id-null-is-not-a-notification': { source: 'DIGEST §2b', text: 'the id is never null; a null id is not a notification' },
  'all/revisions/legacy-negotiation': { source: 'DIGEST §2a', text: 'the server echoes a supported version, otherwise answers its newest' },
  'all/jsonrpc/invalid-utf8-is-32700': { source: 'DIGEST §3b', text: 'JSON-RPC messages are UTF-8: invalid UTF-8 is a parse error' },
  'all/revisions/batches-only-in-2025-03-26': { source: 'DIGEST §4', text: 'batching exists in 2025-03-26 only (removed in 2025-06-18)' },
  '2026-07-28/envelope/missing-protocol-version-32602': { source: 'DIGEST §6a', text: 'a request missing _meta protocolVersion is -32602, HTTP 400' },
  '2026-07-28/envelope/missing-client-capabilities-32602': { source: 'DIGEST §6a', text: 'a request missing _meta clientCapabilities is -32602, HTTP 400' },
  '2026-07-28/envelope/missing-client-capability-32021': { source: 'DIGEST §6a', text: 'a capability the request did not declare is -32021 with data.requiredCapabilities' },
  '2026-07-28/stdio/modern-requests-served-statelessly': { source: 'DIGEST §6a', text: 'a dual-era server serves a request carrying modern _meta statelessly' },
  '2026-07-28/envelope/legacy-methods-404': { source: 'DIGEST §6c', text: 'a method the modern revision does not have is 404 -32601' },
  '2026-07-28/responses/json-when-only-json-accepted': { source: 'DIGEST §6c', text: 'a request is answered application/json or text/event-stream, as the client accepts' },
  '2026-07-28/responses/sse-own-progress-only-and-keep-alive': { source: 'DIGEST §6c', text: 'the SSE response carries only this request\'s notifications, keep-alive comments allowed' },
  '2026-07-28/headers/surrounding-whitespace-trimmed': { source: 'DIGEST §6d', text: 'D4: surrounding whitespace of a mirrored header is trimmed' },
  '2026-07-28/headers/base64-d3-table': { source: 'DIGEST §6d', text: 'D3: server-side Base64 decoding cases' },
  '2026-07-28/param-headers/d1-spec-encoding-examples': { source: 'DIGEST §6d', text: 'D1: the spec\'s encoding examples' },
  '2026-07-28/param-headers/d2-sep-conformance-encoding': { source: 'DIGEST §6d', text: 'D2: SEP-2243 conformance encodings' },
  '2026-07-28/param-headers/nested-property-checked': { source: 'DIGEST §6d', text: 'an annotation reachable through nested properties is checked' },
  'auth/oauth/protected-resource-metadata-both-forms': { source: 'DIGEST §4', text: 'OAuth: protected-resource metadata (RFC 9728)' },
  'auth/oauth/401-challenge-every-method-and-era': { source: 'DIGEST §6e', text: '401 carries WWW-Authenticate with resource_metadata' },
  'auth/oauth/insufficient-scope-403': { source: 'DIGEST §6e', text: 'insufficient scope is 403' },
  'all/limits/body-too-large-413': { source: 'DIGEST §6e', text: 'an oversized request is 413' },
  'all/limits/oversized-headers-431': { source: 'DIGEST §6e', text: 'oversized headers are 431' },
  '2026-07-28/discover/versions-and-capabilities': { source: 'DIGEST §6f', text: 'server/discover answers supportedVersions, capabilities, ttlMs and cacheScope' },
  '2026-07-28/listen/acknowledged-then-only-requested-tagged': { source: 'DIGEST §6f', text: 'subscriptions/listen: acknowledged first, then only requested types, each tagged with the subscription id' },
  '2026-07-28/stdio/subscriptions-listen': { source: 'DIGEST §6f', text: 'subscriptions/listen over stdio' },
  '2026-07-28/envelope/result-shaping': { source: 'DIGEST §6f', text: 'modern results carry resultType (and ttlMs/cacheScope where cacheable); legacy results do not' },
  '2026-07-28/caching/public-when-every-caller-sees-the-same': { source: 'DIGEST §6f', text: 'without a policy or a per-caller upstream the lists are cacheScope public, on /mcp and on a curated endpoint; ttlMs defaults to 0' },
  '2026-07-28/caching/private-when-a-policy-applies': { source: 'DIGEST §6f', text: 'under a policy the lists and resources/read are cacheScope private (what a caller sees depends on who the caller is); server/discover stays public' },
  '2026-07-28/caching/private-when-an-upstream-answers-per-caller': { source: 'DIGEST §6f', text: 'an isolated upstream (or one reached with the caller\'s identity) makes the lists cacheScope private' },
  '2026-07-28/caching/ttl-from-catalogue-ttl': { source: 'DIGEST §6f', text: 'the ttlMs of the results mcpx builds is transport.catalogueTtl, in ms; tools/call carries no ttlMs or cacheScope' },
  '2025-03-26/batch/modern-only-method-is-32601': { source: 'DIGEST §6h', text: 'a batch exists only in 2025-03-26 and subscriptions/listen, server/discover only in 2026-07-28: such a member is answered -32601 as that element, over HTTP' },
  '2025-03-26/stdio/modern-only-method-in-batch-is-32601': { source: 'DIGEST §6h', text: 'the same answer, byte for byte, on a batch line of mcpx serve' },
  'bridge/state/tampered-is-refused': { source: 'DIGEST §6f', text: 'MRTR requestState is attacker-controlled: a tampered one is refused' },
  'bridge/state/expired-is-refused': { source: 'DIGEST §6f', text: 'requestState binds an expiry' },
  'bridge/state/bound-to-the-caller': { source: 'DIGEST §6f', text: 'requestState binds the principal' },
  'bridge/state/state-of-another-request-is-refused': { source: 'DIGEST §6f', text: 'requestState binds the originating request' },
  'bridge/capability/undeclared-question-is-refused-upstream-and-named-to-the-client': { source: 'DIGEST §6f', text: 'the server must not request inputs the client lacks the capability for' },
  'tasks/legacy-capabilities/declared-at-2025-11-25-only': { source: 'DIGEST §5', text: 'experimental tasks: capabilities.tasks offered to a 2025-11-25 client only, never in server/discover' },
  'tasks/legacy-routing/call-get-result-cancel': { source: 'DIGEST §5', text: 'task-augmented tools/call, tasks/get, tasks/result (blocks until terminal, related-task _meta) and tasks/cancel' },
  'tasks/legacy-ids/tampered-or-foreign-is-32602': { source: 'DIGEST §5', text: 'an invalid or nonexistent taskId is -32602' },
  'tasks/legacy-list/only-the-callers-tasks': { source: 'DIGEST §5', text: 'tasks/list shows a requestor the tasks it may retrieve, and no others' },
  'tasks/legacy-notify/status-reaches-the-owning-session-only': { source: 'DIGEST §5', text: 'notifications/tasks/status reaches the task\'s requestor only' },
  'tasks/legacy-sdk/v1-client-drives-a-task': { source: 'DIGEST §5', text: 'the official v1 SDK client drives a task through mcpx (callToolStream, getTask, listTasks)' },
  'tasks/legacy-book/bounded-per-owner-and-in-all': { source: 'DIGEST §5', text: 'the tasks mcpx lists for a caller are kept bounded, per owner and in all' },
  'tasks/legacy-stdio/serve-relays-tasks-and-status': { source: 'DIGEST §5', text: 'experimental tasks over mcpx serve (stdio)' },
  'tasks/e2e/status-notification-on-the-tasks-get-reply': { source: 'DIGEST §6f', text: 'the Tasks extension (SEP-2663): a server\'s notifications/tasks/status for a task, sent on a tasks/get stream, reaches the client on its tasks/get reply with the client\'s taskId' },

  // ---------------------------------------------------------------- docs/ › gateway rules no revision states
  'ops/reload/running-request-keeps-its-view': { source: 'docs/operating.md › Reloading the config', text: 'requests already running finish under the old rules: a request whose caller\'s view its face worked out before a reload (the Mcp-Param-* check of a 2026-07-28 tools/call) is served in that view, not in the one the reload made' },
  'ops/reload/open-streams-follow-the-new-view': { source: 'docs/operating.md › Reloading the config', text: 'a reload that changes a caller\'s view reaches its open GET and listen streams: no update of what it can no longer see, list_changed only for the lists its view changed' },
  'auth/oauth/stream-ends-when-its-token-expires': { source: 'docs/authentication.md › Tokens that expire', text: 'a GET or listen stream opened with an OAuth token ends at the token\'s exp' },
  'ops/reload/changed-upstream-make-before-break': { source: 'docs/operating.md › A changed upstream: make before break', text: 'a reload that changes an upstream starts the new instance first and switches when it is ready: no call fails, tools/list never lacks its tools, a call in flight on the old instance completes' },
  'ops/reload/changed-upstream-that-cannot-start-keeps-the-old': { source: 'docs/operating.md › A changed upstream: make before break', text: 'a changed upstream whose new instance cannot start keeps its old one serving, and the reload\'s answer, log line and status page name it and why' },
  'ops/access/local-is-a-loopback-peer-under-a-loopback-host': { source: 'docs/operating.md › Who may read the operator endpoints', text: 'a client is local when its connection\'s peer is a loopback IP literal and its Host a loopback name; an unresolved forwarding header makes it remote' },
  'ops/access/remote-peer-refused-whatever-the-host': { source: 'docs/operating.md › Who may read the operator endpoints', text: '/metrics, /status and /status.json refuse a remote peer whatever loopback Host it sends, on every bind; /readyz gives it the status alone' },
  'ops/access/trust-proxy-judges-the-forwarded-client': { source: 'docs/operating.md › Who may read the operator endpoints', text: 'with daemon.trustProxy the client a listed proxy names is judged; without it a forwarded request is never local' },
  'ops/access/second-host-judged-by-peer-address': { source: 'docs/operating.md › Who may read the operator endpoints', text: 'a client on a second host (a network namespace over a veth pair) is refused the operator endpoints whatever Host it sends, and served with an admin token' },
  'auth/oauth/unknown-kid-while-server-down-cannot-be-checked-now': { source: 'docs/authentication.md › Keys', text: 'a token whose kid the cached keys lack is 401 "cannot be checked now" once its refetch failed, and within the cooldown after, not "signed with an unknown key"' },
  'servers/oauth/endpoint-is-its-own-protected-resource': { source: 'docs/policy.md › Curated endpoints', text: 'a /mcp/<name> 401 names that endpoint\'s own protected-resource metadata, whose resource is its URL (RFC 9728 §3.3); a token for it is accepted there only' },
  'servers/oauth/endpoint-resource-and-its-metadata-path': { source: 'docs/policy.md › Curated endpoints', text: 'a curated endpoint\'s resource is <resource>/<name>, and its metadata is served where RFC 9728 §3.1 derives it from that URL' },
  'audit/lost/full-disk-counts-each-line-lost': { source: 'docs/policy.md › Audit', text: 'each audit line a full disk took is counted once in mcpx_audit_lines_lost_total, however few writes failed' },
  'audit/lost/retried-write-that-succeeds-loses-nothing': { source: 'docs/policy.md › Audit', text: 'a refused audit write is retried; once it succeeds every line is in the trail, in order, and none is counted lost' },
  'upstreams/listen/one-upstream-listen-for-concurrent-subscriptions': { source: 'docs/upstreams.md › How mcpx talks to an upstream', text: 'subscriptions made at once leave one upstream subscriptions/listen open, and each update reaches the client once' },
  'upstreams/catalogue/ttl-refreshes-without-list-changed': { source: 'docs/upstreams.md › Lists that expire', text: 'a kind whose upstream ttlMs passed is re-listed on the next read, with no list_changed from the upstream, and clients get list_changed when it changed' },
  'upstreams/catalogue/ttl-no-refresh-before-then-one': { source: 'docs/upstreams.md › Lists that expire', text: 'no re-list before the upstream ttlMs passed, however often the catalogue is read; after it, one re-list however many readers find it stale' },
  'upstreams/catalogue/failed-refresh-keeps-old-list': { source: 'docs/upstreams.md › Lists that expire', text: 'a failed re-list for staleness keeps the last lists, warns once per streak, and the upstream stays ready' },
  'upstreams/catalogue/ttl-zero-floor': { source: 'docs/upstreams.md › Lists that expire', text: 'ttlMs 0 is re-listed on need, at most once per MIN_LIST_REFRESH_MS per upstream and kind' },
  'upstreams/catalogue/ttl-refresh-through-integrity-gate': { source: 'docs/upstreams.md › Lists that expire', text: 'a re-list for staleness is judged by the catalogue gate as a list_changed one is (quarantine hides a tool new on a pinned upstream)' },
  'upstreams/catalogue/ttl-zero-left-to-list-changed': { source: 'docs/upstreams.md › Lists that expire', text: 'ttlMs 0 on a kind the upstream announces listChanged for is not re-listed on a clock (its list_changed invalidates the list)' },
  'upstreams/catalogue/ttl-refresh-reaches-serve-clients': { source: 'docs/upstreams.md › Lists that expire', text: 'through mcpx serve, a client reading tools/list after an upstream ttlMs gets the re-listed tools and tools/list_changed' },
  'limits/batch/too-many-members-refused-whole': { source: 'docs/security.md › Limits', text: 'a batch of more than transport.maxBatchMembers members is refused whole, 400 with one id-less -32600, before any member runs' },
  'limits/stdio/batch-of-too-many-members-refused-whole': { source: 'docs/security.md › Limits', text: 'the same on a batch line of mcpx serve' },
  'limits/batch/members-in-progress-bounded-replies-in-order': { source: 'docs/security.md › Limits', text: 'at most transport.maxBatchInFlight members of a POST batch in progress at once; the replies keep the batch\'s order and ids' },
  'limits/batch/members-count-against-max-concurrent-requests': { source: 'docs/security.md › Limits', text: 'transport.maxConcurrentRequests counts a batch\'s members in progress, not only its POST; a member past it is refused with its id' },
  'limits/stdio/batch-members-in-progress-bounded-replies-in-order': { source: 'docs/security.md › Limits', text: 'the same bound on a batch line of mcpx serve' },
  'limits/batch/sessionless-batches-rss-bounded': { source: 'docs/security.md › Limits', text: 'sessionless batches of many waiting members keep the daemon\'s RSS within a fixed bound' },
  'upstreams/registry/uri-template-every-operator': { source: 'docs/policy.md › Templates and their expansions', text: 'a URI matches a template when some RFC 6570 expansion of it (any operator, any values) yields the URI; the match never backtracks' },
  'policy/templates/expansions-judged-with-their-templates': { source: 'docs/policy.md › Templates and their expansions', text: 'a concrete URI is judged under its own name and every catalogue template it expands: one allowed, none denied' },
  'policy/templates/expansions-of-a-hidden-template-look-absent': { source: 'docs/policy.md › Templates and their expansions', text: 'resources/read, resources/subscribe and completion of an expansion of a hidden template answer as a URI no upstream has, in both eras' },
  'policy/templates/updates-of-a-hidden-expansion-never-reach-the-caller': { source: 'docs/policy.md › Templates and their expansions', text: 'notifications/resources/updated for an expansion of a hidden template never reach the caller' },
  'policy/templates/daemon-hides-expansions-in-both-eras': { source: 'docs/policy.md › Templates and their expansions', text: 'a real daemon answers an expansion of a hidden template as an absent URI (status, headers, bytes), in both eras' },
  'policy/templates/serve-hides-expansions-in-both-eras': { source: 'docs/policy.md › Templates and their expansions', text: 'mcpx serve answers an expansion of a hidden template line for line as an absent URI, in both eras' },
  'servers/templates/a-template-decides-its-expansions': { source: 'docs/policy.md › Templates and their expansions', text: 'a curated endpoint hides the expansions of a template it denies and serves those of a template it allows alone' },
  // ---------------------------------------------------------------- docs/authentication.md: token audiences, exchange keys, DPoP
  'auth/oauth/introspected-token-without-audience-refused': { source: 'docs/authentication.md › Introspected tokens without an audience', text: 'an active introspected token without aud is 401 invalid_token, unless introspection.knowsOnlyThisResource says the endpoint knows this resource\'s tokens only' },
  'auth/upstream/exchange-follows-the-subject-token': { source: 'docs/authentication.md › Upstream credentials', text: 'the token-exchange cache is keyed by the caller\'s token (its SHA-256): a new token, e.g. with fewer scopes, is a new exchange' },
  'auth/dpop/good-proof-accepted': { source: 'docs/authentication.md › DPoP', text: 'a DPoP-bound token with the DPoP scheme and a fresh proof for the request (htm, htu without query, ath, jkt) is admitted, every method' },
  'auth/dpop/missing-proof-refused': { source: 'docs/authentication.md › DPoP', text: 'a bound token without a proof (no, empty or malformed DPoP header) is 401 DPoP error="invalid_dpop_proof" with algs and resource_metadata' },
  'auth/dpop/two-dpop-headers-refused': { source: 'docs/authentication.md › DPoP', text: 'two DPoP header fields, or two proofs in one, are 401 invalid_dpop_proof and use neither proof up' },
  'auth/dpop/bad-signature-refused': { source: 'docs/authentication.md › DPoP', text: 'a proof whose signature does not verify with its jwk, or whose jwk is a private key, is 401 invalid_dpop_proof' },
  'auth/dpop/wrong-typ-refused': { source: 'docs/authentication.md › DPoP', text: 'a proof whose typ is not dpop+jwt is 401 invalid_dpop_proof' },
  'auth/dpop/symmetric-alg-refused': { source: 'docs/authentication.md › DPoP', text: 'a proof signed with HS256, none, or an algorithm outside dpopSigningAlgs is 401 invalid_dpop_proof; a symmetric algorithm cannot be configured' },
  'auth/dpop/wrong-htm-refused': { source: 'docs/authentication.md › DPoP', text: 'a proof for another HTTP method is 401 invalid_dpop_proof' },
  'auth/dpop/wrong-htu-refused': { source: 'docs/authentication.md › DPoP', text: 'a proof for another URL is 401 invalid_dpop_proof; the URL is compared normalised, without query and fragment; X-Forwarded-* count from a trusted proxy only' },
  'auth/dpop/iat-outside-window-refused': { source: 'docs/authentication.md › DPoP', text: 'a proof older than dpopProofMaxAge or more than clockTolerance in the future is 401 invalid_dpop_proof' },
  'auth/dpop/wrong-ath-refused': { source: 'docs/authentication.md › DPoP', text: 'a proof without ath or with the hash of another token is 401 invalid_dpop_proof' },
  'auth/dpop/wrong-jkt-refused': { source: 'docs/authentication.md › DPoP', text: 'a sound proof by a key other than the token\'s cnf.jkt is 401 DPoP error="invalid_token"' },
  'auth/dpop/replayed-jti-refused': { source: 'docs/authentication.md › DPoP', text: 'a proof, or a jti, used before by the same key is 401 invalid_dpop_proof' },
  'auth/dpop/replay-cache-full-503': { source: 'docs/authentication.md › DPoP', text: 'past the memory replay cache\'s bound a new proof is refused 503 with Retry-After, never admitted unchecked' },
  'auth/dpop/memory-replay-cache-bounded-and-expiring': { source: 'docs/authentication.md › DPoP', text: 'the memory replay cache forgets a proof only once it expired, and answers unavailable past its bound' },
  'auth/dpop/bound-token-as-bearer-refused': { source: 'docs/authentication.md › DPoP', text: 'a DPoP-bound token sent as a Bearer token is 401 DPoP error="invalid_token"' },
  'auth/dpop/required-refuses-unbound-token': { source: 'docs/authentication.md › DPoP', text: 'dpop "required": an unbound OAuth token is 401 invalid_token, no credentials get the DPoP challenge alone, and the metadata says dpop_bound_access_tokens_required' },
  'auth/dpop/dpop-scheme-needs-a-bound-token': { source: 'docs/authentication.md › DPoP', text: 'the DPoP scheme with an unbound token is 401 invalid_token; a refused token sent with the DPoP scheme is challenged with DPoP' },
  'auth/dpop/off-treats-dpop-scheme-as-unsupported': { source: 'docs/authentication.md › DPoP', text: 'dpop "off": Authorization: DPoP is answered as no credentials, with the Bearer challenge' },
  'auth/dpop/insufficient-scope-challenge-is-dpop': { source: 'docs/authentication.md › DPoP', text: 'a DPoP-bound token with its proof but without the required scopes is 403 DPoP error="insufficient_scope" with scope, algs and resource_metadata' },
  'auth/dpop/introspected-binding': { source: 'docs/authentication.md › DPoP', text: 'an opaque token\'s binding comes from the introspection answer\'s cnf.jkt' },
  'auth/dpop/daemon-accepts-bound-token-with-proof': { source: 'docs/authentication.md › DPoP', text: 'a real daemon admits a DPoP-bound token from a real authorization server with its proof, behind a trusted proxy' },
  'auth/dpop/daemon-refuses-bound-token-as-bearer': { source: 'docs/authentication.md › DPoP', text: 'a real daemon refuses a DPoP-bound token sent as Bearer, 401 DPoP error="invalid_token"' },
  'auth/dpop/daemon-refuses-two-dpop-header-fields': { source: 'docs/authentication.md › DPoP', text: 'a real daemon refuses a request with two DPoP header fields on the wire, 401 invalid_dpop_proof' },
  'auth/dpop/replay-refused-across-replicas': { source: 'docs/authentication.md › DPoP', text: 'a proof accepted by one replica is refused by another sharing its Redis' },
  // ---------------------------------------------------------------- docs/discovery.md › Tool search
  'discovery/config/modes-defaults-and-bad-values': { source: 'docs/discovery.md › Configuration', text: 'discovery (top level and per endpoint) is list by default; search mode takes maxResults 1–50, default 8; a bad mode, bound or key is refused at load' },
  'discovery/config/reload-switches-the-mode': { source: 'docs/discovery.md › Configuration', text: 'a reload applies discovery to the requests that start after it' },
  'discovery/search/limit-defaults-to-and-is-capped-by-max-results': { source: 'docs/discovery.md › Configuration', text: 'a search returns maxResults tools without a limit, and at most maxResults whatever limit is given' },
  'discovery/list/two-meta-tools-in-both-eras': { source: 'docs/discovery.md › What the client sees', text: 'in search mode tools/list is exactly search_tools and call_tool (valid Tool definitions in every revision), in both eras, on /mcp and curated endpoints; prompts and resources are unchanged' },
  'discovery/ranking/empty-query-lists-by-name-up-to-the-limit': { source: 'docs/discovery.md › What the client sees', text: 'an empty query lists tools in name order, limit of them; each entry carries name, title?, description, inputSchema, annotations?' },
  'discovery/call/call-tool-answers-as-tools-call': { source: 'docs/discovery.md › What the client sees', text: 'call_tool answers what tools/call of the inner exposed name answers, byte for byte, renames and defaults applied; bad meta-tool arguments are a tool error' },
  'discovery/call/call-tool-creates-a-task': { source: 'docs/discovery.md › What the client sees', text: 'call_tool of a tool that runs as a task (2026-07-28 Tasks extension) answers the task, namespaced as a direct call\'s, and tasks/get follows it' },
  'discovery/headers/call-tool-needs-no-inner-mcp-param': { source: 'docs/discovery.md › What the client sees', text: 'a 2026-07-28 call_tool carries Mcp-Name: call_tool and no Mcp-Param-* for the inner tool, and is served' },
  'discovery/headers/inner-call-headers-toward-the-upstream': { source: 'docs/discovery.md › What the client sees', text: 'toward a modern upstream, the inner call of call_tool carries Mcp-Name of the inner tool and Mcp-Param-* from its schema' },
  'discovery/clients/official-v1-and-v2-clients-search-and-call-with-questions': { source: 'docs/discovery.md › What the client sees', text: 'the official v1 (legacy) and v2 (2026-07-28) clients list, search and call through call_tool, a question to the client included' },
  'discovery/ranking/terms-split-on-separators-and-camel-case': { source: 'docs/discovery.md › Ranking', text: 'names and parameters are split on _, -, __, . and camelCase' },
  'discovery/ranking/bm25-over-name-title-description-and-parameters': { source: 'docs/discovery.md › Ranking', text: 'BM25 over the name (boosted), title, description and parameter names and descriptions; only matches are returned' },
  'discovery/ranking/prefix-and-light-fuzziness': { source: 'docs/discovery.md › Ranking', text: 'query words match by prefix, and words of 5+ letters within a small edit distance' },
  'discovery/ranking/ties-break-by-name-whatever-the-catalogue-order': { source: 'docs/discovery.md › Ranking', text: 'equal scores are ordered by name, and a catalogue in any order gives the same results in the same order' },
  'discovery/golden/generated-catalogue-top-results': { source: 'docs/discovery.md › Ranking', text: 'the golden queries over the generated 1,024-tool catalogue give the documented top results' },
  'discovery/golden/reference-servers-top-results': { source: 'docs/discovery.md › Ranking', text: 'the golden queries over the three reference servers behind one endpoint give the documented top results, in both eras' },
  'discovery/policy/hidden-tools-are-never-found': { source: 'docs/discovery.md › Policy first', text: 'the index is the caller\'s view: a tool the policy or the endpoint hides is never found, and call_tool of it answers as tools/call of an unknown name' },
  'discovery/policy/rate-limits-count-the-inner-call': { source: 'docs/discovery.md › Policy first', text: 'a call through call_tool counts against the inner tool\'s rate limit as a direct call does' },
  'discovery/audit/inner-call-audited-with-via': { source: 'docs/discovery.md › Policy first', text: 'the audit line of a call through call_tool names the inner tool and carries via: call_tool' },
  'discovery/index/cached-per-view-list-and-bounded': { source: 'docs/discovery.md › Stateless and fresh', text: 'indexes are cached per view list, at most 32, least recently used dropped' },
  'discovery/fresh/index-updated-in-place-ranks-as-a-fresh-build': { source: 'docs/discovery.md › Stateless and fresh', text: 'after a list change the view\'s index is updated in place (a fresh build past half changed), and ranks exactly as a fresh build' },
  'discovery/fresh/index-follows-list-changed': { source: 'docs/discovery.md › Stateless and fresh', text: 'a tool an upstream adds (list_changed) is found by the next searches' },
  'discovery/serve/stdio-server-endpoint-in-search-mode': { source: 'docs/discovery.md › Stateless and fresh', text: 'mcpx serve --server <name> in search mode lists, searches and calls as HTTP does' },
  // Skills (the io.modelcontextprotocol/skills extension, SEP-2640): docs/skills.md, docs/policy.md › Skills
  'skills/names/uris-namespaced-digests-and-frontmatter-verbatim': { source: 'docs/skills.md › Names and URIs', text: 'an upstream\'s skill:// URIs get its prefix as a leading segment; frontmatter, digests, sizes and unknown fields pass as sent' },
  'skills/wire/extension-declared-in-both-eras': { source: 'docs/skills.md › What mcpx serves', text: 'the extension is declared, with directoryRead, in server/discover and in a legacy initialize when an upstream declares it' },
  'skills/list/merged-namespaced-first-wins-paged': { source: 'docs/skills.md › Names and URIs', text: 'skills/list merges the skills of a modern and a legacy upstream, namespaced, the first upstream keeps a SKILL.md URI two claim (reported as a collision), paged with mcpx\'s own cursors, ttlMs/cacheScope on 2026-07-28 only' },
  'skills/routing/get-directory-and-files-reach-the-owner': { source: 'docs/skills.md › What mcpx serves', text: 'skills/get, resources/directory/read (every page) and resources/read of a skill\'s files reach the upstream that lists it, in both eras' },
  'skills/digests/file-bytes-match-listed-digests': { source: 'docs/skills.md › What mcpx serves', text: 'each file read through mcpx has the size and sha256 digest its upstream listed' },
  'skills/client/official-v1-client-in-a-legacy-session': { source: 'docs/skills.md › What mcpx serves', text: 'the official v1 client in a 2025-11-25 session sees the extension in initialize, pages skills/list (no ttlMs/cacheScope), gets a skill from its owner and reads a file matching its digest' },
  'skills/client/official-v2-skills-client-verifies-through-mcpx': { source: 'docs/skills.md › What mcpx serves', text: 'the official v2 SkillsClient lists, gets, reads (verified) and walks directories through mcpx' },
  'skills/upstreams/refresh-on-resources-list-changed': { source: 'docs/skills.md › Changes', text: 'an upstream\'s resources/list_changed re-lists its skills' },
  'skills/stdio/serve-serves-skills-in-both-eras': { source: 'docs/skills.md › What mcpx serves', text: 'mcpx serve declares and serves skills in both eras under its local policy, stdout only JSON-RPC' },
  'skills/policy/globs-on-skill-uris-hide-everywhere': { source: 'docs/policy.md › Skills', text: 'policy skills globs match SKILL.md URIs; a hidden skill leaves skills/list and its files resources/list and reads; default deny shows none' },
  'skills/policy/hidden-skill-absent-byte-for-byte': { source: 'docs/policy.md › Skills', text: 'a hidden skill answers skills/get, resources/directory/read and resources/read exactly as an unknown one, in both eras' },
  'skills/servers/endpoint-skills-allow-deny': { source: 'docs/policy.md › Skills', text: 'a curated endpoint\'s skills allow/deny decide its skills; no skills allow exposes none' },
  'skills/servers/curated-endpoint-skills-rule': { source: 'docs/policy.md › Skills', text: 'a real daemon\'s /mcp/<name> applies its skills rule in both eras' },
  'skills/config/skills-globs-validated': { source: 'docs/policy.md › Skills', text: 'bad skills globs in policy rules and curated endpoints are clear config errors' },
  'skills/http/methods-served-in-both-eras': { source: 'docs/skills.md › What mcpx serves', text: 'skills/list, skills/get and resources/directory/read through the HTTP face in both eras; bad params and cursors are -32602' },
  'skills/http/endpoint-hides-skill-as-unknown': { source: 'docs/skills.md › Hidden skills', text: 'a skill a curated endpoint hides answers skills/get and its files\' resources/read with the bytes of an unknown one' },
  'skills/http/no-extension-without-a-declaring-upstream': { source: 'docs/skills.md › What mcpx serves', text: 'without an upstream that declares the extension mcpx declares none and the skills methods are -32601 (404 on 2026-07-28)' },
  // Enterprise-managed authorization toward an upstream (lib/upstreams/id-jag.ts)
  'identity-upstream/id-jag/config-needs-front-door-oauth': { source: 'docs/authentication.md › Enterprise-managed authorization (ID-JAG)', text: 'an id-jag upstream without auth.oauth is refused at load (MCPX_ERR_CONFIG): the caller\'s OAuth access token is the identity assertion; idp is required; secrets only from env or files' },
  'identity-upstream/id-jag/config-errors-at-build': { source: 'docs/authentication.md › Enterprise-managed authorization (ID-JAG)', text: 'no issuer/tokenUrl for the IdP, no audience when the AS is given by tokenUrl, or an unreadable secret is MCPX_ERR_CONFIG naming the key, at start' },
  'identity-upstream/id-jag/caller-without-oauth-token': { source: 'docs/authentication.md › Enterprise-managed authorization (ID-JAG)', text: 'a caller without an OAuth access token (static token, stdio, anonymous) gets an error naming the upstream and the caller, not a request to the IdP' },
  'identity-upstream/id-jag/per-principal-upstream-token': { source: 'docs/authentication.md › Enterprise-managed authorization (ID-JAG)', text: 'each principal\'s subject token is exchanged at the IdP for an ID-JAG (requested_token_type id-jag, audience = the AS issuer, resource = the upstream) and redeemed at the AS (jwt-bearer): two principals, two upstream tokens naming them' },
  'identity-upstream/id-jag/cached-until-expiry': { source: 'docs/authentication.md › Enterprise-managed authorization (ID-JAG)', text: 'the upstream token is reused for the same subject token until 30 s before it expires (80 % of its lifetime at most), then exchanged again' },
  'identity-upstream/id-jag/new-subject-token-new-exchange': { source: 'docs/authentication.md › Enterprise-managed authorization (ID-JAG)', text: 'the cache is keyed by the SHA-256 of the subject token: the same principal with a new token is a new exchange' },
  'identity-upstream/id-jag/idp-refusal-is-a-clear-error': { source: 'docs/authentication.md › Enterprise-managed authorization (ID-JAG)', text: 'an IdP refusal is a JSON-RPC error naming the upstream, the step and the OAuth error code, never a token' },
  'identity-upstream/id-jag/idp-down-is-a-clear-error': { source: 'docs/authentication.md › Enterprise-managed authorization (ID-JAG)', text: 'an unreachable IdP is a JSON-RPC error naming the upstream and the endpoint, nothing reaches the upstream, and the caller gets through once it is back' },
  'identity-upstream/id-jag/as-down-is-a-clear-error': { source: 'docs/authentication.md › Enterprise-managed authorization (ID-JAG)', text: 'an unreachable upstream authorization server is a JSON-RPC error naming the upstream, the endpoint and the step, never the ID-JAG; nothing reaches the upstream' },
  'identity-upstream/id-jag/401-redeems-again-once': { source: 'docs/authentication.md › Enterprise-managed authorization (ID-JAG)', text: 'after a 401 from the upstream the cached token is dropped, a new ID-JAG is obtained and redeemed, and the call is retried once' },
  'identity-upstream/id-jag/no-secret-in-logs': { source: 'docs/authentication.md › Enterprise-managed authorization (ID-JAG)', text: 'no client secret, caller token, ID-JAG or upstream token appears in the daemon\'s logs (debug level)' },
  // ---------------------------------------------------------------- docs/policy.md › Confirmation (the human confirmation gate)
  'confirm/config/confirm-and-confirmation-checked-at-load': { source: 'docs/policy.md › Confirmation', text: 'confirm (globs or { tools, destructive }) and confirmation (expiry > 0, redact, maxArgumentChars) are checked at load, each problem a clear error naming its path' },
  'confirm/select/globs-and-destructive-hint': { source: 'docs/policy.md › Confirmation', text: 'a call is gated when an applying rule or the endpoint selects it by a glob of its catalogue or exposed name, or by destructiveHint after overrides' },
  'confirm/select/arguments-shown-redacted-and-cut': { source: 'docs/policy.md › Confirmation', text: 'the question shows the arguments with values under a redact glob replaced (any depth, case-insensitive), cut at maxArgumentChars' },
  'confirm/select/arguments-hash-is-canonical': { source: 'docs/policy.md › Confirmation', text: 'an approval is bound to the SHA-256 of the endpoint, the catalogue name and the arguments in RFC 8785 canonical JSON' },
  'confirm/ledger/memory-single-use-and-bounded': { source: 'docs/policy.md › Confirmation', text: 'an approval is spent once; the in-memory ledger is bounded and refuses past the bound rather than forget a live approval' },
  'confirm/ledger/redis-single-use-across-replicas': { source: 'docs/policy.md › Confirmation', text: 'with Redis, an approval spent on one replica is a replay on another; Redis unreachable refuses' },
  'confirm/http/input-required-accept-decline-replay': { source: 'docs/policy.md › Confirmation', text: 'over HTTP (inject): a gated 2026-07-28 call answers input_required; accept forwards once, a replay is -32602 400, decline is isError' },
  'confirm/http/revision-without-elicitation-refused': { source: 'docs/policy.md › Confirmation', text: 'over HTTP (inject): a 2025-03-26 call of a gated tool is an isError result saying the client cannot be asked' },
  'confirm/http/call-tool-of-a-gated-tool-is-gated': { source: 'docs/discovery.md › Policy first', text: 'tool search\'s call_tool of a gated tool asks about the inner tool; the accepted retry, again as call_tool, forwards once; the state is single use' },
  'confirm/modern/accept-forwards-decline-does-not': { source: 'docs/policy.md › Confirmation', text: '2026-07-28: an InputRequiredResult asks; accept forwards the call, decline, cancel or confirm false answer isError and the upstream never sees the call' },
  'confirm/modern/replayed-approval-refused': { source: 'docs/policy.md › Confirmation', text: '2026-07-28: a state already used (accepted or declined) is -32602 and forwards nothing' },
  'confirm/modern/tampered-state-refused': { source: 'docs/policy.md › Confirmation', text: '2026-07-28: a tampered state, or one for another tool or other arguments, is -32602 and forwards nothing' },
  'confirm/modern/expired-approval-refused': { source: 'docs/policy.md › Confirmation', text: '2026-07-28: a state past confirmation.expiry is -32602 expired and forwards nothing' },
  'confirm/modern/client-without-elicitation-refused': { source: 'docs/policy.md › Confirmation', text: '2026-07-28: a request without form elicitation gets -32021 naming elicitation, never a silent call' },
  'confirm/legacy/client-without-elicitation-refused': { source: 'docs/policy.md › Confirmation', text: 'legacy: a client without the elicitation capability, or a revision without elicitation, gets an isError result saying it cannot be asked, never a silent call' },
  'confirm/legacy/unanswered-question-expires': { source: 'docs/policy.md › Confirmation', text: 'legacy: a question not answered within confirmation.expiry is a decline' },
  'confirm/select/arguments-redacted-and-truncated': { source: 'docs/policy.md › Confirmation', text: 'through a real daemon, the question never shows a redacted value and is cut at maxArgumentChars' },
  'confirm/select/destructive-hint-after-overrides': { source: 'docs/policy.md › Confirmation', text: 'through a real daemon, confirm { destructive: true } gates a tool an endpoint override marks destructive, there only' },
  'confirm/clients/v1-elicitation-accepts-and-declines': { source: 'docs/policy.md › Confirmation', text: 'the official v1 client\'s elicitation handler accepts (forwarded) and declines (never forwarded) a gated call on a 2025-11-25 session' },
  'confirm/clients/v2-input-required-accepts-and-declines': { source: 'docs/policy.md › Confirmation', text: 'the official v2 client\'s input_required handling accepts (forwarded) and declines (never forwarded) a gated call on 2026-07-28' },
  'confirm/audit/confirmed-and-declined-with-time': { source: 'docs/policy.md › Confirmation', text: 'a gated call\'s audit line has confirmation asked, confirmed, declined or refused, and confirmMs' },
  'confirm/serve/both-eras-accept-decline-refuse': { source: 'docs/policy.md › Confirmation', text: 'mcpx serve asks on stdout (legacy) or answers input_required (2026-07-28): accept forwards, decline does not, a replay and a client without elicitation are refused' },

  // ---------------------------------------------------------------- docs/upstreams.md › Upstream identity (oauth-user)
  'identity-upstream/config/needs-a-user-at-the-front-door': { source: 'docs/upstreams.md › Upstream identity', text: 'an oauth-user upstream without auth.oauth or auth.tokens is a config error' },
  'identity-upstream/config/prefix-and-isolation': { source: 'docs/upstreams.md › Upstream identity', text: 'an oauth-user upstream needs an explicit prefix and is per-principal (set when absent, an error otherwise)' },
  'identity-upstream/consent/legacy-url-elicitation-then-retry': { source: 'docs/upstreams.md › What a caller sees', text: 'a 2025-11-25 caller without a grant gets -32042 with a PKCE S256 + resource authorization URL for a name in the namespace; after consent at the callback it gets elicitation/complete and list_changed, the tools are listed for it, and the retry succeeds with its own upstream identity' },
  'identity-upstream/consent/prompts-and-resources-as-the-caller': { source: 'docs/upstreams.md › What a caller sees', text: 'after consent the upstream\'s prompts and resources are listed for the caller and prompts/get and resources/read reach it as the caller; before, a prompt in the namespace starts consent' },
  'identity-upstream/stdio/consent-then-retry': { source: 'docs/upstreams.md › What a caller sees', text: 'mcpx serve answers -32042 too, receives the callback on its own loopback redirect URI, sends elicitation/complete, and the retry succeeds' },
  'identity-upstream/consent/state-single-use': { source: 'docs/upstreams.md › What a caller sees', text: 'the callback\'s state is single use: the same redirect again is 400' },
  'identity-upstream/consent/modern-input-required-then-retry': { source: 'docs/upstreams.md › What a caller sees', text: 'a 2026-07-28 caller without a grant gets an InputRequiredResult with a URL-mode elicitation; the retry after consent succeeds' },
  'identity-upstream/consent/official-v2-client-url-elicitation-then-retry': { source: 'docs/upstreams.md › Upstream identity', text: 'the official v2 client on 2026-07-28 gets the consent URL as a URL-mode question through input_required, and its retry after consent succeeds as the caller' },
  'identity-upstream/consent/without-url-capability-names-the-url': { source: 'docs/upstreams.md › What a caller sees', text: 'a client that did not declare elicitation.url gets an error whose message names the URL to open' },
  'identity-upstream/connections/two-principals-two-identities': { source: 'docs/upstreams.md › What a caller sees', text: 'two principals reach the upstream on two connections with two different upstream identities' },
  'identity-upstream/refresh/after-upstream-401': { source: 'docs/upstreams.md › Tokens: the vault, refresh and revocation', text: 'an upstream 401 refreshes the caller\'s token (refresh grant) and the call succeeds' },
  'identity-upstream/revocation/admin-api': { source: 'docs/upstreams.md › Tokens: the vault, refresh and revocation', text: 'an operator lists grants without tokens and revokes one principal\'s grant; that principal must consent again, the other keeps its grant' },
  'identity-upstream/revocation/cli': { source: 'docs/upstreams.md › Tokens: the vault, refresh and revocation', text: 'mcpx revoke PRINCIPAL asks the running daemon to revoke its grants; exit 1 when it held none' },
  'identity-upstream/replicas/grants-shared-through-redis': { source: 'docs/upstreams.md › Tokens: the vault, refresh and revocation', text: 'under sessions.store redis a consent started on one replica completes on another, the grant serves both, is encrypted in Redis, and a revocation on one holds on the other' },
  'identity-upstream/config/redis-needs-a-vault-key': { source: 'docs/upstreams.md › Tokens: the vault, refresh and revocation', text: 'grants kept in Redis without MCPX_VAULT_KEY are a config error' },
  'identity-upstream/audit/consent-events': { source: 'docs/upstreams.md › Tokens: the vault, refresh and revocation', text: 'the audit trail records consent_required, consent_granted and consent_revoked' },
  'identity-upstream/secrets/none-in-logs': { source: 'docs/upstreams.md › Tokens: the vault, refresh and revocation', text: 'no upstream token, code, state, client secret or caller token in the daemon\'s log, the audit trail, the status page or the metrics' },
  'identity-upstream/vault/aes-gcm-bound-to-its-key': { source: 'docs/upstreams.md › Tokens: the vault, refresh and revocation', text: 'vault records are AES-256-GCM ciphertext; a tampered record or one moved under another (principal, upstream) does not decrypt; the vault is bounded' },
  // Pinned definitions (integrity)
  'integrity/hash/canonical-json-of-the-pinned-fields': { source: 'docs/policy.md › What is pinned', text: 'the pin is SHA-256 of the RFC 8785 canonical JSON of the pinned fields only: key order and other fields do not change it' },
  'integrity/quarantine/first-seen-pinned-then-changes-hidden': { source: 'docs/policy.md › What a change does', text: 'the first definitions seen are pinned; a changed or new tool of a pinned upstream is hidden, reported once, and served once approved' },
  'integrity/quarantine/rename-and-shadowing-reported': { source: 'docs/policy.md › What a change does', text: 'a vanished tool\'s definition under a new name is a rename; a tool copying another upstream\'s name or description is reported as possible shadowing' },
  'integrity/warn/changed-definition-served': { source: 'docs/policy.md › What a change does', text: 'in warn mode a changed definition is served and audited definition_changed with action served' },
  'integrity/store/file-written-atomically-and-read-back': { source: 'docs/policy.md › Where pins live', text: 'pins are written to the store file (directories created) and a new process judges by them' },
  'integrity/limits/pending-changes-bounded-per-upstream': { source: 'docs/policy.md › Where pins live', text: 'at most 1000 changes of one upstream wait in the store; further ones are hidden but neither stored nor reported one by one' },
  'integrity/kinds/prompts-and-templates-pinned-too': { source: 'docs/policy.md › What is pinned', text: 'prompts (description, arguments) and resource templates (description, uriTemplate) are pinned and quarantined as tools are' },
  'integrity/config/bad-config-is-a-clear-error': { source: 'docs/policy.md › Integrity', text: 'a bad pin mode, a store file with Redis, or a store file that is not one is a clear error naming it; the file is not overwritten' },
  'integrity/quarantine/changed-definition-hidden-until-approved': { source: 'docs/policy.md › What a change does', text: 'through a real daemon, in both eras: a description changed mid-session hides the tool (list_changed; a call answers as an unknown name) until approved through the admin API; audited with who approved what hash' },
  'integrity/quarantine/rename-reported-as-rename': { source: 'docs/policy.md › Approving', text: 'a renamed tool is reported as renamed from its old name, hidden, and approved with mcpx integrity through the daemon' },
  'integrity/store/pins-survive-a-restart': { source: 'docs/policy.md › Where pins live', text: 'the store file survives a restart: a definition changed since the stored pin is hidden at once' },
  'integrity/serve/changed-definition-hidden-until-approved-from-the-cli': { source: 'docs/policy.md › Approving', text: 'mcpx serve hides a changed tool and serves it again once mcpx integrity approve --store decided it' },
  'integrity/redis/replicas-agree-on-pins-and-approvals': { source: 'docs/policy.md › Where pins live', text: 'replicas sharing Redis agree on the first pin, see each other\'s changes, and apply an approval made on any of them' },
  'integrity/status/approve-from-the-page-in-chromium': { source: 'docs/policy.md › Approving', text: 'the status page shows a quarantined tool with its old and new definitions; approving it from the page (a same-origin form with a CSRF token, under the strict CSP) serves it again to clients; a cross-site form is refused' },
  'integrity/discovery/quarantined-tool-absent-from-search': { source: 'docs/policy.md › What a change does', text: 'tool search never finds a quarantined tool, and call_tool answers it byte for byte as an unknown name' },
  'integrity/warn/changed-definition-served-and-audited': { source: 'docs/policy.md › What a change does', text: 'through a listening mcpx in warn mode a changed definition is served, called, and audited' },
}

/** One concrete id of the manifest, with the key it came from (a family key for a `*` family). */
export interface RequirementId { id: string, key: string, requirement: Requirement }

/** Every concrete id: a family key `*` + `/area/req` yields one id per revision in its `revisions`. */
export function requirementIds (manifest: Readonly<Record<string, Requirement>> = REQUIREMENTS): RequirementId[] {
  return Object.entries(manifest).flatMap(([key, requirement]) => key.startsWith('*/')
    ? (requirement.revisions ?? []).map(revision => ({ id: revision + key.slice(1), key, requirement }))
    : [{ id: key, key, requirement }])
}
