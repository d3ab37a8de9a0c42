import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { z } from 'zod';
import { asymmetricAlgorithms } from '../config.js';

const Discovery = z.object({ issuer: z.string(), jwks_uri: z.url() });

export interface TokenVerifierOptions {
  /** The issuer; its metadata lives at `{issuer}/.well-known/openid-configuration`. */
  issuer: () => string;
  audience: string;
  algorithms: string[];
  personalnummerClaim: string;
  /** How long a fetched key set is trusted before an unknown `kid` may fetch it again. */
  jwksCooldownMs?: number;
}

export interface VerifiedToken {
  personalnummer: number;
  expiresAt: number;
}

export class TokenError extends Error {}

/**
 * Verifies bearer JWTs against an OIDC issuer: metadata and key set are discovered once and
 * cached; jose fetches the key set again when a token names a `kid` it does not know.
 */
export function createTokenVerifier(options: TokenVerifierOptions) {
  // loadConfig refuses symmetric algorithms; filtering again keeps a programmatic caller from pinning HS256.
  const algorithms = options.algorithms.filter((a) => asymmetricAlgorithms.has(a));
  if (algorithms.length === 0) throw new Error('OIDC_ALGORITHMS must name at least one asymmetric algorithm');
  let keys: Promise<{ issuer: string; jwks: ReturnType<typeof createRemoteJWKSet> }> | undefined;

  const discover = async () => {
    const issuer = options.issuer().replace(/\/$/, '');
    const response = await fetch(`${issuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(5000) });
    if (!response.ok) throw new Error(`OIDC discovery answered ${response.status}`);
    const metadata = Discovery.parse(await response.json());
    if (metadata.issuer.replace(/\/$/, '') !== issuer) throw new Error('OIDC discovery names another issuer');
    return {
      issuer: metadata.issuer,
      jwks: createRemoteJWKSet(new URL(metadata.jwks_uri), { cooldownDuration: options.jwksCooldownMs ?? 30_000 }),
    };
  };

  return async function verify(token: string): Promise<VerifiedToken> {
    keys ??= discover().catch((error) => { keys = undefined; throw error; });
    const { issuer, jwks } = await keys;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, jwks, {
        issuer, audience: options.audience, algorithms, requiredClaims: ['exp'],
      }));
    } catch (error) {
      throw new TokenError((error as Error).message);
    }
    const raw = payload[options.personalnummerClaim];
    const personalnummer = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
    if (typeof personalnummer !== 'number' || !Number.isSafeInteger(personalnummer) || personalnummer <= 0) {
      throw new TokenError(`claim ${options.personalnummerClaim} is missing or not a number`);
    }
    return { personalnummer, expiresAt: payload.exp! * 1000 };
  };
}
