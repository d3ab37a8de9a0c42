import { useState } from 'react';
import type { DeliveryDetails } from '@tourline/client';
import { useTourlineClient } from '@tourline/client/react';
import { euro } from './format';

/** "Kassieren": the open amount, taken with a payment method (the SDK sends the amount the driver saw). */
export function PaymentForm({ delivery }: { delivery: DeliveryDetails }) {
  const client = useTourlineClient();
  const methods = Object.values(client.state.master.paymentMethods).filter((m) => m.active);
  const [methodId, setMethodId] = useState(delivery.paymentMethodId ?? methods[0]?.id ?? '');
  const paid = delivery.latestPayment;
  return (
    <section className="payment">
      <h2>Kassieren</h2>
      <p>
        Offen: <strong>{euro(delivery.openAmountCents)}</strong>
        {paid ? ` · zuletzt ${euro(paid.amountCents)} (${paid.paymentMethodCode})` : ''}
      </p>
      {delivery.openAmountCents > 0 && methods.length > 0 && (
        <div className="row">
          <select aria-label="Zahlungsart" value={methodId} onChange={(e) => setMethodId(e.target.value)}>
            {methods.map((m) => (
              <option key={m.id} value={m.id}>
                {m.name}
              </option>
            ))}
          </select>
          <button type="button" disabled={!methodId} onClick={() => void client.recordPayment(delivery.id, { paymentMethodId: methodId })}>
            {euro(delivery.openAmountCents)} kassieren
          </button>
        </div>
      )}
    </section>
  );
}
