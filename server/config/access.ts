import { z } from 'zod';
import { list } from './values.js';

// Who may call the service: tokens, admin keys, browsers and the proxies in front.

// Symmetric algorithms (HS256) would let anyone holding the shared secret mint tokens; `none` is no signature.
export const asymmetricAlgorithms = new Set([
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
]);

/** The origins of the example driver web app (`npm run driver-web`), let in by default in development only. */
export const DEVELOPMENT_CORS_ORIGINS = ['http://localhost:5173', 'http://127.0.0.1:5173'];

/** An exact web origin as browsers send it in `Origin`; `*` is refused (see docs/operations.md#cors). */
function isOrigin(value: string) {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === value && !value.includes('*');
  } catch {
    return false;
  }
}

export const identity = z.object({
  AUTH_MODE: z.enum(['dev', 'oidc']).optional().meta({
    description: '`dev`: the service is its own identity provider (`/dev/oidc`, `POST /dev/token`). `oidc`: tokens of `OIDC_ISSUER`.',
    derived: '`dev` without `OIDC_ISSUER`, else `oidc`',
  }),
  OIDC_ISSUER: z.url().optional().describe('Issuer URL; its metadata is read from `{OIDC_ISSUER}/.well-known/openid-configuration`.'),
  OIDC_AUDIENCE: z.string().min(1).default('tourline').describe('Required `aud` of bearer tokens.'),
  OIDC_PERSONALNUMMER_CLAIM: z.string().min(1).default('personalnummer').describe('Claim carrying the Personalnummer.'),
  OIDC_ALGORITHMS: z
    .string()
    .default([...asymmetricAlgorithms].join(','))
    .transform(list)
    .refine(
      (algorithms) => algorithms.length > 0 && algorithms.every((a) => asymmetricAlgorithms.has(a)),
      `must list only asymmetric algorithms (${[...asymmetricAlgorithms].join(', ')})`,
    )
    .meta({
      description: 'Accepted token algorithms; only asymmetric ones (a key is used only with the algorithm of its type).',
      range: 'comma-separated, of the default',
    }),
  OIDC_SYNC_ROLE_CLAIM: z
    .string()
    .min(1)
    .default('roles')
    .describe("Claim that carries a token's roles: an array of names or a space-separated string."),
  OIDC_SYNC_ROLE: z
    .string()
    .min(1)
    .default('tourline-sync')
    .describe("Role that may send any driver's tour and read any account (docs/authorization.md)."),
  OIDC_BACK_OFFICE_ROLE_CLAIM: z
    .string()
    .min(1)
    .default('roles')
    .describe('Claim that carries the back-office role: an array of names or a space-separated string.'),
  OIDC_BACK_OFFICE_ROLE: z
    .string()
    .min(1)
    .default('tourline-back-office')
    .describe('Role of office users: the `/admin/...` endpoints and the console with a bearer token (docs/back-office.md).'),
  OIDC_NAME_CLAIM: z
    .string()
    .min(1)
    .default('name')
    .describe("Claim with a back-office user's name, recorded as the processor of a review they resolve (the subject when absent)."),
  OIDC_CONSOLE_CLIENT_ID: z
    .string()
    .min(1)
    .default('tourline-console')
    .describe('OAuth client id the console signs in with (authorization code flow with PKCE, no secret).'),
  OIDC_JWKS_COOLDOWN_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(10_000)
    .describe(
      "A token naming a key the service has not seen makes it fetch the issuer's key set, up to 3 times in a row; past that at most once per this many ms, and such tokens meanwhile get 503 with `Retry-After` (never 401). 0: no limit.",
    ),
  OIDC_JWKS_MAX_AGE_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(600)
    .describe(
      'A key set older than this is fetched again before its keys are used; a key the issuer withdrew stops working with that fetch. While the issuer cannot be asked, the set held keeps serving its keys.',
    ),
  OIDC_CLOCK_TOLERANCE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(300)
    .default(30)
    .describe('Leeway for `exp`, `nbf` and `iat` against an issuer whose clock runs a little off.'),
  OIDC_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(60_000)
    .default(5000)
    .describe('How long the issuer may take to answer a discovery or key-set request before it counts as unreachable.'),
  AUTH_TOKEN_CACHE_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000_000)
    .default(50_000)
    .describe(
      'Verified tokens kept in memory (least recently used dropped); keep it above the open WebSockets plus the REST clients, or signatures are checked again.',
    ),
  // Tests go below the floor of 10 seconds to see tokens expire (NODE_ENV=test only, checked in config.ts).
  DEV_TOKEN_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(12 * 3600)
    .meta({ description: 'Lifetime of development tokens.', range: '≥ 10 (tests may go lower)' }),
  // Several keys, so a new one can be rolled out before the old one is withdrawn.
  ADMIN_API_KEY: z
    .string()
    .transform(list)
    .refine((keys) => keys.length > 0 && keys.every((k) => k.length >= 16), 'every key must be at least 16 characters')
    .optional()
    .meta({
      description:
        'Keys for `/admin/...` and `POST /dev/token` (header `X-Admin-Api-Key`): every listed key works. Without it, development generates one and keeps it in `DATA_DIR/admin-api-key`.',
      derived: 'generated outside production',
      range: 'comma-separated, 16+ characters each',
    }),
  AUTH_REFUSAL_LIMIT: z.coerce
    .number()
    .int()
    .min(1)
    .default(100)
    .describe(
      'Refused (401) requests to `/admin/...` and `/dev/...` one client address may make per window; past it every such request from there is 429 `rate_limited` with `Retry-After` until the window ends.',
    ),
  AUTH_REFUSAL_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60).describe('The window of `AUTH_REFUSAL_LIMIT`.'),
});

export const browsers = z.object({
  CORS_ORIGINS: z
    .string()
    .default('')
    .transform(list)
    .refine(
      (origins) => origins.every(isOrigin),
      'must list exact origins like https://driver.example.com (scheme, host, optional port; no path, no wildcard), comma-separated',
    )
    .meta({
      description: `Web app origins allowed to call the API from a browser, also checked on the WebSocket's \`Origin\`; \`*\` is refused. None: no CORS headers, except in development, where ${DEVELOPMENT_CORS_ORIGINS.map((o) => `\`${o}\``).join(' and ')} (the example driver web app) are let in (docs/operations.md#cors).`,
      range: 'exact origins, comma-separated',
    }),
  TRUST_PROXY_HOPS: z.coerce
    .number()
    .int()
    .min(0)
    .max(10)
    .default(0)
    .describe(
      "Proxies in front of the service whose `X-Forwarded-For` names the client address (for the refusal limit). 0: the peer's address; a request that shows `X-Forwarded-For` then makes one warning.",
    ),
  // Only behind TLS: a browser that saw it refuses plain HTTP to this host for that long.
  HSTS_MAX_AGE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(63_072_000)
    .default(0)
    .describe('`Strict-Transport-Security` max-age on every answer; set it only where clients reach the service over TLS. 0: not sent.'),
  COMPRESSION_MIN_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(1024)
    .describe(
      'Smallest JSON/text answer sent compressed (brotli or gzip, as the client accepts); WebSocket messages from 8 KB or this, whichever is larger (permessage-deflate).',
    ),
});
