/**
 * Loaded into every test process before anything else (`.taprc` test-env `NODE_OPTIONS`, whose
 * `--import`s Node runs before those of the command line): while coverage is off, tap's
 * @tapjs/processinfo hook runs without its module loader and records no file.
 *
 * tap starts each test file with `--import=@tapjs/processinfo/import`. On Node 20 that hook calls
 * `module.register()` for a loader which Node runs on a second thread: every module the test file
 * imports is resolved and loaded through that thread, and its source is sent back so that the
 * file's line lengths are recorded (as are those of every CommonJS file, through a require hook).
 * Those records serve coverage and `tap --changed` only, and `.taprc` disables coverage. So when
 * coverage is off this drops that one `module.register()` call (every other loader registers as
 * before) and sets the hook's own exclusion pattern to match every path. Measured on 2 cores, the
 * whole suite under `npx tap`, same clone, back to back: 475 s and 817 s of CPU as tap ships,
 * 415 s and 710 s with this. With coverage on (`TAP_DISABLE_COVERAGE` not `1`) nothing changes.
 *
 * test/helpers/plain-children.ts removes this import from the `NODE_OPTIONS` that a test's own
 * children inherit.
 */
import module from 'node:module'

if (process.env.TAP_DISABLE_COVERAGE === '1') {
  // The hook's exclusion pattern (a /regexp/ string), read when its recorders load, just after this module.
  process.env._TAPJS_PROCESSINFO_EXCLUDE_ = '/./'
  const register = module.register
  const dropProcessInfo = function (this: unknown, specifier: string | URL, ...rest: unknown[]): void {
    if (String(specifier).includes('/@tapjs/processinfo/')) return
    ;(register as (...args: unknown[]) => void).call(this, specifier, ...rest)
  }
  if (typeof register === 'function') module.register = dropProcessInfo as typeof module.register
}

export {}
