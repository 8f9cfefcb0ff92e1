/**
 * mcpx's own identity, read once at load: `serverInfo` for both faces (the daemon and `mcpx serve`)
 * and the client identity mcpx presents to its upstreams.
 */
import { readFileSync } from 'node:fs'

/** Where package.json sits relative to this module: dist/lib/base/version.js → ../../../; lib/base/version.ts run from source → ../../. */
const PACKAGE_JSON_CANDIDATES = ['../../../package.json', '../../package.json']

function readVersion (): string {
  for (const candidate of PACKAGE_JSON_CANDIDATES) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(candidate, import.meta.url), 'utf8')) as { name?: string, version?: string }
      if (pkg.name === 'mcpx' && typeof pkg.version === 'string') return pkg.version
    } catch {
      // try the next location
    }
  }
  return '0.0.0'
}

/** mcpx's version (package.json `version`; `0.0.0` when no mcpx package.json can be found). */
export const SERVER_VERSION: string = readVersion()

/** mcpx's `serverInfo` (and the `clientInfo` it presents upstream): `{ name: 'mcpx', version }`. */
export const SERVER_INFO: Readonly<{ name: string, version: string }> = Object.freeze({ name: 'mcpx', version: SERVER_VERSION })
