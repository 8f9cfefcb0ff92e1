/**
 * The operator commands as a real process (`node dist/cli.js …`), docs/operating.md › Command-line helpers and
 * Logs: every command's --help, unknown flags, `mcpx check` (table, exit code naming
 * why, duplicate resource URIs) and `mcpx tools`; cli-call-logs.test.ts has `mcpx call` and the log
 * format flags.
 */
import t from 'tap'
import { fixtureCommand } from '../helpers/fixture.js'
import { writeConfig } from '../helpers/spawn.js'
import { mcpx } from '../helpers/cli.js'

const COMMANDS = ['daemon', 'serve', 'check', 'tools', 'call']

t.test('cli/args/every-command-has-help', async t => {
  const top = await mcpx('--help')
  t.equal(top.code, 0)
  for (const command of COMMANDS) t.match(top.stdout, new RegExp(`\\n  ${command} `), `the overview lists ${command}`)
  const runs = await Promise.all(COMMANDS.map(async command => await mcpx(command, '--help')))
  for (const [i, command] of COMMANDS.entries()) {
    const run = runs[i]
    t.equal(run.code, 0, `${command} --help exits 0`)
    t.match(run.stdout, new RegExp(`^usage: mcpx ${command}`), `${command} --help prints its usage`)
    t.match(run.stdout, /--config FILE/, `${command} --help lists --config`)
  }
  const none = await mcpx()
  t.equal(none.code, 2, 'no command is a usage error')
  t.match(none.stderr, /usage: mcpx <command>/)
})

t.test('cli/args/unknown-flag-is-a-clear-error', async t => {
  const runs = await Promise.all(COMMANDS.map(async command => await mcpx(command, '--no-such-flag')))
  for (const [i, command] of COMMANDS.entries()) {
    const run = runs[i]
    t.equal(run.code, 2, `${command}: exit 2`)
    t.match(run.stderr, new RegExp(`^mcpx ${command}: Unknown option '--no-such-flag'`), `${command}: names the flag`)
    t.equal(run.stdout, '', `${command}: nothing on stdout`)
  }
  const unknown = await mcpx('frobnicate')
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /unknown command "frobnicate"/)
  const missing = await mcpx('call')
  t.equal(missing.code, 2, 'call without NAME')
  t.match(missing.stderr, /expects mcpx call NAME/)
  const value = await mcpx('check', '--config')
  t.equal(value.code, 2, 'a flag without its value')
  t.match(value.stderr, /--config/)
})

t.test('cli/check/table-and-exit-code', async t => {
  const good = writeConfig(t, { upstreams: { echo: fixtureCommand(), legacy: fixtureCommand('--era', 'legacy') } })
  const ok = await mcpx('check', '--config', good)
  t.equal(ok.code, 0, `all ready: exit 0 (${ok.stderr})`)
  const lines = ok.stdout.trim().split('\n')
  t.match(lines[0], /^UPSTREAM +STATE +ERA +REVISION +TOOLS +PROMPTS +RESOURCES +TARGET$/)
  t.match(lines[1], /^echo +ready +(modern|legacy) +20\d\d-\d\d-\d\d +\d+ +1 +\d+ +/)
  t.match(lines[2], /^legacy +ready +legacy +20\d\d-\d\d-\d\d +\d+ +1 +\d+ +/)
  t.match(ok.stdout, /duplicate resource URI fixture:\/\/\S+: listed by echo, legacy \(echo keeps it\)/, 'duplicate resource URIs are shown')

  const json = await mcpx('check', '--config', good, '--json')
  const report = JSON.parse(json.stdout) as { ok: boolean, rows: Array<{ name: string, tools: number }> }
  t.equal(report.ok, true)
  t.same(report.rows.map(r => r.name), ['echo', 'legacy'])
  t.ok(report.rows[0].tools > 5, 'tools counted')

  const bad = writeConfig(t, { upstreams: { echo: fixtureCommand(), gone: { command: '/nonexistent/mcp-server' } } })
  const failed = await mcpx('check', '--config', bad)
  t.equal(failed.code, 1, 'an upstream down: exit 1')
  t.match(failed.stdout, /\ngone +down +- +- +0 +0 +0 +\/nonexistent\/mcp-server/)
  t.match(failed.stderr, /mcpx check: upstream gone is down: .*ENOENT/, 'names why')

  const invalid = writeConfig(t, { upstreams: { x: { command: 5 } } })
  const refused = await mcpx('check', '--config', invalid)
  t.equal(refused.code, 1, 'an invalid config: exit 1')
  t.match(refused.stderr, /invalid config:\n {2}upstreams\.x\.command: must be string/)
  t.equal(refused.stdout, '')
})

t.test('cli/tools/merged-catalogue', async t => {
  const config = writeConfig(t, { upstreams: { a: fixtureCommand(), b: fixtureCommand('--era', 'legacy') } })
  const json = await mcpx('tools', '--config', config, '--json')
  t.equal(json.code, 0, json.stderr)
  const tools = JSON.parse(json.stdout) as Array<{ name: string, inputSchema: unknown }>
  const names = tools.map(tool => tool.name)
  t.ok(names.includes('a__echo') && names.includes('b__echo'), 'names are prefixed as a client sees them')
  t.ok(tools.every(tool => typeof tool.inputSchema === 'object'), 'tools are verbatim')
  const table = await mcpx('tools', '--config', config)
  t.match(table.stdout, /^TOOL +DESCRIPTION\n/)
  t.match(table.stdout, /\na__echo +Echoes text\n/)

  const server = await mcpx('tools', '--config', config, '--server', 'team')
  t.equal(server.code, 2, '--server without a `servers` config')
  t.match(server.stderr, /--server "team": this config has no `servers`/)
})

t.test('cli/tools/one-curated-endpoint', async t => {
  const config = writeConfig(t, {
    upstreams: { a: fixtureCommand(), b: fixtureCommand('--era', 'legacy') },
    servers: { team: { tools: { allow: ['a__*'], deny: ['a__crash'] }, rename: { a__echo: 'say' }, override: { a__slow: { description: 'Takes its time.' } } } }
  })
  const json = await mcpx('tools', '--config', config, '--server', 'team', '--json')
  t.equal(json.code, 0, json.stderr)
  const tools = JSON.parse(json.stdout) as Array<{ name: string, description?: string }>
  const names = tools.map(tool => tool.name)
  t.ok(names.includes('say') && !names.includes('a__echo'), 'renamed: only the exposed name')
  t.ok(names.every(name => name === 'say' || (name.startsWith('a__') && name !== 'a__crash')), `only the allowed tools, minus the denied: ${names.join(', ')}`)
  t.equal(tools.find(tool => tool.name === 'a__slow')?.description, 'Takes its time.', 'overridden')
  const unknown = await mcpx('tools', '--config', config, '--server', 'billing')
  t.equal(unknown.code, 2, 'an unknown endpoint: exit 2')
  t.match(unknown.stderr, /--server "billing": no such curated endpoint; config\.servers has "team"/)
})

