import { randomUUID } from 'node:crypto';
import { delay, http, HttpResponse } from 'msw';
import { setupServer } from 'msw/node';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { DomainError } from '../../server/errors.js';
import { completionIdempotencyKey, ErpRefused } from '../../server/integrations/erp/gateway.js';
import { createHttpErp } from '../../server/integrations/erp/http.js';
import { generateDemoTours } from '../../server/integrations/erp/demoData.js';

const ERP = 'http://erp.test/api';
const config = (env: Record<string, string> = {}) =>
  loadConfig({ ERP_MODE: 'http', ERP_BASE_URL: `${ERP}/`, ERP_TIMEOUT_MS: '200', ERP_RETRIES: '2', ...env }).erp;
const logger = pino({ level: 'silent' });
const erp = (env?: Record<string, string>) => createHttpErp(config(env), logger, { backoffMs: () => 5 });

const writeBack = {
  deliveredAt: '2026-03-10T09:30:00.000Z',
  state: 'completed' as const,
  paymentTerm: 'Sofort',
  creditAmountCents: 2000,
  report: {
    reference: '~documents/Lieferbericht-1.pdf',
    fileName: 'Lieferbericht-1.pdf',
    contentType: 'application/pdf' as const,
    sizeBytes: 1234,
    sha256: 'a'.repeat(64),
    downloadPath: '/admin/deliveries/00000000-0000-4000-8000-000000000001/report',
  },
};

const msw = setupServer();
beforeAll(() => msw.listen({ onUnhandledRequest: 'error' }));
afterEach(() => msw.resetHandlers());
afterAll(() => msw.close());

async function upstreamError(promise: Promise<unknown>) {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DomainError);
  expect((error as DomainError).code).toBe('upstream_unavailable');
  return error as DomainError;
}

describe('ERP over HTTP', () => {
  it('reads the tours of a date from GET /tours?date=', async () => {
    const tours = generateDemoTours('2026-03-10');
    const dates: string[] = [];
    msw.use(
      http.get(`${ERP}/tours`, ({ request }) => {
        dates.push(new URL(request.url).searchParams.get('date')!);
        return HttpResponse.json({ tours });
      }),
    );
    expect(await erp().fetchTours('2026-03-10')).toEqual({ tours, refused: [] });
    expect(dates).toEqual(['2026-03-10']);
  });

  it('retries network errors and 5xx answers and succeeds when the ERP recovers', async () => {
    let calls = 0;
    msw.use(
      http.get(`${ERP}/tours`, () => {
        calls += 1;
        if (calls === 1) return HttpResponse.error();
        if (calls === 2) return new HttpResponse(null, { status: 503 });
        return HttpResponse.json({ tours: [] });
      }),
    );
    expect(await erp().fetchTours('2026-03-10')).toEqual({ tours: [], refused: [] });
    expect(calls).toBe(3);
  });

  it('gives up after the configured retries with upstream_unavailable', async () => {
    let calls = 0;
    msw.use(
      http.get(`${ERP}/tours`, () => {
        calls += 1;
        return new HttpResponse('down', { status: 500 });
      }),
    );
    const error = await upstreamError(erp({ ERP_RETRIES: '1' }).fetchTours('2026-03-10'));
    expect(error.message).toContain('500');
    expect(calls).toBe(2);
  });

  it('aborts an attempt after ERP_TIMEOUT_MS', async () => {
    let calls = 0;
    msw.use(
      http.get(`${ERP}/tours`, async () => {
        calls += 1;
        await delay(2_000);
        return HttpResponse.json({ tours: [] });
      }),
    );
    const started = Date.now();
    const error = await upstreamError(erp({ ERP_RETRIES: '1', ERP_TIMEOUT_MS: '100' }).fetchTours('2026-03-10'));
    expect(error.message).toContain('100 ms');
    expect(calls).toBe(2);
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it.each([
    ['a 4xx answer', () => new HttpResponse(null, { status: 404 })],
    ['an answer that is not JSON', () => new HttpResponse('<html>', { status: 200, headers: { 'content-type': 'text/html' } })],
    ['an answer without tours', () => HttpResponse.json({ data: [] })],
    ['a redirect, even to an answer that would fit', () => HttpResponse.redirect(`${ERP}/moved`, 307)],
  ])('fails without retry on %s', async (_what, answer) => {
    let calls = 0;
    msw.use(
      http.get(`${ERP}/tours`, () => {
        calls += 1;
        return answer();
      }),
      http.get(`${ERP}/moved`, () => HttpResponse.json({ tours: [] })),
    );
    await upstreamError(erp().fetchTours('2026-03-10'));
    expect(calls).toBe(1);
  });

  it('refuses a tour that does not fit the contract on its own and keeps the others', async () => {
    const [good] = generateDemoTours('2026-03-10');
    msw.use(http.get(`${ERP}/tours`, () => HttpResponse.json({ tours: [good, { driver: { personalnummer: 'x' } }] })));
    const day = await erp().fetchTours('2026-03-10');
    expect(day.tours).toEqual([good]);
    expect(day.refused).toEqual([
      expect.stringMatching(/^tour 2 of the answer \(driver x\) does not fit the contract: driver\.personalnummer: /),
    ]);
  });

  it('posts a completion to /documents/{belegartId}/{belegnummer}/completion', async () => {
    const received: { path: string; body: unknown }[] = [];
    msw.use(
      http.post(`${ERP}/documents/:belegartId/:belegnummer/completion`, async ({ request, params }) => {
        received.push({ path: `${params.belegartId}/${params.belegnummer}`, body: await request.json() });
        return new HttpResponse(null, { status: 204 });
      }),
    );
    await erp().pushCompletion({ belegartId: 20, belegnummer: 'LS 4711/A' }, writeBack, 'completion-1');
    expect(received).toEqual([{ path: '20/LS 4711/A', body: writeBack }]);
  });

  it('does not retry a write-back the ERP refuses with a 4xx, and keeps its answer, truncated', async () => {
    let calls = 0;
    const answer = { error: 'belegnummer unknown', detail: 'x'.repeat(2000) };
    msw.use(
      http.post(`${ERP}/documents/:belegartId/:belegnummer/completion`, () => {
        calls += 1;
        return HttpResponse.json(answer, { status: 422 });
      }),
    );
    const error = await upstreamError(erp().pushCompletion({ belegartId: 20, belegnummer: '1' }, writeBack, 'completion-1'));
    expect(error).toBeInstanceOf(ErpRefused);
    expect((error as ErpRefused).erpStatus).toBe(422);
    expect(error.message).toContain('answered 422: {"error":"belegnummer unknown"');
    expect(error.message.length).toBeLessThan(600);
    expect(calls).toBe(1);
  });

  it.each([408, 429, 503])('retries a write-back the ERP answers %i, as a passing failure', async (status) => {
    let calls = 0;
    msw.use(
      http.post(`${ERP}/documents/:belegartId/:belegnummer/completion`, () => {
        calls += 1;
        return new HttpResponse(null, { status: calls === 1 ? status : 204 });
      }),
    );
    await erp().pushCompletion({ belegartId: 20, belegnummer: '1' }, writeBack, 'completion-1');
    expect(calls).toBe(2);
  });

  it('posts a cancellation to /documents/{belegartId}/{belegnummer}/cancellation with its key', async () => {
    const received: { path: string; key: string | null; type: string | null; body: unknown }[] = [];
    msw.use(
      http.post(`${ERP}/documents/:belegartId/:belegnummer/cancellation`, async ({ request, params }) => {
        received.push({
          path: `${params.belegartId}/${params.belegnummer}`,
          key: request.headers.get('idempotency-key'),
          type: request.headers.get('content-type'),
          body: await request.json(),
        });
        return new HttpResponse(null, { status: 204 });
      }),
    );
    const cancellation = { canceledAt: '2026-03-10T09:30:00.000Z', state: 'canceled' as const, reason: 'Kunde nicht angetroffen' };
    await erp().pushCancellation({ belegartId: 20, belegnummer: 'LS 4711/A' }, cancellation, 'cancellation-1');
    expect(received).toEqual([{ path: '20/LS 4711/A', key: 'cancellation-1', type: 'application/json', body: cancellation }]);
  });

  it('sends one Idempotency-Key on every attempt of a completion, and another for another delivery', async () => {
    const keys: (string | null)[] = [];
    msw.use(
      http.post(`${ERP}/documents/:belegartId/:belegnummer/completion`, ({ request }) => {
        keys.push(request.headers.get('idempotency-key'));
        return keys.length === 1 ? new HttpResponse('busy', { status: 500 }) : new HttpResponse(null, { status: 204 });
      }),
    );
    const first = randomUUID();
    const other = randomUUID();
    await erp().pushCompletion({ belegartId: 20, belegnummer: '1' }, writeBack, completionIdempotencyKey(first));
    await erp().pushCompletion({ belegartId: 20, belegnummer: '2' }, writeBack, completionIdempotencyKey(other));
    expect(keys).toEqual([`completion-${first}`, `completion-${first}`, `completion-${other}`]);
  });
});

describe('ERP authentication', () => {
  /** The Authorization header of the import and of the write-back. */
  async function authorizationOf(env: Record<string, string>) {
    const seen: (string | null)[] = [];
    msw.use(
      http.get(`${ERP}/tours`, ({ request }) => {
        seen.push(request.headers.get('authorization'));
        return HttpResponse.json({ tours: [] });
      }),
      http.post(`${ERP}/documents/:belegartId/:belegnummer/completion`, ({ request }) => {
        seen.push(request.headers.get('authorization'));
        return new HttpResponse(null, { status: 204 });
      }),
    );
    const gateway = erp(env);
    await gateway.fetchTours('2026-03-10');
    await gateway.pushCompletion({ belegartId: 20, belegnummer: '1' }, writeBack, 'completion-1');
    return seen;
  }

  it('sends ERP_TOKEN as a bearer token on the import and the write-back', async () => {
    expect(await authorizationOf({ ERP_TOKEN: 'erp-token-0123' })).toEqual(['Bearer erp-token-0123', 'Bearer erp-token-0123']);
  });

  it('sends ERP_USERNAME and ERP_PASSWORD as basic authentication on the import and the write-back', async () => {
    const basic = `Basic ${Buffer.from('tourline:pässwörd:1', 'utf8').toString('base64')}`;
    expect(await authorizationOf({ ERP_USERNAME: 'tourline', ERP_PASSWORD: 'pässwörd:1' })).toEqual([basic, basic]);
  });

  it('sends no Authorization header when no credentials are configured', async () => {
    expect(await authorizationOf({})).toEqual([null, null]);
  });

  it('never logs the credentials of a failing call', async () => {
    const lines: string[] = [];
    const recording = pino({ level: 'trace' }, { write: (line: string) => lines.push(line) });
    msw.use(http.get(`${ERP}/tours`, () => new HttpResponse(null, { status: 503 })));
    const gateway = createHttpErp(config({ ERP_TOKEN: 'erp-token-s3cret', ERP_RETRIES: '1' }), recording, { backoffMs: () => 1 });
    await upstreamError(gateway.fetchTours('2026-03-10'));
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('')).not.toContain('s3cret');
  });
});

describe('ERP authentication by OAuth 2 client credentials', () => {
  const TOKEN_URL = 'http://idp.test/oauth/token';
  const oauth = {
    ERP_OAUTH_TOKEN_URL: TOKEN_URL,
    ERP_OAUTH_CLIENT_ID: 'tour line',
    ERP_OAUTH_CLIENT_SECRET: 'se:cret',
    ERP_OAUTH_SCOPE: 'erp',
  };

  /** A token endpoint that hands out token-1, token-2, … and records each request. */
  function tokenEndpoint(expiresIn: number | undefined = 3600) {
    const requests: { authorization: string | null; form: Record<string, string> }[] = [];
    msw.use(
      http.post(TOKEN_URL, async ({ request }) => {
        requests.push({
          authorization: request.headers.get('authorization'),
          form: Object.fromEntries(new URLSearchParams(await request.text())),
        });
        return HttpResponse.json({ access_token: `token-${requests.length}`, token_type: 'Bearer', expires_in: expiresIn });
      }),
    );
    return requests;
  }

  /** An ERP that records the Authorization of each call and answers `status(authorization)`. */
  function recordingErp(status: (authorization: string | null) => number = () => 200) {
    const seen: (string | null)[] = [];
    const answer = (request: Request, body: () => Response) => {
      const authorization = request.headers.get('authorization');
      seen.push(authorization);
      const code = status(authorization);
      return code === 200 ? body() : new HttpResponse(null, { status: code });
    };
    msw.use(
      http.get(`${ERP}/tours`, ({ request }) => answer(request, () => HttpResponse.json({ tours: [] }))),
      http.post(`${ERP}/documents/:belegartId/:belegnummer/completion`, ({ request }) =>
        answer(request, () => new HttpResponse(null, { status: 204 })),
      ),
    );
    return seen;
  }

  it('gets one token by client credentials and sends it as a bearer token on the import and the write-back', async () => {
    const requests = tokenEndpoint();
    const seen = recordingErp();
    const gateway = erp(oauth);
    await gateway.fetchTours('2026-03-10');
    await gateway.pushCompletion({ belegartId: 20, belegnummer: '1' }, writeBack, 'completion-1');
    expect(seen).toEqual(['Bearer token-1', 'Bearer token-1']);
    expect(requests).toEqual([
      {
        authorization: `Basic ${Buffer.from('tour%20line:se%3Acret').toString('base64')}`,
        form: { grant_type: 'client_credentials', scope: 'erp' },
      },
    ]);
  });

  it('asks for a new token when the cached one is about to expire', async () => {
    const requests = tokenEndpoint(10);
    const seen = recordingErp();
    const gateway = erp(oauth);
    await gateway.fetchTours('2026-03-10');
    await gateway.fetchTours('2026-03-10');
    expect(seen).toEqual(['Bearer token-1', 'Bearer token-2']);
    expect(requests).toHaveLength(2);
  });

  it('asks for a new token once when the ERP answers 401, and fails on a second 401', async () => {
    tokenEndpoint();
    const seen = recordingErp((authorization) => (authorization === 'Bearer token-1' ? 401 : 200));
    const gateway = erp(oauth);
    await gateway.fetchTours('2026-03-10');
    expect(seen).toEqual(['Bearer token-1', 'Bearer token-2']);

    const refusing = recordingErp(() => 401);
    const error = await upstreamError(erp(oauth).fetchTours('2026-03-10'));
    expect(error.message).toContain('401');
    expect(refusing).toHaveLength(2);
  });

  it('fails the call without retry when the token endpoint refuses the client, and never says the secret', async () => {
    let calls = 0;
    msw.use(
      http.post(TOKEN_URL, () => {
        calls += 1;
        return HttpResponse.json({ error: 'invalid_client' }, { status: 401 });
      }),
    );
    const seen = recordingErp();
    const error = await upstreamError(erp(oauth).fetchTours('2026-03-10'));
    expect(error.message).toBe('ERP authentication failed: the OAuth token endpoint answered 401');
    expect(calls).toBe(1);
    expect(seen).toEqual([]);
  });

  it('retries a token endpoint that answers 5xx like a failed attempt', async () => {
    let calls = 0;
    msw.use(
      http.post(TOKEN_URL, () => {
        calls += 1;
        return calls === 1 ? new HttpResponse(null, { status: 503 }) : HttpResponse.json({ access_token: 'late-token', expires_in: 3600 });
      }),
    );
    const seen = recordingErp();
    await erp(oauth).fetchTours('2026-03-10');
    expect(seen).toEqual(['Bearer late-token']);
  });
});
