/**
 * Holds one process.nextTick entry as soon as it is imported (./tick-shape.ts). cli.ts imports it
 * first, so that it runs before any other module loads: held later, after the server's modules had
 * loaded, the entry was measured on maps outside V8's transition tree (no back pointer), and held
 * nothing the next entries use.
 */
import { keepTickObjectShape } from './tick-shape.js'

keepTickObjectShape()
