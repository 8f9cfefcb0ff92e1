/**
 * The status page's parts as pure units (docs/operating.md › The status page): the latency window of
 * lib/upstreams/call-stats.ts (percentiles within 6.25 %, slots expiring after 5 minutes, fixed
 * memory), the report's redaction (lib/ops/status-model.ts) and the HTML's escaping (lib/ops/status-page.ts);
 * and who may read it (lib/ops/access.ts over lib/base/net.ts isLoopbackIp).
 */
import t from 'tap'
import { BUCKETS, CallStats, SLOT_MS, WINDOW_SLOTS, bucketMidUs, bucketOf } from '../../lib/upstreams/call-stats.js'
import { collectStatus, type StatusReport } from '../../lib/ops/status-model.js'
import { escapeHtml, renderStatusPage, STATUS_PAGE_CSP } from '../../lib/ops/status-page.js'
import { createRegistry } from '../../lib/upstreams/registry.js'
import type { UpstreamConfig } from '../../lib/upstreams/config.js'
import { isLoopbackIp } from '../../lib/base/net.js'
import { opsLocality, opsRefusalReason } from '../../lib/ops/access.js'

t.test('ops/status/latency-buckets-within-a-sixteenth', async t => {
  let worst = 0
  const outOfRange: number[] = []
  for (let us = 1; us < 2 ** 31; us = Math.ceil(us * 1.01) + 1) {
    const b = bucketOf(us)
    if (!(b >= 0 && b < BUCKETS)) outOfRange.push(us)
    worst = Math.max(worst, Math.abs(bucketMidUs(b) - us) / us)
  }
  t.same(outOfRange, [], 'every duration has a bucket')
  t.ok(worst <= 1 / 16, `worst relative error ${worst.toFixed(4)} ≤ 0.0625`)
  t.equal(bucketOf(2 ** 31 - 1), BUCKETS - 1, 'the last bucket holds the longest')
  t.ok(bucketOf(7) < bucketOf(8) && bucketOf(8) < bucketOf(9), 'monotonic at the seam')
})

t.test('ops/status/latency-window-percentiles-and-expiry', async t => {
  const stats = new CallStats()
  const t0 = 1_000_000
  // 98 calls of 1 ms, one of 100 ms and one of 2 s: p50 1 ms, p99 100 ms (nearest rank 99 of 100).
  for (let i = 0; i < 98; i++) stats.record(1, false, t0 + i)
  stats.record(100, true, t0 + 200)
  stats.record(2000, true, t0 + 300)
  const now = stats.snapshot(t0 + 400)
  t.match(now, { calls: 100, errors: 2, window: { seconds: 300, calls: 100, errors: 2 } })
  t.ok(Math.abs((now.window.p50Ms ?? 0) - 1) <= 1 / 16, `p50 ${now.window.p50Ms} ≈ 1 ms`)
  t.ok(Math.abs((now.window.p99Ms ?? 0) - 100) <= 100 / 16, `p99 ${now.window.p99Ms} ≈ 100 ms`)
  // Five minutes later the slot has left the window; the totals stay.
  const later = stats.snapshot(t0 + SLOT_MS * WINDOW_SLOTS + 1)
  t.same(later, { calls: 100, errors: 2, window: { seconds: 300, calls: 0, errors: 0 } })
  // A slot reused after the ring came round starts empty.
  stats.record(5, false, t0 + SLOT_MS * WINDOW_SLOTS)
  t.match(stats.snapshot(t0 + SLOT_MS * WINDOW_SLOTS + 1).window, { calls: 1, errors: 0 })
})

t.test('ops/status/latency-window-fixed-memory', async t => {
  const stats = new CallStats()
  const before = process.memoryUsage().arrayBuffers
  for (let i = 0; i < 1_000_000; i++) stats.record(i % 5000, i % 97 === 0, i * 3)
  t.ok(process.memoryUsage().arrayBuffers - before < 64 * 1024, 'a million calls over 50 minutes allocate no buffers')
  t.equal(stats.snapshot(3_000_000).calls, 1_000_000)
})

t.test('ops/status/report-redacts-and-page-escapes', async t => {
  const upstreams: Record<string, UpstreamConfig> = {
    web: { url: 'http://127.0.0.1:9/mcp?api_key=q-secret', headers: { authorization: 'Bearer h-secret' } },
    local: { command: '/bin/false', args: ['--token', 'arg-secret'], env: { TOKEN: 'env-secret' } }
  }
  const registry = createRegistry(upstreams, { logger: { debug () {}, info () {}, warn () {}, error () {} }, defaultTimeoutMs: 1000 })
  const report = collectStatus({
    registry,
    upstreamConfigs: () => upstreams,
    open: () => ({ sessions: 2, streams: { get: 1, listen: 0 } }),
    config: () => ({ source: '/etc/mcpx/<config>.json', loadedAt: new Date(0), lastReload: { at: new Date(1000), trigger: 'SIGHUP', ok: false } }),
    startedAt: new Date(0)
  }, new Date(5000))
  t.equal(report.upstreams[0].url, 'http://127.0.0.1:9/mcp?***')
  t.match(report, { sessions: 2, streams: { get: 1, listen: 0 }, config: { lastReload: { trigger: 'SIGHUP', outcome: 'refused' } }, mcpx: { uptimeSeconds: 5 } })
  const json = JSON.stringify(report)
  for (const secret of ['q-secret', 'h-secret', 'arg-secret', 'env-secret', '/bin/false']) t.notOk(json.includes(secret), `no ${secret}`)

  // Hostile text where the report carries free text: an error and the config path.
  const hostile: StatusReport = { ...report, upstreams: [{ ...report.upstreams[1], state: 'down', lastError: '<script>alert(1)</script> & "quoted" \'x\'' }] }
  const html = renderStatusPage(hostile)
  t.notOk(html.includes('<script>alert'), 'an error text is never markup')
  t.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quoted&quot; &#39;x&#39;'))
  t.ok(html.includes('/etc/mcpx/&lt;config&gt;.json'))
  t.equal(escapeHtml('<a href="x">\'&'), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;')
  t.match(html, /refused \(SIGHUP\)/)
  t.notMatch(STATUS_PAGE_CSP, /unsafe/)
})

// docs/operating.md › Who may read the operator endpoints: the peer address decides, as an IP literal
// only; the Host can only take a loopback peer away (DNS rebinding), never grant a remote one; an
// unresolved forwarding header makes the client unknown.
t.test('ops/access/local-is-a-loopback-peer-under-a-loopback-host', async t => {
  for (const ip of ['127.0.0.1', '127.255.255.254', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', '::ffff:7f01:203']) t.ok(isLoopbackIp(ip), `${ip} is a loopback peer`)
  for (const ip of [undefined, '', 'localhost', '127.1', '0x7f.1', '2130706433', '0177.0.0.1', '[::1]', '::ffff:10.0.0.1', '::2', '10.0.0.1', '128.0.0.1', 'fe80::1%lo', '::1%lo', '127.0.0.1:80']) {
    t.notOk(isLoopbackIp(ip), `${String(ip)} is not`)
  }
  const local = { ip: '127.0.0.1', host: 'localhost:3939', unresolvedForward: false }
  t.equal(opsLocality(local), 'local')
  t.equal(opsLocality({ ...local, ip: '::ffff:127.0.0.1', host: '[::1]' }), 'local')
  for (const host of ['localhost', '127.1', '0x7f.1', '2130706433', '[::1]:3939', '127.0.0.2']) {
    t.equal(opsLocality({ ...local, ip: '203.0.113.9', host }), 'remote', `a remote peer under Host ${host}`)
  }
  t.equal(opsLocality({ ...local, ip: undefined }), 'remote', 'no peer address: not local')
  t.equal(opsLocality({ ...local, unresolvedForward: true }), 'remote', 'behind a proxy mcpx does not trust: not local')
  for (const host of ['rebind.example:3939', undefined, '', 'localhost.example']) t.equal(opsLocality({ ...local, host }), 'rebound', `a loopback peer under Host ${String(host)}`)
  t.equal(opsRefusalReason('remote', 'missing', false), 'forbiddenPeer')
  t.equal(opsRefusalReason('rebound', 'missing', false), 'forbiddenHost')
  t.equal(opsRefusalReason('remote', 'missing', true), 'adminTokenMissing')
  t.equal(opsRefusalReason('rebound', 'missing', true), 'adminTokenMissing')
  t.equal(opsRefusalReason('remote', 'invalid', false), 'adminTokenInvalid')
  t.equal(opsRefusalReason('remote', 'invalid', true), 'adminTokenInvalid')
})
