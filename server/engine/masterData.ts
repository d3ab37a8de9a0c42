import { and, asc, eq, sql } from 'drizzle-orm';
import type { z } from 'zod';
import type {
  CreatePaymentMethodRequest,
  CreateServiceRequest,
  UpdatePaymentMethodRequest,
  UpdateServiceRequest,
} from '../../shared/schemas/masterData.js';
import type { Db } from '../db/client.js';
import { constraintViolation } from '../db/errors.js';
import { cars, paymentMethods, services } from '../db/schema.js';
import { conflict, notFound, validation } from '../errors.js';
import type { PaymentMethod, Service } from '../../shared/schemas/masterData.js';
import { toCar, toPaymentMethod, toService } from '../shapes/masterData.js';
import { recordChanges } from './changeLog.js';

export const plateKey = (plate: string) => plate.trim().replace(/\s+/g, ' ').toUpperCase();

/** Runs a write; a unique violation becomes the given domain error. */
async function uniquely<T>(write: () => Promise<T>, onDuplicate: () => Error): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (constraintViolation(error)?.kind === 'unique') throw onDuplicate();
    throw error;
  }
}

/** Runs a delete; a foreign-key violation (still referenced) becomes 409. */
async function unreferenced<T>(remove: () => Promise<T>, what: string): Promise<T> {
  try {
    return await remove();
  } catch (error) {
    if (constraintViolation(error)?.kind === 'foreign_key')
      throw conflict(`${what} is still referenced by deliveries; deactivate it instead`);
    throw error;
  }
}

// ---------- cars ----------

export async function listCars(db: Db, accountId: number, includeInactive: boolean) {
  const rows = await db
    .select()
    .from(cars)
    .where(and(eq(cars.accountId, accountId), includeInactive ? undefined : eq(cars.active, true)))
    .orderBy(asc(cars.plate));
  return rows.map(toCar);
}

const duplicatePlate = () => validation('A car with this plate exists', [{ path: 'plate', message: 'plate already exists' }]);

export function createCar(db: Db, accountId: number, plate: string) {
  return uniquely(
    () =>
      db.transaction(async (tx) => {
        const [row] = await tx
          .insert(cars)
          .values({ accountId, plate: plate.trim(), plateKey: plateKey(plate) })
          .returning();
        const car = toCar(row);
        await recordChanges(tx, [{ entity: 'car', op: 'upsert', id: car.id, accountId, data: car }]);
        return car;
      }),
    duplicatePlate,
  );
}

export function updateCar(db: Db, accountId: number, carId: string, patch: { plate?: string; active?: boolean }) {
  return uniquely(
    () =>
      db.transaction(async (tx) => {
        const [row] = await tx
          .update(cars)
          .set({
            ...(patch.plate !== undefined ? { plate: patch.plate.trim(), plateKey: plateKey(patch.plate) } : {}),
            ...(patch.active !== undefined ? { active: patch.active } : {}),
            updatedAt: new Date(),
          })
          .where(and(eq(cars.id, carId), eq(cars.accountId, accountId)))
          .returning();
        if (!row) throw notFound('Car');
        const car = toCar(row);
        await recordChanges(tx, [{ entity: 'car', op: 'upsert', id: car.id, accountId, data: car }]);
        return car;
      }),
    duplicatePlate,
  );
}

// ---------- payment methods ----------

export async function listPaymentMethods(db: Db, includeInactive: boolean) {
  const rows = await db
    .select()
    .from(paymentMethods)
    .where(includeInactive ? undefined : eq(paymentMethods.active, true))
    .orderBy(asc(paymentMethods.name));
  return rows.map(toPaymentMethod);
}

const publishPaymentMethod = (tx: Db, method: PaymentMethod) =>
  recordChanges(tx, [{ entity: 'paymentMethod', op: 'upsert', id: method.id, data: method }]);

export function createPaymentMethod(db: Db, input: z.output<typeof CreatePaymentMethodRequest>) {
  return uniquely(
    () =>
      db.transaction(async (tx) => {
        const [row] = await tx
          .insert(paymentMethods)
          .values({ code: input.code, name: input.name, collectOnSite: input.collectOnSite ?? false })
          .returning();
        const method = toPaymentMethod(row);
        await publishPaymentMethod(tx, method);
        return method;
      }),
    () => validation('A payment method with this code exists', [{ path: 'code', message: 'code already exists' }]),
  );
}

export function updatePaymentMethod(db: Db, id: string, patch: z.output<typeof UpdatePaymentMethodRequest>) {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .update(paymentMethods)
      .set({ ...patch, updatedAt: new Date() })
      .where(eq(paymentMethods.id, id))
      .returning();
    if (!row) throw notFound('Payment method');
    const method = toPaymentMethod(row);
    await publishPaymentMethod(tx, method);
    return method;
  });
}

export const deletePaymentMethod = (db: Db, id: string) => deleteUnreferenced(db, paymentMethods, id, 'paymentMethod', 'Payment method');

// ---------- services ----------

export async function listServices(db: Db, includeInactive: boolean) {
  const rows = await db
    .select()
    .from(services)
    .where(includeInactive ? undefined : eq(services.active, true))
    .orderBy(sql`${services.sortOrder} ASC NULLS LAST`, asc(services.name));
  return rows.map(toService);
}

function checkLimits(kind: Service['kind'], minValue: number | null, maxValue: number | null) {
  if (kind === 'boolean' && (minValue !== null || maxValue !== null)) {
    throw validation('A boolean service has no limits', [
      { path: minValue !== null ? 'minValue' : 'maxValue', message: 'only numeric services have limits' },
    ]);
  }
  if (minValue !== null && maxValue !== null && minValue > maxValue) {
    throw validation('minValue must not exceed maxValue', [{ path: 'minValue', message: 'must be <= maxValue' }]);
  }
}

const publishService = (tx: Db, service: Service) =>
  recordChanges(tx, [{ entity: 'service', op: 'upsert', id: service.id, data: service }]);

export function createService(db: Db, input: z.output<typeof CreateServiceRequest>) {
  const minValue = input.minValue ?? null;
  const maxValue = input.maxValue ?? null;
  checkLimits(input.kind, minValue, maxValue);
  return uniquely(
    () =>
      db.transaction(async (tx) => {
        const [row] = await tx
          .insert(services)
          .values({
            key: input.key,
            name: input.name,
            kind: input.kind,
            minValue,
            maxValue,
            sortOrder: input.sortOrder ?? null,
          })
          .returning();
        const service = toService(row);
        await publishService(tx, service);
        return service;
      }),
    () => conflict(`A service with key ${input.key} exists`),
  );
}

export function updateService(db: Db, id: string, patch: z.output<typeof UpdateServiceRequest>) {
  return db.transaction(async (tx) => {
    const [current] = await tx.select().from(services).where(eq(services.id, id)).for('update');
    if (!current) throw notFound('Service');
    const minValue = patch.minValue !== undefined ? patch.minValue : current.minValue;
    const maxValue = patch.maxValue !== undefined ? patch.maxValue : current.maxValue;
    checkLimits(current.kind, minValue, maxValue);
    const [row] = await tx
      .update(services)
      .set({ ...patch, updatedAt: new Date() })
      .where(eq(services.id, id))
      .returning();
    const service = toService(row);
    await publishService(tx, service);
    return service;
  });
}

export const deleteService = (db: Db, id: string) => deleteUnreferenced(db, services, id, 'service', 'Service');

/** Deletes a payment method or a service that nothing references, and tells the devices. */
function deleteUnreferenced(
  db: Db,
  table: typeof paymentMethods | typeof services,
  id: string,
  entity: 'paymentMethod' | 'service',
  name: string,
) {
  return unreferenced(
    () =>
      db.transaction(async (tx) => {
        const [row] = await tx.delete(table).where(eq(table.id, id)).returning({ id: table.id });
        if (!row) throw notFound(name);
        await recordChanges(tx, [{ entity, op: 'delete', id }]);
      }),
    `The ${name.toLowerCase()}`,
  );
}
