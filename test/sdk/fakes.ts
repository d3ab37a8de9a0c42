import type { TourDetails } from '../../shared/schemas/deliveries.js';
import type { EventResult, SyncEvent } from '../../shared/schemas/sync.js';

/** A stand-in for the service's sync endpoints in unit tests of the SDK's own logic (timing, ordering, refusal). */
export interface FakeCall {
  at: number;
  method: string;
  path: string;
  body: unknown;
  token: string | undefined;
}

export type FakeAnswer = Response | 'network' | undefined;

export function fakeService(
  options: {
    /** Decides a push event's result; default applied. */
    result?: (event: SyncEvent) => Omit<EventResult, 'eventId'>;
    /** Lets a test answer a request differently (fail it, refuse it); undefined = the normal answer. */
    intercept?: (call: FakeCall) => FakeAnswer;
    /** Handles the request, then loses its answer, as a connection that breaks after the commit. */
    loseAnswer?: (call: FakeCall) => boolean;
  } = {},
) {
  const calls: FakeCall[] = [];
  // As the service: an id seen before answers duplicate, carrying the refusal of a refused one.
  const seen = new Map<string, Omit<EventResult, 'eventId'>>();
  const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
    new Response(JSON.stringify(body), {
      status,
      headers: { 'content-type': status < 400 ? 'application/json' : 'application/problem+json', ...headers },
    });

  const fetch = async (input: string, init: RequestInit): Promise<Response> => {
    const url = new URL(input);
    const token = (init.headers as Record<string, string>).authorization?.replace(/^Bearer /, '');
    const body = typeof init.body === 'string' ? JSON.parse(init.body) : init.body;
    const call = { at: Date.now(), method: init.method ?? 'GET', path: url.pathname, body, token };
    calls.push(call);
    const answer = options.intercept?.(call);
    if (answer === 'network') throw new TypeError('fetch failed');
    if (answer) return answer;
    if (url.pathname === '/sync/push') {
      const events = (body as { events: SyncEvent[] }).events;
      // As the service, which reads ids as UUIDs and answers them in lower case.
      const results = events.map(({ eventId: sent, ...rest }) => {
        const event = { ...rest, eventId: sent.toLowerCase() } as SyncEvent;
        const first = seen.get(event.eventId);
        if (first) {
          const { seq: _, ...answer } = first;
          return { eventId: event.eventId, ...answer, status: 'duplicate' };
        }
        const result = options.result?.(event) ?? { status: 'applied' };
        seen.set(event.eventId, result);
        return { eventId: event.eventId, ...result };
      });
      if (options.loseAnswer?.(call)) throw new TypeError('fetch failed');
      return json({ results });
    }
    if (url.pathname === '/sync/changes') return json({ changes: [], cursor: 'c1', hasMore: false });
    if (url.pathname === '/sync/cursor') return json({ cursor: 'c0' });
    if (url.pathname.endsWith('/complete')) return json({ delivery: { id: url.pathname.split('/')[2], state: 'completed' } });
    if (url.pathname.endsWith('/notes/image')) {
      const form = init.body as FormData;
      return json({ note: { id: form.get('noteId'), imageAttachment: `~${form.get('noteId')}`, text: form.get('text') ?? null } }, 201);
    }
    return json({ type: 'x', title: 'Not found', status: 404, code: 'not_found' }, 404);
  };
  return { fetch, calls, pushes: () => calls.filter((c) => c.path === '/sync/push'), json };
}

export const problem = (status: number, code: string, detail: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ type: `https://tourline.dev/problems/${code}`, title: code, status, detail, code }), {
    status,
    headers: { 'content-type': 'application/problem+json', ...headers },
  });

let counter = 0;
const uuid = () => `00000000-0000-4000-8000-${String(++counter).padStart(12, '0')}`;

/** A small tour in the public shape: `deliveries` deliveries with `positions` lines of 2 pieces each. */
export function newTour({ deliveries = 2, positions = 2, openAmountCents = 0 } = {}): TourDetails {
  const tourId = uuid();
  const address = { street: 'Hauptstraße', houseNumber: '1', postalCode: '10115', city: 'Berlin', country: 'DE', addition: null };
  const customerId = uuid();
  const articleId = uuid();
  const now = '2026-03-02T08:00:00.000Z';
  return {
    tour: { id: tourId, accountId: 1001, tourDate: '2026-03-02', name: 'Tour' },
    customers: [{ id: customerId, erpCustomerId: 1, name: 'Kunde', address }],
    articles: [{ id: articleId, articleNumber: 'A1', name: 'Kiste', scannable: true, defaultWarehouseId: null }],
    warehouses: [],
    deliveries: Array.from({ length: deliveries }, (_, d) => {
      const id = uuid();
      return {
        id,
        tourId,
        belegartId: 1,
        belegnummer: `B${d}`,
        customerId,
        deliveryAddress: address,
        state: 'active' as const,
        stateReason: null,
        sortOrder: d,
        paymentMethodId: null,
        paymentTerm: null,
        assignedCarId: null,
        erpOpenAmountCents: openAmountCents,
        openAmountCents,
        credit: null,
        completedAt: null,
        updatedAt: now,
        positions: Array.from({ length: positions }, (_, p) => ({
          id: uuid(),
          deliveryId: id,
          lineNumber: p + 1,
          articleId,
          warehouseId: null,
          requiredQuantity: 2,
          scannedQuantity: 0,
          creditedQuantity: 0,
          state: 'InProgress' as const,
          scannable: true,
          unit: null,
          unitPriceCents: 500,
        })),
        contacts: [],
        notes: [],
        serviceValues: [],
        latestPayment: null,
        attachments: [],
      };
    }),
  };
}
