import { decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import { asymmetricAlgorithms } from '../config/access.js';
import { createIssuerKeys, IssuerUnreachable, KeyNotPublished } from './issuerKeys.js';
import { RecentCache } from './recentCache.js';

export interface TokenVerifierOptions {
  /** The issuer; its metadata lives at `{issuer}/.well-known/openid-configuration`. */
  issuer: () => string;
  audience: string;
  algorithms: string[];
  personalnummerClaim: string;
  /** The claim (an array, or a space-separated string) that may carry `syncRole`; without both, no token has the role. */
  syncRoleClaim?: string;
  syncRole?: string;
  /** The claim that may carry `backOfficeRole`: such a token may use the admin endpoints, with or without a Personalnummer. */
  backOfficeRoleClaim?: string;
  backOfficeRole?: string;
  /** The claim with a back-office user's name (the subject when absent). */
  nameClaim?: string;
  /**
   * The key set is fetched whenever a token names a `kid` it does not hold, up to a few times in a
   * row (the first fetch, a rotation); past that at most once per this many ms (default 10 s).
   */
  jwksCooldownMs?: number;
  /** A key set older than this is fetched again before it is used (default 10 minutes). */
  jwksMaxAgeMs?: number;
  /** Leeway for `exp`, `nbf` and `iat` against an issuer whose clock runs a little off (default 30 s). */
  clockToleranceSeconds?: number;
  /** How long the issuer may take to answer (default 5 s). */
  timeoutMs?: number;
  /** How many verified tokens are kept; more than the open WebSockets, or tokens are checked again (default 50,000). */
  tokenCacheSize?: number;
}

export interface VerifiedToken {
  /** Absent only on a back-office token without one: such a token is no driver's. */
  personalnummer: number | null;
  expiresAt: number;
  /** The token carries the sync role: it may send any driver's tour and read any account. */
  syncRole: boolean;
  /** The person, when the token carries the back-office role. */
  backOffice: BackOfficePerson | null;
}

export interface BackOfficePerson {
  subject: string;
  name: string;
}

/** Whether a claim value names the role: an array of names, or names separated by spaces (OAuth's `scope` style). */
export function claimHasRole(value: unknown, role: string): boolean {
  const names = typeof value === 'string' ? value.split(' ') : Array.isArray(value) ? value : [];
  return names.includes(role);
}

/** The back-office person a token names, when it carries the role and a subject; the name falls back to the subject. */
function backOfficePerson(payload: JWTPayload, options: TokenVerifierOptions): BackOfficePerson | null {
  const { backOfficeRoleClaim: claim, backOfficeRole: role } = options;
  if (!claim || !role || !claimHasRole(payload[claim], role)) return null;
  if (typeof payload.sub !== 'string' || payload.sub.length === 0 || payload.sub.length > 200) {
    throw new TokenError('claims', 'a back-office token needs a subject ("sub") of at most 200 characters');
  }
  const name = payload[options.nameClaim ?? 'name'];
  const named = typeof name === 'string' && name.trim().length > 0 ? name.trim().slice(0, 200) : payload.sub;
  return { subject: payload.sub, name: named };
}

/** Why a token was refused, for the log line an operator alerts on. */
export type TokenRefusal =
  | 'malformed'
  | 'algorithm'
  | 'issuer'
  | 'audience'
  | 'expired'
  | 'not_yet_valid'
  | 'unknown_key'
  | 'signature'
  | 'claims'
  | 'issuer_unreachable';

export class TokenError extends Error {
  constructor(
    readonly reason: TokenRefusal,
    message: string,
  ) {
    super(message);
  }
}

function refusal(error: unknown): TokenRefusal {
  if (error instanceof KeyNotPublished) return 'unknown_key';
  if (error instanceof errors.JWTExpired) return 'expired';
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'aud') return 'audience';
    if (error.claim === 'iss') return 'issuer';
    if (error.claim === 'nbf' || error.claim === 'iat') return 'not_yet_valid';
    return 'claims';
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'signature';
  if (error instanceof errors.JOSEAlgNotAllowed) return 'algorithm';
  if (error instanceof errors.JWKSNoMatchingKey) return 'unknown_key';
  return 'malformed';
}

const shortClaim = (value: unknown) => (typeof value === 'string' ? value.slice(0, 200) : undefined);

/**
 * What a refused token's log line may name: the header's `kid` and the claims `iss` and `aud`,
 * read without verifying. Never the token, nor its signature: a refused token may still be valid
 * elsewhere.
 */
export function describeToken(token: string): { kid?: string; iss?: string; aud?: string | string[] } {
  const described: { kid?: string; iss?: string; aud?: string | string[] } = {};
  try {
    described.kid = shortClaim(decodeProtectedHeader(token).kid);
  } catch {
    // A header that does not decode names nothing.
  }
  try {
    const { iss, aud } = decodeJwt(token);
    described.iss = shortClaim(iss);
    described.aud = Array.isArray(aud) ? aud.slice(0, 10).map((a) => String(a).slice(0, 200)) : shortClaim(aud);
  } catch {
    // Nor does a payload that is not JSON.
  }
  for (const key of ['kid', 'iss', 'aud'] as const) if (described[key] === undefined) delete described[key];
  return described;
}

/**
 * What can be judged without the issuer: a JWT whose header names an accepted algorithm and whose
 * payload names our issuer and was not issued in the future. Anything else is refused before the
 * issuer is asked, whatever its state.
 */
function readUnverified(token: string, algorithms: string[], issuers: string[], clockToleranceSeconds: number): JWTPayload {
  let payload: JWTPayload;
  let alg: string | undefined;
  try {
    ({ alg } = decodeProtectedHeader(token));
    payload = decodeJwt(token);
  } catch (error) {
    throw new TokenError('malformed', (error as Error).message);
  }
  if (!alg || !algorithms.includes(alg)) throw new TokenError('algorithm', `algorithm ${alg} is not accepted`);
  if (typeof payload.iss !== 'string' || !issuers.includes(payload.iss)) throw new TokenError('issuer', 'unexpected "iss" claim value');
  // jose checks `iat` only against a maximum token age.
  if (typeof payload.iat === 'number' && payload.iat > Date.now() / 1000 + clockToleranceSeconds)
    throw new TokenError('not_yet_valid', '"iat" claim is in the future');
  return payload;
}

/**
 * Verifies bearer JWTs against an OIDC issuer's keys (see `createIssuerKeys` for when the issuer
 * is asked, and what happens while it cannot be).
 */
export function createTokenVerifier(options: TokenVerifierOptions) {
  // loadConfig refuses symmetric algorithms; filtering again keeps a programmatic caller from pinning HS256.
  const algorithms = options.algorithms.filter((a) => asymmetricAlgorithms.has(a));
  if (algorithms.length === 0) throw new Error('OIDC_ALGORITHMS must name at least one asymmetric algorithm');
  const clockToleranceSeconds = options.clockToleranceSeconds ?? 30;
  const keys = createIssuerKeys({
    issuer: options.issuer,
    cooldownMs: options.jwksCooldownMs ?? 10_000,
    maxAgeMs: options.jwksMaxAgeMs ?? 10 * 60_000,
    timeoutMs: options.timeoutMs ?? 5000,
    clockToleranceSeconds,
  });

  // A token whose signature and claims checked out stays good until it expires, a changed key set is
  // fetched or the set is due to be fetched again; checking the signature on every request costs
  // more than the rest of a small push.
  const verified = new RecentCache<string, VerifiedToken & { generation: number }>(options.tokenCacheSize ?? 50_000);

  const check = async (token: string): Promise<VerifiedToken & { generation: number }> => {
    // The issuer with or without a trailing slash: identity providers differ in how they write it.
    const issuer = options.issuer().replace(/\/$/, '');
    const issuers = [issuer, `${issuer}/`];
    const unverified = readUnverified(token, algorithms, issuers, clockToleranceSeconds);
    let generation = 0;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(
        token,
        async (header) => {
          const found = await keys.key(header, unverified.iat);
          generation = found.generation;
          return found.key;
        },
        { issuer: issuers, audience: options.audience, algorithms, requiredClaims: ['exp'], clockTolerance: clockToleranceSeconds },
      ));
    } catch (error) {
      if (error instanceof IssuerUnreachable) throw error;
      throw new TokenError(refusal(error), (error as Error).message);
    }
    const backOffice = backOfficePerson(payload, options);
    const raw = payload[options.personalnummerClaim];
    const personalnummer = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
    const valid = typeof personalnummer === 'number' && Number.isSafeInteger(personalnummer) && personalnummer > 0;
    if (!valid && !(backOffice && raw === undefined)) {
      throw new TokenError('claims', `claim ${options.personalnummerClaim} is missing or not a number`);
    }
    const syncRole = !!options.syncRoleClaim && !!options.syncRole && claimHasRole(payload[options.syncRoleClaim], options.syncRole);
    return { personalnummer: valid ? personalnummer : null, expiresAt: payload.exp! * 1000, syncRole, backOffice, generation };
  };

  // `warm` asks the issuer once now (discovery and keys), for the start's readiness.
  return Object.assign(verify, { warm: () => keys.fetch() });

  async function verify(token: string): Promise<VerifiedToken> {
    const known = verified.get(token);
    if (known && keys.isCurrent(known.generation) && known.expiresAt > Date.now()) {
      const { generation: _generation, ...answer } = known;
      return answer;
    }
    verified.delete(token);
    const fresh = await check(token);
    verified.set(token, fresh);
    const { generation: _generation, ...answer } = fresh;
    return answer;
  }
}
