import { useTour } from '@tourline/client/react';
import { DeliveryList } from './DeliveryList';
import { LoadList } from './LoadList';

/** One tour: "Laden" (scan the goods onto the car) and "Zustellen" (the stops in the tour's order). */
export function TourScreen(props: {
  tourId: string;
  tab: 'load' | 'deliver';
  onTab: (tab: 'load' | 'deliver') => void;
  onDelivery: (deliveryId: string) => void;
  onBack: () => void;
}) {
  const view = useTour(props.tourId);
  if (!view)
    return (
      <main className="screen">
        <p className="hint">Diese Tour ist nicht auf dem Gerät.</p>
        <button type="button" onClick={props.onBack}>
          Tour wählen
        </button>
      </main>
    );
  return (
    <main className="screen">
      <button type="button" className="back" onClick={props.onBack}>
        ‹ Tour wählen
      </button>
      <h1>
        {view.tour.name ?? 'Tour'} · {view.tour.tourDate}
      </h1>
      <nav className="tabs">
        <button type="button" className={props.tab === 'load' ? 'chosen' : ''} onClick={() => props.onTab('load')}>
          Laden
        </button>
        <button type="button" className={props.tab === 'deliver' ? 'chosen' : ''} onClick={() => props.onTab('deliver')}>
          Zustellen
        </button>
      </nav>
      {props.tab === 'load' ? <LoadList view={view} /> : <DeliveryList view={view} onDelivery={props.onDelivery} />}
    </main>
  );
}
