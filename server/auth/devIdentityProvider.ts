import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import type { Config } from '../config.js';

/**
 * The development identity provider: the server acts as its own OIDC issuer with one ES256
 * key kept in the data directory, so tokens survive restarts.
 */
export async function createDevIdentityProvider(
  options: Pick<
    Config['auth'],
    'audience' | 'personalnummerClaim' | 'syncRoleClaim' | 'backOfficeRoleClaim' | 'backOfficeRole' | 'nameClaim' | 'devTokenTtlSeconds'
  >,
  dataDir?: string,
) {
  const file = dataDir && path.join(dataDir, 'dev-idp-key.json');
  let privateJwk: JWK;
  if (file && existsSync(file)) {
    privateJwk = JSON.parse(readFileSync(file, 'utf8'));
  } else {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    // A random kid: two keys generated in the same millisecond (two servers started together) must not share one.
    privateJwk = { ...(await exportJWK(privateKey)), kid: `dev-${randomBytes(6).toString('base64url')}`, alg: 'ES256', use: 'sig' };
    if (file) writeFileSync(file, JSON.stringify(privateJwk), { mode: 0o600 });
  }
  const { d: _private, ...publicJwk } = privateJwk;
  const signingKey = await importJWK(privateJwk, 'ES256');

  const sign = async (issuer: string, subject: string, claims: Record<string, unknown>) => {
    const expiresAt = Math.floor(Date.now() / 1000) + options.devTokenTtlSeconds;
    const accessToken = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: privateJwk.kid })
      .setIssuer(issuer)
      .setAudience(options.audience)
      .setSubject(subject)
      .setIssuedAt()
      .setExpirationTime(expiresAt)
      .sign(signingKey);
    return { accessToken, expiresAt: new Date(expiresAt * 1000).toISOString() };
  };

  return {
    jwks: { keys: [publicJwk] },
    metadata: (issuer: string) => ({
      issuer,
      jwks_uri: `${issuer}/jwks`,
      // The console's sign-in (http/devSignInPages.ts); minting by key is no OAuth grant.
      authorization_endpoint: `${issuer}/authorize`,
      token_endpoint: `${issuer}/token`,
      grant_types_supported: ['authorization_code'],
      code_challenge_methods_supported: ['S256'],
      id_token_signing_alg_values_supported: ['ES256'],
      response_types_supported: ['code'],
      subject_types_supported: ['public'],
    }),
    mint: (issuer: string, personalnummer: number, roles?: string[]) =>
      sign(issuer, String(personalnummer), {
        [options.personalnummerClaim]: personalnummer,
        ...(roles?.length ? { [options.syncRoleClaim]: roles } : {}),
      }),
    /** A token of the back-office role for a person of this name (no Personalnummer: no driver's token). */
    mintBackOffice: (issuer: string, name: string) =>
      sign(issuer, backOfficeSubject(name), { [options.nameClaim]: name, [options.backOfficeRoleClaim]: [options.backOfficeRole] }),
  };
}
/** The same name gives the same subject, so a person's history stays theirs across sign-ins. */
export const backOfficeSubject = (name: string) => `back-office:${createHash('sha256').update(name).digest('base64url').slice(0, 22)}`;

export type DevIdentityProvider = Awaited<ReturnType<typeof createDevIdentityProvider>>;
