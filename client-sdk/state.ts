import { serviceValueChangeId } from '../shared/rules/services.js';
import type { Car, PaymentMethod, Service } from '../shared/schemas/masterData.js';
import type { Delivery, DeliveryDetails, TourDetails } from '../shared/schemas/deliveries.js';
import type { Change } from '../shared/schemas/sync.js';
import { deepCopy } from './copy.js';
import { applyEntries } from './optimistic.js';
import type { OutboxEntry } from './outbox.js';
import type { JsonStore } from './storage/keyValue.js';

const TOUR_PREFIX = 'tour/';
const MASTER_KEY = 'masterData';
const CURSOR_KEY = 'cursor';
const FORGOTTEN_KEY = 'forgottenTours';

export interface MasterData {
  cars: Record<string, Car>;
  paymentMethods: Record<string, PaymentMethod>;
  services: Record<string, Service>;
}

export interface ApplyOutcome {
  /** Tours whose details must be read again (a tour or delivery the local copy does not know yet). */
  refetch: Set<string>;
  changedTours: Set<string>;
}

const byId = <T extends { id: string }>(list: T[], value: T) => {
  const index = list.findIndex((x) => x.id === value.id);
  if (index >= 0) list[index] = value;
  else list.push(value);
};
const without = <T extends { id: string }>(list: T[], id: string) => list.filter((x) => x.id !== id);

const isObject = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null;
const isTour = (v: unknown) => isObject(v) && isObject(v.tour) && typeof v.tour.id === 'string' && Array.isArray(v.deliveries);
const isMaster = (v: unknown) => isObject(v) && isObject(v.cars) && isObject(v.paymentMethods) && isObject(v.services);
const isCursor = (v: unknown) => isObject(v) && (v.cursor === null || typeof v.cursor === 'string') && typeof v.lastSeq === 'number';

/**
 * The server's truth as far as this device knows it: the driver's tours from the tour reads,
 * kept current by applying change records, plus master data and the feed cursor. Persisted
 * tour by tour; the cursor is written after the tours it covers, so a crash in between only
 * replays changes (each carries the whole entity, so replaying is harmless).
 */
export class LocalState {
  readonly tours = new Map<string, TourDetails>();
  master: MasterData = { cars: {}, paymentMethods: {}, services: {} };
  cursor: string | null = null;
  /** Highest seq applied; the feed and the socket may overlap, older changes are skipped. */
  lastSeq = -1;
  /** Tours the app let go: a change of one does not read it again. */
  private forgotten = new Set<string>();

  private constructor(private readonly store: JsonStore) {}

  static async load(store: JsonStore): Promise<LocalState> {
    const state = new LocalState(store);
    // What cannot be read is set aside (JsonStore): a tour is read again, a lost cursor means a fresh read.
    for (const [, tour] of await store.entries<TourDetails>(TOUR_PREFIX, isTour)) state.tours.set(tour.tour.id, tour);
    state.master = (await store.get<MasterData>(MASTER_KEY, isMaster)) ?? state.master;
    const cursor = await store.get<{ cursor: string | null; lastSeq: number }>(CURSOR_KEY, isCursor);
    if (cursor) Object.assign(state, cursor);
    state.forgotten = new Set((await store.get<string[]>(FORGOTTEN_KEY, Array.isArray)) ?? []);
    return state;
  }

  async putTour(details: TourDetails) {
    const copy = deepCopy(details);
    this.tours.set(details.tour.id, copy);
    await this.store.set(`${TOUR_PREFIX}${details.tour.id}`, copy);
    if (this.forgotten.delete(details.tour.id)) await this.store.set(FORGOTTEN_KEY, [...this.forgotten]);
  }

  async forgetTour(tourId: string) {
    this.forgotten.add(tourId);
    await this.store.batch([
      [FORGOTTEN_KEY, [...this.forgotten]],
      [`${TOUR_PREFIX}${tourId}`, undefined],
    ]);
    this.tours.delete(tourId);
  }

  async dropTour(tourId: string) {
    this.tours.delete(tourId);
    await this.store.delete(`${TOUR_PREFIX}${tourId}`);
  }

  async putMaster(patch: Partial<MasterData>) {
    this.master = { ...this.master, ...patch };
    await this.store.set(MASTER_KEY, this.master);
  }

  async setCursor(cursor: string | null, lastSeq = this.lastSeq) {
    this.cursor = cursor;
    this.lastSeq = lastSeq;
    await this.store.set(CURSOR_KEY, { cursor, lastSeq });
  }

  /** Forgets everything the server told us (a resync follows). */
  async reset() {
    for (const id of [...this.tours.keys()]) await this.dropTour(id);
    await this.setCursor(null, -1);
  }

  /** Applies a page of changes and persists what it touched, then the cursor. */
  async applyChanges(changes: Change[], cursor: string): Promise<ApplyOutcome> {
    const outcome: ApplyOutcome = { refetch: new Set(), changedTours: new Set() };
    let masterChanged = false;
    let lastSeq = this.lastSeq;
    for (const change of changes) {
      if (change.seq <= lastSeq) continue;
      lastSeq = change.seq;
      if (this.applyMaster(change)) masterChanged = true;
      else this.applyToTours(change, outcome);
    }
    // With the copy, at once: a view read while the writes below are under way must see both.
    this.lastSeq = lastSeq;
    for (const id of this.forgotten) outcome.refetch.delete(id);
    for (const id of outcome.changedTours) {
      const tour = this.tours.get(id);
      if (tour) await this.store.set(`${TOUR_PREFIX}${id}`, tour);
      else await this.store.delete(`${TOUR_PREFIX}${id}`);
    }
    if (masterChanged) await this.store.set(MASTER_KEY, this.master);
    await this.setCursor(cursor, lastSeq);
    return outcome;
  }

  private applyMaster(change: Change): boolean {
    const collection = ({ car: 'cars', paymentMethod: 'paymentMethods', service: 'services' } as const)[change.entity as 'car'];
    if (!collection) return false;
    const next = { ...this.master[collection] } as Record<string, unknown>;
    if (change.op === 'delete') delete next[change.id];
    else next[change.id] = change.data;
    this.master = { ...this.master, [collection]: next } as MasterData;
    return true;
  }

  findDelivery(deliveryId: string): [TourDetails, DeliveryDetails] | undefined {
    for (const tour of this.tours.values()) {
      const delivery = tour.deliveries.find((d) => d.id === deliveryId);
      if (delivery) return [tour, delivery];
    }
    return undefined;
  }

  private applyToTours(change: Change, outcome: ApplyOutcome) {
    const data = change.data as Record<string, any> | undefined;
    const touched = (tour: TourDetails) => outcome.changedTours.add(tour.tour.id);
    switch (change.entity) {
      case 'tour': {
        const tour = this.tours.get(change.id);
        if (change.op === 'delete') {
          if (tour) {
            this.tours.delete(change.id);
            outcome.changedTours.add(change.id);
          }
        } else if (tour) {
          tour.tour = data as TourDetails['tour'];
          touched(tour);
        } else outcome.refetch.add(change.id);
        return;
      }
      case 'delivery': {
        const found = this.findDelivery(change.id);
        if (change.op === 'delete') {
          if (found) {
            found[0].deliveries = without(found[0].deliveries, change.id);
            touched(found[0]);
          }
          return;
        }
        const delivery = data as Delivery;
        if (found && found[0].tour.id === delivery.tourId) {
          Object.assign(found[1], delivery);
          found[0].deliveries.sort((a, b) => a.sortOrder - b.sortOrder);
          touched(found[0]);
          return;
        }
        // New here, or moved between tours: the details (positions, contacts, ...) come with a fresh read.
        if (found) {
          found[0].deliveries = without(found[0].deliveries, change.id);
          touched(found[0]);
        }
        outcome.refetch.add(delivery.tourId);
        return;
      }
      case 'position':
      case 'contact':
      case 'note':
      case 'attachment':
      case 'payment': {
        const field = ({ position: 'positions', contact: 'contacts', note: 'notes', attachment: 'attachments' } as const)[
          change.entity as 'note'
        ];
        if (change.op === 'delete') {
          for (const tour of this.tours.values()) {
            for (const d of tour.deliveries) {
              if (field && d[field].some((x) => x.id === change.id)) {
                (d[field] as { id: string }[]) = without(d[field], change.id);
                touched(tour);
              }
              if (change.entity === 'payment' && d.latestPayment?.id === change.id) {
                d.latestPayment = null;
                touched(tour);
              }
            }
          }
          return;
        }
        const found = this.findDelivery(data!.deliveryId);
        if (!found) {
          if (change.tourId && this.tours.has(change.tourId)) outcome.refetch.add(change.tourId);
          return;
        }
        const [tour, delivery] = found;
        if (field) byId(delivery[field] as { id: string }[], data as { id: string });
        else if (!delivery.latestPayment || delivery.latestPayment.id === data!.id || delivery.latestPayment.receivedAt <= data!.receivedAt)
          delivery.latestPayment = data as DeliveryDetails['latestPayment'];
        touched(tour);
        return;
      }
      case 'serviceValue': {
        for (const tour of this.tours.values()) {
          for (const d of tour.deliveries) {
            const index = d.serviceValues.findIndex((v) => change.id === serviceValueChangeId(v));
            if (change.op === 'delete') {
              if (index >= 0) {
                d.serviceValues.splice(index, 1);
                touched(tour);
              }
            } else if (d.id === data!.deliveryId) {
              if (index >= 0) d.serviceValues[index] = data as DeliveryDetails['serviceValues'][number];
              else d.serviceValues.push(data as DeliveryDetails['serviceValues'][number]);
              touched(tour);
            }
          }
        }
        return;
      }
      case 'customer':
      case 'article':
      case 'warehouse': {
        const field = ({ customer: 'customers', article: 'articles', warehouse: 'warehouses' } as const)[change.entity];
        for (const tour of this.tours.values()) {
          const list = tour[field] as { id: string }[];
          const present = list.some((x) => x.id === change.id);
          if (change.op === 'delete') {
            if (present) {
              (tour[field] as { id: string }[]) = without(list, change.id);
              touched(tour);
            }
          } else if (present || change.tourId === tour.tour.id) {
            byId(list, data as { id: string });
            touched(tour);
          }
        }
        return;
      }
      default:
        // credit and completion are mirrored by the delivery record that accompanies them.
        return;
    }
  }

  /** The server's state plus every unsettled outbox entry, applied with the shared rules. */
  view(tourId: string, entries: readonly OutboxEntry[]): TourDetails | undefined {
    const base = this.tours.get(tourId);
    if (!base) return undefined;
    const tour = deepCopy(base);
    applyEntries(tour.deliveries, entries, this.master);
    return tour;
  }

  /** One delivery of the view; only that delivery is copied. */
  viewDelivery(deliveryId: string, entries: readonly OutboxEntry[]): DeliveryDetails | undefined {
    const found = this.findDelivery(deliveryId);
    if (!found) return undefined;
    const delivery = deepCopy(found[1]);
    applyEntries([delivery], entries, this.master);
    return delivery;
  }
}
