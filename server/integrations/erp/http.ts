import type { Logger } from 'pino';
import { z } from 'zod';
import type { Config, ErpAuth } from '../../config.js';
import { upstream } from '../../errors.js';
import { requestIdHeader } from '../../observability/requestContext.js';
import { ErpRefused, type ErpDocument, type ErpGateway } from './gateway.js';
import { ToursAnswer, toursOf } from './toursAnswer.js';
import { createOAuthTokens, TokenEndpointUnavailable } from './oauth.js';

const issuesOf = (error: z.ZodError) =>
  error.issues
    .slice(0, 3)
    .map((i) => `${i.path.join('.')}: ${i.message}`)
    .join('; ');

/** How much of a refusing ERP's answer is kept: enough for the back office to read why. */
const ANSWER_CHARS = 500;

/** The start of an answer's body as text, for the back office; never throws. */
async function answerText(response: Response): Promise<string> {
  const text = await response.text().catch(() => '');
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > ANSWER_CHARS ? `${flat.slice(0, ANSWER_CHARS)}…` : flat;
}

/** Network errors, timeouts, 408, 429 and 5xx answers are worth another try; any other answer is final. */
class Retryable extends Error {}

export interface HttpErpOptions {
  /** Wait before retry n (1-based); grows exponentially by default. */
  backoffMs?: (attempt: number) => number;
}

function staticAuthorization(auth: ErpAuth): Record<string, string> {
  if (auth.kind === 'bearer') return { authorization: `Bearer ${auth.token}` };
  if (auth.kind === 'basic')
    return { authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`, 'utf8').toString('base64')}` };
  return {};
}

/** The contract's ERP HTTP API, with a timeout per attempt and retries with backoff. */
export function createHttpErp(config: Config['erp'], logger: Logger, options: HttpErpOptions = {}): ErpGateway {
  const base = (config.baseUrl ?? '').replace(/\/+$/, '');
  const backoff = options.backoffMs ?? ((attempt) => Math.min(200 * 2 ** (attempt - 1), 5_000));
  const credentials = staticAuthorization(config.auth);
  const oauth = config.auth.kind === 'oauth' ? createOAuthTokens(config.auth, config.timeoutMs) : undefined;

  /** One request; with OAuth, a 401 is answered once more with a freshly asked-for token. */
  async function send(url: string, init: RequestInit): Promise<Response> {
    for (let renewed = false; ; renewed = true) {
      let token: string | undefined;
      try {
        token = oauth && (await oauth.token());
      } catch (error) {
        if (error instanceof TokenEndpointUnavailable) throw new Retryable(error.message);
        throw error;
      }
      const headers = { ...(init.headers as Record<string, string>), ...requestIdHeader(), ...credentials };
      if (token) headers.authorization = `Bearer ${token}`;
      let response: Response;
      try {
        // A redirect is an answer other than the contract's 2xx, not a way to another server.
        response = await fetch(url, { ...init, headers, redirect: 'manual', signal: AbortSignal.timeout(config.timeoutMs) });
      } catch (error) {
        const timedOut = (error as Error).name === 'TimeoutError';
        throw new Retryable(timedOut ? `no answer within ${config.timeoutMs} ms` : `unreachable (${(error as Error).message})`);
      }
      if (response.status !== 401 || !token || renewed) return response;
      await response.body?.cancel();
      oauth!.refused(token);
    }
  }

  async function call<T>(what: string, path: string, init: RequestInit, read: (response: Response) => Promise<T>): Promise<T> {
    let lastError = '';
    for (let attempt = 0; attempt <= config.retries; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, backoff(attempt)));
      try {
        const response = await send(`${base}${path}`, init);
        if (response.status >= 500 || response.status === 408 || response.status === 429) {
          // Not awaited: some bodies settle their cancel only once read.
          response.body?.cancel().catch(() => undefined);
          throw new Retryable(`answered ${response.status}`);
        }
        if (!response.ok) {
          const answer = await answerText(response);
          throw new ErpRefused(`ERP ${what} refused: answered ${response.status}${answer ? `: ${answer}` : ''}`, response.status);
        }
        return await read(response);
      } catch (error) {
        if (!(error instanceof Retryable)) throw error;
        lastError = error.message;
        logger.warn({ attempt: attempt + 1, of: config.retries + 1, error: lastError }, `ERP ${what} failed`);
      }
    }
    throw upstream(`ERP ${what} failed: ${lastError}`);
  }

  const post = (what: string, document: ErpDocument, kind: string, body: unknown, idempotencyKey: string) =>
    call(
      what,
      `/documents/${document.belegartId}/${encodeURIComponent(document.belegnummer)}/${kind}`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', 'idempotency-key': idempotencyKey },
        body: JSON.stringify(body),
      },
      async (response) => {
        await response.body?.cancel();
      },
    );

  return {
    fetchTours: (date) =>
      call('tour read', `/tours?date=${encodeURIComponent(date)}`, { headers: { accept: 'application/json' } }, async (response) => {
        let body: unknown;
        try {
          body = await response.json();
        } catch {
          throw upstream('ERP tour read failed: the answer is not JSON');
        }
        const parsed = ToursAnswer.safeParse(body);
        if (!parsed.success) throw upstream(`ERP tour read failed: the answer does not fit the contract (${issuesOf(parsed.error)})`);
        return toursOf(parsed.data.tours, date);
      }),
    // Every attempt, and every later push of this write-back, carries the same key: the ERP deduplicates by it.
    pushCompletion: (document, writeBack, idempotencyKey) => post('write-back', document, 'completion', writeBack, idempotencyKey),
    pushCancellation: (document, writeBack, idempotencyKey) => post('cancellation', document, 'cancellation', writeBack, idempotencyKey),
  };
}
