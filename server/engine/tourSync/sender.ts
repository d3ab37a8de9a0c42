import { eq } from 'drizzle-orm';
import { deliveryKey, type SyncTourRequest } from '../../../shared/schemas/tours.js';
import type { Db } from '../../db/client.js';
import { accounts } from '../../db/schema.js';
import { forbidden } from '../../errors.js';

/**
 * Who sends a tour: `any` (the sync role, the admin key, the ERP import) may send every driver's
 * tour; a driver only its own, leaving its account as it is and taking no other account's delivery.
 * docs/authorization.md has the whole table.
 */
export type TourSender = { kind: 'any' } | { kind: 'driver'; personalnummer: number };

/** A driver's tour names that driver, with the account's name as stored and no deactivation. */
export async function checkSenderAccount(tx: Db, request: SyncTourRequest, sender: TourSender) {
  if (sender.kind === 'any') return;
  const { driver } = request;
  if (driver.personalnummer !== sender.personalnummer) {
    throw forbidden("A driver token sends only its own tour; other drivers' tours need the sync role");
  }
  const [account] = await tx.select().from(accounts).where(eq(accounts.personalnummer, driver.personalnummer)).for('update');
  if (!account || account.name !== driver.name || driver.active === false) {
    throw forbidden('A driver token cannot change an account: send its name as it is and no active flag but true');
  }
}

/** A driver's tour takes no delivery that another account's tour holds (`owners`: the current owner of each key). */
export function checkSenderDeliveries(request: SyncTourRequest, owners: Map<string, { accountId: number }>, sender: TourSender) {
  if (sender.kind === 'any') return;
  const taken = request.deliveries
    .map((d, i) => ({ i, key: deliveryKey(d) }))
    .filter(({ key }) => {
      const owner = owners.get(key);
      return owner !== undefined && owner.accountId !== sender.personalnummer;
    });
  if (taken.length) {
    throw forbidden(
      "A driver token cannot take deliveries of another account's tour",
      taken.map(({ i, key }) => ({
        path: `deliveries.${i}.belegnummer`,
        message: `delivery ${key} belongs to another account's tour`,
      })),
    );
  }
}
