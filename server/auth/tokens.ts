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
  /** The claim (an array, or a space-separated string) that may carry `syncRole`; without both, no token has the role. */
  syncRoleClaim?: string;
  syncRole?: string;
  /**
   * The key set is fetched whenever a token names a `kid` it does not hold, up to a few times in a
   * row (the first fetch, a rotation); past that at most once per this many ms (default 10 s).
   */
  jwksCooldownMs?: number;
}

export interface VerifiedToken {
  personalnummer: number;
  expiresAt: number;
  /** The token carries the sync role: it may send any driver's tour and read any account. */
  syncRole: boolean;
}

/** Whether a claim value names the role: an array of names, or names separated by spaces (OAuth's `scope` style). */
export function claimHasRole(value: unknown, role: string): boolean {
  const names = typeof value === 'string' ? value.split(' ') : Array.isArray(value) ? value : [];
  return names.includes(role);
}

export class TokenError extends Error {}

/**
 * The issuer could not be asked (down, timing out, answering errors): the token may well be
 * good, so this is no reason to send the driver back to the login.
 */
export class IssuerUnreachable extends Error {}

const VERIFIED_TOKENS_KEPT = 5000;
const KEY_SET_FETCHES_IN_A_ROW = 3;

/**
 * Verifies bearer JWTs against an OIDC issuer: metadata and key set are discovered once and
 * cached; jose fetches the key set again when a token names a `kid` it does not know.
 */
export function createTokenVerifier(options: TokenVerifierOptions) {
  // loadConfig refuses symmetric algorithms; filtering again keeps a programmatic caller from pinning HS256.
  const algorithms = options.algorithms.filter((a) => asymmetricAlgorithms.has(a));
  if (algorithms.length === 0) throw new Error('OIDC_ALGORITHMS must name at least one asymmetric algorithm');
  let keys: Promise<{ issuer: string; jwks: ReturnType<typeof createRemoteJWKSet> }> | undefined;
  // Counts the different key sets fetched: a token checked against an older set is checked again,
  // so a key the issuer withdrew stops working as soon as the set is fetched anew. A fetch that
  // failed, or brought the same set, leaves the checked tokens as they were: an outage of the
  // issuer does not log drivers out, and tokens naming unknown keys cannot make every driver's
  // token be checked again.
  let keySetGeneration = 0;
  let lastKeySet: string | undefined;
  // Fetches of the key set are budgeted, so that tokens naming made-up keys cannot make the service
  // hammer the issuer: over the budget the set in memory answers, and such a token is refused.
  const refillMs = options.jwksCooldownMs ?? 10_000;
  let budget = KEY_SET_FETCHES_IN_A_ROW;
  let budgetAt = Date.now();
  const mayFetchKeySet = () => {
    const now = Date.now();
    budget = Math.min(KEY_SET_FETCHES_IN_A_ROW, budget + (refillMs > 0 ? (now - budgetAt) / refillMs : Infinity));
    budgetAt = now;
    if (budget < 1) return false;
    budget -= 1;
    return true;
  };

  const fetchFromIssuer = async (what: string, ...args: Parameters<typeof fetch>) => {
    const response = await fetch(...args).catch((error: Error) => {
      throw new IssuerUnreachable(`OIDC ${what}: ${error.message}`);
    });
    if (!response.ok) throw new IssuerUnreachable(`OIDC ${what} answered ${response.status}`);
    return response;
  };

  const discover = async () => {
    const issuer = options.issuer().replace(/\/$/, '');
    const response = await fetchFromIssuer('discovery', `${issuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(5000) });
    const metadata = Discovery.safeParse(await response.json().catch(() => undefined));
    if (!metadata.success) throw new IssuerUnreachable('OIDC discovery answered no valid metadata');
    if (metadata.data.issuer.replace(/\/$/, '') !== issuer) throw new IssuerUnreachable('OIDC discovery names another issuer');
    const jwks = createRemoteJWKSet(new URL(metadata.data.jwks_uri), {
      cooldownDuration: 0,
      [customFetch]: async (...args: Parameters<typeof fetch>) => {
        if (!mayFetchKeySet() && lastKeySet !== undefined) return new Response(lastKeySet, { headers: { 'content-type': 'application/json' } });
        const response = await fetchFromIssuer('key set', ...args);
        const keySet = await response.clone().text();
        if (keySet !== lastKeySet) keySetGeneration += 1;
        lastKeySet = keySet;
        return response;
      },
    });
    // Fetched with the metadata, so that the first tokens are checked against a set of a known generation.
    await jwks.reload();
    return { issuer: metadata.data.issuer.replace(/\/$/, ''), jwks };
  };

  // A token whose signature and claims checked out stays good until it expires or the key set is
  // fetched again; checking the signature on every request costs more than the rest of a small push.
  const verified = new Map<string, VerifiedToken & { generation: number }>();

  const check = async (token: string): Promise<VerifiedToken & { generation: number }> => {
    keys ??= discover().catch((error) => { keys = undefined; throw error; });
    const { issuer, jwks } = await keys;
    const generation = keySetGeneration;
    let payload: JWTPayload;
    try {
      // The issuer with or without a trailing slash: identity providers differ in how they write it.
      ({ payload } = await jwtVerify(token, jwks, {
        issuer: [issuer, `${issuer}/`], audience: options.audience, algorithms, requiredClaims: ['exp'],
      }));
    } catch (error) {
      if (error instanceof IssuerUnreachable) throw error;
      throw new TokenError((error as Error).message);
    }
    const raw = payload[options.personalnummerClaim];
    const personalnummer = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
    if (typeof personalnummer !== 'number' || !Number.isSafeInteger(personalnummer) || personalnummer <= 0) {
      throw new TokenError(`claim ${options.personalnummerClaim} is missing or not a number`);
    }
    const syncRole = !!options.syncRoleClaim && !!options.syncRole && claimHasRole(payload[options.syncRoleClaim], options.syncRole);
    return { personalnummer, expiresAt: payload.exp! * 1000, syncRole, generation };
  };

  return async function verify(token: string): Promise<VerifiedToken> {
    const known = verified.get(token);
    if (known && known.generation === keySetGeneration && known.expiresAt > Date.now()) {
      return { personalnummer: known.personalnummer, expiresAt: known.expiresAt, syncRole: known.syncRole };
    }
    verified.delete(token);
    const fresh = await check(token);
    if (verified.size >= VERIFIED_TOKENS_KEPT) verified.delete(verified.keys().next().value!);
    verified.set(token, fresh);
    return { personalnummer: fresh.personalnummer, expiresAt: fresh.expiresAt, syncRole: fresh.syncRole };
  };
}
