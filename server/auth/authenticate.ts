import { eq } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { accounts } from '../db/schema.js';
import type { DriverActor } from '../context.js';
import { unauthorized } from '../errors.js';
import type { VerifiedToken } from './tokens.js';

export interface Authenticator {
  driver(authorization: string | undefined): Promise<DriverActor>;
  admin(key: string | undefined): void;
}

export function bearerToken(authorization: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return match?.[1];
}

export function createAuthenticator(deps: {
  db: Db;
  verifyToken: (token: string) => Promise<VerifiedToken>;
  adminKeyMatches: (key: string | undefined) => boolean;
  onFailure?: (reason: string) => void;
}): Authenticator {
  return {
    async driver(authorization) {
      const token = bearerToken(authorization);
      if (!token) throw unauthorized();
      let verified: VerifiedToken;
      try {
        verified = await deps.verifyToken(token);
      } catch (error) {
        deps.onFailure?.((error as Error).message);
        throw unauthorized();
      }
      const [account] = await deps.db.select().from(accounts).where(eq(accounts.personalnummer, verified.personalnummer));
      if (!account?.active) throw unauthorized();
      return { kind: 'driver', personalnummer: account.personalnummer, name: account.name, tokenExpiresAt: verified.expiresAt };
    },
    admin(key) {
      if (!deps.adminKeyMatches(key)) throw unauthorized();
    },
  };
}
