/**
 * `sessions.redis` (docs/replicas.md › Surviving a Redis node): the three shapes lib/base/redis.ts
 * builds connections from, how config refuses the others, and how a target is named in logs.
 */
import t from 'tap'
import { Cluster, Redis } from 'ioredis'
import { loadConfig } from '../../lib/config/load.js'
import { McpxError } from '../../lib/base/errors.js'
import { createRedisConnection, describeRedisTarget, redisTargetKind } from '../../lib/base/redis.js'
import { parseNodeAddress as parseHostPort } from '../../lib/base/net.js'

function configError (raw: unknown): string {
  try {
    loadConfig(raw)
  } catch (err) {
    if (err instanceof McpxError && err.code === 'MCPX_ERR_CONFIG') return err.message
    throw err
  }
  return ''
}

t.test('redis/config/url-sentinel-cluster-accepted', async t => {
  t.equal(loadConfig({}).sessions.redis, 'redis://127.0.0.1:6379', 'default: the local Redis')
  t.equal(loadConfig({ sessions: { redis: 'rediss://cache:6380/2' } }).sessions.redis, 'rediss://cache:6380/2')
  const sentinel = { sentinels: ['10.0.0.1:26379', '[::1]:26380'], name: 'mymaster', db: 1 }
  t.same(loadConfig({ sessions: { store: 'redis', redis: sentinel } }).sessions.redis, sentinel)
  const cluster = { cluster: ['10.0.0.1:7000', 'redis-b:7001'] }
  t.same(loadConfig({ sessions: { store: 'redis', redis: cluster } }).sessions.redis, cluster)
  // The earlier spelling still works, and a loaded config loads again unchanged (daemon, then plugin).
  const legacy = loadConfig({ sessions: { store: 'redis', redisUrl: 'redis://10.0.0.5:6379' } })
  t.equal(legacy.sessions.redis, 'redis://10.0.0.5:6379')
  t.notOk('redisUrl' in legacy.sessions, 'redisUrl is folded into redis')
  t.same(loadConfig(legacy).sessions, legacy.sessions)
})

t.test('redis/config/bad-shapes-refused-by-path', async t => {
  t.match(configError({ sessions: { redis: 'http://cache:6379' } }), /sessions\.redis: must match pattern/)
  t.match(configError({ sessions: { redis: { sentinels: ['10.0.0.1:26379'] } } }), /sessions\.redis: must have required property 'name'/)
  t.match(configError({ sessions: { redis: { sentinels: [], name: 'm' } } }), /sessions\.redis\.sentinels: must NOT have fewer than 1 items/)
  t.match(configError({ sessions: { redis: { cluster: ['no-port'] } } }), /sessions\.redis\.cluster\.0: must match pattern/)
  t.match(configError({ sessions: { redis: { cluster: ['a:1'], name: 'x' } } }), /sessions\.redis: must NOT have additional properties \(name\)/)
  t.match(configError({ sessions: { redis: 'redis://a:1', redisUrl: 'redis://b:1' } }), /give sessions\.redis or sessions\.redisUrl .*not both/)
  // A brace in the prefix would become the keys' Cluster hash tag instead of the session id.
  t.match(configError({ sessions: { keyPrefix: 'mcpx:{x}:' } }), /sessions\.keyPrefix: must match pattern/)
})

t.test('redis/config/connections-of-each-kind-and-no-secret-in-descriptions', async t => {
  const single = createRedisConnection('redis://:hunter2@127.0.0.1:1/0')
  t.ok(single instanceof Redis && !(single instanceof Cluster), 'a URL: one Redis')
  t.equal(single.status, 'wait', 'lazy: nothing connects before connect()')
  single.disconnect()
  const sentinel = createRedisConnection({ sentinels: ['127.0.0.1:1'], name: 'm', passwordEnv: 'REDIS_PW' }, {}, { REDIS_PW: 'hunter2' })
  t.ok(sentinel instanceof Redis)
  t.same((sentinel.options as any).sentinels, [{ host: '127.0.0.1', port: 1 }])
  t.equal((sentinel.options as any).name, 'm')
  t.equal((sentinel.options as any).password, 'hunter2', 'the password comes from the named variable')
  t.equal((sentinel.options as any).failoverDetector, true, 'a +switch-master reconnects at once')
  sentinel.disconnect()
  const cluster = createRedisConnection({ cluster: ['127.0.0.1:1', '[::1]:2'] })
  t.ok(cluster instanceof Cluster, 'cluster: an ioredis Cluster')
  cluster.disconnect()
  t.throws(() => createRedisConnection({ cluster: ['127.0.0.1:1'], passwordEnv: 'MCPX_UNSET_VAR' }, {}, {}), /passwordEnv names environment variable MCPX_UNSET_VAR, which is not set/)
  t.throws(() => parseHostPort('127.0.0.1:70000'), /host:port/)
  t.same(parseHostPort('[::1]:6379'), { host: '::1', port: 6379 })
  t.notMatch(describeRedisTarget('redis://user:hunter2@cache:6379/0'), /hunter2/, 'a URL password is redacted')
  t.equal(describeRedisTarget({ sentinels: ['a:1', 'b:2'], name: 'm', passwordEnv: 'REDIS_PW' }), 'sentinel master "m" via a:1,b:2')
  t.equal(describeRedisTarget({ cluster: ['a:1'] }), 'cluster a:1')
  t.same([redisTargetKind('redis://a:1'), redisTargetKind({ sentinels: ['a:1'], name: 'm' }), redisTargetKind({ cluster: ['a:1'] })], ['single', 'sentinel', 'cluster'])
})
