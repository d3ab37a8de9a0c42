import type { TourDetails } from '@tourline/client';
import { deliveryStates } from './format';

/** "Zustellen": the stops in the tour's order; the first open one is next. */
export function DeliveryList({ view, onDelivery }: { view: TourDetails; onDelivery: (deliveryId: string) => void }) {
  const customers = new Map(view.customers.map((c) => [c.id, c]));
  const stops = [...view.deliveries].sort((a, b) => a.sortOrder - b.sortOrder);
  const next = stops.find((d) => d.state === 'active');
  return (
    <ul className="list">
      {stops.map((d) => (
        <li key={d.id}>
          <button type="button" className={d === next ? 'item next' : `item ${d.state}`} onClick={() => onDelivery(d.id)}>
            <strong>
              {d.sortOrder}. {customers.get(d.customerId)?.name ?? d.belegnummer}
            </strong>
            <span>
              {d.deliveryAddress.street} {d.deliveryAddress.houseNumber}, {d.deliveryAddress.city}
            </span>
            <span className="state">{d === next ? 'Zustellen' : deliveryStates[d.state]}</span>
          </button>
        </li>
      ))}
    </ul>
  );
}
