import { sql } from 'drizzle-orm';
import { executePrepared, type Db } from '../db/client.js';
import { combining, deferred } from '../db/combining.js';
import { arrayLiteral, fromJsonRows, inPlaceholder } from '../db/jsonRows.js';
import { accounts } from '../db/schema.js';
import type { DriverActor } from '../context.js';
import { forbidden, unauthorized, unavailable } from '../errors.js';
import { IssuerUnreachable } from './issuerKeys.js';
import { describeToken, TokenError, type BackOfficePerson, type TokenRefusal, type VerifiedToken } from './tokens.js';

export interface Authenticator {
  /** A driver whose token is valid and whose account exists and is active: 401 otherwise. */
  driver(authorization: string | undefined): Promise<DriverActor>;
  /** A driver whose token is valid, the account not read (`accountUnread`): `account` or the engine's transaction reads it. */
  token(authorization: string | undefined): Promise<DriverActor>;
  /** 401 unless the driver's account exists and is active. */
  account(actor: DriverActor): Promise<void>;
  admin(key: string | undefined): void;
  /** A valid token of the back-office role: 401 for a missing or invalid token, 403 for a token without the role. */
  backOffice(authorization: string | undefined): Promise<BackOfficePerson>;
}

export function bearerToken(authorization: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return match?.[1];
}

type AccountRow = typeof accounts.$inferSelect;
type AccountRequest = { personalnummer: number; answer: ReturnType<typeof deferred<AccountRow | undefined>> };

/** Every request reads its account afresh; those of concurrent requests are read with one statement. */
function accountReader(db: Db) {
  const read = combining<AccountRequest>({ concurrency: 1, maxWeight: 500 }, async (requests) => {
    try {
      const numbers = requests.map((r) => r.personalnummer);
      const rows = await executePrepared<{ account: Record<string, unknown> }>(
        db,
        'accounts_by_number',
        () => sql`SELECT to_json(${accounts}) AS account FROM ${accounts} WHERE ${inPlaceholder(accounts.personalnummer, 'numbers')}`,
        { numbers: arrayLiteral(numbers) },
      );
      const byNumber = new Map(
        fromJsonRows(
          accounts,
          rows.map((r) => r.account),
        ).map((row) => [row.personalnummer, row]),
      );
      for (const r of requests) r.answer.resolve(byNumber.get(r.personalnummer));
    } catch (error) {
      for (const r of requests) r.answer.reject(error);
    }
  });
  return (personalnummer: number) => {
    const answer = deferred<AccountRow | undefined>();
    read({ personalnummer, answer });
    return answer.promise;
  };
}

export interface TokenRefused {
  reason: TokenRefusal;
  detail: string;
  kid?: string;
  iss?: string;
  aud?: string | string[];
}

export function createAuthenticator(deps: {
  db: Db;
  verifyToken: (token: string) => Promise<VerifiedToken>;
  adminKeyMatches: (key: string | undefined) => boolean;
  /** Called once per refused bearer token (not for a missing one): the reason code, the unverified `kid`, `iss`, `aud`, never the token. */
  onFailure?: (refusal: TokenRefused) => void;
}): Authenticator {
  const readAccount = accountReader(deps.db);
  const verifyBearer = async (authorization: string | undefined): Promise<VerifiedToken> => {
    const bearer = bearerToken(authorization);
    if (!bearer) throw unauthorized();
    let verified: VerifiedToken;
    try {
      verified = await deps.verifyToken(bearer);
    } catch (error) {
      const reason = error instanceof IssuerUnreachable ? 'issuer_unreachable' : error instanceof TokenError ? error.reason : 'malformed';
      deps.onFailure?.({ reason, detail: (error as Error).message, ...describeToken(bearer) });
      if (error instanceof IssuerUnreachable)
        throw unavailable(`The identity provider cannot be asked: ${error.message}`, error.retryAfterSeconds);
      throw unauthorized();
    }
    return verified;
  };
  const verify = async (authorization: string | undefined): Promise<DriverActor> => {
    const verified = await verifyBearer(authorization);
    // A back-office token without a Personalnummer is nobody's driver token.
    if (verified.personalnummer === null) throw unauthorized();
    return { kind: 'driver', personalnummer: verified.personalnummer, tokenExpiresAt: verified.expiresAt, syncRole: verified.syncRole };
  };
  const account = async (actor: DriverActor) => {
    if (!(await readAccount(actor.personalnummer))?.active) throw unauthorized();
  };
  return {
    async driver(authorization) {
      const actor = await verify(authorization);
      await account(actor);
      return actor;
    },
    token: async (authorization) => ({ ...(await verify(authorization)), accountUnread: true }),
    account,
    admin(key) {
      if (!deps.adminKeyMatches(key)) throw unauthorized();
    },
    async backOffice(authorization) {
      const { backOffice } = await verifyBearer(authorization);
      if (!backOffice) throw forbidden('This token does not carry the back-office role');
      return backOffice;
    },
  };
}
