import { describe, expect, it } from 'vitest';
import { databaseKinds } from '../helpers/databases.js';
import { SYNC_ROLE, useTestServer } from '../helpers/server.js';
import { copy, delivery, tourPayload } from '../helpers/tourPayloads.js';
import { inProcess } from '../helpers/target.js';

let nextAccount = 7300;

/** Every forbidden case of docs/authorization.md, tried with a driver token; the state is read back unchanged. */
describe.each(databaseKinds)('authorization on %s', (kind) => {
  const api = useTestServer(kind);

  async function driver(roles?: string[]) {
    const personalnummer = nextAccount++;
    return { personalnummer, token: await api.token(personalnummer, roles) };
  }

  /** An account as stored, read with the admin key (404 → undefined). */
  async function account(personalnummer: number) {
    const response = await api.get(`/accounts/${personalnummer}`, { admin: true });
    return response.status === 200 ? response.body : undefined;
  }

  /** What a driver's tours of a day hold, as its owner reads them. */
  async function toursOf(owner: { token: string }, date = '2026-04-14') {
    const list = (await api.get(`/me/tours?date=${date}`, { token: owner.token })).body.tours as { id: string }[];
    return Promise.all(list.map(async (t) => (await api.get(`/tours/${t.id}`, { token: owner.token })).body));
  }

  /** A victim with a synced tour, and the state everyone may compare with afterwards. */
  async function victimWithTour() {
    const victim = await driver();
    const payload = tourPayload(victim.personalnummer, { deliveries: 2, positions: 2 });
    expect((await api.post('/sync/tour', payload, { token: victim.token })).status).toBe(200);
    return { victim, payload, before: { account: await account(victim.personalnummer), tours: await toursOf(victim) } };
  }

  const forbiddenSyncs: [string, (me: number, victim: number, theirs: ReturnType<typeof tourPayload>) => unknown][] = [
    ["another existing account's tour", (_me, victim) => tourPayload(victim, { name: 'Übernommen', deliveries: 1 })],
    [
      'another account deactivated (its own tour unchanged otherwise)',
      (_me, victim) => ({
        ...tourPayload(victim, { deliveries: 0 }),
        driver: { personalnummer: victim, name: `Fahrer ${victim}`, active: false },
      }),
    ],
    ['another account renamed', (_me, victim) => tourPayload(victim, { driverName: 'Umbenannt', deliveries: 0 })],
    [
      "another account's delivery taken into its own tour",
      (me, _victim, theirs) => ({ ...tourPayload(me, { deliveries: 1 }), deliveries: [delivery(), copy(theirs.deliveries[1])] }),
    ],
    [
      "another account's delivery with changed lines",
      (me, _victim, theirs) => {
        const taken = copy(theirs.deliveries[0]);
        taken.positions = [taken.positions[0]];
        taken.positions[0].quantity = 99;
        return { ...tourPayload(me, { deliveries: 0 }), deliveries: [taken] };
      },
    ],
  ];

  it.each(forbiddenSyncs)('refuses a driver sending %s with 403 and changes nothing', async (_name, body) => {
    const { victim, payload, before } = await victimWithTour();
    const me = await driver();
    const myBefore = { account: await account(me.personalnummer), tours: await toursOf(me) };

    const response = await api.post('/sync/tour', body(me.personalnummer, victim.personalnummer, payload), { token: me.token });
    expect(response.status).toBe(403);
    expect(response.headers.get('content-type')).toContain('application/problem+json');
    expect(response.body).toMatchObject({ status: 403, code: 'forbidden' });

    expect(await account(victim.personalnummer)).toEqual(before.account);
    expect(await toursOf(victim)).toEqual(before.tours);
    expect(await account(me.personalnummer)).toEqual(myBefore.account);
    expect(await toursOf(me)).toEqual(myBefore.tours);
    // The victim still works.
    expect((await api.get('/me/tours?date=2026-04-14', { token: victim.token })).status).toBe(200);
  });

  it("names the deliveries of another account that a driver's tour tried to take", async () => {
    const { payload } = await victimWithTour();
    const me = await driver();
    const response = await api.post(
      '/sync/tour',
      { ...tourPayload(me.personalnummer, { deliveries: 1 }), deliveries: [delivery(), copy(payload.deliveries[1])] },
      { token: me.token },
    );
    expect(response.status).toBe(403);
    expect(response.body.errors).toEqual([
      { path: 'deliveries.1.belegnummer', message: expect.stringContaining(payload.deliveries[1].belegnummer) },
    ]);
  });

  it.each([["a new account's tour", () => nextAccount++]])(
    'refuses a driver sending %s with 403 and creates no account',
    async (_name, target) => {
      const me = await driver();
      const personalnummer = target();
      const response = await api.post('/sync/tour', tourPayload(personalnummer, { driverName: 'Neu' }), { token: me.token });
      expect(response.status).toBe(403);
      expect(await account(personalnummer)).toBeUndefined();
    },
  );

  it.each([
    ['its own account renamed', (me: number) => tourPayload(me, { driverName: 'Selbst umbenannt', deliveries: 1 })],
    [
      'its own account deactivated',
      (me: number) => ({ ...tourPayload(me, { deliveries: 1 }), driver: { personalnummer: me, name: `Fahrer ${me}`, active: false } }),
    ],
  ])('refuses a driver sending %s with 403 and changes nothing', async (_name, body) => {
    const me = await driver();
    const before = await account(me.personalnummer);
    const response = await api.post('/sync/tour', body(me.personalnummer), { token: me.token });
    expect(response.status).toBe(403);
    expect(response.body.code).toBe('forbidden');
    expect(await account(me.personalnummer)).toEqual(before);
    expect(await toursOf(me)).toEqual([]);
  });

  it('lets a driver send its own tour, with its name as stored and active: true, and move deliveries between its own tours', async () => {
    const me = await driver();
    const first = tourPayload(me.personalnummer, { deliveries: 2 });
    first.driver.active = true;
    expect((await api.post('/sync/tour', first, { token: me.token })).status).toBe(200);
    const nextDay = { ...tourPayload(me.personalnummer, { date: '2026-04-15', deliveries: 0 }), deliveries: [copy(first.deliveries[0])] };
    const moved = await api.post('/sync/tour', nextDay, { token: me.token });
    expect(moved.status).toBe(200);
    expect(moved.body.deliveries).toMatchObject({ moved: 1 });
    expect(await account(me.personalnummer)).toEqual({
      personalnummer: me.personalnummer,
      name: `Fahrer ${me.personalnummer}`,
      active: true,
    });
  });

  it.each([
    ['the sync role as an array', () => driver([SYNC_ROLE])],
    ['the sync role among other roles', () => driver(['reader', SYNC_ROLE])],
    ['the admin key', async () => ({ personalnummer: 0, token: undefined })],
  ])('lets %s rename and deactivate an account and move its delivery', async (_name, sender) => {
    const { victim, payload } = await victimWithTour();
    const { token } = await sender();
    const credentials = token ? { token } : { admin: true };
    const target = nextAccount++;
    const taking = { ...tourPayload(target, { driverName: 'Neue Fahrerin' }), deliveries: [copy(payload.deliveries[0])] };
    const taken = await api.post('/sync/tour', taking, credentials);
    expect(taken.status).toBe(200);
    expect(taken.body.deliveries).toMatchObject({ moved: 1 });
    expect(await account(target)).toEqual({ personalnummer: target, name: 'Neue Fahrerin', active: true });

    const off = {
      ...tourPayload(victim.personalnummer, { deliveries: 0 }),
      driver: { personalnummer: victim.personalnummer, name: 'Ausgeschieden', active: false },
    };
    expect((await api.post('/sync/tour', off, credentials)).status).toBe(200);
    expect(await account(victim.personalnummer)).toEqual({ personalnummer: victim.personalnummer, name: 'Ausgeschieden', active: false });
    expect((await api.get('/me/tours', { token: victim.token })).status).toBe(401);
  });

  it('gives no role to a token whose role claim names other roles', async () => {
    const { victim } = await victimWithTour();
    const { token } = await driver(['tourline-sync-reader', 'admin']);
    expect((await api.post('/sync/tour', tourPayload(victim.personalnummer, { deliveries: 0, name: 'x' }), { token })).status).toBe(403);
    expect((await api.get(`/accounts/${victim.personalnummer}`, { token })).status).toBe(404);
  });

  describe('GET /accounts/{personalnummer}', () => {
    it('answers a driver its own account and 404 for any other, existing or not', async () => {
      const me = await driver();
      const other = await driver();
      expect((await api.get(`/accounts/${me.personalnummer}`, { token: me.token })).body).toEqual({
        personalnummer: me.personalnummer,
        name: `Fahrer ${me.personalnummer}`,
        active: true,
      });
      const foreign = await api.get(`/accounts/${other.personalnummer}`, { token: me.token });
      const unknown = await api.get(`/accounts/${nextAccount++}`, { token: me.token });
      expect([foreign.status, unknown.status]).toEqual([404, 404]);
      expect(foreign.body).toEqual({ ...unknown.body, detail: unknown.body.detail });
      expect(foreign.body.code).toBe('not_found');
    });

    it('answers any account to the sync role and the admin key', async () => {
      const other = await driver();
      const { token } = await driver([SYNC_ROLE]);
      for (const credentials of [{ token }, { admin: true }]) {
        const response = await api.get(`/accounts/${other.personalnummer}`, credentials);
        expect(response.body).toEqual({ personalnummer: other.personalnummer, name: `Fahrer ${other.personalnummer}`, active: true });
      }
    });

    it.each([
      ['a wrong admin key', { admin: 'wrong-admin-key-0123456789' }, 401],
      ['no credentials', {}, 401],
    ])('refuses %s', async (_name, credentials, status) => {
      const other = await driver();
      expect((await api.get(`/accounts/${other.personalnummer}`, credentials)).status).toBe(status);
    });

    it.each(['abc', '1.5', '99999999999999999999'])('refuses the number %s with 400', async (number) => {
      const { token } = await driver([SYNC_ROLE]);
      const response = await api.get(`/accounts/${number}`, { token });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation');
    });
  });

  inProcess.describe('POST /dev/token with roles', () => {
    it.each([
      ['roles that are no list', { roles: SYNC_ROLE }],
      ['an empty role', { roles: [''] }],
      ['more than 20 roles', { roles: Array.from({ length: 21 }, (_, i) => `r${i}`) }],
    ])('refuses %s with 400', async (_name, extra) => {
      const personalnummer = nextAccount++;
      await api.seedAccount(personalnummer);
      const response = await api.post('/dev/token', { personalnummer, ...extra }, { admin: true });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation');
    });
  });
});
