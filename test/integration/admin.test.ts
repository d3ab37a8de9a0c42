import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { deliveries } from '../../server/db/schema.js';
import { databaseKinds } from '../helpers/databases.js';
import { addContact, completeAt, newTour, sampleAddress } from '../helpers/factories.js';
import { useTestServer } from '../helpers/server.js';
import { completionForm } from '../helpers/uploads.js';
import { berlin, berlinDayOf, driverOf, expectSnakeCase } from './admin.helpers.js';
import { inProcess } from '../helpers/target.js';

const admin = { admin: true } as const;

describe.each(databaseKinds)('back office on %s', (kind) => {
  const api = useTestServer(kind);

  /** Gives the deliveries the same document number under different document kinds. */
  async function shareNumber(deliveryIds: string[]) {
    const belegnummer = `SHARED-${randomUUID().slice(0, 8)}`;
    for (const [index, id] of deliveryIds.entries()) {
      await api.db
        .update(deliveries)
        .set({ belegnummer, belegartId: index + 1 })
        .where(eq(deliveries.id, id));
    }
    return belegnummer;
  }

  describe('authentication', () => {
    const endpoints: [string, string, unknown?][] = [
      ['GET', '/admin/belege/LS-1'],
      ['GET', '/admin/belege/LS-1/positions-modified'],
      ['GET', '/admin/completed-deliveries'],
      ['GET', '/admin/delivered-belegnummern'],
      ['POST', '/admin/mark-mail-sent', { belegnummern: ['LS-1'] }],
      ['GET', '/admin/reviews'],
      ['POST', `/admin/reviews/${randomUUID()}/resolve`, { processor: 'Frau Weber' }],
    ];

    it.each(endpoints)('answers 401 problem+json for %s %s without or with a wrong admin key', async (method, path, body) => {
      for (const options of [{}, { admin: 'wrong-key-0123456789abcdef' }]) {
        const response = await api.request(method, path, { ...options, body });
        expect(response.status).toBe(401);
        expect(response.headers.get('content-type')).toContain('application/problem+json');
        expect(response.body).toMatchObject({ code: 'unauthorized', title: 'Authentifizierung fehlgeschlagen' });
      }
    });

    it.each(endpoints)('answers 403 problem+json for %s %s to a driver token', async (method, path, body) => {
      const response = await api.request(method, path, { token: await api.token(7001), body });
      expect(response.status).toBe(403);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(response.body).toMatchObject({ code: 'forbidden' });
    });

    it('documents every admin endpoint with the admin key or a back-office token in the OpenAPI document', async () => {
      const doc = (await api.get('/openapi.json')).body;
      for (const [method, path] of endpoints) {
        const documented = path.replace('LS-1', '{belegnummer}').replace(/reviews\/[^/]+/, 'reviews/{delivery_id}');
        expect(doc.paths[documented]?.[method.toLowerCase()]?.security, `${method} ${documented}`).toEqual([
          { admin_api_key: [] },
          { bearer_auth: [] },
        ]);
      }
      expect(doc.components.schemas).toHaveProperty('PendingReviewResponse');
      expect(doc.components.schemas).toHaveProperty('CompletedDeliveriesResponse');
    });
  });

  describe('GET /admin/belege/{belegnummer}', () => {
    it('answers the full package of a completed delivery in snake_case', async () => {
      const token = await api.token(7101);
      const driver = driverOf(api, token);
      const {
        tour,
        customer,
        deliveries: [{ delivery, items }],
      } = await newTour(api.db, { accountId: 7101, openAmountCents: 5000, tourDate: '2026-06-01' });
      await addContact(api.db, delivery.id, {
        role: 'contact_person',
        name1: 'Erika Mustermann',
        channels: [
          { kind: 'phone', value: '030 1234' },
          { kind: 'email', value: 'erika@example.org' },
        ],
      });
      await addContact(api.db, delivery.id, { role: 'delivery', name1: 'Bäckerei Sonnenschein', address: sampleAddress('Lieferweg') }, 2);
      const car = await driver.car();
      const method = (
        await api.post('/payment-methods', { code: `BAR-${randomUUID().slice(0, 4)}`, name: 'Bar', collectOnSite: true }, { token })
      ).body.paymentMethod;
      const service = (
        await api.post('/services', { key: `altgeraet-${randomUUID().slice(0, 4)}`, name: 'Altgerät', kind: 'boolean' }, { token })
      ).body.service;
      const payment = await api.post(
        `/deliveries/${delivery.id}/payment`,
        { clientEventId: randomUUID(), expectedAmountCents: 5000, paymentMethodId: method.id },
        { token },
      );
      expect(payment.status).toBe(200);
      expect((await api.put(`/deliveries/${delivery.id}/services/${service.id}`, { boolValue: true }, { token })).status).toBe(200);
      const note = await driver.note(delivery.id, { text: 'Hintereingang benutzen' });
      await driver.scan(items[0].id, 'remove', { quantity: 1, authorCarId: car.id, reason: 'Flasche kaputt' });
      await driver.credit(delivery.id, { action: 'set', amountCents: 1000, reason: 'Verspätung', authorCarId: car.id });
      const completion = await completeAt(api.db, delivery.id, new Date('2026-06-01T12:00:00Z'));

      const response = await api.get(`/admin/belege/${delivery.belegnummer}`, admin);
      expect(response.status).toBe(200);
      expectSnakeCase(response.body);
      expect(response.body.belegnummer).toBe(delivery.belegnummer);
      expect(response.body.deliveries).toHaveLength(1);
      const details = response.body.deliveries[0];
      expect(details).toMatchObject({
        id: delivery.id,
        belegnummer: delivery.belegnummer,
        belegart_id: 1,
        state: 'completed',
        completed_at: '2026-06-01T12:00:00.000Z',
        mail_sent_at: null,
        tour: { id: tour.id, tour_date: '2026-06-01', driver_personalnummer: 7101, driver_name: 'Fahrer 7101' },
        delivery_address: { street: 'Hauptstraße', house_number: '12a', postal_code: '10115', addition: null },
        credit: { amount_cents: 1000, reason: 'Verspätung' },
        positions_modified: true,
        review: { pending: true, last_resolution: null },
        customer: { id: customer.id, erp_customer_id: customer.erpCustomerId, name: customer.name, address: { street: 'Marktplatz' } },
        contact_person: { role: 'contact_person', name1: 'Erika Mustermann', address: null },
        latest_payment: { id: payment.body.payment.id, amount_cents: 5000, payment_method_id: method.id },
        completion: {
          completed_at: '2026-06-01T12:00:00.000Z',
          customer_signature_id: completion.customerSignatureId,
          driver_signature_id: completion.driverSignatureId,
          report_attachment_id: null,
          erp_push: { status: 'pending', attempts: 0, pushed_at: null, error: null },
        },
      });
      expect(details.contact_person.channels.map((c: { kind: string; value: string }) => [c.kind, c.value])).toEqual([
        ['phone', '030 1234'],
        ['email', 'erika@example.org'],
      ]);
      expect(details.contacts.map((c: { role: string }) => c.role)).toEqual(['contact_person', 'delivery']);
      expect(details.contacts[1].address).toMatchObject({ street: 'Lieferweg', house_number: '12a' });
      expect(details.positions).toEqual([
        expect.objectContaining({
          id: items[0].id,
          line_number: 10,
          required_quantity: 2,
          scanned_quantity: 2,
          credited_quantity: 1,
          scannable: true,
          modified: true,
        }),
        expect.objectContaining({
          id: items[1].id,
          line_number: 20,
          required_quantity: 1,
          credited_quantity: 0,
          scannable: false,
          modified: false,
        }),
      ]);
      expect(details.articles.map((a: { id: string }) => a.id).sort()).toEqual([items[0].articleId, items[1].articleId].sort());
      expect(details.warehouses).toEqual([]);
      expect(details.notes).toEqual([
        expect.objectContaining({ id: note.id, text: 'Hintereingang benutzen', is_amount_credit_note: false }),
      ]);
      expect(details.service_values).toEqual([
        expect.objectContaining({ service_id: service.id, service_key: service.key, bool_value: true }),
      ]);
      expect(details.attachments.map((a: { id: string }) => a.id).sort()).toEqual(
        [completion.customerSignatureId, completion.driverSignatureId].sort(),
      );
    });

    it('answers every delivery sharing the number, newest tour first', async () => {
      const older = await newTour(api.db, { accountId: 7102, tourDate: '2026-07-01' });
      const newer = await newTour(api.db, { accountId: 7103, tourDate: '2026-07-03' });
      const belegnummer = await shareNumber([older.deliveries[0].delivery.id, newer.deliveries[0].delivery.id]);
      const response = await api.get(`/admin/belege/${belegnummer}`, admin);
      expect(response.status).toBe(200);
      expect(
        response.body.deliveries.map((d: { id: string; belegart_id: number; tour: { tour_date: string } }) => [
          d.id,
          d.belegart_id,
          d.tour.tour_date,
        ]),
      ).toEqual([
        [newer.deliveries[0].delivery.id, 2, '2026-07-03'],
        [older.deliveries[0].delivery.id, 1, '2026-07-01'],
      ]);
      expect(
        response.body.deliveries.every((d: { state: string; completion: unknown }) => d.state === 'active' && d.completion === null),
      ).toBe(true);
    });

    inProcess.it('reads a number in a fixed number of queries, whatever the number of deliveries and positions', async () => {
      const small = await newTour(api.db, { accountId: 7104, positions: [{ quantity: 1 }] });
      const large = await newTour(api.db, {
        accountId: 7105,
        deliveries: 3,
        positions: Array.from({ length: 6 }, () => ({ quantity: 2 })),
      });
      for (const { delivery } of large.deliveries)
        await addContact(api.db, delivery.id, { role: 'header', channels: [{ kind: 'phone', value: '1' }] });
      const shared = await shareNumber(large.deliveries.map((d) => d.delivery.id));
      const count = async (belegnummer: string) => {
        const { statements, result } = await api.statementsOf(() => api.get(`/admin/belege/${belegnummer}`, admin));
        expect(result.status).toBe(200);
        return statements;
      };
      expect(await count(shared)).toBe(await count(small.deliveries[0].delivery.belegnummer));
    });

    it('shows a delivery completed through the endpoint with its completion, write-back status and open mail', async () => {
      const token = await api.token(7106);
      const {
        deliveries: [{ delivery }],
      } = await newTour(api.db, { accountId: 7106 });
      const completed = await api.post(`/deliveries/${delivery.id}/complete`, await completionForm(), { token });
      expect(completed.status).toBe(200);
      const day = berlinDayOf(new Date(completed.body.delivery.completedAt));

      const listed = (await api.get(`/admin/completed-deliveries?day=${day}`, admin)).body;
      expect(listed.deliveries).toEqual(
        expect.arrayContaining([expect.objectContaining({ delivery_id: delivery.id, positions_modified: false })]),
      );
      expect((await api.get(`/admin/delivered-belegnummern?day=${day}`, admin)).body.belegnummern).toContain(delivery.belegnummer);

      const details = (await api.get(`/admin/belege/${delivery.belegnummer}`, admin)).body.deliveries[0];
      expect(details).toMatchObject({ state: 'completed', completed_at: completed.body.delivery.completedAt, mail_sent_at: null });
      expect(details.completion.erp_push.status).toMatch(/^(pending|succeeded|failed)$/);
      const kinds = Object.fromEntries(details.attachments.map((a: { id: string; kind: string }) => [a.id, a.kind]));
      expect(kinds[details.completion.customer_signature_id]).toBe('customer_signature');
      expect(kinds[details.completion.driver_signature_id]).toBe('driver_signature');
    });

    it.each(['LS-UNKNOWN-0', '%20LS-1%20', 'x'.repeat(150), 'x'.repeat(1200)])('answers 404 for the unknown number %s', async (number) => {
      const response = await api.get(`/admin/belege/${number}`, admin);
      expect(response.status).toBe(404);
      expect(response.body.code).toBe('not_found');
    });
  });

  describe('GET /admin/belege/{belegnummer}/positions-modified', () => {
    const modified = async (belegnummer: string) => {
      const response = await api.get(`/admin/belege/${belegnummer}/positions-modified`, admin);
      expect(response.status).toBe(200);
      expect(response.body.belegnummer).toBe(belegnummer);
      return response.body.positions_modified as boolean;
    };

    it('is false for an untouched delivery and true after a line is removed, until it is restored', async () => {
      const token = await api.token(7201);
      const {
        deliveries: [{ delivery, items }],
      } = await newTour(api.db, { accountId: 7201 });
      expect(await modified(delivery.belegnummer)).toBe(false);
      await driverOf(api, token).scan(items[0].id, 'remove');
      expect(await modified(delivery.belegnummer)).toBe(true);
      await driverOf(api, token).scan(items[0].id, 'unremove');
      expect(await modified(delivery.belegnummer)).toBe(false);
    });

    it('is true for credited pieces and for an active money credit, also once completed', async () => {
      const token = await api.token(7202);
      const driver = driverOf(api, token);
      const {
        deliveries: [pieces, money],
      } = await newTour(api.db, { accountId: 7202, deliveries: 2 });
      await driver.scan(pieces.items[0].id, 'remove', { quantity: 1 });
      await driver.credit(money.delivery.id, { action: 'set', amountCents: 2000, reason: 'Kratzer' });
      expect(await modified(pieces.delivery.belegnummer)).toBe(true);
      expect(await modified(money.delivery.belegnummer)).toBe(true);
      await completeAt(api.db, pieces.delivery.id, new Date());
      expect(await modified(pieces.delivery.belegnummer)).toBe(true);
      await driver.credit(money.delivery.id, { action: 'remove' });
      expect(await modified(money.delivery.belegnummer)).toBe(false);
    });

    it('is true as soon as one of the deliveries sharing the number is changed', async () => {
      const token = await api.token(7203);
      const {
        deliveries: [first, second],
      } = await newTour(api.db, { accountId: 7203, deliveries: 2 });
      const belegnummer = await shareNumber([first.delivery.id, second.delivery.id]);
      expect(await modified(belegnummer)).toBe(false);
      await driverOf(api, token).scan(second.items[0].id, 'remove');
      expect(await modified(belegnummer)).toBe(true);
    });

    it('answers 404 for an unknown number', async () => {
      const response = await api.get('/admin/belege/LS-UNKNOWN-1/positions-modified', admin);
      expect(response.status).toBe(404);
      expect(response.body.code).toBe('not_found');
    });
  });

  describe('delivered numbers and mail bookkeeping', () => {
    const delivered = async (query = '') => {
      const response = await api.get(`/admin/delivered-belegnummern${query}`, admin);
      expect(response.status).toBe(200);
      expect(response.body.count).toBe(response.body.belegnummern.length);
      return response.body as { belegnummern: string[]; count: number; day: string | null };
    };
    const mark = async (belegnummern: string[]) => {
      const response = await api.post('/admin/mark-mail-sent', { belegnummern }, admin);
      expect(response.status).toBe(200);
      return response.body;
    };

    it('lists completed deliveries with open mail by Berlin day, and marks each only once', async () => {
      const {
        deliveries: [a, b, c],
      } = await newTour(api.db, { accountId: 7401, deliveries: 3 });
      await completeAt(api.db, a.delivery.id, berlin('2030-05-14T10:00:00', '+02:00'));
      await completeAt(api.db, b.delivery.id, berlin('2030-05-15T00:30:00', '+02:00'));
      const [A, B, C] = [a, b, c].map((d) => d.delivery.belegnummer);

      expect(await delivered('?day=14-05-2030')).toEqual({ belegnummern: [A], count: 1, day: '2030-05-14' });
      expect((await delivered('?day=15-05-2030')).belegnummern).toEqual([B]);
      const open = await delivered();
      expect(open.day).toBeNull();
      expect(open.belegnummern).toEqual(expect.arrayContaining([A, B]));
      expect(open.belegnummern).not.toContain(C);

      const unknown = `LS-UNKNOWN-${randomUUID().slice(0, 6)}`;
      expect(await mark([A, C, unknown, A])).toEqual({ marked: [A], already_sent: [], not_completed: [C], unknown: [unknown] });
      expect(await mark([A, B])).toEqual({ marked: [B], already_sent: [A], not_completed: [], unknown: [] });
      expect(await mark([A, B])).toEqual({ marked: [], already_sent: [A, B], not_completed: [], unknown: [] });

      expect(await delivered('?day=14-05-2030')).toEqual({ belegnummern: [], count: 0, day: '2030-05-14' });
      const rest = await delivered();
      expect(rest.belegnummern).not.toContain(A);
      expect(rest.belegnummern).not.toContain(B);
      const details = (await api.get(`/admin/belege/${A}`, admin)).body.deliveries[0];
      expect(Date.parse(details.mail_sent_at)).toBeGreaterThan(Date.now() - 60_000);
    });

    it('lists a number shared by two completed deliveries once and marks both', async () => {
      const {
        deliveries: [first, second],
      } = await newTour(api.db, { accountId: 7402, deliveries: 2 });
      const belegnummer = await shareNumber([first.delivery.id, second.delivery.id]);
      await completeAt(api.db, first.delivery.id, berlin('2030-06-01T09:00:00', '+02:00'));
      await completeAt(api.db, second.delivery.id, berlin('2030-06-01T11:00:00', '+02:00'));
      expect((await delivered('?day=01-06-2030')).belegnummern).toEqual([belegnummer]);
      expect(await mark([belegnummer])).toMatchObject({ marked: [belegnummer] });
      const rows = await api.db
        .select({ mailSentAt: deliveries.mailSentAt })
        .from(deliveries)
        .where(eq(deliveries.belegnummer, belegnummer));
      expect(rows.every((r) => r.mailSentAt !== null)).toBe(true);
    });

    it('takes a day of the first century as it is', async () => {
      expect(await delivered('?day=01-01-0050')).toEqual({ belegnummern: [], count: 0, day: '0050-01-01' });
    });

    it.each(['14.05.2030', '31-04-2030', '2030-05-14', 'heute', '01-01-0000'])('answers 400 for the day %s', async (day) => {
      const response = await api.get(`/admin/delivered-belegnummern?day=${day}`, admin);
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation');
    });

    it('answers a number longer than any stored one as unknown', async () => {
      const long = 'L'.repeat(1200);
      expect(await mark([long])).toEqual({ marked: [], already_sent: [], not_completed: [], unknown: [long] });
    });

    it('answers mark-mail-sent with an empty list by marking nothing', async () => {
      expect(await api.post('/admin/mark-mail-sent', { belegnummern: [] }, admin)).toMatchObject({
        status: 200,
        body: { marked: [], already_sent: [], not_completed: [], unknown: [] },
      });
    });

    it.each([
      ['no list', {}],
      ['an empty number', { belegnummern: [''] }],
      ['a blank number', { belegnummern: ['   '] }],
      ['a number that is not a string', { belegnummern: [4711] }],
      ['a string instead of a list', { belegnummern: 'LS-1' }],
      ['more than 1000 numbers', { belegnummern: Array.from({ length: 1001 }, (_, i) => `LS-${i}`) }],
    ])('refuses mark-mail-sent with %s with 400', async (_why, body) => {
      const response = await api.post('/admin/mark-mail-sent', body, admin);
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation');
    });
  });
});
