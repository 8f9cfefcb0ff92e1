/**
 * The authorization side of `npm run bench` (scenarios 12 and 19): a JWKS served from this
 * process on 127.0.0.1 (one fetch per daemon, then cached), one RS256 `at+jwt` access token signed
 * with its key, and an in-process measure of mcpx's validation alone (lib/auth/verifier.ts with a
 * warm key cache), in µs per token. For 19, a DPoP-bound token (`cnf.jkt`) and a pool of DPoP proofs
 * (RFC 9449, ES256), one per request, made before the load so that the load generator only picks them.
 */
import { createServer } from 'node:http'
import { once } from 'node:events'
import { randomUUID } from 'node:crypto'
import { createHash } from 'node:crypto'
import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose'
import { OAuthVerifier } from '../lib/auth/verifier.js'

/** A JWKS endpoint and a long-lived token for `resource`. Close it with `close()`. */
export interface BenchIssuer { issuer: string, jwksUri: string, token: string, mint: (cnf?: { jkt: string }) => Promise<string>, close: () => void }

/** Serves one RS256 key's JWKS; signs one token (`sub` bench, scope mcp:tools, valid 1 h). */
export async function startBenchIssuer (resource: string): Promise<BenchIssuer> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  const kid = randomUUID()
  const jwks = JSON.stringify({ keys: [{ ...await exportJWK(publicKey), kid, alg: 'RS256', use: 'sig' }] })
  const server = createServer((_req, res) => { res.writeHead(200, { 'content-type': 'application/json' }).end(jwks) })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  const mint = async (cnf?: { jkt: string }): Promise<string> => {
    const now = Math.floor(Date.now() / 1000)
    return await new SignJWT({ scope: 'mcp:tools', client_id: 'bench', ...(cnf !== undefined ? { cnf } : {}) })
      .setProtectedHeader({ alg: 'RS256', kid, typ: 'at+jwt' })
      .setIssuer(issuer).setSubject('bench').setAudience(resource).setIssuedAt(now).setExpirationTime(now + 3600).setJti(randomUUID())
      .sign(privateKey)
  }
  return { issuer, jwksUri: `${issuer}/jwks`, token: await mint(), mint, close: () => { server.closeAllConnections(); server.close() } }
}

/**
 * mcpx's validation of a JWT with a warm key cache: CPU µs per token (user + system of this
 * process, all threads, so WebCrypto's thread pool counts), median of 5 rounds. CPU time, not
 * wall time: it holds on a loaded machine.
 * @returns `firstUs`: a token seen for the first time (signature and claims checked; `count / 4`
 *          distinct tokens per round); `repeatUs`: the same token again (the verdict cache), as a
 *          client sends it for every request until it refreshes it
 */
export async function verificationCostUs (bench: BenchIssuer, resource: string, count = 2000): Promise<{ firstUs: number, repeatUs: number }> {
  const silent = { trace () {}, debug () {}, info () {}, warn () {}, error () {}, fatal () {}, child () { return silent }, level: 'silent' }
  const verifier = new OAuthVerifier({ issuer: bench.issuer, audience: [resource], jwksUri: bench.jwksUri, clockToleranceMs: 30_000, jwksCooldownMs: 30_000, logger: silent as never })
  const first = await verifier.verify(bench.token)
  if (first.kind !== 'ok') throw new Error(`bench: the bench token was refused: ${first.reason}`)
  const median = async (tokens: () => Promise<string[]>): Promise<number> => {
    const rounds: number[] = []
    for (let round = 0; round < 5; round++) {
      const batch = await tokens()
      const before = process.cpuUsage()
      for (const token of batch) await verifier.verify(token)
      const used = process.cpuUsage(before)
      rounds.push((used.user + used.system) / batch.length)
    }
    return rounds.sort((a, b) => a - b)[2]
  }
  const fresh = Math.max(1, Math.floor(count / 4))
  return {
    firstUs: await median(async () => await Promise.all(Array.from({ length: fresh }, async () => await bench.mint()))),
    repeatUs: await median(async () => Array.from({ length: count }, () => bench.token))
  }
}

/** A DPoP-bound token and its proofs, one per request (scenario 19). */
export interface DpopLoad {
  /** The token, bound to the proofs' key (`cnf.jkt`). */
  token: string
  /** The next unused proof; past the pool's end it starts over (the daemon then refuses replays: errors). */
  next: () => string
  size: number
}

/**
 * Makes a DPoP-bound token from `bench` and `count` proofs for `POST url` with it (ES256; each its own
 * jti, `iat` now: configure the daemon's dpopProofMaxAge to cover the run).
 */
export async function dpopLoad (bench: BenchIssuer, url: string, count: number): Promise<DpopLoad> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true })
  const jwk = await exportJWK(publicKey)
  const token = await bench.mint({ jkt: await calculateJwkThumbprint(jwk, 'sha256') })
  const ath = createHash('sha256').update(token).digest('base64url')
  const iat = Math.floor(Date.now() / 1000)
  const proofs: string[] = []
  for (let i = 0; i < count; i += 256) {
    proofs.push(...await Promise.all(Array.from({ length: Math.min(256, count - i) }, async () =>
      await new SignJWT({ jti: randomUUID(), htm: 'POST', htu: url, iat, ath }).setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk }).sign(privateKey))))
  }
  let at = 0
  return { token, size: count, next: () => proofs[at++ % count] }
}
