import { inArray } from 'drizzle-orm';
import type { SyncEvent } from '../../shared/schemas/sync.js';
import type { DriverActor } from '../context.js';
import type { Db } from '../db/client.js';
import { cars, paymentMethods, services } from '../db/schema.js';
import type { Lookups } from './operations.js';

/**
 * What the operations may look up, per account (cars are an account's own). Read under the
 * deliveries' locks, so that a method, service or car that a transaction changed while this one
 * waited for a lock is seen as it is now.
 */
export async function loadLookups(db: Db, entries: { event: SyncEvent; actor: DriverActor }[]): Promise<(accountId: number) => Lookups> {
  const events = entries.map((e) => e.event);
  const serviceIds = events.flatMap((e) => (e.type === 'service.set' || e.type === 'service.clear' ? [e.serviceId] : []));
  const methodIds = events.flatMap((e) => (e.type === 'payment' ? [e.paymentMethodId] : []));
  const carOwners = [
    ...new Set(
      entries
        .filter(({ event: e }) => ('authorCarId' in e && e.authorCarId) || (e.type === 'delivery.assignCar' && e.carId))
        .map((e) => e.actor.personalnummer),
    ),
  ];
  const [carRows, serviceRows, methodRows] = await Promise.all([
    carOwners.length ? db.select().from(cars).where(inArray(cars.accountId, carOwners)) : [],
    serviceIds.length ? db.select().from(services).where(inArray(services.id, serviceIds)) : [],
    methodIds.length ? db.select().from(paymentMethods).where(inArray(paymentMethods.id, methodIds)) : [],
  ]);
  const shared = { services: new Map(serviceRows.map((s) => [s.id, s])), paymentMethods: new Map(methodRows.map((m) => [m.id, m])) };
  const byAccount = new Map<number, Lookups>();
  return (accountId) => {
    let lookups = byAccount.get(accountId);
    if (!lookups) {
      lookups = { ...shared, cars: new Map(carRows.filter((c) => c.accountId === accountId).map((c) => [c.id, c])) };
      byAccount.set(accountId, lookups);
    }
    return lookups;
  };
}
