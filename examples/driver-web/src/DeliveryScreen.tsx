import { useDelivery, useTour } from '@tourline/client/react';
import { Completion } from './Completion';
import { CreditForm } from './CreditForm';
import { deliveryStates, euro } from './format';
import { Notes } from './Notes';
import { PaymentForm } from './PaymentForm';
import { Services } from './Services';
import { StateActions } from './StateActions';

/** One stop: what goes there, and everything the driver does at the door. */
export function DeliveryScreen({ deliveryId, onBack }: { deliveryId: string; onBack: () => void }) {
  const delivery = useDelivery(deliveryId);
  const view = useTour(delivery?.tourId ?? '');
  if (!delivery || !view)
    return (
      <main className="screen">
        <button type="button" className="back" onClick={onBack}>
          ‹ Tour
        </button>
      </main>
    );
  const customer = view.customers.find((c) => c.id === delivery.customerId);
  const articles = new Map(view.articles.map((a) => [a.id, a]));
  const a = delivery.deliveryAddress;
  const open = delivery.state === 'active';
  return (
    <main className="screen delivery" data-state={delivery.state}>
      <button type="button" className="back" onClick={onBack}>
        ‹ Tour
      </button>
      <h1>
        {delivery.sortOrder}. {customer?.name ?? delivery.belegnummer}
      </h1>
      <p>
        {a.street} {a.houseNumber}, {a.postalCode} {a.city}
        <br />
        {delivery.belegnummer} · <span className="state">{deliveryStates[delivery.state]}</span>
        {delivery.stateReason ? ` (${delivery.stateReason})` : ''} ·{' '}
        {delivery.openAmountCents > 0 && delivery.latestPayment?.amountCents === delivery.openAmountCents
          ? `bezahlt ${euro(delivery.openAmountCents)}`
          : `zu zahlen ${euro(delivery.openAmountCents)}`}
      </p>
      <ul className="lines">
        {delivery.positions.map((p) => (
          <li key={p.id} className={p.state === 'InProgress' ? '' : 'done'}>
            <span>{articles.get(p.articleId)?.name}</span>
            <span>
              {p.scannable ? `${p.scannedQuantity}/${p.requiredQuantity}` : p.requiredQuantity} {p.unit ?? ''}
            </span>
          </li>
        ))}
      </ul>
      <StateActions delivery={delivery} />
      <Notes delivery={delivery} />
      {open && <CreditForm delivery={delivery} />}
      {open && <PaymentForm delivery={delivery} />}
      {open && <Services delivery={delivery} />}
      {open && <Completion delivery={delivery} />}
    </main>
  );
}
