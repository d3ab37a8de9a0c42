import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../server/server.js';
import { createPostgresDatabase } from '../helpers/databases.js';
import { newTour, sampleAddress, scanEvent } from '../helpers/factories.js';
import { waitersReach } from '../helpers/lockWaiters.js';
import { TestServer, testConfig } from '../helpers/server.js';

/** Enough deliveries that PostgreSQL plans the engine's lock as lookups by key, as in production. */
const OTHER_DELIVERIES = 20_000;
const ROUNDS = 8;

async function seedOtherTours(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const first = 700_000;
    const last = first + OTHER_DELIVERIES - 1;
    await client.query(`INSERT INTO accounts (personalnummer, name) SELECT n, 'Fahrer ' || n FROM generate_series(${first}, ${last}) n`);
    await client.query(`INSERT INTO customers (erp_customer_id, name, address) VALUES (990001, 'Gasthaus Krone', $1)`, [
      JSON.stringify(sampleAddress()),
    ]);
    await client.query(`INSERT INTO articles (article_number, name, scannable) VALUES ('LOCK-1', 'Kiste Wasser', true)`);
    await client.query(
      `INSERT INTO tours (account_id, tour_date, name) SELECT n, '2026-06-01', 'Tour' FROM generate_series(${first}, ${last}) n`,
    );
    await client.query(`INSERT INTO deliveries (tour_id, belegart_id, belegnummer, customer_id, delivery_address, sort_order)
      SELECT t.id, 1, 'LOCK-' || t.account_id, c.id, c.address, 1 FROM tours t CROSS JOIN customers c WHERE c.erp_customer_id = 990001`);
    await client.query(`INSERT INTO delivery_items (delivery_id, line_number, article_id, required_quantity, scanned_quantity, state, unit, unit_price_cents)
      SELECT d.id, 10, a.id, 5, 0, 'InProgress', 'Stk', 1000 FROM deliveries d CROSS JOIN articles a WHERE a.article_number = 'LOCK-1'`);
    await client.query('ANALYZE');
  } finally {
    await client.end();
  }
}

// PostgreSQL only: the case needs a second connection holding a lock while the service waits.
describe('the delivery lock of a push on PostgreSQL', () => {
  let url: string;
  let api: TestServer;

  beforeAll(async () => {
    url = await createPostgresDatabase();
    api = new TestServer(await startServer(await testConfig('postgres', { DATABASE_URL: url }), { ephemeral: true }));
    await seedOtherTours(url);
  });
  afterAll(() => api?.close());

  it('keeps a delivery that a commit updated while the push waited to lock it', async () => {
    const outcomes: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const personalnummer = 9200 + round;
      const token = await api.token(personalnummer);
      const tour = await newTour(api.db, {
        accountId: personalnummer,
        deliveries: 2,
        positions: [{ quantity: 2, scannedQuantity: 0, state: 'InProgress' }],
      });
      // The push locks in id order: held at the first delivery, it has not locked the second yet.
      const [first, second] = tour.deliveries.sort((x, y) => x.delivery.id.localeCompare(y.delivery.id));
      const holder = new pg.Client({ connectionString: url });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT id FROM deliveries WHERE id = $1 FOR UPDATE', [first.delivery.id]);
        const pushing = api.post(
          '/sync/push',
          { clientId: 'phone', events: [scanEvent(first.items[0].id, 'scan'), scanEvent(second.items[0].id, 'remove')] },
          { token },
        );
        await waitersReach(holder, 1);
        // The back office confirms the second delivery meanwhile: its row changes and commits.
        expect((await api.post(`/admin/reviews/${second.delivery.id}/resolve`, { processor: 'Frau Weber' }, { admin: true })).status).toBe(
          204,
        );
        await holder.query('COMMIT');
        const answer = await pushing;
        outcomes.push(answer.body.results.map((r: { status: string; message?: string }) => r.message ?? r.status).join(', '));
      } finally {
        await holder.end();
      }
    }
    expect(outcomes).toEqual(Array.from({ length: ROUNDS }, () => 'applied, applied'));
  });
});
