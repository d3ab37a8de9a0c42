import { http, HttpResponse } from 'msw';
import { setupServer } from 'msw/node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpDocumentStore } from '../../server/integrations/documents/http.js';
import { runImport } from '../../server/jobs/erpImport.js';
import { loggerOptions, withRequestId } from '../../server/observability/requestContext.js';
import { startServer } from '../../server/server.js';
import { databaseKinds } from '../helpers/databases.js';
import { TestServer, testConfig } from '../helpers/server.js';

const ERP = 'http://erp.request-id.test';
const STORE = 'http://documents.request-id.test';
const seen: { erp: (string | null)[]; store: (string | null)[] } = { erp: [], store: [] };
const msw = setupServer(
  http.get(`${ERP}/tours`, ({ request }) => {
    seen.erp.push(request.headers.get('x-request-id'));
    return HttpResponse.json({ tours: [] });
  }),
  http.post(`${STORE}/documents`, ({ request }) => {
    seen.store.push(request.headers.get('x-request-id'));
    return HttpResponse.json({ reference: '~doc-1' });
  }),
);
beforeAll(() => msw.listen({ onUnhandledRequest: 'bypass' }));
afterAll(() => msw.close());

describe.each(databaseKinds)('the request id on %s', (kind) => {
  const lines: Record<string, unknown>[] = [];
  let api: TestServer;
  beforeAll(async () => {
    const logger = pino(loggerOptions('info'), {
      write: (line: string) => {
        lines.push(JSON.parse(line));
      },
    });
    const config = await testConfig(kind, { LOG_LEVEL: 'info', ERP_MODE: 'http', ERP_BASE_URL: ERP, ERP_RETRIES: '0' });
    api = new TestServer(await startServer(config, { ephemeral: true, logger }));
  }, 90_000);
  afterAll(() => api?.close());

  it('names the request in every log line of it, and goes to the ERP with its calls', async () => {
    const id = `import-${kind}-1`;
    const response = await api.post('/admin/import-erp?date=2026-05-04', undefined, { admin: true, headers: { 'x-request-id': id } });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toBe(id);
    expect(seen.erp.at(-1)).toBe(id);
    const imported = lines.find((l) => String(l.msg).startsWith('ERP import of 2026-05-04'));
    expect(imported).toMatchObject({ reqId: id });
    expect(lines.filter((l) => l.reqId === id).length).toBeGreaterThanOrEqual(2);
  });

  it('gives a job run an id of its own, in its log lines and its ERP calls', async () => {
    await runImport(api.ctx, '2026-05-05', 'scheduler');
    const line = lines.find((l) => String(l.msg).startsWith('ERP import of 2026-05-05'));
    expect(line?.reqId).toMatch(/^erp-import-[0-9a-f-]{36}$/);
    expect(seen.erp.at(-1)).toBe(line?.reqId);
  });
});

describe('the HTTP document store', () => {
  it('sends the request id with its requests, and none outside a request', async () => {
    const store = createHttpDocumentStore({ url: STORE });
    await withRequestId('upload-1', () => store.put(Buffer.from('pdf'), 'application/pdf', 'report.pdf'));
    expect(seen.store.at(-1)).toBe('upload-1');
    await store.put(Buffer.from('pdf'), 'application/pdf');
    expect(seen.store.at(-1)).toBeNull();
  });
});
