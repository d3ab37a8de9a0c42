import { newId } from '../../../shared/ids.js';
import { inArray } from 'drizzle-orm';
import { mergeContacts, type MergedContact } from '../../../shared/rules/contacts.js';
import type { Address } from '../../../shared/schemas/common.js';
import { deliveryKey } from '../../../shared/schemas/tours.js';
import type { Db } from '../../db/client.js';
import { contactChannels, contactSources } from '../../db/schema.js';
import type { ContactChannelRow, ContactSourceRow, DeliveryRow } from '../../shapes/rows.js';
import type { OpenDelivery } from './deliveries.js';
import { insertAll } from './upserts.js';

function addressKey(address: Address | null) {
  return address && [address.street, address.houseNumber, address.postalCode, address.city, address.country, address.addition ?? null];
}

/** Stored and incoming contacts compared by content, so an unchanged resend keeps their ids. */
function contactsKey(contacts: (Omit<MergedContact, 'channels'> & { channels: { kind: string; position: number; value: string }[] })[]) {
  return JSON.stringify(
    [...contacts]
      .sort((a, b) => a.position - b.position)
      .map((c) => [
        c.role,
        c.roles,
        c.position,
        c.anrede,
        c.titel,
        c.name1,
        c.name2,
        c.name3,
        c.abteilung,
        c.funktion,
        addressKey(c.address),
        [...c.channels]
          .sort((a, b) => a.kind.localeCompare(b.kind) || a.position - b.position)
          .map((ch) => [ch.kind, ch.position, ch.value]),
      ]),
  );
}

export interface SyncedContacts {
  /** Deliveries whose contacts were replaced. */
  replaced: string[];
  deleted: { id: string; deliveryId: string }[];
  inserted: ContactSourceRow[];
  insertedChannels: ContactChannelRow[];
}

/** Replaces, as a whole, the contacts of each open delivery whose merged contacts changed. */
export async function syncContacts(tx: Db, open: OpenDelivery[], current: Map<string, DeliveryRow>): Promise<SyncedContacts> {
  const deliveryIds = open.map((o) => current.get(deliveryKey(o.input))!.id);
  const sourceRows = deliveryIds.length
    ? await tx.select().from(contactSources).where(inArray(contactSources.deliveryId, deliveryIds))
    : [];
  const channelRows = sourceRows.length
    ? await tx
        .select()
        .from(contactChannels)
        .where(
          inArray(
            contactChannels.sourceId,
            sourceRows.map((s) => s.id),
          ),
        )
    : [];
  const channelsOf = new Map<string, ContactChannelRow[]>();
  for (const c of channelRows) channelsOf.set(c.sourceId, [...(channelsOf.get(c.sourceId) ?? []), c]);
  const sourcesOf = new Map<string, ContactSourceRow[]>();
  for (const s of sourceRows) sourcesOf.set(s.deliveryId, [...(sourcesOf.get(s.deliveryId) ?? []), s]);

  const replaced: string[] = [];
  const newSources: (typeof contactSources.$inferInsert & { id: string })[] = [];
  const newChannels: (typeof contactChannels.$inferInsert)[] = [];
  for (const { input } of open) {
    const deliveryId = current.get(deliveryKey(input))!.id;
    const merged = mergeContacts(input.contacts);
    const stored = (sourcesOf.get(deliveryId) ?? []).map((s) => ({ ...s, channels: channelsOf.get(s.id) ?? [] }));
    if (contactsKey(stored) === contactsKey(merged)) continue;
    replaced.push(deliveryId);
    for (const contact of merged) {
      const { channels, ...fields } = contact;
      const id = newId();
      newSources.push({ id, deliveryId, ...fields });
      newChannels.push(...channels.map((ch) => ({ sourceId: id, ...ch })));
    }
  }
  const deleted = replaced.length
    ? await tx
        .delete(contactSources)
        .where(inArray(contactSources.deliveryId, replaced))
        .returning({ id: contactSources.id, deliveryId: contactSources.deliveryId })
    : [];
  const inserted = await insertAll(newSources, (chunk: typeof newSources) => tx.insert(contactSources).values(chunk).returning());
  const insertedChannels = await insertAll(newChannels, (chunk: typeof newChannels) =>
    tx.insert(contactChannels).values(chunk).returning(),
  );
  return { replaced, deleted, inserted, insertedChannels };
}
