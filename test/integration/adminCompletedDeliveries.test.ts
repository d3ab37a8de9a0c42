import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { customers } from '../../server/db/schema.js';
import { streamCompletedDeliveries } from '../../server/queries/adminDeliveries.js';
import { databaseKinds } from '../helpers/databases.js';
import { completeAt, newTour } from '../helpers/factories.js';
import { useTestServer } from '../helpers/server.js';
import { completionForm } from '../helpers/uploads.js';
import { berlin, berlinDayOf, driverOf, expectSnakeCase } from './admin.helpers.js';

const admin = { admin: true } as const;

describe.each(databaseKinds)('completed deliveries on %s', (kind) => {
  const api = useTestServer(kind);

  describe('GET /admin/completed-deliveries', () => {
    type Listed = {
      delivery_id: string;
      belegnummer: string;
      completed_at: string;
      completed_day: string;
      positions_modified: boolean;
      mail_sent_at?: string | null;
    };
    const list = async (query: string) => {
      const response = await api.get(`/admin/completed-deliveries${query}`, admin);
      expect(response.status).toBe(200);
      expectSnakeCase(response.body);
      expect(response.body.count).toBe(response.body.deliveries.length);
      return response.body as { count: number; deliveries: Listed[]; from: string | null; to: string | null };
    };
    const ids = (body: { deliveries: Listed[] }, among: string[]) =>
      body.deliveries.map((d) => d.delivery_id).filter((id) => among.includes(id));

    // 23:30 and 00:30 Berlin time around both clock changes of 2026 (29 March, 25 October).
    const spring = [
      berlin('2026-03-28T23:30:00', '+01:00'),
      berlin('2026-03-29T00:30:00', '+01:00'),
      berlin('2026-03-29T23:30:00', '+02:00'),
      berlin('2026-03-30T00:30:00', '+02:00'),
    ];
    const autumn = [
      berlin('2026-10-24T23:30:00', '+02:00'),
      berlin('2026-10-25T00:30:00', '+02:00'),
      berlin('2026-10-25T23:30:00', '+01:00'),
      berlin('2026-10-26T00:30:00', '+01:00'),
    ];
    const completed = async (accountId: number, instants: Date[]) => {
      const { deliveries: created } = await newTour(api.db, { accountId, deliveries: instants.length });
      // Completed in reverse so that the answer's order comes from the completion time.
      for (let i = instants.length - 1; i >= 0; i--) await completeAt(api.db, created[i].delivery.id, instants[i]);
      return created.map((d) => d.delivery.id);
    };

    it('puts completions at 23:30 and 00:30 around the spring clock change on their Berlin days', async () => {
      const [d28, d29early, d29late, d30] = await completed(7301, spring);
      const all = [d28, d29early, d29late, d30];
      expect(ids(await list('?day=28-03-2026'), all)).toEqual([d28]);
      const day29 = await list('?day=29-03-2026');
      expect(day29).toMatchObject({ from: '2026-03-29', to: '2026-03-29' });
      expect(ids(day29, all)).toEqual([d29early, d29late]);
      expect(day29.deliveries.every((d) => d.completed_day === '2026-03-29')).toBe(true);
      expect(ids(await list('?day=30-03-2026'), all)).toEqual([d30]);
      expect(ids(await list('?from=29-03-2026&to=30-03-2026'), all)).toEqual([d29early, d29late, d30]);
    });

    it('puts completions at 23:30 and 00:30 around the autumn clock change on their Berlin days', async () => {
      const [d24, d25early, d25late, d26] = await completed(7302, autumn);
      const all = [d24, d25early, d25late, d26];
      expect(ids(await list('?day=24-10-2026'), all)).toEqual([d24]);
      expect(ids(await list('?day=25-10-2026'), all)).toEqual([d25early, d25late]);
      expect(ids(await list('?day=26-10-2026'), all)).toEqual([d26]);
    });

    it('treats from and to as inclusive bounds that may each be omitted', async () => {
      const [a, b, c] = await completed(7303, [
        berlin('2027-02-01T08:00:00', '+01:00'),
        berlin('2027-02-02T08:00:00', '+01:00'),
        berlin('2027-02-03T08:00:00', '+01:00'),
      ]);
      const from = await list('?from=02-02-2027');
      expect(from).toMatchObject({ from: '2027-02-02', to: null });
      expect(ids(from, [a, b, c])).toEqual([b, c]);
      expect(from.deliveries.every((d) => d.completed_day >= '2027-02-02')).toBe(true);
      const to = await list('?to=02-02-2027');
      expect(to).toMatchObject({ from: null, to: '2027-02-02' });
      expect(ids(to, [a, b, c])).toEqual([a, b]);
      expect(to.deliveries.every((d) => d.completed_day <= '2027-02-02')).toBe(true);
      const empty = await list('?from=03-02-2027&to=01-02-2027');
      expect(empty).toMatchObject({ count: 0, deliveries: [], from: '2027-02-03', to: '2027-02-01' });
    });

    it('lists every completed delivery without parameters, oldest completion first, with the modified flag', async () => {
      const token = await api.token(7304);
      const {
        deliveries: [changed, untouched, open],
      } = await newTour(api.db, { accountId: 7304, deliveries: 3 });
      await driverOf(api, token).scan(changed.items[0].id, 'remove');
      await completeAt(api.db, changed.delivery.id, new Date('2025-01-02T10:00:00Z'));
      await completeAt(api.db, untouched.delivery.id, new Date('2025-01-01T10:00:00Z'));
      const all = await list('');
      expect(all).toMatchObject({ from: null, to: null });
      const times = all.deliveries.map((d) => d.completed_at);
      expect(times).toEqual([...times].sort());
      expect(ids(all, [changed.delivery.id, untouched.delivery.id, open.delivery.id])).toEqual([
        untouched.delivery.id,
        changed.delivery.id,
      ]);
      const flags = Object.fromEntries(all.deliveries.map((d) => [d.delivery_id, d.positions_modified]));
      expect(flags[changed.delivery.id]).toBe(true);
      expect(flags[untouched.delivery.id]).toBe(false);
    });

    it('streams the list in one read or from a cursor in pages: the same entries whatever the page size, the same bytes as the answer sent whole', async () => {
      await completed(7305, [
        berlin('2027-03-01T08:00:00', '+01:00'),
        berlin('2027-03-01T09:00:00', '+01:00'),
        berlin('2027-03-01T10:00:00', '+01:00'),
      ]);
      const read = async (pageSize: number, oneRead = 0) => {
        const pages: unknown[][] = [];
        let total = -1;
        await streamCompletedDeliveries(
          api.db,
          { from: null, to: null },
          {
            count: async (n) => {
              total = n;
            },
            page: async (entries) => {
              pages.push(entries);
            },
          },
          { pageSize, oneRead },
        );
        return { total, pages };
      };
      const whole = await read(1000);
      const paged = await read(2);
      const oneRead = await read(2, 1000);
      expect(whole.pages).toHaveLength(1);
      expect(oneRead).toEqual(whole);
      expect(paged.pages.length).toBe(Math.ceil(whole.total / 2));
      expect(paged.pages.flat()).toEqual(whole.pages[0]);
      expect(whole.total).toBe(whole.pages[0].length);

      const response = await api.get('/admin/completed-deliveries?day=01-03-2027', admin);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(response.text).toBe(JSON.stringify({ count: 3, deliveries: response.body.deliveries, from: '2027-03-01', to: '2027-03-01' }));
      const empty = await api.get('/admin/completed-deliveries?day=01-03-1999', admin);
      expect(empty.text).toBe('{"count":0,"deliveries":[],"from":"1999-03-01","to":"1999-03-01"}');
    });

    it('answers each entry as the delivery is now: completed through the endpoint, after its mail is marked and its customer renamed', async () => {
      const token = await api.token(7306);
      const {
        customer,
        deliveries: [{ delivery }],
      } = await newTour(api.db, { accountId: 7306, customerName: 'Bäckerei "Süß" \\ Nord\t' });
      const completed = await api.post(`/deliveries/${delivery.id}/complete`, await completionForm(), { token });
      expect(completed.status).toBe(200);
      const day = berlinDayOf(new Date(completed.body.delivery.completedAt));
      // The paged answer builds each entry from the rows as they are; the whole list joins what the completion kept.
      const both = async () => {
        const whole = await list(`?day=${day}`);
        const paged = (await api.get(`/admin/completed-deliveries?day=${day}&limit=1000`, admin)).body;
        expect(whole.deliveries).toEqual(paged.deliveries);
        return whole.deliveries.find((d) => d.delivery_id === delivery.id);
      };
      expect(await both()).toEqual({
        belegnummer: delivery.belegnummer,
        positions_modified: false,
        delivery_id: delivery.id,
        belegart_id: delivery.belegartId,
        completed_at: completed.body.delivery.completedAt,
        completed_day: day.split('-').reverse().join('-'),
        tour_date: expect.any(String),
        driver_personalnummer: 7306,
        customer_name: 'Bäckerei "Süß" \\ Nord\t',
        mail_sent_at: null,
      });

      await api.post('/admin/mark-mail-sent', { belegnummern: [delivery.belegnummer] }, admin);
      const marked = await both();
      expect(Date.parse(marked!.mail_sent_at!)).toBeGreaterThan(Date.now() - 60_000);
      await api.db.update(customers).set({ name: 'Bäckerei Süd' }).where(eq(customers.id, customer.id));
      expect(await both()).toMatchObject({ customer_name: 'Bäckerei Süd', mail_sent_at: marked!.mail_sent_at });
    });

    it.each([
      'day=31-02-2026',
      'day=29-02-2025',
      'day=00-01-2026',
      'day=2026-03-29',
      'day=1-3-2026',
      'from=29.03.2026',
      'to=abc',
      'from=32-01-2026',
      'day=28-03-2026&from=01-03-2026',
      'day=28-03-2026&to=31-03-2026',
      'day=28-03-2026&day=29-03-2026',
    ])('answers 400 for %s', async (query) => {
      const response = await api.get(`/admin/completed-deliveries?${query}`, admin);
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(response.body.code).toBe('validation');
    });
  });
});
