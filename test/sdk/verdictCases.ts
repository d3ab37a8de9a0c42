/** The rules a device judges before queueing: each refused case beside an accepted neighbour, and how to seed it. */
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { CheckedAction } from '../../client-sdk/index.js';
import { cars, deliveries, notes, paymentMethods, services } from '../../server/db/schema.js';
import type { DeliveryState } from '../../shared/schemas/deliveries.js';
import { newTour, type NewPosition } from '../helpers/factories.js';
import type { TestServer } from '../helpers/server.js';

/** Master data every case may name, seeded once per service. */
export interface Master {
  onSite: string;
  inactiveMethod: string;
  boolService: string;
  numericService: string;
  inactiveService: string;
}

export interface Ids {
  delivery: string;
  /** The delivery's lines in the order of `given.positions`. */
  lines: string[];
  note: string | null;
  activeCar: string;
  inactiveCar: string;
  master: Master;
}

interface Given {
  state?: DeliveryState;
  positions?: NewPosition[];
  openAmountCents?: number;
  credit?: boolean;
  note?: boolean;
  onSiteMethod?: boolean;
}

export interface VerdictCase {
  rule: string;
  given?: Given;
  action: (ids: Ids) => CheckedAction;
  /** The service's answer, which the device must give too; none where both accept. */
  refused?: { code: string; reason: string };
}

/** Line 0 has a piece to scan, line 1 is done, line 2 is not scannable. */
const mixed: NewPosition[] = [
  { scannable: true, quantity: 2, scannedQuantity: 1, state: 'InProgress' },
  { scannable: true, quantity: 1, scannedQuantity: 1, state: 'Done' },
  { scannable: false, quantity: 1 },
];
const allDone: NewPosition[] = [{ scannable: true, quantity: 1, scannedQuantity: 1, state: 'Done' }];
const held: Given = { state: 'held' };
const ack = { receiptConfirmed: true };
const done = { positions: allDone };
const open = (cents = 5000): Given => ({ openAmountCents: cents });
const notActive = { code: 'invalid_state_transition', reason: 'delivery_not_active' };
const transition = { code: 'invalid_state_transition', reason: 'invalid_state_transition' };
const v = (reason: string) => ({ code: 'validation', reason });
/** A refused scan answers with the scan rejection code, as the service answers scans. */
const scanRefused = (reason: string) => ({ code: reason, reason });

export const verdictCases: VerdictCase[] = [
  // money credit
  { rule: 'a credit of 15 € is not a 10 € step', action: (i) => credit(i, 1500), refused: v('invalid_credit') },
  { rule: 'a credit of 10 € is one step', action: (i) => credit(i, 1000) },
  { rule: 'a credit above 150 € is refused', action: (i) => credit(i, 16000), refused: v('invalid_credit') },
  { rule: 'a credit of 150 € is the most there is', action: (i) => credit(i, 15000) },
  { rule: 'a credit needs a reason that is not blank', action: (i) => credit(i, 1000, '  '), refused: v('invalid_credit') },
  { rule: 'a credit needs an active delivery', given: held, action: (i) => credit(i, 1000), refused: notActive },
  { rule: 'only a credit that exists is removed', action: (i) => removeCredit(i), refused: v('no_credit') },
  { rule: 'an existing credit is removed', given: { credit: true }, action: (i) => removeCredit(i) },
  // delivery states and reasons
  { rule: 'a hold needs a reason that is not blank', action: (i) => hold(i, ' \t'), refused: v('validation') },
  { rule: 'a hold with a reason is taken', action: (i) => hold(i, 'Tor zu') },
  { rule: 'a cancel needs a reason that is not blank', action: (i) => cancel(i, ''), refused: v('validation') },
  { rule: 'a held delivery may be canceled', given: held, action: (i) => cancel(i, 'Kunde storniert') },
  { rule: 'a held delivery is not held again', given: held, action: (i) => hold(i, 'Tor zu'), refused: transition },
  { rule: 'a held delivery is resumed', given: held, action: (i) => ({ type: 'delivery.resume', deliveryId: i.delivery }) },
  { rule: 'an active delivery is not resumed', action: (i) => ({ type: 'delivery.resume', deliveryId: i.delivery }), refused: transition },
  { rule: 'a canceled delivery is not canceled again', given: { state: 'canceled' }, action: (i) => cancel(i, 'x'), refused: transition },
  // lines
  { rule: 'a scan past the required quantity is refused', action: (i) => scan(i, 1), refused: scanRefused('quantity_exceeded') },
  { rule: 'a scan of a piece still open is taken', action: (i) => scan(i, 0) },
  {
    rule: 'an unscan needs a scanned piece',
    given: { positions: [{ quantity: 1, scannedQuantity: 0, state: 'InProgress' }] },
    action: (i) => scan(i, 0, 'unscan'),
    refused: scanRefused('nothing_to_unscan'),
  },
  { rule: 'an unscan of a scanned piece is taken', action: (i) => scan(i, 1, 'unscan') },
  { rule: 'a line that is not scannable is not scanned', action: (i) => scan(i, 2), refused: scanRefused('not_scannable') },
  {
    rule: 'a removed line is not scanned',
    given: { positions: [{ quantity: 1, scannedQuantity: 0, state: 'Removed' }] },
    action: (i) => scan(i, 0),
    refused: scanRefused('item_removed'),
  },
  {
    rule: 'a removed line is unremoved',
    given: { positions: [{ quantity: 1, scannedQuantity: 0, state: 'Removed' }] },
    action: (i) => scan(i, 0, 'unremove'),
  },
  {
    rule: 'a held line is not scanned',
    given: { positions: [{ quantity: 1, scannedQuantity: 0, state: 'Held' }] },
    action: (i) => scan(i, 0),
    refused: scanRefused('invalid_action'),
  },
  {
    rule: 'a held line is unheld',
    given: { positions: [{ quantity: 1, scannedQuantity: 0, state: 'Held' }] },
    action: (i) => scan(i, 0, 'unhold'),
  },
  {
    rule: 'no more pieces are credited than are left',
    action: (i) => ({ ...scan(i, 0, 'remove'), quantity: 3 }),
    refused: scanRefused('quantity_exceeded'),
  },
  { rule: 'pieces that are left are credited', action: (i) => ({ ...scan(i, 0, 'remove'), quantity: 2 }) },
  { rule: 'a line of a held delivery is not scanned', given: held, action: (i) => scan(i, 0), refused: scanRefused('delivery_not_active') },
  // payment
  {
    rule: 'a payment of another amount than the open one is refused',
    given: open(),
    action: (i) => pay(i, 4000),
    refused: v('amount_differs'),
  },
  { rule: 'a payment of the open amount is logged', given: open(), action: (i) => pay(i, 5000) },
  { rule: 'a payment needs an open amount', action: (i) => pay(i, 0), refused: v('no_open_amount') },
  {
    rule: 'a payment needs an active method',
    given: open(),
    action: (i) => pay(i, 5000, i.master.inactiveMethod),
    refused: v('method_invalid'),
  },
  { rule: 'a payment needs an active delivery', given: { ...open(), state: 'held' }, action: (i) => pay(i, 5000), refused: notActive },
  // service values
  {
    rule: 'a boolean service takes no number',
    action: (i) => service(i, i.master.boolService, { numericValue: 1 }),
    refused: v('invalid_service_value'),
  },
  { rule: 'a boolean service takes a boolean', action: (i) => service(i, i.master.boolService, { boolValue: true }) },
  {
    rule: 'a numeric service takes no value above its maximum',
    action: (i) => service(i, i.master.numericService, { numericValue: 11 }),
    refused: v('invalid_service_value'),
  },
  { rule: 'a numeric service takes its maximum', action: (i) => service(i, i.master.numericService, { numericValue: 10 }) },
  {
    rule: 'an inactive service takes no value',
    action: (i) => service(i, i.master.inactiveService, { boolValue: true }),
    refused: v('service_inactive'),
  },
  {
    rule: 'a service value needs an active delivery',
    given: held,
    action: (i) => service(i, i.master.boolService, { boolValue: true }),
    refused: notActive,
  },
  {
    rule: 'a service value of a held delivery is not cleared',
    given: held,
    action: (i) => ({ type: 'service.clear', deliveryId: i.delivery, serviceId: i.master.boolService }),
    refused: notActive,
  },
  // notes
  { rule: 'a note needs text or an image', action: (i) => note(i, '   '), refused: v('note_without_content') },
  { rule: 'a note with text is created', action: (i) => note(i, 'Hintereingang') },
  {
    rule: "a note's credit line is a line of its delivery",
    action: (i) => ({ ...note(i, 'Bruch'), creditDeliveryItemId: randomUUID() }),
    refused: v('validation'),
  },
  { rule: "a note's credit line of its delivery is taken", action: (i) => ({ ...note(i, 'Bruch'), creditDeliveryItemId: i.lines[0] }) },
  {
    rule: 'a note is not changed to nothing',
    given: { note: true },
    action: (i) => ({ type: 'note.update', noteId: i.note!, text: ' ' }),
    refused: v('note_without_content'),
  },
  {
    rule: 'a note is changed to other text',
    given: { note: true },
    action: (i) => ({ type: 'note.update', noteId: i.note!, text: 'Klingeln' }),
  },
  // cars
  {
    rule: 'an inactive car is not assigned',
    action: (i) => ({ type: 'delivery.assignCar', deliveryId: i.delivery, carId: i.inactiveCar }),
    refused: v('car_inactive'),
  },
  { rule: 'an active car is assigned', action: (i) => ({ type: 'delivery.assignCar', deliveryId: i.delivery, carId: i.activeCar }) },
  // completion gates
  { rule: 'a completion needs every scannable line done or removed', action: (i) => complete(i, ack), refused: v('open_scans') },
  { rule: 'a completion with every line done is taken', given: done, action: (i) => complete(i, ack) },
  {
    rule: 'a completion needs both signatures',
    given: done,
    action: (i) => ({ ...complete(i, ack), driverSignature: new Uint8Array(0) }),
    refused: v('missing_signature'),
  },
  {
    rule: 'a completion needs the notes acknowledged',
    given: { ...done, note: true },
    action: (i) => complete(i, ack),
    refused: v('notes_not_acknowledged'),
  },
  {
    rule: 'a completion with the notes acknowledged is taken',
    given: { ...done, note: true },
    action: (i) => complete(i, { ...ack, notesAcknowledged: true }),
  },
  {
    rule: 'a completion needs the receipt confirmed',
    given: done,
    action: (i) => complete(i, { receiptConfirmed: false }),
    refused: v('receipt_not_confirmed'),
  },
  {
    rule: 'a completion needs an on-site payment collected',
    given: { ...done, ...open(), onSiteMethod: true },
    action: (i) => complete(i, ack),
    refused: v('payment_not_collected'),
  },
  {
    rule: 'a completion with the on-site payment collected is taken',
    given: { ...done, ...open(), onSiteMethod: true },
    action: (i) => complete(i, { ...ack, paymentCollected: true }),
  },
  {
    rule: 'a completion needs a chosen method to be active',
    given: done,
    action: (i) => complete(i, { ...ack, paymentMethodId: i.master.inactiveMethod }),
    refused: v('payment_method_invalid'),
  },
  {
    rule: 'a completion takes an internal note up to 2000 characters',
    given: done,
    action: (i) => complete(i, { ...ack, internalNote: '€'.repeat(2000) }),
  },
  {
    rule: 'a completion refuses a longer internal note',
    given: done,
    action: (i) => complete(i, { ...ack, internalNote: '€'.repeat(2001) }),
    refused: v('internal_note_too_long'),
  },
  {
    rule: 'a held delivery is not completed',
    given: { ...done, state: 'held' },
    action: (i) => complete(i, ack),
    refused: { code: 'invalid_state_transition', reason: 'not_active' },
  },
];

function credit(i: Ids, amountCents: number, reason = 'Bruch'): CheckedAction {
  return { type: 'credit', deliveryId: i.delivery, action: 'set', amountCents, reason };
}
function removeCredit(i: Ids): CheckedAction {
  return { type: 'credit', deliveryId: i.delivery, action: 'remove' };
}
function hold(i: Ids, reason: string): CheckedAction {
  return { type: 'delivery.hold', deliveryId: i.delivery, reason };
}
function cancel(i: Ids, reason: string): CheckedAction {
  return { type: 'delivery.cancel', deliveryId: i.delivery, reason };
}
function scan(i: Ids, line: number, action: 'scan' | 'unscan' | 'remove' | 'unremove' | 'hold' | 'unhold' = 'scan') {
  return { type: 'scan' as const, deliveryItemId: i.lines[line], action };
}
function pay(i: Ids, expectedAmountCents: number, paymentMethodId = i.master.onSite): CheckedAction {
  return { type: 'payment', deliveryId: i.delivery, paymentMethodId, expectedAmountCents };
}
function service(i: Ids, serviceId: string, value: { boolValue?: boolean; numericValue?: number }): CheckedAction {
  return { type: 'service.set', deliveryId: i.delivery, serviceId, ...value };
}
function note(i: Ids, text: string) {
  return { type: 'note.create' as const, deliveryId: i.delivery, noteId: randomUUID(), text };
}
function complete(i: Ids, acknowledgements: { receiptConfirmed: boolean } & Record<string, unknown>) {
  return { type: 'delivery.complete' as const, deliveryId: i.delivery, acknowledgements };
}

const suffix = () => randomUUID().slice(0, 8);

export async function seedMaster(server: TestServer): Promise<Master> {
  const method = async (collectOnSite: boolean, active: boolean) =>
    (
      await server.db
        .insert(paymentMethods)
        .values({ code: `M-${suffix()}`, name: 'Bar', collectOnSite, active })
        .returning()
    )[0].id;
  const serviceOf = async (kind: 'boolean' | 'numeric', active = true) =>
    (
      await server.db
        .insert(services)
        .values({
          key: `s-${suffix()}`,
          name: 'Stockwerke',
          kind,
          minValue: kind === 'numeric' ? 0 : null,
          maxValue: kind === 'numeric' ? 10 : null,
          active,
        })
        .returning()
    )[0].id;
  return {
    onSite: await method(true, true),
    inactiveMethod: await method(false, false),
    boolService: await serviceOf('boolean'),
    numericService: await serviceOf('numeric'),
    inactiveService: await serviceOf('boolean', false),
  };
}

let nextPnr = 60_000 + Math.floor(Math.random() * 5_000) * 2;

/** A driver with one delivery as the case needs it. */
export async function seedCase(server: TestServer, master: Master, given: Given = {}) {
  const pnr = nextPnr++;
  await server.seedAccount(pnr);
  const seeded = await newTour(server.db, {
    accountId: pnr,
    positions: given.positions ?? mixed,
    openAmountCents: given.openAmountCents ?? 0,
    paymentMethodId: given.onSiteMethod ? master.onSite : null,
  });
  const delivery = seeded.deliveries[0].delivery.id;
  const changes = {
    ...(given.state && { state: given.state }),
    ...(given.credit && { creditAmountCents: 1000, creditReason: 'Bruch', creditUpdatedAt: new Date() }),
  };
  if (Object.keys(changes).length) await server.db.update(deliveries).set(changes).where(eq(deliveries.id, delivery));
  const note = given.note ? (await server.db.insert(notes).values({ deliveryId: delivery, text: 'Hund' }).returning())[0].id : null;
  const car = async (active: boolean) => {
    const plate = `B-${suffix()}`;
    return (await server.db.insert(cars).values({ accountId: pnr, plate, plateKey: plate.toLowerCase(), active }).returning())[0].id;
  };
  const ids: Ids = {
    delivery,
    lines: seeded.deliveries[0].items.map((item) => item.id),
    note,
    activeCar: await car(true),
    inactiveCar: await car(false),
    master,
  };
  return { pnr, date: seeded.tour.tourDate, ids };
}
