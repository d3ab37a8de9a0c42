import { createHash, randomBytes } from 'node:crypto';

/** An authorization code of the development issuer: single use, short-lived, bound to its PKCE challenge. */
interface PendingCode {
  name: string;
  clientId: string;
  redirectUri: string;
  challenge: string;
  expiresAt: number;
}

export type CodeRefusal = 'invalid_grant' | 'invalid_request';

const CODE_TTL_MS = 60_000;
// RFC 7636: 43 to 128 characters of the unreserved set.
const verifierPattern = /^[A-Za-z0-9\-._~]{43,128}$/;
const challengeOf = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/**
 * The codes the development issuer's sign-in form hands out and its token endpoint exchanges
 * (authorization code flow with PKCE S256, RFC 7636). Held in memory: a restart signs everyone out.
 */
export function createDevSignIn(now: () => number = Date.now) {
  const codes = new Map<string, PendingCode>();
  const forget = () => {
    for (const [code, pending] of codes) if (pending.expiresAt <= now()) codes.delete(code);
  };
  return {
    issue(pending: Omit<PendingCode, 'expiresAt'>): string {
      forget();
      const code = randomBytes(32).toString('base64url');
      codes.set(code, { ...pending, expiresAt: now() + CODE_TTL_MS });
      return code;
    },
    /** The person of a code, once: a code used, expired, of another client or redirect, or with a wrong verifier is refused. */
    redeem(request: { code: string; clientId: string; redirectUri: string; verifier: string }): { name: string } | CodeRefusal {
      if (!verifierPattern.test(request.verifier)) return 'invalid_request';
      const pending = codes.get(request.code);
      codes.delete(request.code);
      if (!pending || pending.expiresAt <= now()) return 'invalid_grant';
      if (pending.clientId !== request.clientId || pending.redirectUri !== request.redirectUri) return 'invalid_grant';
      if (challengeOf(request.verifier) !== pending.challenge) return 'invalid_grant';
      return { name: pending.name };
    },
  };
}
