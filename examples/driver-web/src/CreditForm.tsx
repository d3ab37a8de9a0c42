import { useState } from 'react';
import type { DeliveryDetails } from '@tourline/client';
import { useTourlineClient } from '@tourline/client/react';
import { euro } from './format';

const STEP_CENTS = 1000;
// The service's limit of a money credit (150 €); a higher one would be refused.
const MAX_CENTS = 15000;

/** "Gutschrift": a money credit in steps of 10 €, with its reason; or removing it. */
export function CreditForm({ delivery }: { delivery: DeliveryDetails }) {
  const client = useTourlineClient();
  const [amount, setAmount] = useState(delivery.credit?.amountCents ?? STEP_CENTS);
  const [reason, setReason] = useState(delivery.credit?.reason ?? '');
  const credit = { amountCents: amount, reason: reason.trim() };
  // Refused on the device as the service would refuse it: a blank reason, a delivery no longer active.
  const verdict = client.check({ type: 'credit', deliveryId: delivery.id, action: 'set', ...credit });
  return (
    <section className="credit">
      <h2>Gutschrift</h2>
      {delivery.credit && (
        <p>
          Aktuell {euro(delivery.credit.amountCents)}: {delivery.credit.reason}
        </p>
      )}
      <div className="row stepper">
        <button type="button" aria-label="10 € weniger" disabled={amount <= STEP_CENTS} onClick={() => setAmount(amount - STEP_CENTS)}>
          − 10 €
        </button>
        <output className="amount">{euro(amount)}</output>
        <button type="button" aria-label="10 € mehr" disabled={amount >= MAX_CENTS} onClick={() => setAmount(amount + STEP_CENTS)}>
          + 10 €
        </button>
      </div>
      <input aria-label="Grund der Gutschrift" placeholder="Grund" value={reason} onChange={(e) => setReason(e.target.value)} />
      <div className="row">
        <button
          type="button"
          disabled={verdict !== null}
          title={verdict?.message}
          onClick={() => void client.setCredit(delivery.id, credit)}
        >
          Gutschrift setzen
        </button>
        {delivery.credit && (
          <button type="button" onClick={() => void client.removeCredit(delivery.id)}>
            Gutschrift entfernen
          </button>
        )}
      </div>
    </section>
  );
}
