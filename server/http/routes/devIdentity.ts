import { z } from 'zod';
import type { DevIdentityProvider } from '../../auth/devIdentityProvider.js';
import { notFound } from '../../errors.js';
import { readAccount } from '../../queries/accounts.js';
import { route } from '../route.js';

const Personalnummer = z
  .union([z.number(), z.string().regex(/^\d+$/).transform(Number)])
  .pipe(z.number().int().min(1).max(Number.MAX_SAFE_INTEGER));
export const DevTokenRequest = z
  .object({
    personalnummer: Personalnummer.optional().meta({ description: 'A driver token for this active account' }),
    roles: z
      .array(z.string().min(1).max(100))
      .max(20)
      .optional()
      .meta({ description: 'Roles the token carries in the role claim (OIDC_SYNC_ROLE_CLAIM), e.g. ["tourline-sync"]' }),
    backOffice: z
      .string()
      .trim()
      .min(1)
      .max(100)
      .optional()
      .meta({ description: 'Instead of a Personalnummer: a back-office token (OIDC_BACK_OFFICE_ROLE) for the person of this name' }),
  })
  .refine((r) => (r.personalnummer === undefined) !== (r.backOffice === undefined), {
    message: 'Send either personalnummer or backOffice',
    path: ['personalnummer'],
  })
  .refine((r) => r.backOffice === undefined || r.roles === undefined, { message: 'A back-office token takes no roles', path: ['roles'] })
  .meta({ id: 'DevTokenRequest' });
export const DevTokenResponse = z.object({ accessToken: z.string(), expiresAt: z.string() }).meta({ id: 'DevTokenResponse' });

/** The development identity provider's endpoints; registered only with AUTH_MODE=dev. */
export function devIdentityRoutes(idp: DevIdentityProvider, issuer: () => string) {
  return [
    route({
      method: 'get',
      path: '/dev/oidc/.well-known/openid-configuration',
      auth: 'none',
      tags: ['Development identity provider'],
      summary: 'OIDC metadata of the development issuer',
      response: z.record(z.string(), z.unknown()),
      handler: async () => idp.metadata(issuer()),
    }),
    route({
      method: 'get',
      path: '/dev/oidc/jwks',
      auth: 'none',
      tags: ['Development identity provider'],
      summary: 'Public keys of the development issuer',
      response: z.object({ keys: z.array(z.record(z.string(), z.unknown())) }),
      handler: async () => idp.jwks,
    }),
    route({
      // Behind the admin key: a deployment that forgot to configure an issuer must not hand out tokens to anyone.
      method: 'post',
      path: '/dev/token',
      auth: 'admin',
      tags: ['Development identity provider'],
      summary: 'Mint a token for an existing, active account, or a back-office token for a named person (needs the admin key)',
      body: DevTokenRequest,
      response: DevTokenResponse,
      errors: [404],
      handler: async ({ ctx, body }) => {
        if (body.backOffice !== undefined) return idp.mintBackOffice(issuer(), body.backOffice);
        const account = await readAccount(ctx.database.db, body.personalnummer!);
        if (!account?.active) throw notFound('Active account');
        return idp.mint(issuer(), account.personalnummer, body.roles);
      },
    }),
  ];
}
