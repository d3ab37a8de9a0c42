import type { Car, PaymentMethod, Service } from '../../shared/schemas/masterData.js';
import type { cars, paymentMethods, services } from '../db/schema.js';

export type CarRow = typeof cars.$inferSelect;
export const toCar = (row: CarRow): Car => ({ id: row.id, accountId: row.accountId, plate: row.plate, active: row.active });
export const toPaymentMethod = (row: typeof paymentMethods.$inferSelect): PaymentMethod => ({
  id: row.id,
  code: row.code,
  name: row.name,
  collectOnSite: row.collectOnSite,
  active: row.active,
});
export const toService = (row: typeof services.$inferSelect): Service => ({
  id: row.id,
  key: row.key,
  name: row.name,
  kind: row.kind,
  minValue: row.minValue,
  maxValue: row.maxValue,
  sortOrder: row.sortOrder,
  active: row.active,
});
