/**
 * Unit tests of lib/auth/secret: a Secret never prints its value (tokens never leave mcpx, not even in logs;
 * STYLE › Secrets are a type).
 */
import t from 'tap'
import { inspect, format } from 'node:util'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import { Secret, readSecret } from '../../lib/auth/secret.js'

const VALUE = 'super-secret-value-0123456789'

t.test('auth/secret/never-printed', async t => {
  const secret = new Secret(VALUE)
  t.equal(secret.reveal(), VALUE, 'reveal() is the one way to the value')
  t.equal(JSON.stringify({ secret }), '{"secret":"[redacted]"}')
  t.equal(inspect({ secret }), '{ secret: [redacted] }')
  t.equal(`${String(secret)}`, '[redacted]')
  t.equal(format('%s %o %j', secret, secret, secret), '[redacted] [redacted] "[redacted]"')
  let logged = ''
  const sink = new Writable({ write (chunk: Buffer, _enc, done) { logged += chunk.toString(); done() } })
  pino(sink).info({ config: { clientSecret: secret } }, 'config loaded')
  t.notOk(logged.includes(VALUE), 'a pino line holding it shows no value')
  t.match(logged, /\[redacted\]/)
})

t.test('auth/secret/read-from-env-or-file', async t => {
  const dir = t.testdir({ 'secret.txt': `${VALUE}\nsecond line ignored\n`, 'empty.txt': '\n' })
  t.equal(readSecret({ env: 'S' }, 'x', { S: ` ${VALUE} ` }).reveal(), VALUE)
  t.equal(readSecret({ file: `${dir}/secret.txt` }, 'x').reveal(), VALUE)
  t.throws(() => readSecret({ env: 'S' }, 'auth.tokens[0]', {}), { code: 'MCPX_ERR_CONFIG', message: /auth\.tokens\[0\] names environment variable S/ })
  t.throws(() => readSecret({ file: `${dir}/empty.txt` }, 'x'), { code: 'MCPX_ERR_CONFIG', message: /is empty/ })
  t.throws(() => readSecret({}, 'x'), { code: 'MCPX_ERR_CONFIG' })
})
