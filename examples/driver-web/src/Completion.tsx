import { useState } from 'react';
import type { DeliveryDetails } from '@tourline/client';
import { useTourlineClient } from '@tourline/client/react';
import { euro } from './format';
import { SignaturePad } from './SignaturePad';

/** "Abschließen": the driver confirms what the service asks for, the customer and the driver sign. */
export function Completion({ delivery }: { delivery: DeliveryDetails }) {
  const client = useTourlineClient();
  const [customer, setCustomer] = useState<Blob | null>(null);
  const [driver, setDriver] = useState<Blob | null>(null);
  const [receipt, setReceipt] = useState(false);
  const [notesRead, setNotesRead] = useState(false);
  const [collected, setCollected] = useState(false);
  const method = delivery.paymentMethodId ? client.state.master.paymentMethods[delivery.paymentMethodId] : undefined;
  const paid = delivery.latestPayment?.amountCents === delivery.openAmountCents;
  const askCollected = delivery.openAmountCents > 0 && !paid && method?.collectOnSite === true;
  const hasNotes = delivery.notes.length > 0;
  const acknowledgements = {
    receiptConfirmed: receipt,
    ...(hasNotes ? { notesAcknowledged: notesRead } : {}),
    ...(askCollected ? { paymentCollected: collected } : {}),
  };
  // The service's verdict as the device knows it: open lines, acknowledgements, signatures.
  const verdict = client.check({
    type: 'delivery.complete',
    deliveryId: delivery.id,
    acknowledgements,
    customerSignature: customer,
    driverSignature: driver,
  });

  return (
    <section className="completion">
      <h2>Abschließen</h2>
      <label className="check">
        <input type="checkbox" checked={receipt} onChange={(e) => setReceipt(e.target.checked)} />
        Ware vollständig übergeben
      </label>
      {hasNotes && (
        <label className="check">
          <input type="checkbox" checked={notesRead} onChange={(e) => setNotesRead(e.target.checked)} />
          Notizen mit dem Kunden besprochen
        </label>
      )}
      {askCollected && (
        <label className="check">
          <input type="checkbox" checked={collected} onChange={(e) => setCollected(e.target.checked)} />
          {euro(delivery.openAmountCents)} erhalten ({method?.name})
        </label>
      )}
      <SignaturePad label="Unterschrift Kunde" onSigned={setCustomer} />
      <SignaturePad label="Unterschrift Fahrer" onSigned={setDriver} />
      <button
        type="button"
        className="primary"
        disabled={verdict !== null}
        onClick={() => void client.complete(delivery.id, { customerSignature: customer!, driverSignature: driver!, acknowledgements })}
      >
        Zustellung abschließen
      </button>
      {verdict && <p className="hint">{verdict.message}</p>}
    </section>
  );
}
