/**
 * The operator commands as a real process (`node dist/cli.js …`), docs/operating.md › Command-line helpers and
 * Logs, part 2 (cli.test.ts has --help, flags, check and tools): `mcpx call`, and the
 * log format flags (pretty lines where asked; `mcpx serve` keeps stdout pure MCP whatever the format).
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { fixtureCommand } from '../helpers/fixture.js'
import { CLI_PATH, writeConfig } from '../helpers/spawn.js'
import { mcpx, CLI_WAIT_MS as WAIT_MS } from '../helpers/cli.js'
import { freePort } from '../helpers/daemon.js'

t.test('cli/call/one-tool-call', async t => {
  const config = writeConfig(t, { upstreams: { echo: fixtureCommand() } })
  const ok = await mcpx('call', 'echo', '--args', '{"text":"hello from cli"}', '--config', config)
  t.equal(ok.code, 0, ok.stderr)
  t.match(JSON.parse(ok.stdout), { content: [{ type: 'text', text: 'hello from cli' }] })
  const toolError = await mcpx('call', 'fail', '--config', config)
  t.equal(toolError.code, 1, 'isError: exit 1')
  t.match(JSON.parse(toolError.stdout), { isError: true })
  const unknown = await mcpx('call', 'nope', '--config', config)
  t.equal(unknown.code, 1)
  t.match(unknown.stderr, /mcpx call: nope failed: -32602 Unknown tool: nope/)
  const badArgs = await mcpx('call', 'echo', '--args', '[1]', '--config', config)
  t.equal(badArgs.code, 2)
  t.match(badArgs.stderr, /--args must be a JSON object/)
})

t.test('cli/logs/format-flags', async t => {
  const config = writeConfig(t, { upstreams: { echo: fixtureCommand() } })
  const badFormat = await mcpx('serve', '--config', config, '--log-format', 'xml')
  t.equal(badFormat.code, 1)
  t.match(badFormat.stderr, /log format must be json or pretty, got "xml"/)
  const badLevel = await mcpx('daemon', '--config', config, '--log-level', 'loud')
  t.equal(badLevel.code, 1)
  t.match(badLevel.stderr, /log level must be one of/)

  // mcpx serve, pretty, debug: stdout still carries only MCP; the readable lines are on stderr.
  const serve = spawn(process.execPath, [CLI_PATH, 'serve', '--config', config, '--log-format', 'pretty', '--log-level', 'debug'], { stdio: ['pipe', 'pipe', 'pipe'] })
  t.teardown(() => { if (serve.exitCode === null) serve.kill('SIGKILL') })
  let stdout = ''
  let stderr = ''
  serve.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  serve.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  serve.stdin.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }) + '\n')
  await once(serve, 'exit')
  const lines = stdout.trim().split('\n')
  t.equal(lines.length, 1, 'one line on stdout: the answer')
  t.match(JSON.parse(lines[0]), { jsonrpc: '2.0', id: 1, result: { protocolVersion: '2025-06-18' } })
  t.match(stderr, /\] INFO \(mcpx\): serving MCP on stdio/, 'pino-pretty lines on stderr')
  t.notMatch(stderr, /^\{"level"/m, 'no JSON lines when pretty')

  // mcpx daemon, pretty: readable lines on stdout.
  const port = await freePort()
  const daemonConfig = writeConfig(t, { daemon: { address: `127.0.0.1:${port}` }, upstreams: { echo: fixtureCommand() } })
  const daemon = spawn(process.execPath, [CLI_PATH, 'daemon', '--config', daemonConfig, '--log-format', 'pretty'], { stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { if (daemon.exitCode === null) daemon.kill('SIGKILL') })
  let out = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line: ${out}`)), WAIT_MS)
    daemon.stdout.on('data', (chunk: Buffer) => { out += chunk.toString(); if (out.includes('mcpx daemon ready')) { clearTimeout(timer); resolve() } })
  })
  t.match(out, /\] INFO \(mcpx\): mcpx daemon ready/, 'a readable ready line')
  daemon.kill('SIGTERM')
  t.equal((await once(daemon, 'exit'))[0], 0)
})
