/**
 * daemon/start/…: what a start costs. A process that configures no Redis never loads ioredis, and
 * one that logs JSON never loads pino-pretty (lib/base/redis.ts, lib/telemetry/log.ts load them on
 * first use); the config validator is the build's, not compiled (lib/config/validator.ts). Checked
 * in a fresh child process, through the CommonJS module cache both packages land in.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const DIST = fileURLToPath(new URL('../../', import.meta.url))

/** Runs `script` (an ES module) in a fresh node; resolves with the JSON its last stdout line holds. */
async function inChild (script: string): Promise<Record<string, unknown>> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, MCPX_LOG_FORMAT: 'json', MCPX_LOG_LEVEL: 'silent' } })
  let out = ''
  let err = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { err += chunk })
  const code = await new Promise<number | null>(resolve => child.once('close', resolve))
  if (code !== 0) throw new Error(`child exited ${code}: ${err}`)
  return JSON.parse(out.trim().split('\n').at(-1) as string) as Record<string, unknown>
}

t.test('daemon/start/unused-dependencies-not-loaded', async t => {
  const script = `
    import { createRequire } from 'node:module'
    const dist = ${JSON.stringify(DIST)}
    const loaded = name => Object.keys(createRequire(import.meta.url).cache).some(k => k.includes('/node_modules/' + name + '/'))
    const seen = () => ({ ioredis: loaded('ioredis'), pretty: loaded('pino-pretty') })
    const { buildDaemon } = await import(dist + 'server.js')
    await import(dist + 'stdio.js')
    const { loadConfig } = await import(dist + 'lib/config/load.js')
    const { configValidator } = await import(dist + 'lib/config/validator.js')
    const app = await buildDaemon(loadConfig({}), { logFormat: 'json', logLevel: 'silent' })
    await app.ready()
    const started = seen()
    await app.close()
    const { createRedisConnection } = await import(dist + 'lib/base/redis.js')
    createRedisConnection('redis://127.0.0.1:1').disconnect()
    const afterRedis = seen()
    const { prettyStream } = await import(dist + 'lib/telemetry/log.js')
    prettyStream(2)
    console.log(JSON.stringify({ started, afterRedis, afterPretty: seen(), validator: configValidator().source }))
  `
  const seen = await inChild(script)
  t.same(seen.started, { ioredis: false, pretty: false }, 'a daemon with no Redis, logging JSON: neither loaded')
  t.same(seen.afterRedis, { ioredis: true, pretty: false }, 'the first Redis connection loads ioredis')
  t.same(seen.afterPretty, { ioredis: true, pretty: true }, 'the first pretty log loads pino-pretty')
  t.equal(seen.validator, 'precompiled', 'the config validator is the build\'s')
})
