import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANGES_CHANNEL } from '../../server/engine/changeLog.js';
import { databaseKinds } from '../helpers/databases.js';
import { startTestServer, SYNC_ROLE, type TestServer } from '../helpers/server.js';
import { copy, tourPayload } from '../helpers/tourPayloads.js';
import { SyncSocket } from '../helpers/wsClient.js';

const READERS = 5000;
const FIRST_READER = 60_001;

describe.each(databaseKinds)('a change that reaches 5,000 accounts, on %s', (kind) => {
  let api: TestServer;
  let unlisten: (() => Promise<void>) | undefined;
  const payloads: string[] = [];

  beforeAll(async () => {
    api = await startTestServer(kind);
    unlisten = await api.ctx.database.listen(CHANGES_CHANNEL, (payload) => payloads.push(payload));
  });
  afterAll(async () => {
    await unlisten?.();
    await api?.close();
  });

  it(`renames an article on the tours of ${READERS} drivers in one sync, announced to every instance in one NOTIFY`, async () => {
    const sync = await api.token(59_999, [SYNC_ROLE]);
    const payload = tourPayload(60_000, { deliveries: 1, positions: 1 });
    const first = await api.post('/sync/tour', payload, { token: sync });
    expect(first.status).toBe(200);
    // The same article on one line of one tour of each of 5,000 further drivers.
    await api.db.execute(sql`WITH source AS (
        SELECT d.customer_id, d.delivery_address, i.article_id, i.warehouse_id FROM deliveries d JOIN delivery_items i ON i.delivery_id = d.id
        WHERE d.tour_id = ${first.body.tour.id}),
      new_accounts AS (INSERT INTO accounts (personalnummer, name) SELECT n, 'Fahrer ' || n FROM generate_series(${FIRST_READER}::int, ${FIRST_READER + READERS - 1}::int) n RETURNING personalnummer),
      new_tours AS (INSERT INTO tours (account_id, tour_date) SELECT personalnummer, '2026-04-14' FROM new_accounts RETURNING id, account_id),
      new_deliveries AS (INSERT INTO deliveries (tour_id, belegart_id, belegnummer, customer_id, delivery_address, sort_order)
        SELECT t.id, 20, 'FAN-' || t.account_id, s.customer_id, s.delivery_address, 10 FROM new_tours t, source s RETURNING id)
      INSERT INTO delivery_items (delivery_id, line_number, article_id, warehouse_id, required_quantity)
        SELECT d.id, 10, s.article_id, s.warehouse_id, 1 FROM new_deliveries d, source s`);
    const lastReader = FIRST_READER + READERS - 1;
    const socket = await SyncSocket.open(api.url, { token: await api.token(lastReader) });
    socket.send({ type: 'resume', cursor: (await api.get('/sync/cursor', { token: await api.token(lastReader) })).body.cursor });
    await socket.next((m) => m.type === 'changes');
    const before = payloads.length;

    const renamed = copy(payload);
    renamed.deliveries[0].positions[0].article.name = 'Mineralwasser, neuer Name';
    const second = await api.post('/sync/tour', renamed, { token: sync });
    expect(second.status).toBe(200);

    const articleId = (
      await api.db.execute<{ article_id: string }>(sql`SELECT article_id FROM delivery_items i JOIN deliveries d ON d.id = i.delivery_id
      WHERE d.tour_id = ${first.body.tour.id}`)
    ).rows[0].article_id;
    const recorded = await api.db.execute<{ n: number }>(sql`SELECT count(DISTINCT account_id)::int AS n FROM change_log
      WHERE entity = 'article' AND entity_id = ${articleId} AND account_id BETWEEN ${FIRST_READER} AND ${lastReader}`);
    expect(recorded.rows[0].n).toBe(READERS);
    // Too many accounts to name: the payload says "every account", and every instance wakes its own sockets.
    await expect.poll(() => payloads.slice(before).filter((p) => /^(\?|\d+-\d+(,\d+-\d+)*):\*$/.test(p)).length).toBe(1);
    expect(Math.max(...payloads.map((p) => Buffer.byteLength(p)))).toBeLessThan(8000);
    const live = await socket.next(
      (m) => m.type === 'changes' && (m.changes ?? []).some((c) => c.entity === 'article' && c.id === articleId),
    );
    expect(live.changes!.find((c) => c.entity === 'article')!.data).toMatchObject({ name: 'Mineralwasser, neuer Name' });
    await socket.close();
  }, 120_000);
});
