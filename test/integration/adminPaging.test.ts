import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { databaseKinds } from '../helpers/databases.js';
import { completeAt, newTour } from '../helpers/factories.js';
import { useTestServer } from '../helpers/server.js';
import { driverOf } from './admin.helpers.js';

const admin = { admin: true } as const;

type Answer = { status: number; body: any; headers: Headers };

/** The next page's URL from the `Link` header, or null on the last page. */
const nextOf = (response: Answer) => {
  const link = response.headers.get('link');
  if (link === null) return null;
  const match = /^<([^>]+)>; rel="next"$/.exec(link);
  expect(match, link).not.toBeNull();
  return match![1];
};

describe.each(databaseKinds)('admin list paging on %s', (kind) => {
  const api = useTestServer(kind);

  /** Reads every page from `first`, running `between` after each; answers the pages' bodies. */
  async function pages(first: string, between: (page: number) => Promise<void> = async () => undefined) {
    const bodies = [];
    for (let url: string | null = first; url !== null;) {
      const response: Answer = await api.get(url, admin);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      bodies.push(response.body);
      url = nextOf(response);
      await between(bodies.length);
    }
    return bodies;
  }

  /** Completed deliveries of one driver at the given instants (each a Date, or an ISO text to the microsecond). */
  async function completed(accountId: number, instants: string[]) {
    const { deliveries } = await newTour(api.db, { accountId, deliveries: instants.length });
    for (const [i, { delivery }] of deliveries.entries()) {
      await completeAt(api.db, delivery.id, new Date(instants[i]));
      await api.db.execute(sql`UPDATE deliveries SET completed_at = ${instants[i]}::timestamptz WHERE id = ${delivery.id}`);
    }
    return deliveries.map((d) => d.delivery);
  }

  describe('GET /admin/completed-deliveries', () => {
    it('answers the whole list without paging parameters, with no Link header', async () => {
      await completed(9101, ['2031-01-06T08:00:00Z', '2031-01-06T09:00:00Z']);
      const whole = await api.get('/admin/completed-deliveries?day=06-01-2031', admin);
      expect(whole.status).toBe(200);
      expect(whole.headers.get('link')).toBeNull();
      expect(Object.keys(whole.body)).toEqual(['count', 'deliveries', 'from', 'to']);
      expect(whole.body.count).toBe(2);
    });

    it('pages concatenate to the whole list, ties and microseconds included, while later completions arrive', async () => {
      // Two share an instant (ordered by number), two differ by a microsecond only.
      await completed(9102, [
        '2031-02-03T08:00:00.000001Z',
        '2031-02-03T08:00:00.000002Z',
        '2031-02-03T09:00:00Z',
        '2031-02-03T09:00:00Z',
        '2031-02-04T10:00:00Z',
      ]);
      let added = 0;
      const paged = await pages('/admin/completed-deliveries?from=03-02-2031&limit=2', async () => {
        if (added < 3) await completed(9103 + added++, [`2031-02-05T1${added}:00:00Z`]);
      });
      const whole = (await api.get('/admin/completed-deliveries?from=03-02-2031', admin)).body;
      expect(whole.count).toBe(8);
      const ids = paged.flatMap((p) => p.deliveries.map((d: { delivery_id: string }) => d.delivery_id));
      expect(ids).toEqual(whole.deliveries.map((d: { delivery_id: string }) => d.delivery_id));
      expect(new Set(ids).size).toBe(ids.length);
      expect(paged.flatMap((p) => p.deliveries)).toEqual(whole.deliveries);
      for (const page of paged) {
        expect(page).toMatchObject({ count: page.deliveries.length, from: '2031-02-03', to: null });
        expect(page.deliveries.length).toBeLessThanOrEqual(2);
      }
    });

    it('pages the list without bounds, and a cursor sent alone takes the default page size', async () => {
      await completed(9110, ['2031-03-02T08:00:00Z', '2031-03-02T08:30:00Z', '2031-03-02T09:00:00Z']);
      const whole = (await api.get('/admin/completed-deliveries', admin)).body;
      const paged = await pages('/admin/completed-deliveries?limit=1');
      expect(paged.flatMap((p) => p.deliveries)).toEqual(whole.deliveries);
      expect(paged).toHaveLength(whole.count);

      const first = await api.get('/admin/completed-deliveries?limit=1', admin);
      const cursor = new URL(nextOf(first)!, 'http://x').searchParams.get('cursor');
      const rest = await api.get(`/admin/completed-deliveries?cursor=${cursor}`, admin);
      expect(rest.body.deliveries).toEqual(whole.deliveries.slice(1, 101));
    });

    it('answers the last page, or an empty range, without a Link header', async () => {
      await completed(9111, ['2031-04-01T08:00:00Z']);
      const one = await api.get('/admin/completed-deliveries?day=01-04-2031&limit=1000', admin);
      expect(one.body.count).toBe(1);
      expect(one.headers.get('link')).toBeNull();
      const none = await api.get('/admin/completed-deliveries?day=01-04-1999&limit=5', admin);
      expect(none.body).toEqual({ count: 0, deliveries: [], from: '1999-04-01', to: '1999-04-01' });
      expect(none.headers.get('link')).toBeNull();
    });
  });

  describe('GET /admin/delivered-belegnummern', () => {
    it('pages concatenate to the whole list while mails are sent and deliveries completed meanwhile', async () => {
      const done = await completed(9201, [
        '2031-05-05T08:00:00Z',
        '2031-05-05T08:10:00Z',
        '2031-05-05T08:20:00Z',
        '2031-05-05T08:30:00Z',
        '2031-05-05T08:40:00Z',
      ]);
      const before = (await api.get('/admin/delivered-belegnummern?day=05-05-2031', admin)).body;
      expect(before.count).toBe(5);
      const paged = await pages('/admin/delivered-belegnummern?day=05-05-2031&limit=2', async (page) => {
        if (page !== 1) return;
        // One already listed is mailed, one not yet listed is mailed, one more is completed.
        expect((await api.post('/admin/mark-mail-sent', { belegnummern: [done[0].belegnummer, done[3].belegnummer] }, admin)).status).toBe(
          200,
        );
        done.push(...(await completed(9202, ['2031-05-05T09:00:00Z'])));
      });
      const listed = paged.flatMap((p) => p.belegnummern);
      expect(listed).toEqual([done[0], done[1], done[2], done[4], done[5]].map((d) => d.belegnummer));
      const whole = (await api.get('/admin/delivered-belegnummern?day=05-05-2031', admin)).body.belegnummern;
      expect(listed.slice(1)).toEqual(whole);
      for (const page of paged) expect(page).toMatchObject({ count: page.belegnummern.length, day: '2031-05-05' });
    });

    it('answers the whole list without paging parameters, with no Link header', async () => {
      const response = await api.get('/admin/delivered-belegnummern', admin);
      expect(response.status).toBe(200);
      expect(Object.keys(response.body)).toEqual(['belegnummern', 'count', 'day']);
      expect(response.headers.get('link')).toBeNull();
    });
  });

  describe('GET /admin/reviews', () => {
    it('pages concatenate to the whole list while new deviations arrive', async () => {
      const token = await api.token(9301);
      const driver = driverOf(api, token);
      const { deliveries } = await newTour(api.db, { accountId: 9301, deliveries: 6 });
      for (const { items } of deliveries.slice(0, 4)) await driver.scan(items[0].id, 'remove');
      const paged = await pages('/admin/reviews?limit=3', async (page) => {
        if (page === 1) for (const { items } of deliveries.slice(4)) await driver.scan(items[0].id, 'remove');
      });
      expect(paged.map((page) => page.length)).toEqual([3, 3]);
      const whole = await api.get('/admin/reviews', admin);
      expect(whole.headers.get('link')).toBeNull();
      const ids = paged.flat().map((r: { delivery_id: string }) => r.delivery_id);
      expect(ids).toEqual(whole.body.map((r: { delivery_id: string }) => r.delivery_id));
      expect(paged.flat()).toEqual(whole.body);
      const mine = deliveries.map((d) => d.delivery.id);
      expect(ids.filter((id) => mine.includes(id))).toEqual(mine);
      expect(paged.every((page) => page.length <= 3)).toBe(true);
    });
  });

  describe('bad paging parameters', () => {
    const lists = ['/admin/completed-deliveries', '/admin/delivered-belegnummern', '/admin/reviews'];
    const refused = async (url: string) => {
      const response = await api.get(url, admin);
      expect(response.status, url).toBe(400);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(response.body.code).toBe('validation');
      return response.body;
    };
    const cursorOf = async (url: string) => new URL(nextOf(await api.get(url, admin))!, 'http://x').searchParams.get('cursor')!;

    it.each(lists.flatMap((list) => ['0', '-1', '1001', 'abc', '1.5', '', '1e2', '99999999999'].map((limit) => [list, limit])))(
      '%s refuses limit=%s',
      async (list, limit) => {
        const body = await refused(`${list}?limit=${limit}`);
        expect(JSON.stringify(body.errors)).toContain('limit');
      },
    );

    it.each(lists)('%s refuses a repeated limit and a broken cursor', async (list) => {
      await refused(`${list}?limit=1&limit=2`);
      for (const cursor of [
        'not-a-cursor!',
        Buffer.from('{"x":1}').toString('base64url'),
        Buffer.from('[1,2,3]').toString('base64url'),
        'x'.repeat(1001),
      ]) {
        await refused(`${list}?cursor=${encodeURIComponent(cursor)}`);
      }
    });

    it('refuses a cursor of another list, or of the same list under other parameters', async () => {
      await completed(9401, ['2031-06-01T08:00:00Z', '2031-06-01T09:00:00Z']);
      const token = await api.token(9402);
      const { deliveries } = await newTour(api.db, { accountId: 9402, deliveries: 2 });
      for (const { items } of deliveries) await driverOf(api, token).scan(items[0].id, 'remove');
      const completedCursor = await cursorOf('/admin/completed-deliveries?day=01-06-2031&limit=1');
      const deliveredCursor = await cursorOf('/admin/delivered-belegnummern?day=01-06-2031&limit=1');
      const reviewsCursor = await cursorOf('/admin/reviews?limit=1');
      await refused(`/admin/delivered-belegnummern?day=01-06-2031&cursor=${completedCursor}`);
      await refused(`/admin/reviews?cursor=${deliveredCursor}`);
      await refused(`/admin/completed-deliveries?day=01-06-2031&cursor=${reviewsCursor}`);
      await refused(`/admin/completed-deliveries?day=02-06-2031&cursor=${completedCursor}`);
      await refused(`/admin/completed-deliveries?cursor=${completedCursor}`);
      await refused(`/admin/delivered-belegnummern?cursor=${deliveredCursor}`);
      // The same cursor where it belongs is taken.
      expect((await api.get(`/admin/completed-deliveries?day=01-06-2031&cursor=${completedCursor}`, admin)).status).toBe(200);
      // A cursor whose key was altered into the wrong types is refused, not read.
      const [list, filter] = JSON.parse(Buffer.from(completedCursor, 'base64url').toString());
      const altered = Buffer.from(JSON.stringify([list, filter, ['yesterday', 5, 'x']])).toString('base64url');
      await refused(`/admin/completed-deliveries?day=01-06-2031&cursor=${altered}`);
    });

    it('documents limit, cursor and the Link header of each list in the OpenAPI document', async () => {
      const doc = (await api.get('/openapi.json')).body;
      for (const list of lists) {
        const operation = doc.paths[list].get;
        const names = operation.parameters.map((p: { name: string }) => p.name);
        expect(names, list).toEqual(expect.arrayContaining(['limit', 'cursor']));
        expect(operation.parameters.every((p: { required: boolean }) => !p.required)).toBe(true);
        expect(operation.responses['200'].headers).toHaveProperty('Link');
        expect(operation.responses['400']).toBeDefined();
      }
    });
  });
});
