/**
 * Loaded into every test process before the test file (`.taprc` node-arg `--import`): the processes
 * a test starts (`mcpx daemon`, `mcpx serve`, fixture upstreams, the everything server, npm) run as
 * they do in production, without tap's @tapjs/processinfo hook.
 *
 * tap starts each test file with `NODE_OPTIONS=--import=…/@tapjs/processinfo/…/import.mjs`, and
 * that hook wraps `child_process` spawning (the process-on-spawn package) so that EVERY process
 * spawned below it gets the hook again, whatever env the spawner passes (an explicit
 * `NODE_OPTIONS: ''` included, and mcpx's own upstream children, whose env is the SDK's default
 * environment). In each node process the hook runs the module loader on a second thread, enables
 * source maps, and at exit looks up the sources of every file it loaded and writes a JSON record
 * under .tap/processinfo: measured here, a daemon with one fixture upstream took ~50 % more CPU
 * to start and stop (2.7 s against 1.8 s) and ~0.5 s longer to exit. Those records serve coverage
 * only, and `.taprc` disables coverage: so when coverage is off this drops the hook from what this
 * process spawns. The test process itself keeps it (tap records it). With coverage on
 * (`TAP_DISABLE_COVERAGE` not `1`), nothing changes.
 */

/** process-on-spawn's shared state (its documented singleton on `global`): the spawn listeners it runs. */
const SPAWN_HOOKS = Symbol.for('process-on-spawn@*:singletonId')

if (process.env.TAP_DISABLE_COVERAGE === '1') {
  const state = (globalThis as Record<symbol, unknown>)[SPAWN_HOOKS] as { listeners?: unknown[] } | undefined
  if (Array.isArray(state?.listeners)) state.listeners.splice(0)
  // tap's hook, and test/helpers/no-processinfo-loader.ts (which .taprc puts in NODE_OPTIONS)
  const options = (process.env.NODE_OPTIONS ?? '')
    .replace(/"?--(?:import|loader|experimental-loader)[= ]\S*(?:@tapjs[/\\]processinfo|test[/\\]helpers[/\\]no-processinfo-loader)\S*"?/g, '')
    .trim()
  if (options === '') delete process.env.NODE_OPTIONS
  else process.env.NODE_OPTIONS = options
}

export {}
