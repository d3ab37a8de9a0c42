import { z } from 'zod';
import type { ErpAuth } from '../../config.js';
import { upstream } from '../../errors.js';

const TokenAnswer = z.object({
  access_token: z.string().min(1),
  token_type: z.string().optional(),
  expires_in: z.coerce.number().positive().optional(),
});

/** Renewed this long before it expires, so that a call never leaves with a token about to run out. */
const EXPIRY_MARGIN_MS = 30_000;
/** A token answer without `expires_in` is used this long. */
const DEFAULT_LIFETIME_MS = 300_000;

/** Thrown when the token endpoint cannot be reached or answers 5xx: worth another try. */
export class TokenEndpointUnavailable extends Error {}

/**
 * OAuth 2 client credentials (RFC 6749 §4.4) with the client authenticated by HTTP Basic: one
 * token shared by every ERP call, asked for again shortly before it expires or when the ERP
 * refuses it. Concurrent calls wait for the same request.
 */
export function createOAuthTokens(auth: Extract<ErpAuth, { kind: 'oauth' }>, timeoutMs: number) {
  let current: { token: string; renewAt: number } | undefined;
  let pending: Promise<string> | undefined;
  const client = Buffer.from(`${encodeURIComponent(auth.clientId)}:${encodeURIComponent(auth.clientSecret)}`, 'utf8').toString('base64');

  async function request(): Promise<string> {
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (auth.scope) form.set('scope', auth.scope);
    let response: Response;
    try {
      response = await fetch(auth.tokenUrl, {
        method: 'POST',
        headers: { authorization: `Basic ${client}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form,
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      const timedOut = (error as Error).name === 'TimeoutError';
      throw new TokenEndpointUnavailable(
        `the OAuth token endpoint ${timedOut ? `gave no answer within ${timeoutMs} ms` : `is unreachable (${(error as Error).message})`}`,
      );
    }
    if (response.status >= 500) throw new TokenEndpointUnavailable(`the OAuth token endpoint answered ${response.status}`);
    if (!response.ok) throw upstream(`ERP authentication failed: the OAuth token endpoint answered ${response.status}`);
    const answer = TokenAnswer.safeParse(await response.json().catch(() => undefined));
    if (!answer.success || (answer.data.token_type && answer.data.token_type.toLowerCase() !== 'bearer'))
      throw upstream('ERP authentication failed: the OAuth token endpoint answered no bearer access_token');
    const lifetime = answer.data.expires_in === undefined ? DEFAULT_LIFETIME_MS : answer.data.expires_in * 1000;
    current = { token: answer.data.access_token, renewAt: Date.now() + Math.max(0, lifetime - EXPIRY_MARGIN_MS) };
    return current.token;
  }

  return {
    async token(): Promise<string> {
      if (current && Date.now() < current.renewAt) return current.token;
      pending ??= request().finally(() => {
        pending = undefined;
      });
      return pending;
    },
    /** The ERP refused `token`: the next call asks for a new one (unless another call already did). */
    refused(token: string) {
      if (current?.token === token) current = undefined;
    },
  };
}
