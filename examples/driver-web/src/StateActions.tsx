import { useState } from 'react';
import type { DeliveryDetails } from '@tourline/client';
import { useTourlineClient } from '@tourline/client/react';
import { ReasonForm } from './ReasonForm';

/** Hold ("Zurückstellen"), resume ("Fortsetzen") and cancel ("Stornieren") a stop, each with the driver's reason. */
export function StateActions({ delivery }: { delivery: DeliveryDetails }) {
  const client = useTourlineClient();
  const [asking, setAsking] = useState<'hold' | 'cancel' | null>(null);
  if (delivery.state === 'held')
    return (
      <section>
        <button type="button" onClick={() => void client.resumeDelivery(delivery.id)}>
          Fortsetzen
        </button>
      </section>
    );
  if (delivery.state !== 'active') return null;
  return (
    <section>
      <div className="row">
        <button type="button" className={asking === 'hold' ? 'chosen' : ''} onClick={() => setAsking(asking === 'hold' ? null : 'hold')}>
          Zurückstellen
        </button>
        <button
          type="button"
          className={asking === 'cancel' ? 'chosen' : ''}
          onClick={() => setAsking(asking === 'cancel' ? null : 'cancel')}
        >
          Stornieren
        </button>
      </div>
      {asking === 'hold' && (
        <ReasonForm
          label="Zurückstellen"
          suggestions={['Kunde nicht angetroffen', 'Tor zu', 'Später wiederkommen']}
          onSubmit={(reason) => {
            setAsking(null);
            void client.holdDelivery(delivery.id, reason);
          }}
        />
      )}
      {asking === 'cancel' && (
        <ReasonForm
          label="Stornieren"
          suggestions={['Annahme verweigert', 'Falsche Ware', 'Geschäft geschlossen']}
          onSubmit={(reason) => {
            setAsking(null);
            void client.cancelDelivery(delivery.id, reason);
          }}
        />
      )}
    </section>
  );
}
