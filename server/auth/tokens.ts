import { createRemoteJWKSet, customFetch, jwtVerify, type JWTPayload } from 'jose';
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

const VERIFIED_TOKENS_KEPT = 5000;

/**
 * Verifies bearer JWTs against an OIDC issuer: metadata and key set are discovered once and
 * cached; jose fetches the key set again when a token names a `kid` it does not know.
 */
export function createTokenVerifier(options: TokenVerifierOptions) {
  // loadConfig refuses symmetric algorithms; filtering again keeps a programmatic caller from pinning HS256.
  const algorithms = options.algorithms.filter((a) => asymmetricAlgorithms.has(a));
  if (algorithms.length === 0) throw new Error('OIDC_ALGORITHMS must name at least one asymmetric algorithm');
  let keys: Promise<{ issuer: string; jwks: ReturnType<typeof createRemoteJWKSet> }> | undefined;
  // Counts fetches of the key set: a token checked against an older set is checked again, so a
  // key the issuer withdrew stops working as soon as the set is fetched anew.
  let keySetGeneration = 0;

  const discover = async () => {
    const issuer = options.issuer().replace(/\/$/, '');
    const response = await fetch(`${issuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(5000) });
    if (!response.ok) throw new Error(`OIDC discovery answered ${response.status}`);
    const metadata = Discovery.parse(await response.json());
    if (metadata.issuer.replace(/\/$/, '') !== issuer) throw new Error('OIDC discovery names another issuer');
    return {
      issuer: metadata.issuer,
      jwks: createRemoteJWKSet(new URL(metadata.jwks_uri), {
        cooldownDuration: options.jwksCooldownMs ?? 30_000,
        [customFetch]: (...args: Parameters<typeof fetch>) => {
          keySetGeneration += 1;
          return fetch(...args);
        },
      }),
    };
  };

  // A token whose signature and claims checked out stays good until it expires or the key set is
  // fetched again; checking the signature on every request costs more than the rest of a small push.
  const verified = new Map<string, VerifiedToken & { generation: number }>();

  const check = async (token: string): Promise<VerifiedToken> => {
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

  return async function verify(token: string): Promise<VerifiedToken> {
    const known = verified.get(token);
    if (known && known.generation === keySetGeneration && known.expiresAt > Date.now()) {
      return { personalnummer: known.personalnummer, expiresAt: known.expiresAt };
    }
    verified.delete(token);
    const generation = keySetGeneration;
    const fresh = await check(token);
    if (verified.size >= VERIFIED_TOKENS_KEPT) verified.delete(verified.keys().next().value!);
    verified.set(token, { ...fresh, generation });
    return fresh;
  };
}
