/**
 * The Skills extension (docs/skills.md; SEP-2640) through mcpx's HTTP face (`fastify.inject`), with real
 * upstream processes: test/fixtures/skills-upstream as `alpha` (2026-07-28) and `beta` (legacy era, prefix
 * "") behind one app with a curated endpoint, and, in a second app, the echo fixture, which does not
 * declare the extension. The same rules through a real daemon and `mcpx serve`: test/e2e/skills.test.ts.
 * Tests are named skills/<area>/<requirement>.
 */
import t from 'tap'
import { createHash } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { build, legacyHeaders, modernHeaders, modernMeta } from '../helpers/app.js'
import { neutral } from '../helpers/policy.js'

const SKILLS = fileURLToPath(new URL('../fixtures/skills-upstream.js', import.meta.url))
const EXTENSION = 'io.modelcontextprotocol/skills'

let nextId = 1

/** One request in `era` on `url` (legacy: sessionless 2025-03-26); the status, raw body and parsed body. */
async function rpc (app: FastifyInstance, era: 'modern' | 'legacy', method: string, params: Record<string, unknown> = {}, url = '/mcp'): Promise<{ id: number, status: number, text: string, body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const id = nextId++
  const modern = era === 'modern'
  const res = await app.inject({
    method: 'POST',
    url,
    headers: modern ? modernHeaders(method, method === 'resources/read' ? params.uri as string : undefined, { accept: 'application/json' }) : legacyHeaders({ 'mcp-protocol-version': '2025-03-26' }),
    payload: { jsonrpc: '2.0', id, method, params: modern ? { ...params, _meta: modernMeta() } : params }
  })
  return { id, status: res.statusCode, text: res.body, body: res.json() }
}

t.test('skills/http/two-upstreams-behind-one-app', async t => {
  const app = await build(t, {
    upstreams: {
      alpha: { command: process.execPath, args: [SKILLS, '--set', 'alpha'] },
      beta: { command: process.execPath, args: [SKILLS, '--set', 'beta', '--legacy'], prefix: '' }
    },
    servers: { kit: { skills: { allow: ['*'], deny: ['*/deploy/*'] }, resources: { allow: ['*'] } } }
  })

  t.test('skills/wire/extension-declared-in-both-eras', async t => {
    const discover = await rpc(app, 'modern', 'server/discover')
    t.same(discover.body.result.capabilities.extensions, { [EXTENSION]: { directoryRead: true } }, 'server/discover declares it, with directoryRead')
    const init = await app.inject({
      method: 'POST',
      url: '/mcp',
      headers: legacyHeaders({ accept: 'application/json' }),
      payload: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } } }
    })
    t.same(init.json().result.capabilities.extensions, { [EXTENSION]: { directoryRead: true } }, 'a legacy initialize declares it too')
  })

  t.test('skills/routing/get-directory-and-files-reach-the-owner', async t => {
    for (const era of ['modern', 'legacy'] as const) {
      const deploy = await rpc(app, era, 'skills/get', { uri: 'skill://alpha/deploy/SKILL.md' })
      t.equal(deploy.body.result.skill.frontmatter.description, 'Deploy a service', `${era}: beta's skill, by its downstream URI`)
      t.equal(deploy.body.result.skill.uri, 'skill://alpha/deploy/SKILL.md')
      const pdf = await rpc(app, era, 'skills/get', { uri: 'skill://alpha/pdf/SKILL.md' })
      t.equal(pdf.body.result.skill.frontmatter.description, 'Fill and merge PDF forms (alpha)', `${era}: alpha's skill, URIs namespaced`)
      const unknown = await rpc(app, era, 'skills/get', { uri: 'skill://alpha/nope/SKILL.md' })
      t.same(unknown.body.error, { code: -32602, message: 'No skill is served at skill://alpha/nope/SKILL.md' }, `${era}: an unknown skill`)
      // The directory read pages with the upstream's own cursor (the fixture's page size is 2).
      const children: string[] = []
      let cursor: string | undefined
      for (let page = 0; page < 5; page++) {
        const dir = await rpc(app, era, 'resources/directory/read', { uri: 'skill://alpha/pdf', ...(cursor === undefined ? {} : { cursor }) })
        children.push(...(dir.body.result.resources as Array<{ uri: string }>).map(r => r.uri))
        cursor = dir.body.result.nextCursor
        if (cursor === undefined) break
      }
      t.same(children, ['skill://alpha/pdf/SKILL.md', 'skill://alpha/pdf/assets', 'skill://alpha/pdf/references'], `${era}: the folder's children, namespaced, every page`)
      const guide = await rpc(app, era, 'resources/read', { uri: 'skill://alpha/pdf/references/GUIDE.md' })
      t.same(guide.body.result.contents, [{ uri: 'skill://alpha/pdf/references/GUIDE.md', mimeType: 'text/markdown', text: '# Guide\n\nUse the form fields.\n' }], `${era}: a file read under its downstream URI`)
    }
  })

  t.test('skills/digests/file-bytes-match-listed-digests', async t => {
    const listed = (await rpc(app, 'modern', 'skills/list')).body.result.skills[0].resources as Array<{ uri: string, digest: string, size: number }>
    t.ok(listed.length > 1, `${listed.length} files listed`)
    for (const file of listed) {
      const read = await rpc(app, 'modern', 'resources/read', { uri: file.uri })
      const content = read.body.result.contents[0]
      const bytes = content.blob !== undefined ? Buffer.from(content.blob, 'base64') : Buffer.from(content.text, 'utf8')
      t.equal(bytes.length, file.size, `${file.uri}: size`)
      t.equal('sha256:' + createHash('sha256').update(bytes).digest('hex'), file.digest, `${file.uri}: the upstream's digest, unchanged, matches the bytes`)
    }
  })

  t.test('skills/http/methods-served-in-both-eras', async t => {
    for (const era of ['modern', 'legacy'] as const) {
      const list = await rpc(app, era, 'skills/list')
      t.equal(list.status, 200)
      t.same(list.body.result.skills.map((s: { uri: string }) => s.uri), ['skill://alpha/pdf/SKILL.md', 'skill://alpha/review/SKILL.md', 'skill://alpha/deploy/SKILL.md'], `${era}: merged, namespaced, first wins`)
      t.equal('ttlMs' in list.body.result, era === 'modern', `${era}: ttlMs on 2026-07-28 only`)
      const get = await rpc(app, era, 'skills/get', { uri: 'skill://alpha/review/SKILL.md' })
      t.same(get.body.result.skill.resources.map((r: { uri: string }) => r.uri), ['skill://alpha/review/SKILL.md'], `${era}: skills/get, namespaced`)
      const dir = await rpc(app, era, 'resources/directory/read', { uri: 'skill://alpha/pdf/references' })
      t.same(dir.body.result.resources, [{ uri: 'skill://alpha/pdf/references/GUIDE.md', name: 'GUIDE.md', mimeType: 'text/markdown', size: 30 }], `${era}: directory read`)
      const missing = await rpc(app, era, 'skills/get', {})
      t.equal(missing.body.error.code, -32602, `${era}: skills/get without uri`)
      const cursor = await rpc(app, era, 'skills/list', { cursor: 'not-a-cursor!' })
      t.equal(cursor.body.error.code, -32602, `${era}: a cursor mcpx did not issue`)
    }
  })

  t.test('skills/http/endpoint-hides-skill-as-unknown', async t => {
    for (const era of ['modern', 'legacy'] as const) {
      const list = await rpc(app, era, 'skills/list', {}, '/mcp/kit')
      t.same(list.body.result.skills.map((s: { uri: string }) => s.uri), ['skill://alpha/pdf/SKILL.md', 'skill://alpha/review/SKILL.md'])
      const hidden = await rpc(app, era, 'skills/get', { uri: 'skill://alpha/deploy/SKILL.md' }, '/mcp/kit')
      const unknown = await rpc(app, era, 'skills/get', { uri: 'skill://alpha/none/SKILL.md' }, '/mcp/kit')
      t.equal(hidden.status, unknown.status, `${era}: same status (${hidden.status})`)
      t.equal(neutral(hidden.text, hidden.id, 'skill://alpha/deploy/SKILL.md'), neutral(unknown.text, unknown.id, 'skill://alpha/none/SKILL.md'), `${era}: same bytes`)
      const file = await rpc(app, era, 'resources/read', { uri: 'skill://alpha/deploy/SKILL.md' }, '/mcp/kit')
      const none = await rpc(app, era, 'resources/read', { uri: 'skill://alpha/none/SKILL.md' }, '/mcp/kit')
      t.equal(neutral(file.text, file.id, 'skill://alpha/deploy/SKILL.md'), neutral(none.text, none.id, 'skill://alpha/none/SKILL.md'), `${era}: its file reads as a missing one`)
    }
  })
})

t.test('skills/http/no-extension-without-a-declaring-upstream', async t => {
  const app = await build(t)
  const discover = await rpc(app, 'modern', 'server/discover')
  t.notOk(EXTENSION in (discover.body.result.capabilities.extensions ?? {}), 'not declared')
  for (const era of ['modern', 'legacy'] as const) {
    for (const method of ['skills/list', 'skills/get', 'resources/directory/read']) {
      const reply = await rpc(app, era, method, { uri: 'skill://x/SKILL.md' })
      t.same(reply.body.error, { code: -32601, message: `Method not found: ${method}` }, `${era} ${method}: -32601`)
      t.equal(reply.status, era === 'modern' ? 404 : 200, `${era} ${method}: status`)
    }
  }
})
