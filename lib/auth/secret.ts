/**
 * Secrets are a type, not a string (STYLE › The new areas). A {@link Secret} holds a token or a
 * client secret; `toJSON`, `toString` and Node's `inspect` all print `[redacted]`, so a log line,
 * an error message or `/readyz` that embeds one by accident shows nothing. The value is read only
 * through {@link Secret.reveal}, at the one place it is sent (a header, a form body, a comparison).
 */
import { createHash } from 'node:crypto'
import { inspect } from 'node:util'
import { readFileSync } from 'node:fs'
import { McpxError } from '../base/errors.js'

/** What a Secret prints as, everywhere. */
export const REDACTED = '[redacted]'

/** A secret string. Never throws; printing it in any way yields `[redacted]`. */
export class Secret {
  readonly #value: string

  /** @param value the secret text (a token, a client secret) */
  constructor (value: string) {
    this.#value = value
  }

  /** The secret text. Call it only where the secret is used, never to log or format. */
  reveal (): string {
    return this.#value
  }

  toJSON (): string {
    return REDACTED
  }

  toString (): string {
    return REDACTED
  }

  [inspect.custom] (): string {
    return REDACTED
  }
}

/**
 * Reads a secret from an environment variable or a file (the first line, trimmed).
 * @param source.env name of the environment variable; @param source.file path of the file
 * @param what the config path, for the error message (e.g. `auth.tokens[0]`)
 * @returns the Secret
 * @throws McpxError MCPX_ERR_CONFIG when neither is given, the variable is unset or empty, or the
 *         file cannot be read or is empty. The message names the variable or file, never the value.
 */
export function readSecret (source: { env?: string, file?: string }, what: string, env: NodeJS.ProcessEnv = process.env): Secret {
  if (source.env !== undefined) {
    const value = env[source.env]?.trim()
    if (value === undefined || value === '') throw new McpxError('MCPX_ERR_CONFIG', `mcpx: ${what} names environment variable ${source.env}, which is not set or empty`)
    return new Secret(value)
  }
  if (source.file !== undefined) {
    let text: string
    try {
      text = readFileSync(source.file, 'utf8')
    } catch (cause) {
      throw new McpxError('MCPX_ERR_CONFIG', `mcpx: cannot read ${what} file ${source.file}: ${(cause as Error).message}`, { cause })
    }
    const value = text.split('\n')[0].trim()
    if (value === '') throw new McpxError('MCPX_ERR_CONFIG', `mcpx: ${what} file ${source.file} is empty`)
    return new Secret(value)
  }
  throw new McpxError('MCPX_ERR_CONFIG', `mcpx: ${what} needs an environment variable or a file`)
}

/** Digests of secrets, by Secret object: a caller's token object lives as long as its verdict is remembered, so one hash per token. */
const DIGESTS = new WeakMap<Secret, string>()

/**
 * SHA-256 of a secret's text, hex (64 characters): a key that stands for a token in a cache (the
 * upstream token-exchange and ID-JAG caches) without the token ever being a key. Memoised per
 * Secret object. Never throws.
 */
export function secretDigest (secret: Secret): string {
  let digest = DIGESTS.get(secret)
  if (digest === undefined) DIGESTS.set(secret, digest = createHash('sha256').update(secret.reveal(), 'utf8').digest('hex'))
  return digest
}
