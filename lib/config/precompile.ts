/**
 * `npm run build`'s last step (`node dist/lib/config/precompile.js`): writes the config's
 * precompiled validator beside lib/config/validator.ts's compiled module (see there).
 */
import { PRECOMPILED_FILE, writePrecompiledValidator } from './validator.js'

writePrecompiledValidator()
process.stderr.write(`mcpx: wrote ${PRECOMPILED_FILE}\n`)
