/**
 * A DPoP client for the tests (RFC 9449), made of jose: a key pair, proofs for any request (good
 * ones, and each kind of bad one), and DPoP-bound access tokens from the test authorization server
 * (oidc-provider with `features.dPoP`, test/helpers/oauth.ts startAuthServer({ dpop: true })).
 */
import { createHash, randomUUID } from 'node:crypto'
import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose'
import type { AuthServer, TestClient } from './oauth.js'

/** A client's DPoP key: the private key that signs proofs, its public JWK, and its RFC 7638 thumbprint (`cnf.jkt`). */
export interface DpopKey { privateKey: CryptoKey, publicJwk: JWK, jkt: string, alg: string }

/** A fresh ES256 (or `alg`) DPoP key. */
export async function newDpopKey (alg = 'ES256'): Promise<DpopKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
  const publicJwk = await exportJWK(publicKey)
  return { privateKey, publicJwk, jkt: await calculateJwkThumbprint(publicJwk, 'sha256'), alg }
}

/** `ath` of an access token: base64url SHA-256 of its text (RFC 9449 §4.2). */
export function athOf (accessToken: string): string {
  return createHash('sha256').update(accessToken).digest('base64url')
}

/** What a proof says; every field has a good default, a test changes one to make a bad proof. */
export interface ProofOptions {
  htm: string
  htu: string
  /** The access token it goes with (`ath`); none at the token endpoint. */
  accessToken?: string
  /** `iat`, seconds since the epoch; default now. */
  iat?: number
  jti?: string
  /** Header `typ`; default `dpop+jwt`. */
  typ?: string
  /** Claims replacing the computed ones (e.g. a wrong `ath`). */
  claims?: Record<string, unknown>
  /** Sign with this key while the header names `key`'s JWK (a bad signature). */
  signWith?: CryptoKey
}

/** A DPoP proof JWT (RFC 9449 §4.2) by `key`. */
export async function makeProof (key: DpopKey, options: ProofOptions): Promise<string> {
  const claims: Record<string, unknown> = {
    jti: options.jti ?? randomUUID(),
    htm: options.htm,
    htu: options.htu,
    iat: options.iat ?? Math.floor(Date.now() / 1000),
    ...(options.accessToken !== undefined ? { ath: athOf(options.accessToken) } : {}),
    ...options.claims
  }
  return await new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, typ: options.typ ?? 'dpop+jwt', jwk: key.publicJwk })
    .sign(options.signWith ?? key.privateKey)
}

/**
 * A DPoP-bound access token from the test authorization server: client credentials for `resource`,
 * with a proof of `key` at its token endpoint (RFC 9449 §5). JWT unless the client is `opaque`.
 * @throws when the server issues no DPoP token
 */
export async function dpopToken (as: AuthServer, client: TestClient, key: DpopKey, options: { resource: string, scope?: string }): Promise<string> {
  const url = `${as.issuer}/token`
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`,
      dpop: await makeProof(key, { htm: 'POST', htu: url })
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource: options.resource, scope: options.scope ?? 'mcp:tools' })
  })
  const body = await response.json() as { access_token?: string, token_type?: string, error?: string, error_description?: string }
  if (body.access_token === undefined || body.token_type !== 'DPoP') throw new Error(`token endpoint: HTTP ${response.status} ${body.token_type ?? ''} ${body.error ?? ''} ${body.error_description ?? ''}`)
  return body.access_token
}
