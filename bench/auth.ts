/**
 * The authorization side of `npm run bench` (scenario 12): a JWKS served from this
 * process on 127.0.0.1 (one fetch per daemon, then cached), one RS256 `at+jwt` access token signed
 * with its key, and an in-process measure of mcpx's validation alone (lib/auth/verifier.ts with a
 * warm key cache), in µs per token.
 */
import { createServer } from 'node:http'
import { once } from 'node:events'
import { randomUUID } from 'node:crypto'
import { SignJWT, exportJWK, generateKeyPair } from 'jose'
import { OAuthVerifier } from '../lib/auth/verifier.js'

/** A JWKS endpoint and a long-lived token for `resource`. Close it with `close()`. */
export interface BenchIssuer { issuer: string, jwksUri: string, token: string, mint: () => Promise<string>, close: () => void }

/** Serves one RS256 key's JWKS; signs one token (`sub` bench, scope mcp:tools, valid 1 h). */
export async function startBenchIssuer (resource: string): Promise<BenchIssuer> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  const kid = randomUUID()
  const jwks = JSON.stringify({ keys: [{ ...await exportJWK(publicKey), kid, alg: 'RS256', use: 'sig' }] })
  const server = createServer((_req, res) => { res.writeHead(200, { 'content-type': 'application/json' }).end(jwks) })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  const mint = async (): Promise<string> => {
    const now = Math.floor(Date.now() / 1000)
    return await new SignJWT({ scope: 'mcp:tools', client_id: 'bench' })
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
