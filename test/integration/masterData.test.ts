import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { databaseKinds } from '../helpers/databases.js';
import { useTestServer } from '../helpers/server.js';

describe.each(databaseKinds)('master data on %s', (kind) => {
  const api = useTestServer(kind);

  describe('cars', () => {
    it('creates, lists and deactivates cars of the logged-in account', async () => {
      const token = await api.token(2001);
      const created = await api.post('/me/cars', { plate: '  B-TL 100 ' }, { token });
      expect(created.status).toBe(200);
      expect(created.body.car).toMatchObject({ plate: 'B-TL 100', accountId: 2001, active: true });

      const deactivated = await api.patch(`/me/cars/${created.body.car.id}`, { active: false }, { token });
      expect(deactivated.body.car.active).toBe(false);
      expect((await api.get('/me/cars', { token })).body.cars).toEqual([]);
      const all = await api.get('/me/cars?includeInactive=true', { token });
      expect(all.body.cars.map((c: { id: string }) => c.id)).toEqual([created.body.car.id]);
      expect((await api.get('/me/cars?includeInactive=TRUE', { token })).body.cars).toHaveLength(1);
      expect((await api.get('/me/cars?includeInactive=0', { token })).body.cars).toEqual([]);
      const unclear = await api.get('/me/cars?includeInactive=yes', { token });
      expect(unclear.status).toBe(400);
      expect(unclear.body).toMatchObject({ code: 'validation', errors: [expect.objectContaining({ path: 'query.includeInactive' })] });
    });

    it('refuses a plate that differs only in case and outer spaces with 400', async () => {
      const token = await api.token(2002);
      expect((await api.post('/me/cars', { plate: 'M-XY 42' }, { token })).status).toBe(200);
      const duplicate = await api.post('/me/cars', { plate: ' m-xy 42' }, { token });
      expect(duplicate.status).toBe(400);
      expect(duplicate.headers.get('content-type')).toContain('application/problem+json');
      expect(duplicate.body.code).toBe('validation');
    });

    it('answers 404 for a car of another account', async () => {
      const owner = await api.token(2003);
      const other = await api.token(2004);
      const car = (await api.post('/me/cars', { plate: 'HH-AB 1' }, { token: owner })).body.car;
      const response = await api.patch(`/me/cars/${car.id}`, { plate: 'HH-AB 2' }, { token: other });
      expect(response.status).toBe(404);
      expect(response.body.code).toBe('not_found');
    });

    it.each([
      [{}, 'no field'],
      [{ plate: '   ' }, 'an empty plate'],
      [{ plate: 42 }, 'a number as plate'],
      [{ active: 'no' }, 'a string as active'],
    ])('refuses a patch with %j (%s)', async (body, _why) => {
      const token = await api.token(2005);
      const car = (await api.post('/me/cars', { plate: `K-${randomUUID().slice(0, 6)}` }, { token })).body.car;
      expect((await api.patch(`/me/cars/${car.id}`, body, { token })).status).toBe(400);
    });

    it('refuses an invalid car id with 400 and a missing plate with 400', async () => {
      const token = await api.token(2006);
      expect((await api.patch('/me/cars/not-a-uuid', { active: false }, { token })).status).toBe(400);
      expect((await api.post('/me/cars', {}, { token })).status).toBe(400);
    });
  });

  describe('payment methods', () => {
    it('creates, renames, hides inactive ones and deletes an unreferenced method', async () => {
      const token = await api.token(2010);
      const created = await api.post('/payment-methods', { code: 'BAR', name: 'Bar', collectOnSite: true }, { token });
      expect(created.status).toBe(200);
      const id = created.body.paymentMethod.id;
      expect(created.body.paymentMethod).toMatchObject({ code: 'BAR', name: 'Bar', collectOnSite: true, active: true });

      const patched = await api.patch(`/payment-methods/${id}`, { name: 'Barzahlung', active: false }, { token });
      expect(patched.body.paymentMethod).toMatchObject({ name: 'Barzahlung', active: false });
      expect((await api.get('/payment-methods', { token })).body.paymentMethods.some((m: { id: string }) => m.id === id)).toBe(false);
      expect(
        (await api.get('/payment-methods?includeInactive=true', { token })).body.paymentMethods.some((m: { id: string }) => m.id === id),
      ).toBe(true);

      expect((await api.delete(`/payment-methods/${id}`, { token })).status).toBe(204);
      expect((await api.delete(`/payment-methods/${id}`, { token })).status).toBe(404);
      expect((await api.patch(`/payment-methods/${id}`, { name: 'x' }, { token })).status).toBe(404);
    });

    it('refuses to change the code, or anything it does not know, with 400 naming the field', async () => {
      const token = await api.token(2013);
      const method = (await api.post('/payment-methods', { code: 'SCHECK', name: 'Scheck' }, { token })).body.paymentMethod;
      const refused = await api.patch(`/payment-methods/${method.id}`, { code: 'CHEQUE', name: 'Cheque' }, { token });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({
        code: 'validation',
        errors: [expect.objectContaining({ message: expect.stringContaining('code') })],
      });
      expect(
        (await api.get('/payment-methods', { token })).body.paymentMethods.find((m: { id: string }) => m.id === method.id),
      ).toMatchObject({ code: 'SCHECK', name: 'Scheck' });
    });

    it('refuses a duplicate code with 400', async () => {
      const token = await api.token(2011);
      await api.post('/payment-methods', { code: 'RECHNUNG', name: 'Rechnung' }, { token });
      const duplicate = await api.post('/payment-methods', { code: 'RECHNUNG', name: 'Rechnung 2' }, { token });
      expect(duplicate.status).toBe(400);
      expect(duplicate.body.code).toBe('validation');
    });

    it.each([[{ name: 'x' }], [{ code: '', name: 'x' }], [{ code: 'A', name: '  ' }], [{ code: 'A', name: 'x', collectOnSite: 'yes' }]])(
      'refuses create body %j with 400',
      async (body) => {
        const token = await api.token(2012);
        expect((await api.post('/payment-methods', body, { token })).status).toBe(400);
      },
    );
  });

  describe('services', () => {
    it('creates a numeric service and lists services by sortOrder', async () => {
      const token = await api.token(2020);
      const b = await api.post(
        '/services',
        { key: 'paletten', name: 'Paletten', kind: 'numeric', minValue: 0, maxValue: 10, sortOrder: 2 },
        { token },
      );
      const a = await api.post('/services', { key: 'altgeraet', name: 'Altgerät mitgenommen', kind: 'boolean', sortOrder: 1 }, { token });
      expect(b.status).toBe(200);
      expect(a.status).toBe(200);
      const list = await api.get('/services', { token });
      const keys = list.body.services.map((s: { key: string }) => s.key);
      expect(keys.indexOf('altgeraet')).toBeLessThan(keys.indexOf('paletten'));
    });

    it('answers 409 for an existing key', async () => {
      const token = await api.token(2021);
      await api.post('/services', { key: 'montage', name: 'Montage', kind: 'boolean' }, { token });
      const duplicate = await api.post('/services', { key: 'montage', name: 'Montage 2', kind: 'boolean' }, { token });
      expect(duplicate.status).toBe(409);
      expect(duplicate.body.code).toBe('conflict');
    });

    it.each([
      [{ key: 'k1', name: 'n', kind: 'numeric', minValue: 5, maxValue: 1 }, 'minValue'],
      [{ key: 'k2', name: 'n', kind: 'boolean', minValue: 1 }, 'minValue'],
      [{ key: 'k2', name: 'n', kind: 'boolean', maxValue: 3 }, 'maxValue'],
      [{ key: 'k3', name: 'n', kind: 'text' }, 'kind'],
      [{ key: '', name: 'n', kind: 'boolean' }, 'key'],
    ])('refuses %j with 400 naming %s', async (body, path) => {
      const token = await api.token(2022);
      const response = await api.post('/services', body, { token });
      expect(response).toMatchObject({ status: 400, body: { code: 'validation', errors: [expect.objectContaining({ path })] } });
    });

    it('refuses to change the kind and checks limits against the stored ones', async () => {
      const token = await api.token(2023);
      const service = (
        await api.post('/services', { key: 'kg', name: 'Kilogramm', kind: 'numeric', minValue: 0, maxValue: 100 }, { token })
      ).body.service;
      expect((await api.patch(`/services/${service.id}`, { kind: 'boolean' }, { token })).status).toBe(400);
      expect((await api.patch(`/services/${service.id}`, { minValue: 200 }, { token })).status).toBe(400);
      const patched = await api.patch(`/services/${service.id}`, { maxValue: 500, name: 'kg' }, { token });
      expect(patched.body.service).toMatchObject({ kind: 'numeric', minValue: 0, maxValue: 500, name: 'kg' });
      expect((await api.patch(`/services/${randomUUID()}`, { name: 'x' }, { token })).status).toBe(404);
    });

    it('hides inactive services unless asked and deletes unreferenced ones', async () => {
      const token = await api.token(2024);
      const service = (await api.post('/services', { key: 'inactive-one', name: 'Alt', kind: 'boolean' }, { token })).body.service;
      await api.patch(`/services/${service.id}`, { active: false }, { token });
      expect((await api.get('/services', { token })).body.services.some((s: { id: string }) => s.id === service.id)).toBe(false);
      expect(
        (await api.get('/services?includeInactive=true', { token })).body.services.some((s: { id: string }) => s.id === service.id),
      ).toBe(true);
      expect((await api.delete(`/services/${service.id}`, { token })).status).toBe(204);
      expect((await api.delete(`/services/${service.id}`, { token })).status).toBe(404);
    });
  });

  describe('accounts and authentication', () => {
    it('reads an account and answers 404 for an unknown one', async () => {
      const token = await api.token(2030);
      expect((await api.get('/accounts/2030', { token })).body).toEqual({ personalnummer: 2030, name: 'Fahrer 2030', active: true });
      expect((await api.get('/accounts/999999', { token })).status).toBe(404);
    });

    it.each(['0', '-7', '9007199254740993', '9223372036854775807', '-9223372036854775808'])(
      'answers 404 for the int64 %s that names no account',
      async (value) => {
        const response = await api.get(`/accounts/${value}`, { token: await api.token(2031) });
        expect(response.status).toBe(404);
        expect(response.body.code).toBe('not_found');
      },
    );

    it.each(['0x7EE', '2030.0', '2e3', '%202030', 'abc', '9223372036854775808', '12345678901234567890'])(
      'answers 400 for %s, which is no decimal int64',
      async (value) => {
        const response = await api.get(`/accounts/${value}`, { token: await api.token(2031) });
        expect(response.status).toBe(400);
        expect(response.body).toMatchObject({ code: 'validation', errors: [expect.objectContaining({ path: 'params.personalnummer' })] });
      },
    );

    it.each([
      ['no header', undefined],
      ['a malformed token', 'Bearer abc.def.ghi'],
      ['another scheme', 'Basic dXNlcjpwYXNz'],
    ])('answers 401 problem+json with %s', async (_name, authorization) => {
      const response = await api.get('/me/cars', { headers: authorization ? { authorization } : {} });
      expect(response.status).toBe(401);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(response.body).toMatchObject({ status: 401, code: 'unauthorized', title: 'Authentifizierung fehlgeschlagen' });
    });

    it('answers 401 when the account was deactivated after the token was issued', async () => {
      const token = await api.token(2031);
      await api.seedAccount(2031, 'Fahrer 2031', false);
      expect((await api.get('/me/cars', { token })).status).toBe(401);
    });
  });
});
