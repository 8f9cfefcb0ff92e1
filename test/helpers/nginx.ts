/**
 * nginx for the deployment tests (docs/deployment.md › Behind nginx): runs Debian's nginx binary with the SHIPPED
 * docker/nginx.conf in a temporary prefix, unprivileged-style, and stops it at teardown.
 *
 * The shipped file is a conf.d snippet (an `upstream` and a `server` block). It is used verbatim
 * except for two rewrites, each of which must match exactly once (a changed file fails loudly
 * rather than being tested half-rewritten), see {@link rewriteShippedConfig}:
 *   `server mcpx:3939;` → `server 127.0.0.1:<daemon port>;`   (the upstream address)
 *   `listen 80;`        → `listen <host>:<port>;`            (the public address)
 * It is then `include`d into a small main config of our own ({@link mainConfig}), which plays the
 * part of the nginx image's /etc/nginx/nginx.conf and holds only what a temp prefix needs: the pid
 * file, the temp paths, the error log (stderr, captured) and an access log whose format records
 * which upstream answered each request (`$upstream_addr`, `-` when nginx answered itself).
 *
 * Missing nginx: under `npm test` the tests are skipped with the command that installs it
 * ({@link NGINX_SKIP}); under CI (`CI=true`) they run and fail. `.ci/run` installs it.
 */
import { spawn } from 'node:child_process'
import { accessSync, chmodSync, constants, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Teardown } from './app.js'
import { WAIT_MS, freePort } from './daemon.js'
import { pollUntil } from './legacy.js'

/** The shipped config (this file runs as dist/test/helpers/nginx.js). */
export const SHIPPED_NGINX_CONF = fileURLToPath(new URL('../../../docker/nginx.conf', import.meta.url))

/**
 * The public address nginx listens on in the tests. 127.0.0.2 is loopback on Linux (all of
 * 127.0.0.0/8 is), yet it is none of the loopback names mcpx allows as an Origin (localhost,
 * 127.0.0.1, [::1]), so `http://127.0.0.2:<port>` plays a public origin a browser would send.
 */
export const PUBLIC_HOST = '127.0.0.2'

/** The nginx binary: /usr/sbin/nginx (Debian's; not on a non-root PATH) or `nginx` on PATH; undefined when missing. */
export function findNginx (): string | undefined {
  const candidates = ['/usr/sbin/nginx', ...(process.env.PATH ?? '').split(delimiter).filter(dir => dir !== '').map(dir => join(dir, 'nginx'))]
  for (const file of candidates) {
    try {
      accessSync(file, constants.X_OK)
      return file
    } catch {}
  }
  return undefined
}

/** The binary, looked up once. */
export const NGINX_BIN = findNginx()

/**
 * tap's `skip` option for the nginx tests: a reason when nginx is missing on a developer machine,
 * false otherwise. Under CI (`CI=true`) never a skip: the tests run and fail on the missing binary.
 */
export const NGINX_SKIP: string | false = NGINX_BIN === undefined && process.env.CI !== 'true'
  ? 'nginx is not installed: apt-get install nginx (Debian\'s package; .ci/run installs it in CI)'
  : false

/** The nginx binary. @throws Error naming the install command when nginx is missing (a failure under CI). */
export function requireNginx (): string {
  if (NGINX_BIN === undefined) throw new Error('nginx is not installed (apt-get install nginx); CI must install it (.ci/run)')
  return NGINX_BIN
}

/** Replaces the one match of `pattern` in `text`; throws when it matches zero or several times. */
function replaceOnce (text: string, pattern: RegExp, replacement: string, what: string): string {
  const count = [...text.matchAll(new RegExp(pattern.source, 'gm'))].length
  if (count !== 1) throw new Error(`docker/nginx.conf: expected exactly one ${what} (${pattern.source}), found ${count}`)
  return text.replace(new RegExp(pattern.source, 'm'), replacement)
}

/**
 * The shipped docker/nginx.conf with only its upstream server and its listen address rewritten.
 * @param text the file's text
 * @param upstream `host:port` of the mcpx daemon, e.g. `127.0.0.1:40123`
 * @param listen `host:port` nginx listens on, e.g. `127.0.0.2:40124`
 * @throws Error when the file no longer has exactly one `server mcpx:3939;` and one `listen 80;`
 */
export function rewriteShippedConfig (text: string, upstream: string, listen: string): string {
  const withUpstream = replaceOnce(text, /^(\s*)server\s+mcpx:3939;/, `$1server ${upstream};`, 'upstream server line')
  return replaceOnce(withUpstream, /^(\s*)listen\s+80;/, `$1listen ${listen};`, 'listen line')
}

/**
 * The main config that includes the site: one worker, pid, temp paths and logs inside `prefix`.
 * The access log line is `<method> <uri> <status> <upstream_addr> <upstream_status>`.
 */
export function mainConfig (prefix: string, site: string): string {
  return `# mcpx test harness (test/helpers/nginx.ts): stands in for the image's /etc/nginx/nginx.conf.
worker_processes 1;
pid ${join(prefix, 'nginx.pid')};
error_log stderr info;
events { worker_connections 256; }
http {
    default_type application/octet-stream;
    keepalive_timeout 65;
    client_body_temp_path ${join(prefix, 'client_body')};
    proxy_temp_path ${join(prefix, 'proxy')};
    fastcgi_temp_path ${join(prefix, 'fastcgi')};
    uwsgi_temp_path ${join(prefix, 'uwsgi')};
    scgi_temp_path ${join(prefix, 'scgi')};
    log_format upstreams '$request_method $request_uri $status $upstream_addr $upstream_status';
    access_log ${join(prefix, 'access.log')} upstreams;
    include ${site};
}
`
}

/** One line of the harness's access log. */
export interface AccessLine { method: string, uri: string, status: number, upstreamAddr: string, upstreamStatus: string }

/** A running nginx. */
export interface NginxProcess {
  /** `http://<host>:<port>`: the public base URL, and the origin a browser on it would send. */
  base: string
  host: string
  port: number
  /** Everything nginx wrote to stderr (its error log). */
  stderr: () => string
  /** The access log so far, parsed. */
  accessLog: () => AccessLine[]
  /** Stops nginx (SIGTERM, then SIGKILL after WAIT_MS); resolves once it exited. Idempotent. */
  stop: () => Promise<void>
}

/**
 * Starts nginx with the shipped config in front of `upstream` and waits until it accepts
 * connections. Stopped at teardown.
 * @param upstream `host:port` of the mcpx daemon
 * @param options.host the listen host (default {@link PUBLIC_HOST}); options.port (default: a free one)
 * @throws Error when nginx is missing, refuses the config, or does not listen within WAIT_MS
 */
export async function startNginx (t: Teardown, upstream: string, options: { host?: string, port?: number } = {}): Promise<NginxProcess> {
  const bin = requireNginx()
  const host = options.host ?? PUBLIC_HOST
  const port = options.port ?? await freePort(host)
  const prefix = mkdtempSync(join(tmpdir(), 'mcpx-nginx-'))
  // Run as root (CI), nginx's workers switch to `nobody`: they must reach the temp paths in here.
  chmodSync(prefix, 0o755)
  const site = join(prefix, 'mcpx.conf')
  writeFileSync(site, rewriteShippedConfig(readFileSync(SHIPPED_NGINX_CONF, 'utf8'), upstream, `${host}:${port}`))
  const conf = join(prefix, 'nginx.conf')
  writeFileSync(conf, mainConfig(prefix, site))
  const child = spawn(bin, ['-p', prefix, '-c', conf, '-e', 'stderr', '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (chunk: string) => { stderr += chunk })
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))
  let stopping: Promise<void> | undefined
  const stop = async (): Promise<void> => {
    stopping ??= (async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      // SIGTERM to the master (by its own pid): it stops its worker and exits.
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), WAIT_MS)
      await exited
      clearTimeout(timer)
    })()
    await stopping
  }
  t.teardown(stop)
  await waitForListen(host, port, exited, () => stderr)
  const accessLog = (): AccessLine[] => {
    const file = join(prefix, 'access.log')
    if (!existsSync(file)) return []
    return readFileSync(file, 'utf8').split('\n').filter(line => line !== '').map(line => {
      const [method, uri, status, upstreamAddr, upstreamStatus] = line.split(' ')
      return { method, uri, status: Number(status), upstreamAddr, upstreamStatus }
    })
  }
  return { base: `http://${host}:${port}`, host, port, stderr: () => stderr, accessLog, stop }
}

/** Resolves once a TCP connect to host:port succeeds; rejects when nginx exits first or after WAIT_MS. */
async function waitForListen (host: string, port: number, exited: Promise<void>, stderr: () => string): Promise<void> {
  let gone = false
  void exited.then(() => { gone = true })
  await pollUntil(`nginx listening on ${host}:${port}`, async () => {
    if (gone) throw new Error(`nginx exited before listening: ${stderr()}`)
    return await new Promise<boolean>(resolve => {
      const socket = connect(port, host, () => { socket.destroy(); resolve(true) })
      socket.once('error', () => resolve(false))
    })
  }, WAIT_MS)
}
