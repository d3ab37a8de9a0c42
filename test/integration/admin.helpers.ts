import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { berlinDate } from '../../shared/rules/calendar.js';
import type { AuditAction } from '../../shared/schemas/deliveries.js';
import type { TestServer } from '../helpers/server.js';

/** What a driver does through the real endpoints in the back-office tests. */
export function driverOf(api: TestServer, token: string) {
  return {
    async car(plate = `B-${randomUUID().slice(0, 6)}`) {
      const response = await api.post('/me/cars', { plate }, { token });
      expect(response.status).toBe(200);
      return response.body.car as { id: string; plate: string };
    },
    async scan(deliveryItemId: string, action: AuditAction, extra: { quantity?: number; reason?: string; authorCarId?: string } = {}) {
      const response = await api.post(
        '/scans',
        {
          scans: [{ clientScanId: randomUUID(), deliveryItemId, action, occurredAt: new Date().toISOString(), ...extra }],
        },
        { token },
      );
      expect(response.status).toBe(200);
      expect(response.body.results[0]).toMatchObject({ status: 'applied' });
      return response.body.results[0].item;
    },
    async credit(
      deliveryId: string,
      credit: { action: 'set'; amountCents: number; reason: string; authorCarId?: string } | { action: 'remove'; authorCarId?: string },
    ) {
      const response = await api.post(`/deliveries/${deliveryId}/credit`, { clientEventId: randomUUID(), ...credit }, { token });
      expect(response.status).toBe(200);
      return response.body;
    },
    async note(
      deliveryId: string,
      note: { text: string; creditDeliveryItemId?: string; isAmountCreditNote?: boolean; authorCarId?: string },
    ) {
      const response = await api.post(`/deliveries/${deliveryId}/notes`, note, { token });
      expect(response.status).toBe(200);
      return response.body.note as { id: string };
    },
  };
}

/** Every key of an admin answer, however deep, is snake_case. */
export function expectSnakeCase(value: unknown, path = '$'): void {
  if (Array.isArray(value)) value.forEach((v, i) => expectSnakeCase(v, `${path}[${i}]`));
  else if (value !== null && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      expect(key, `${path}.${key}`).toMatch(/^[a-z0-9_]+$/);
      expectSnakeCase(v, `${path}.${key}`);
    }
  }
}

/** A UTC instant from a Berlin wall-clock time and its offset on that date. */
export const berlin = (local: string, offset: '+01:00' | '+02:00') => new Date(`${local}${offset}`);

/** The Berlin calendar day of an instant, written DD-MM-YYYY as the admin queries take it. */
export const berlinDayOf = (instant: Date) => berlinDate(instant).split('-').reverse().join('-');
