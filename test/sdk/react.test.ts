// @vitest-environment happy-dom
import { act, createElement, type ReactNode } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { renderToString } from 'react-dom/server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryAttachmentStore, MemoryStore, TourlineClient } from '../../client-sdk/index.js';
import { TourlineProvider, useDelivery, useRejected, useSyncStatus, useTour, useTours } from '../../client-sdk/react.js';
import type { TourDetails } from '../../shared/schemas/deliveries.js';
import { fakeService, newTour } from './fakes.js';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

let client: TourlineClient;
let tour: TourDetails;
let root: Root;
let container: HTMLElement;
const renders: Record<string, number> = {};
const count = (name: string) => {
  renders[name] = (renders[name] ?? 0) + 1;
};

function Delivery({ id }: { id: string }) {
  count(`delivery:${id}`);
  const delivery = useDelivery(id);
  return createElement('p', { id: `d-${id}` }, delivery ? delivery.positions.map((p) => p.scannedQuantity).join(',') : 'none');
}
function Tour({ id }: { id: string }) {
  count('tour');
  return createElement('p', { id: 'tour' }, String(useTour(id)?.deliveries.length ?? 'none'));
}
function Tours({ date }: { date: string }) {
  count(`tours:${date}`);
  return createElement(
    'p',
    { id: `tours-${date}` },
    useTours(date)
      .map((t) => t.tour.id)
      .join(','),
  );
}
function Status() {
  count('status');
  return createElement('p', { id: 'status' }, String(useSyncStatus().pendingCount));
}
function Rejected() {
  count('rejected');
  return createElement(
    'p',
    { id: 'rejected' },
    useRejected()
      .map((r) => `${r.type}:${r.code}`)
      .join(','),
  );
}
const text = (id: string) => container.querySelector(`#${id}`)?.textContent;

async function render(children: ReactNode[]) {
  await act(async () => {
    root.render(createElement(TourlineProvider, { client }, ...children));
  });
}

beforeEach(async () => {
  for (const key of Object.keys(renders)) delete renders[key];
  // Holds are refused, everything else applied: one refused action for useRejected.
  const service = fakeService({
    result: (e) => (e.type === 'delivery.hold' ? { status: 'rejected', code: 'validation', message: 'no reason' } : { status: 'applied' }),
  });
  client = await TourlineClient.open({
    baseUrl: 'http://tourline.test',
    getToken: () => 'token',
    fetch: service.fetch,
    webSocket: null,
    storage: new MemoryStore(),
    attachments: new MemoryAttachmentStore(),
  });
  tour = newTour({ deliveries: 3 });
  await client.state.putTour(tour);
  container = document.createElement('div');
  document.body.append(container);
  root = createRoot(container);
});
afterEach(async () => {
  await act(async () => {
    root.unmount();
  });
  container.remove();
  await client.close();
});

describe('the React bindings', () => {
  it('render a delivery again only when it changed, not while other deliveries of its tour change', async () => {
    const [first, second, third] = tour.deliveries.map((d) => d.id);
    await render([
      createElement(Delivery, { key: 1, id: first }),
      createElement(Delivery, { key: 2, id: second }),
      createElement(Tour, { key: 3, id: tour.tour.id }),
    ]);
    expect(text(`d-${first}`)).toBe('0,0');
    expect(renders[`delivery:${first}`]).toBe(1);

    for (const position of tour.deliveries[1].positions)
      await act(async () => {
        await client.scan(position.id);
      });
    await act(async () => {
      await client.scan(tour.deliveries[2].positions[0].id);
    });
    await act(async () => {
      await client.holdDelivery(third, 'Kunde nicht da');
    });

    expect(text(`d-${second}`)).toBe('1,1');
    expect(renders[`delivery:${first}`]).toBe(1);
    expect(renders[`delivery:${second}`]).toBe(3);
    // The tour reads every delivery, so it follows each of the four changes.
    expect(renders.tour).toBe(5);

    await act(async () => {
      await client.scan(tour.deliveries[0].positions[1].id);
    });
    expect(text(`d-${first}`)).toBe('0,1');
    expect(renders[`delivery:${first}`]).toBe(2);
    expect(renders[`delivery:${second}`]).toBe(3);
  });

  it('list the tours of a date and leave another date alone', async () => {
    const later = newTour();
    later.tour.tourDate = '2026-03-03';
    await client.state.putTour(later);
    await render([
      createElement(Tours, { key: 1, date: '2026-03-02' }),
      createElement(Tours, { key: 2, date: '2026-03-03' }),
      createElement(Tours, { key: 3, date: '2026-03-04' }),
    ]);
    expect(text('tours-2026-03-02')).toBe(tour.tour.id);
    expect(text('tours-2026-03-03')).toBe(later.tour.id);
    expect(text('tours-2026-03-04')).toBe('');

    await act(async () => {
      await client.scan(tour.deliveries[0].positions[0].id);
    });
    expect(renders['tours:2026-03-02']).toBe(2);
    expect(renders['tours:2026-03-03']).toBe(1);
    await act(async () => {
      await client.scan(later.deliveries[0].positions[0].id);
    });
    expect(renders['tours:2026-03-02']).toBe(2);
    expect(renders['tours:2026-03-03']).toBe(2);
    expect(renders['tours:2026-03-04']).toBe(1);
  });

  it('show pending actions and refused ones with their reason until dismissed', async () => {
    await render([createElement(Status, { key: 1 }), createElement(Rejected, { key: 2 })]);
    expect(text('status')).toBe('0');
    await act(async () => {
      await client.scan(tour.deliveries[0].positions[0].id);
    });
    await act(async () => {
      await client.holdDelivery(tour.deliveries[1].id, 'Kunde nicht da');
    });
    expect(text('status')).toBe('2');
    expect(text('rejected')).toBe('');

    await act(async () => {
      await client.sync();
    });
    expect(text('status')).toBe('0');
    expect(text('rejected')).toBe('delivery.hold:validation');
    const [refused] = client.rejected();
    await act(async () => {
      await client.dismissRejected(refused.id);
    });
    expect(text('rejected')).toBe('');
  });

  it('show nothing for what the device does not hold, and refuse to run without a provider', async () => {
    await render([
      createElement(Delivery, { key: 1, id: '00000000-0000-4000-8000-ffffffffffff' }),
      createElement(Tour, { key: 2, id: 'nope' }),
    ]);
    expect(text('d-00000000-0000-4000-8000-ffffffffffff')).toBe('none');
    expect(text('tour')).toBe('none');
    expect(() => renderToString(createElement(Status))).toThrow(/TourlineProvider/);
  });

  it('render on the server from the client held (useSyncExternalStore without a DOM store)', () => {
    const html = renderToString(createElement(TourlineProvider, { client }, createElement(Delivery, { id: tour.deliveries[0].id })));
    expect(html).toContain('0,0');
  });
});
