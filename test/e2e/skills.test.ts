/**
 * The Skills extension (docs/skills.md; SEP-2640) end to end through real processes: one real `mcpx daemon`
 * over HTTP in both eras, and one real `mcpx serve` over stdio, each in front of two copies of
 * test/fixtures/skills-upstream (the server SDK's own `ext/skills`): `alpha` (namespaced `skill://alpha/…`)
 * (a 2026-07-28 upstream) and `beta` (a legacy-era upstream with prefix "", serving `skill://alpha/…`
 * itself, so its `pdf` collides with alpha's and its `deploy` merges in): mcpx lists skills from both eras. The official v2 client's SkillsClient lists, gets, reads (verifying sizes and
 * digests) and walks a directory through the daemon. Tests are named skills/<area>/<requirement>.
 */
import t from 'tap'
import { createHash } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ResultSchema } from '@modelcontextprotocol/sdk/types.js'
import { startDaemon, type DaemonProcess } from '../helpers/daemon.js'
import { spawnServe, type Message } from '../helpers/spawn.js'
import { modernMeta } from '../helpers/app.js'
import { pollUntil } from '../helpers/legacy.js'
import { legacyRpc, legacySession, modernRpc, neutral, openGetStream, request, tokensAuth, TOKENS, untilReady, type RawReply, type Target } from '../helpers/policy.js'

const SKILLS = fileURLToPath(new URL('../fixtures/skills-upstream.js', import.meta.url))
const EXTENSION = 'io.modelcontextprotocol/skills'
const UPSTREAMS = {
  alpha: { command: process.execPath, args: [SKILLS, '--set', 'alpha'] },
  beta: { command: process.execPath, args: [SKILLS, '--set', 'beta', '--legacy'], prefix: '' }
}
/** What `ci` sees: alpha's two skills, then beta's deploy (beta's pdf lost the collision). */
const MERGED = ['skill://alpha/pdf/SKILL.md', 'skill://alpha/review/SKILL.md', 'skill://alpha/deploy/SKILL.md']
/** `support` may not see alpha's review skill (policy); the `kit` endpoint shows no deploy. */
const CONFIG = {
  auth: tokensAuth(),
  transport: { pageSize: 2 },
  upstreams: UPSTREAMS,
  policy: { default: 'allow', rules: [{ principals: { tokens: ['support'] }, deny: { skills: ['skill://alpha/review/*'] } }] },
  servers: { kit: { tools: { allow: ['*'] }, resources: { allow: ['*'] }, skills: { allow: ['skill://alpha/*'], deny: ['skill://alpha/deploy/*'] } } }
}

let shared: Promise<DaemonProcess> | undefined
/** The one daemon of this file, started on first use (its skills are changed only by the last test). */
async function daemon (): Promise<DaemonProcess> {
  shared ??= (async () => {
    const started = await startDaemon(t, CONFIG)
    await untilReady(started.base)
    return started
  })()
  return await shared
}

/** A request in `era` (legacy: sessionless 2025-03-26). */
async function rpc (target: Target, era: 'modern' | 'legacy', id: number, method: string, params: Record<string, unknown> = {}): Promise<RawReply> {
  return era === 'modern' ? await modernRpc(target, id, method, params) : await legacyRpc(target, request(id, method, params))
}

/** Every page of skills/list, as URIs, with the pages' cursors. */
async function listAll (target: Target, era: 'modern' | 'legacy'): Promise<{ uris: string[], pages: RawReply[] }> {
  const uris: string[] = []
  const pages: RawReply[] = []
  let cursor: string | undefined
  for (let page = 0; page < 10; page++) {
    const reply = await rpc(target, era, 10 + page, 'skills/list', cursor === undefined ? {} : { cursor })
    if (reply.json?.result === undefined) throw new Error(`skills/list: ${reply.status} ${reply.text}`)
    pages.push(reply)
    uris.push(...(reply.json.result.skills as Array<{ uri: string }>).map(s => s.uri))
    cursor = reply.json.result.nextCursor
    if (cursor === undefined) break
  }
  return { uris, pages }
}

t.test('skills/wire/extension-declared-in-both-eras', async t => {
  const { base } = await daemon()
  const discover = await modernRpc({ base, token: 'ci' }, 1, 'server/discover')
  t.same(discover.json.result.capabilities.extensions, { [EXTENSION]: { directoryRead: true } }, 'server/discover declares it, with directoryRead')
  const init = await legacyRpc({ base, token: 'ci' }, request(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } }))
  t.same(init.json.result.capabilities.extensions, { [EXTENSION]: { directoryRead: true } }, 'a legacy initialize declares it too')
})

t.test('skills/list/merged-namespaced-first-wins-paged', async t => {
  const { base } = await daemon()
  for (const era of ['modern', 'legacy'] as const) {
    const { uris, pages } = await listAll({ base, token: 'ci' }, era)
    t.same(uris, MERGED, `${era}: merged in config order, namespaced, the collision's first upstream kept`)
    t.equal(pages.length, 2, `${era}: transport.pageSize 2 pages it`)
    const cursor = pages[0].json.result.nextCursor as string
    t.match(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')), { v: 1, l: 'skills', k: 'skill://alpha/review/SKILL.md' }, `${era}: mcpx's own cursor`)
    const first = pages[0].json.result
    if (era === 'modern') {
      t.equal(first.resultType, 'complete')
      t.equal(typeof first.ttlMs, 'number', 'modern: ttlMs')
      t.ok(first.cacheScope === 'public' || first.cacheScope === 'private', 'modern: cacheScope')
    } else {
      t.notOk('ttlMs' in first || 'cacheScope' in first || 'resultType' in first, 'legacy: no modern-only fields')
    }
    const pdf = first.skills[0]
    t.equal(pdf.frontmatter.description, 'Fill and merge PDF forms (alpha)', `${era}: alpha's pdf, not beta's`)
    t.same(pdf.resources.map((r: { uri: string }) => r.uri), ['skill://alpha/pdf/SKILL.md', 'skill://alpha/pdf/assets/logo.bin', 'skill://alpha/pdf/references/GUIDE.md'])
  }
  const other = await modernRpc({ base, token: 'ci' }, 2, 'tools/list', { cursor: (await listAll({ base, token: 'ci' }, 'modern')).pages[0].json.result.nextCursor })
  t.equal(other.json.error.code, -32602, "a skills cursor is refused by another list")
  const status = await (await fetch(`${base}/status.json`)).json() as { collisions: Array<Record<string, string>>, upstreams: Array<{ name: string, era?: string, skills?: number }> }
  t.same(status.collisions.filter(c => c.kind === 'skill'), [{ kind: 'skill', name: 'skill://alpha/pdf/SKILL.md', kept: 'alpha', dropped: 'beta' }], 'the collision is reported as other collisions are')
  // beta only speaks the legacy era; alpha is dual-era, so modern unless mcpx's stdio era probe timed out on a loaded machine.
  t.same(status.upstreams.map(u => [u.name, u.skills]), [['alpha', 2], ['beta', 2]], 'the status report counts what each upstream lists')
  t.equal(status.upstreams[1].era, 'legacy', 'skills listed from a legacy-era upstream too')
  const page = await (await fetch(`${base}/status`)).text()
  t.match(page, '+2 skills', 'and the status page shows it')
})

t.test('skills/routing/get-directory-and-files-reach-the-owner', async t => {
  const { base } = await daemon()
  const target = { base, token: 'ci' }
  for (const era of ['modern', 'legacy'] as const) {
    const deploy = await rpc(target, era, 3, 'skills/get', { uri: 'skill://alpha/deploy/SKILL.md' })
    t.equal(deploy.json.result.skill.frontmatter.description, 'Deploy a service', `${era}: beta's skill, by its downstream URI`)
    t.equal(deploy.json.result.skill.uri, 'skill://alpha/deploy/SKILL.md')
    const pdf = await rpc(target, era, 4, 'skills/get', { uri: 'skill://alpha/pdf/SKILL.md' })
    t.equal(pdf.json.result.skill.frontmatter.description, 'Fill and merge PDF forms (alpha)', `${era}: alpha's skill, URIs namespaced`)
    const unknown = await rpc(target, era, 5, 'skills/get', { uri: 'skill://alpha/nope/SKILL.md' })
    t.same(unknown.json.error, { code: -32602, message: 'No skill is served at skill://alpha/nope/SKILL.md' }, `${era}: an unknown skill`)
    // The directory read pages with the upstream's own cursor (the fixture's page size is 2).
    const children: string[] = []
    let cursor: string | undefined
    for (let page = 0; page < 5; page++) {
      const dir = await rpc(target, era, 6, 'resources/directory/read', { uri: 'skill://alpha/pdf', ...(cursor === undefined ? {} : { cursor }) })
      children.push(...(dir.json.result.resources as Array<{ uri: string }>).map(r => r.uri))
      cursor = dir.json.result.nextCursor
      if (cursor === undefined) break
    }
    t.same(children, ['skill://alpha/pdf/SKILL.md', 'skill://alpha/pdf/assets', 'skill://alpha/pdf/references'], `${era}: the folder's children, namespaced, every page`)
    const guide = await rpc(target, era, 7, 'resources/read', { uri: 'skill://alpha/pdf/references/GUIDE.md' })
    t.same(guide.json.result.contents, [{ uri: 'skill://alpha/pdf/references/GUIDE.md', mimeType: 'text/markdown', text: '# Guide\n\nUse the form fields.\n' }], `${era}: a file read under its downstream URI`)
  }
})

t.test('skills/digests/file-bytes-match-listed-digests', async t => {
  const { base } = await daemon()
  const listed = (await listAll({ base, token: 'ci' }, 'modern')).pages[0].json.result.skills[0].resources as Array<{ uri: string, digest: string, size: number }>
  for (const file of listed) {
    const read = await modernRpc({ base, token: 'ci' }, 8, 'resources/read', { uri: file.uri })
    const content = read.json.result.contents[0]
    const bytes = content.blob !== undefined ? Buffer.from(content.blob, 'base64') : Buffer.from(content.text, 'utf8')
    t.equal(bytes.length, file.size, `${file.uri}: size`)
    t.equal('sha256:' + createHash('sha256').update(bytes).digest('hex'), file.digest, `${file.uri}: the upstream's digest, unchanged, matches the bytes`)
  }
})

t.test('skills/client/official-v2-skills-client-verifies-through-mcpx', async t => {
  const { base } = await daemon()
  const client = new Client({ name: 'mcpx-skills-e2e', version: '0.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${TOKENS.ci}` } } }))
  t.teardown(async () => { await client.close() })
  const skills = new SkillsClient(client)
  t.equal(skills.supported, true, 'the client sees the extension')
  t.equal(skills.directoryRead, true)
  const listing = await skills.list()
  t.same(listing.skills.map(s => s.uri), MERGED, 'every page walked')
  const pdf = listing.skills[0]
  const manifest = await skills.read(pdf)
  t.equal(manifest.verified, true, 'SKILL.md: size, digest and frontmatter verified')
  t.equal(manifest.frontmatter?.name, 'pdf')
  const guide = await skills.read(pdf, 'references/GUIDE.md')
  t.equal(guide.verified, true)
  t.equal(guide.text, '# Guide\n\nUse the form fields.\n')
  const logo = await skills.read(pdf, 'assets/logo.bin')
  t.same([...logo.bytes], [0, 1, 2, 253, 254, 255], 'a binary file, verified')
  const got = await skills.get('skill://alpha/deploy/SKILL.md')
  t.equal(got.skill.frontmatter.description, 'Deploy a service')
  t.equal((await skills.read(got.skill)).verified, true, "beta's skill read through its namespaced URI")
  const dir = await skills.readDirectory('skill://alpha/pdf/references')
  t.same(dir.resources.map(r => r.uri), ['skill://alpha/pdf/references/GUIDE.md'])
})

// The official v1 client knows no skills API: a host built on it sends the extension's methods with
// the SDK's generic request() in a 2025-11-25 session, and reads the files with resources/read.
t.test('skills/client/official-v1-client-in-a-legacy-session', async t => {
  const { base } = await daemon()
  const client = new ClientV1({ name: 'mcpx-skills-v1', version: '0.0.0' })
  await client.connect(new TransportV1(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${TOKENS.ci}` } } }))
  t.teardown(async () => { await client.close() })
  t.ok((client.getServerCapabilities() as Message | undefined)?.extensions?.[EXTENSION] !== undefined, 'initialize declares the extension')
  const uris: string[] = []
  let cursor: string | undefined
  for (let page = 0; page < 10; page++) {
    const listed = await client.request({ method: 'skills/list', params: cursor === undefined ? {} : { cursor } }, ResultSchema) as Message
    t.notOk('ttlMs' in listed || 'cacheScope' in listed, 'a legacy result carries no ttlMs or cacheScope')
    uris.push(...(listed.skills as Array<{ uri: string }>).map(s => s.uri))
    cursor = listed.nextCursor
    if (cursor === undefined) break
  }
  t.same(uris, MERGED, 'the merged, namespaced list, every page walked')
  const got = await client.request({ method: 'skills/get', params: { uri: 'skill://alpha/deploy/SKILL.md' } }, ResultSchema) as Message
  t.equal(got.skill.frontmatter.description, 'Deploy a service', "beta's skill, routed to its owner")
  const manifest = got.skill.resources.find((r: { uri: string }) => r.uri === 'skill://alpha/deploy/SKILL.md') as { digest: string, size: number } | undefined
  const read = await client.readResource({ uri: 'skill://alpha/deploy/SKILL.md' })
  const bytes = Buffer.from((read.contents[0] as { text: string }).text, 'utf8')
  t.equal('sha256:' + createHash('sha256').update(bytes).digest('hex'), manifest?.digest, 'the file read through mcpx matches its listed digest')
})

t.test('skills/policy/hidden-skill-absent-byte-for-byte', async t => {
  const { base } = await daemon()
  const ci = { base, token: 'ci' }
  const support = { base, token: 'support' }
  const hidden = 'skill://alpha/review/SKILL.md'
  const unknown = 'skill://alpha/nothing/SKILL.md'
  for (const era of ['modern', 'legacy'] as const) {
    t.same((await listAll(support, era)).uris, MERGED.filter(uri => uri !== hidden), `${era}: absent from skills/list`)
    const list = await rpc(support, era, 1, 'resources/list')
    t.notOk((list.json.result.resources as Array<{ uri: string }>).some(r => r.uri === hidden), `${era}: its SKILL.md absent from resources/list`)
    t.ok((await rpc(ci, era, 1, 'resources/list')).json.result.resources.some((r: { uri: string }) => r.uri === hidden), `${era}: listed for ci`)
    const pairs: Array<[string, Record<string, unknown>, Record<string, unknown>, string, string]> = [
      ['skills/get', { uri: hidden }, { uri: unknown }, hidden, unknown],
      ['resources/directory/read', { uri: 'skill://alpha/review' }, { uri: 'skill://alpha/nothing' }, 'skill://alpha/review', 'skill://alpha/nothing'],
      ['resources/read', { uri: hidden }, { uri: unknown }, hidden, unknown]
    ]
    for (const [method, hiddenParams, unknownParams, hiddenName, unknownName] of pairs) {
      const a = await rpc(support, era, 21, method, hiddenParams)
      const b = await rpc(support, era, 22, method, unknownParams)
      t.equal(a.status, b.status, `${era} ${method}: same status`)
      t.equal(neutral(a.text, 21, hiddenName), neutral(b.text, 22, unknownName), `${era} ${method}: the hidden skill answers as an unknown one, byte for byte`)
      t.ok(a.json.error !== undefined, `${era} ${method}: an error`)
    }
  }
})

t.test('skills/servers/curated-endpoint-skills-rule', async t => {
  const { base } = await daemon()
  const kit = { base, token: 'ci', path: '/mcp/kit' }
  for (const era of ['modern', 'legacy'] as const) {
    t.same((await listAll(kit, era)).uris, ['skill://alpha/pdf/SKILL.md', 'skill://alpha/review/SKILL.md'], `${era}: the endpoint's skills rule applies`)
    const deploy = await rpc(kit, era, 2, 'skills/get', { uri: 'skill://alpha/deploy/SKILL.md' })
    t.same(deploy.json.error, { code: -32602, message: 'No skill is served at skill://alpha/deploy/SKILL.md' }, `${era}: a skill the endpoint denies is unknown there`)
  }
})

t.test('skills/upstreams/refresh-on-resources-list-changed', async t => {
  const { base } = await daemon()
  const target = { base, token: 'ci' }
  const session = await legacySession(target, '2025-06-18')
  const stream = await openGetStream(target, session)
  t.teardown(() => { stream.close() })
  // The fixture adds skill://fresh and reloads its catalog, which sends notifications/resources/list_changed.
  const publish = await legacyRpc(target, request(2, 'tools/call', { name: 'alpha__publish', arguments: { name: 'fresh' } }), session)
  t.notOk(publish.json?.result?.isError, 'published')
  await pollUntil('resources/list_changed on the session\'s stream', () => stream.messages.some(m => m.method === 'notifications/resources/list_changed'), 20_000)
  t.pass('the client is told (notifications/resources/list_changed)')
  const uris = await pollUntil('the new skill listed', async () => {
    const { uris } = await listAll(target, 'modern')
    return uris.includes('skill://alpha/fresh/SKILL.md') ? uris : undefined
  }, 20_000)
  t.same(uris, ['skill://alpha/fresh/SKILL.md', ...MERGED], 're-listed, namespaced, in the upstream\'s order (it sorts by URI)')
  const fresh = await modernRpc(target, 3, 'skills/get', { uri: 'skill://alpha/fresh/SKILL.md' })
  t.equal(fresh.json.result.skill.frontmatter.description, 'Published at runtime as fresh', 'and routed')
})

t.test('skills/stdio/serve-serves-skills-in-both-eras', async t => {
  const serve = spawnServe(t, { config: { upstreams: UPSTREAMS, policy: { default: 'allow', rules: [{ principals: { local: true }, deny: { skills: ['*/deploy/*'] } }] } } })
  const init = await serve.request({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '0' } } }, 60_000)
  t.equal(init.result.protocolVersion, '2025-06-18')
  serve.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
  const uris = await pollUntil('both upstreams listed', async () => {
    const list = await serve.request({ jsonrpc: '2.0', id: 2, method: 'skills/list', params: {} })
    const found = (list.result?.skills as Array<{ uri: string }> | undefined)?.map(s => s.uri) ?? []
    return found.length >= 2 ? found : undefined
  }, 30_000)
  t.same(uris, ['skill://alpha/pdf/SKILL.md', 'skill://alpha/review/SKILL.md'], 'legacy: merged, the local policy hides deploy')
  const modern = (id: string, method: string, params: Record<string, unknown>): Promise<Message> =>
    serve.request({ jsonrpc: '2.0', id, method, params: { ...params, _meta: modernMeta() } })
  // Once the upstreams are ready (mcpx serve may answer initialize before them, on a loaded machine).
  const discover = await modern('m0', 'server/discover', {})
  t.same(discover.result.capabilities.extensions, { [EXTENSION]: { directoryRead: true } }, 'the extension is declared')
  const list = await modern('m1', 'skills/list', {})
  t.same(list.result.skills.map((s: { uri: string }) => s.uri), uris, 'modern: the same')
  t.equal(typeof list.result.ttlMs, 'number')
  const get = await modern('m2', 'skills/get', { uri: 'skill://alpha/review/SKILL.md' })
  t.equal(get.result.skill.frontmatter.name, 'review')
  const hidden = await modern('m3', 'skills/get', { uri: 'skill://alpha/deploy/SKILL.md' })
  t.same(hidden.error, { code: -32602, message: 'No skill is served at skill://alpha/deploy/SKILL.md' }, 'hidden: as unknown')
  const read = await modern('m4', 'resources/read', { uri: 'skill://alpha/pdf/references/GUIDE.md' })
  t.equal(read.result.contents[0].uri, 'skill://alpha/pdf/references/GUIDE.md')
  t.ok(serve.lines.every(line => { try { JSON.parse(line); return true } catch { return false } }), 'stdout carries only JSON-RPC')
})
