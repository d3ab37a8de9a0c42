import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createGateway } from '../../examples/erp-gateway/gateway.js';
import { contractSchemas, fieldTable, GUIDE, withFieldTables } from '../../server/cli/erpContractTables.js';
import { CancellationWriteBack, CompletionWriteBack, ErpToursAnswer } from '../../shared/schemas/erp.js';
import { ImportSummary } from '../../shared/schemas/imports.js';
import { SyncDelivery } from '../../shared/schemas/tours.js';
import { databaseKinds } from '../helpers/databases.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { completionForm } from '../helpers/uploads.js';

const guide = readFileSync(GUIDE, 'utf8');
const schemas: Record<string, z.ZodType> = {
  ErpToursAnswer,
  SyncDelivery,
  ErpCompletionWriteBack: CompletionWriteBack,
  ErpCancellationWriteBack: CancellationWriteBack,
  ImportSummary,
};

/** The guide's example payloads: each JSON block after a `<!-- example: Schema -->` marker. */
const examples = [...guide.matchAll(/<!-- example: (\w+) -->\n```json\n([\s\S]*?)\n```/g)].map(([, schema, json]) => ({
  schema,
  value: JSON.parse(json) as unknown,
}));

/** Every key the example uses is a field of the schema: a misspelt field would be dropped silently by the parse. */
function unknownKeys(value: unknown, schema: Record<string, unknown>, defs: Record<string, Record<string, unknown>>, path = ''): string[] {
  const resolve = (s: Record<string, unknown>): Record<string, unknown> =>
    typeof s.$ref === 'string' ? resolve(defs[s.$ref.split('/').pop()!]) : s;
  const own = resolve(schema);
  const options = ((own.anyOf as Record<string, unknown>[] | undefined) ?? [own]).map(resolve);
  if (Array.isArray(value)) {
    const items = options.find((o) => o.type === 'array')?.items as Record<string, unknown>;
    return value.flatMap((v, i) => unknownKeys(v, items, defs, `${path}[${i}]`));
  }
  if (value === null || typeof value !== 'object') return [];
  const properties = (options.find((o) => o.properties)?.properties ?? {}) as Record<string, Record<string, unknown>>;
  return Object.entries(value).flatMap(([key, v]) =>
    properties[key] ? unknownKeys(v, properties[key], defs, `${path}.${key}`) : [`${path}.${key}`],
  );
}

describe('the ERP integration guide', () => {
  it('has an example of each payload of the contract', () => {
    expect(new Set(examples.map((e) => e.schema))).toEqual(new Set(Object.keys(schemas)));
  });

  it.each(examples.map((e) => [e.schema, e] as const))('has a %s example that fits its schema field for field', (_name, example) => {
    const schema = schemas[example.schema];
    expect(schema.safeParse(example.value).error?.issues ?? []).toEqual([]);
    const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    expect(unknownKeys(example.value, json, (json.$defs ?? {}) as Record<string, Record<string, unknown>>)).toEqual([]);
  });

  it("shows as the day's answer exactly what the reference gateway serves", () => {
    const day = JSON.parse(readFileSync(new URL('../../examples/erp-gateway/day.json', import.meta.url), 'utf8'));
    expect(examples.find((e) => e.schema === 'ErpToursAnswer')!.value).toEqual(day);
  });

  it('lists every field of the contract with its meaning, as the schemas describe it (npm run docs:erp writes it)', () => {
    expect(withFieldTables(guide)).toBe(guide);
    for (const schema of Object.values(contractSchemas)) {
      const rows = fieldTable(schema).split('\n').slice(2);
      expect(rows.filter((row) => row.endsWith('|  |'))).toEqual([]);
    }
  });
});

describe.each(databaseKinds)('the reference ERP gateway, as the guide runs it, on %s', (kind) => {
  const date = '2026-03-10';
  const gateway = createGateway({ token: 's3cret' });
  let api: TestServer;
  beforeAll(async () => {
    const url = await gateway.listen();
    api = await startTestServer(kind, {
      ERP_MODE: 'http',
      ERP_BASE_URL: url,
      ERP_TOKEN: 's3cret',
      ERP_PUSH_CANCELLATIONS: 'true',
      ERP_PUSH_POLL_MS: '50',
    });
  });
  afterAll(async () => {
    await api.close();
    await gateway.close();
  });

  it('imports the day, takes a completion and a cancellation once each, and names the report', async () => {
    const token = await api.token(1001);
    for (const method of [
      { code: 'BAR', name: 'Bar', collectOnSite: true },
      { code: 'EC', name: 'EC-Karte', collectOnSite: true },
      { code: 'RECHNUNG', name: 'Rechnung', collectOnSite: false },
    ])
      expect((await api.post('/payment-methods', method, { token })).status).toBe(200);

    const run = await api.post(`/admin/import-erp?date=${date}`, undefined, { admin: true });
    expect(run.body).toMatchObject({ success: true, tours: 2, deliveries_created: 3, error: null });

    const tourId = (await api.get(`/me/tours?date=${date}`, { token })).body.tours[0].id;
    const tour = (await api.get(`/tours/${tourId}`, { token })).body;
    const byNumber = (n: string) => tour.deliveries.find((d: { belegnummer: string }) => d.belegnummer === n);
    const invoice = byNumber('LS-2026-0816');
    // The ERP's payment code is linked to the method of that code.
    const methods = (await api.get('/payment-methods', { token })).body.paymentMethods as { id: string; code: string }[];
    expect(invoice.paymentMethodId).toBe(methods.find((m) => m.code === 'RECHNUNG')!.id);

    const scans = invoice.positions.flatMap((p: { id: string; requiredQuantity: number }) =>
      Array.from({ length: p.requiredQuantity }, () => ({
        clientScanId: randomUUID(),
        deliveryItemId: p.id,
        action: 'scan',
        occurredAt: new Date().toISOString(),
      })),
    );
    expect((await api.post('/scans', { scans }, { token })).status).toBe(200);
    expect((await api.post(`/deliveries/${invoice.id}/complete`, await completionForm(), { token })).status).toBe(200);
    const cash = byNumber('LS-2026-0815');
    expect(
      (await api.post(`/deliveries/${cash.id}/cancel`, { reason: 'Kunde nicht angetroffen, Geschäft geschlossen' }, { token })).status,
    ).toBe(200);

    await expect.poll(() => gateway.applied.size, { timeout: 10_000 }).toBe(2);
    const received = [...gateway.applied.values()];
    const completion = received.find((r) => r.kind === 'completion')!;
    expect(completion).toMatchObject({
      belegartId: 20,
      belegnummer: 'LS-2026-0816',
      idempotencyKey: `completion-${invoice.id}`,
      copies: 1,
    });
    expect(CompletionWriteBack.parse(completion.body)).toMatchObject({
      state: 'completed',
      paymentTerm: '14 Tage netto',
      creditAmountCents: 0,
    });
    const cancellation = received.find((r) => r.kind === 'cancellation')!;
    expect(cancellation).toMatchObject({ belegnummer: 'LS-2026-0815', idempotencyKey: `cancellation-${cash.id}` });
    expect(CancellationWriteBack.parse(cancellation.body).reason).toBe('Kunde nicht angetroffen, Geschäft geschlossen');

    // An admin push is a copy: the gateway answers it without applying it again.
    expect((await api.post(`/admin/push-completion?delivery_id=${invoice.id}`, undefined, { admin: true })).status).toBe(204);
    expect(gateway.applied.get(`completion-${invoice.id}`)!.copies).toBe(2);
    const report = await api.get(CompletionWriteBack.parse(completion.body).report.downloadPath, { admin: true });
    expect(report.status).toBe(200);
    expect(report.headers.get('content-type')).toBe('application/pdf');
  });

  it('is refused by the gateway without its token: the run fails with the answer', async () => {
    const other = createGateway({ token: 'another' });
    const url = await other.listen();
    const server = await startTestServer(kind, { ERP_MODE: 'http', ERP_BASE_URL: url, ERP_TOKEN: 's3cret' });
    try {
      const run = await server.post(`/admin/import-erp?date=${date}`, undefined, { admin: true });
      expect(run.status).toBe(502);
      expect(run.body.detail).toContain('answered 401');
    } finally {
      await server.close();
      await other.close();
    }
  });
});
