/**
 * V8's allocation-site pretenuring, turned off for mcpx's own processes (`mcpx daemon`, `mcpx serve`).
 *
 * V8 watches how many objects from each allocation site survive a young-generation GC (a scavenge);
 * past ~85 % it "pretenures" the site: its objects are then allocated straight in the old
 * generation. A scavenge never collects the old generation, and treats every old object's pointers
 * into the young one as live. So a pretenured object made for one request (a closure's context, a
 * call's options) keeps that request's young objects alive after the request is done: its
 * HTTP request and reply, its context, its upstream call. They survive the scavenge, are promoted,
 * and wait for the next major GC. More sites then see high survival and are pretenured too.
 *
 * Measured on the modern `tools/call` of the bench (one connection, one call at a time, `node
 * --trace-gc-nvp`): each scavenge promoted ~2.0–2.4 MB, about 10 kB of every call since the last
 * one (99.5 % of what survived), and `--trace-pretenuring-statistics` showed a cascade of sites
 * going to "tenure" at 100 % survival. With pretenuring off, ~0.6 MB (docs/benchmarks.md ›
 * Where the time goes). Requests are short-lived by nature, which is the case the
 * heuristic gets wrong here.
 *
 * Only the `mcpx` command calls this (cli.ts), never the Fastify plugin: a host application's heap
 * is its own to tune. `node --allocation-site-pretenuring dist/cli.js …` keeps V8's default.
 */
import { setFlagsFromString } from 'node:v8'

/**
 * Turns V8's allocation-site pretenuring off for this process, unless the node command line set
 * `--allocation-site-pretenuring` or its negation itself. Call once, before the server's modules
 * load. Never throws; a V8 that does not know the flag says so on stderr (never stdout).
 */
export function disablePretenuring (execArgv: readonly string[] = process.execArgv): void {
  if (execArgv.some(arg => arg.includes('allocation-site-pretenuring') || arg.includes('allocation_site_pretenuring'))) return
  setFlagsFromString('--no-allocation-site-pretenuring')
}
