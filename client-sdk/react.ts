import { createContext, createElement, useCallback, useContext, useRef, useSyncExternalStore, type ReactNode } from 'react';
import type { DeliveryDetails, TourDetails } from '../shared/schemas/deliveries.js';
import type { TourlineClient } from './client.js';
import type { RejectedEvent, SyncStatus } from './client/status.js';

/**
 * React bindings of the client: a provider and hooks that read the optimistic views. Each hook
 * reads through `useSyncExternalStore` and keeps the object it returned as long as what it reads
 * is equal, so a component renders again only when its own tour, delivery or status changed.
 */

/** Counts the client's changes; a hook reads again only when the count moved since its last read. */
class ClientSource {
  version = 0;
  private readonly listeners = new Set<() => void>();
  private detach: (() => void) | null = null;

  constructor(readonly client: TourlineClient) {}

  subscribe = (listener: () => void) => {
    this.listeners.add(listener);
    if (!this.detach) {
      const bump = () => {
        this.version += 1;
        for (const l of [...this.listeners]) l();
      };
      const offs = (['change', 'status', 'rejected'] as const).map((event) => this.client.on(event, bump));
      this.detach = () => offs.forEach((off) => off());
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) {
        this.detach?.();
        this.detach = null;
        // Changes while nobody listened were not counted: the next reader must read afresh.
        this.version += 1;
      }
    };
  };
}

const SourceContext = createContext<ClientSource | null>(null);

/** Makes `client` available to the hooks below it. */
export function TourlineProvider({ client, children }: { client: TourlineClient; children?: ReactNode }) {
  const source = useRef<ClientSource | null>(null);
  if (source.current?.client !== client) source.current = new ClientSource(client);
  return createElement(SourceContext.Provider, { value: source.current }, children);
}

function useSource(): ClientSource {
  const source = useContext(SourceContext);
  if (!source) throw new Error('Tourline hooks need a <TourlineProvider client={...}> above them');
  return source;
}

/** The client itself, for actions (`scan`, `complete`, ...). */
export function useTourlineClient(): TourlineClient {
  return useSource().client;
}

/**
 * Reads `read(client)` whenever the client changed and returns the previous result while the new
 * one is equal to it (deep comparison), which keeps the snapshot stable for `useSyncExternalStore`.
 */
function useClientValue<T>(read: (client: TourlineClient) => T, key: string): T {
  const source = useSource();
  const cache = useRef<{ version: number; key: string; value: T } | null>(null);
  const getSnapshot = useCallback(() => {
    const held = cache.current;
    if (held && held.version === source.version && held.key === key) return held.value;
    const next = read(source.client);
    const value = held && held.key === key && deepEqual(held.value, next) ? held.value : next;
    cache.current = { version: source.version, key, value };
    return value;
  }, [source, key]);
  return useSyncExternalStore(source.subscribe, getSnapshot, getSnapshot);
}

/** The optimistic views of the driver's tours of `date` (`YYYY-MM-DD`) held on the device, by tour name. */
export function useTours(date: string): TourDetails[] {
  return useClientValue(
    (client) =>
      client
        .tourIds()
        .map((id) => client.view(id))
        .filter((view): view is TourDetails => view !== undefined && view.tour.tourDate === date)
        .sort((a, b) => (a.tour.name ?? '').localeCompare(b.tour.name ?? '') || a.tour.id.localeCompare(b.tour.id)),
    `tours:${date}`,
  );
}

/** One tour's optimistic view (server state plus the outbox); undefined while the device does not hold it. */
export function useTour(tourId: string): TourDetails | undefined {
  return useClientValue((client) => client.view(tourId), `tour:${tourId}`);
}

/** One delivery's optimistic view; undefined while the device does not hold its tour. */
export function useDelivery(deliveryId: string): DeliveryDetails | undefined {
  return useClientValue((client) => client.delivery(deliveryId), `delivery:${deliveryId}`);
}

/** Pending actions, online or not, the last sync, refused actions: what the status bar shows. */
export function useSyncStatus(): SyncStatus {
  return useClientValue((client) => client.status(), 'status');
}

/** The refused actions with their reason, until the app dismisses or retries them. */
export function useRejected(): RejectedEvent[] {
  return useClientValue((client) => client.rejected(), 'rejected');
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, i) => deepEqual(item, other[i]));
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return (
    ka.length === kb.length &&
    ka.every(
      (k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
    )
  );
}
