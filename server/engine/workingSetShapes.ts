/** What a working set shows in public shapes: its delivery and notes now, and the change records its events make. */
import { serviceValueChangeId } from '../../shared/rules/services.js';
import { toAttachment, toDelivery, toItem, toNote, toPayment, toServiceValue, type NoteRow } from '../shapes/rows.js';
import type { ChangeRecord } from './changeLog.js';
import type { WorkingSet } from './workingSet.js';

export const currentDelivery = (ws: WorkingSet) =>
  toDelivery(
    ws.delivery,
    [...ws.items.values()].map((i) => i.row),
  );

/** A note of the working set in its public shape, with the image it shows now. */
export const currentNote = (ws: WorkingSet, row: NoteRow) => toNote(row, ws.noteImages.get(row.id)?.id ?? null);

/** The change records of one delivery: every entity it touched, with the delivery first. */
export function changesOf(ws: WorkingSet): ChangeRecord[] {
  const owner = { tourId: ws.delivery.tourId, accountId: ws.accountId };
  const changes: ChangeRecord[] = [];
  for (const item of ws.items.values()) {
    if (item.dirty) changes.push({ entity: 'position', op: 'upsert', id: item.row.id, ...owner, data: toItem(item.row, item.scannable) });
  }
  for (const note of ws.notes?.values() ?? []) {
    if (note.state === 'new' || note.state === 'dirty') {
      changes.push({ entity: 'note', op: 'upsert', id: note.row.id, ...owner, data: currentNote(ws, note.row) });
    } else if (note.state === 'deleted') {
      changes.push({ entity: 'note', op: 'delete', id: note.row.id, ...owner });
    }
  }
  for (const image of ws.releasedImages)
    changes.push({ entity: 'attachment', op: 'upsert', id: image.id, ...owner, data: toAttachment({ ...image, noteId: null }) });
  for (const row of ws.inserts.attachments)
    changes.push({ entity: 'attachment', op: 'upsert', id: row.id, ...owner, data: toAttachment(row) });
  for (const value of ws.serviceValues?.values() ?? []) {
    const id = serviceValueChangeId(value.row);
    if (value.state === 'dirty') changes.push({ entity: 'serviceValue', op: 'upsert', id, ...owner, data: toServiceValue(value.row) });
    else if (value.state === 'deleted') changes.push({ entity: 'serviceValue', op: 'delete', id, ...owner });
  }
  for (const payment of ws.inserts.payments) {
    changes.push({
      entity: 'payment',
      op: 'upsert',
      id: payment.id!,
      ...owner,
      data: toPayment(payment as Parameters<typeof toPayment>[0]),
    });
  }
  const applied = ws.inserts.processed.filter((p) => !p.rejection).map((p) => p.eventId);
  // The delivery is republished when its shape changed (its open amount follows its lines' state
  // and credits), and when an applied event changed nothing else: the feed names every applied
  // event. A scan that counts a piece leaves the delivery as it was: one record, not two.
  const delivery = currentDelivery(ws);
  if (JSON.stringify(delivery) !== ws.loadedDelivery || (applied.length > 0 && changes.length === 0)) {
    changes.unshift({ entity: 'delivery', op: 'upsert', id: ws.delivery.id, ...owner, data: delivery });
  }
  if (applied.length > 0) changes[changes.length - 1].eventIds = applied;
  return changes;
}
