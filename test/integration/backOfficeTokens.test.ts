import { randomUUID } from 'node:crypto';
import { SignJWT, generateKeyPair } from 'jose';
import { describe, expect, it } from 'vitest';
import { databaseKinds } from '../helpers/databases.js';
import { newTour } from '../helpers/factories.js';
import { useTestServer } from '../helpers/server.js';
import { driverOf } from './admin.helpers.js';

const admin = { admin: true } as const;

describe.each(databaseKinds)('back-office tokens on %s', (kind) => {
  const api = useTestServer(kind);

  /** A delivery a driver changed: one line removed, a money credit set. */
  async function changedDelivery(personalnummer: number) {
    const token = await api.token(personalnummer);
    const driver = driverOf(api, token);
    const {
      deliveries: [{ delivery, items }],
    } = await newTour(api.db, { accountId: personalnummer });
    await driver.scan(items[0].id, 'remove');
    await driver.credit(delivery.id, { action: 'set', amountCents: 2000, reason: 'Verspätung' });
    return { delivery, items, driver, token };
  }
  const pendingIds = async (options: { token?: string; admin?: boolean }) =>
    (await api.get('/admin/reviews', options)).body.map((r: { delivery_id: string }) => r.delivery_id);

  const adminEndpoints: [string, string, unknown?][] = [
    ['GET', '/admin/belege/LS-1'],
    ['GET', '/admin/completed-deliveries'],
    ['GET', '/admin/delivered-belegnummern'],
    ['POST', '/admin/mark-mail-sent', { belegnummern: ['LS-1'] }],
    ['GET', '/admin/reviews'],
    ['POST', `/admin/reviews/${randomUUID()}/resolve`, {}],
    ['GET', `/admin/reviews/${randomUUID()}/history`],
    ['POST', `/admin/push-completion?delivery_id=${randomUUID()}`],
  ];

  it.each(adminEndpoints)('answers %s %s to a back-office token as to the admin key', async (method, path, body) => {
    const token = await api.backOfficeToken('Frau Weber');
    const byToken = await api.request(method, path, { token, body });
    const byKey = await api.request(method, path, { ...admin, body: body && { processor: 'Frau Weber', ...(body as object) } });
    expect(byToken.status).not.toBe(401);
    expect(byToken.status).not.toBe(403);
    expect(byToken.status).toBe(byKey.status);
  });

  it.each(adminEndpoints)('answers 403 forbidden to a driver token on %s %s, and 401 to a forged one', async (method, path, body) => {
    const driverToken = await api.token(7601);
    const refused = await api.request(method, path, { token: driverToken, body });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'forbidden' });

    const { privateKey } = await generateKeyPair('ES256');
    const forged = await new SignJWT({ name: 'Mallory', roles: ['tourline-back-office'] })
      .setProtectedHeader({ alg: 'ES256', kid: 'forged' })
      .setIssuer(`${api.url}/dev/oidc`)
      .setAudience('tourline')
      .setSubject('mallory')
      .setExpirationTime('5m')
      .sign(privateKey);
    for (const authorization of [`Bearer ${forged}`, 'Bearer not-a-jwt', 'Basic Zm9vOmJhcg==']) {
      const response = await api.request(method, path, { headers: { authorization }, body });
      expect([401, 503]).toContain(response.status);
      expect(response.body).toMatchObject({ status: response.status });
    }
  });

  it('refuses a back-office token on the driver endpoints: it names no account', async () => {
    const token = await api.backOfficeToken('Frau Weber');
    expect((await api.get('/me/tours', { token })).status).toBe(401);
    expect((await api.post('/me/cars', { plate: 'B-1' }, { token })).status).toBe(401);
  });

  it("records the token's person as the processor, takes a matching name, and lists the history oldest first", async () => {
    const { delivery, items, driver } = await changedDelivery(7602);
    const weber = await api.backOfficeToken('Frau Weber');
    expect(await pendingIds({ token: weber })).toContain(delivery.id);

    const resolved = await api.post(`/admin/reviews/${delivery.id}/resolve`, {}, { token: weber });
    expect(resolved.status).toBe(204);
    expect(await pendingIds({ token: weber })).not.toContain(delivery.id);

    await driver.scan(items[0].id, 'unremove');
    await driver.scan(items[0].id, 'remove');
    expect(await pendingIds(admin)).toContain(delivery.id);
    expect((await api.post(`/admin/reviews/${delivery.id}/resolve`, { processor: 'Frau Weber' }, { token: weber })).status).toBe(204);
    await driver.credit(delivery.id, { action: 'remove' });
    expect((await api.post(`/admin/reviews/${delivery.id}/resolve`, { processor: 'Herr Kaya' }, admin)).status).toBe(204);

    const history = await api.get(`/admin/reviews/${delivery.id}/history`, { token: weber });
    expect(history.status).toBe(200);
    expect(history.body).toMatchObject({ delivery_id: delivery.id, belegnummer: delivery.belegnummer });
    const entries = history.body.resolutions;
    expect(entries.map((e: { processor: string }) => e.processor)).toEqual(['Frau Weber', 'Frau Weber', 'Herr Kaya']);
    expect(entries[0]).toMatchObject({ authenticated_by: 'back_office_token', processor_subject: expect.stringMatching(/^back-office:/) });
    expect(entries[1].processor_subject).toBe(entries[0].processor_subject);
    expect(entries[2]).toMatchObject({ authenticated_by: 'admin_key', processor_subject: null });
    const times = entries.map((e: { resolved_at: string }) => Date.parse(e.resolved_at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    for (const entry of entries) expect(Date.parse(entry.confirmed_change_at)).toBeLessThanOrEqual(Date.parse(entry.resolved_at));
    expect(Date.parse(entries[1].confirmed_change_at)).toBeGreaterThan(Date.parse(entries[0].confirmed_change_at));

    const review = (await api.get(`/admin/belege/${delivery.belegnummer}`, admin)).body.deliveries[0].review;
    expect(review.last_resolution.processor).toBe('Herr Kaya');
  });

  it.each([
    ['another name with a token', { processor: 'Herr Kaya' }, 'token'],
    ['an empty name with a token', { processor: '  ' }, 'token'],
    ['no name with the admin key', {}, 'key'],
    ['a name that is not text', { processor: 42 }, 'key'],
    ['a name over 200 characters', { processor: 'x'.repeat(201) }, 'token'],
  ] as const)('refuses %s with 400 and records nothing', async (_what, body, by) => {
    const { delivery } = await changedDelivery(7603 + Math.floor(Math.random() * 100));
    const options = by === 'token' ? { token: await api.backOfficeToken('Frau Weber') } : admin;
    const response = await api.post(`/admin/reviews/${delivery.id}/resolve`, body, options);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'validation', errors: [expect.objectContaining({ path: 'processor' })] });
    expect((await api.get(`/admin/reviews/${delivery.id}/history`, admin)).body.resolutions).toEqual([]);
    expect(await pendingIds(admin)).toContain(delivery.id);
  });

  it('answers 404 for the history of an unknown delivery and 400 for an id that is no uuid', async () => {
    const token = await api.backOfficeToken('Frau Weber');
    expect((await api.get(`/admin/reviews/${randomUUID()}/history`, { token })).status).toBe(404);
    const bad = await api.get('/admin/reviews/not-a-uuid/history', { token });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'validation' });
  });

  it.each([
    [{ backOffice: '' }],
    [{ backOffice: 'x'.repeat(101) }],
    [{ backOffice: 'Frau Weber', personalnummer: 1 }],
    [{ backOffice: 'Frau Weber', roles: ['tourline-sync'] }],
    [{}],
  ])('refuses the development token request %j with 400', async (body) => {
    const response = await api.post('/dev/token', body, admin);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'validation' });
  });
});
