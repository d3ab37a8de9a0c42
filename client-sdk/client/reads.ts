import type { DeliveryDetails, TourDetails } from '../../shared/schemas/deliveries.js';
import type { TourSummary } from '../../shared/schemas/tours.js';
import type { z } from 'zod';
import { deepCopy } from '../copy.js';
import type { FileData } from '../multipart.js';
import { LOCAL_IMAGE_PREFIX } from '../optimistic.js';
import type { ClientCore } from './core.js';
import type { Feed } from './feed.js';

type TourSummaryShape = z.output<typeof TourSummary>;

/** Reading tours and master data into the local copy, and the optimistic views the app renders. */
export class Reads {
  constructor(
    private readonly core: ClientCore,
    private readonly feed: Feed,
  ) {}

  /** Reads the driver's tours of a day into the local copy (the feed keeps them current afterwards). */
  async loadTours(query: { date?: string } = {}): Promise<TourSummaryShape[]> {
    await this.feed.ensureCursor();
    const { tours } = await this.core.api.tours(query);
    for (const summary of tours) await this.feed.refetchTour(summary.id);
    await this.feed.pull();
    return tours;
  }

  /** Cars, payment methods and services, which the optimistic rules consult. */
  async loadMasterData() {
    const { api } = this.core;
    const [{ cars }, { paymentMethods }, { services }] = await Promise.all([
      api.cars({ includeInactive: true }),
      api.paymentMethods({ includeInactive: true }),
      api.services({ includeInactive: true }),
    ]);
    const index = <T extends { id: string }>(list: T[]) => Object.fromEntries(list.map((x) => [x.id, x]));
    await this.core.state.putMaster({ cars: index(cars), paymentMethods: index(paymentMethods), services: index(services) });
  }

  /** Reads one tour into the local copy. */
  async loadTour(tourId: string) {
    await this.feed.ensureCursor();
    await this.feed.refetchTour(tourId);
    await this.feed.pull();
  }

  /** Changes of a forgotten tour are not read back; `loadTour` or `loadTours` bring it back. */
  async forgetTour(tourId: string) {
    const { core } = this;
    if (core.outbox.unsettled().some((e) => core.tourOfAction(e.action) === tourId))
      throw new Error(`tour ${tourId} still has actions in the outbox`);
    await core.state.forgetTour(tourId);
    core.emitChange(tourId);
  }

  /** The server's state as this device last heard it. */
  serverTour(tourId: string): TourDetails | undefined {
    const tour = this.core.state.tours.get(tourId);
    return tour ? deepCopy(tour) : undefined;
  }

  /** The server's state plus everything still in the outbox. */
  view(tourId: string): TourDetails | undefined {
    return this.core.state.view(tourId, this.core.entriesOnTop());
  }

  delivery(deliveryId: string): DeliveryDetails | undefined {
    return this.core.state.viewDelivery(deliveryId, this.core.entriesOnTop());
  }

  /** A note image that still waits in the outbox (its reference starts with `local:`), as the attachment store holds it. */
  async localImage(reference: string): Promise<FileData | undefined> {
    if (!reference.startsWith(LOCAL_IMAGE_PREFIX)) return undefined;
    const action = this.core.outbox.get(reference.slice(LOCAL_IMAGE_PREFIX.length))?.action;
    return action?.kind === 'noteImage' ? this.core.attachments.get(action.image) : undefined;
  }
}
