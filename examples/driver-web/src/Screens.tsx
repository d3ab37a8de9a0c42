import { DeliveryScreen } from './DeliveryScreen';
import { localDate } from './format';
import { usePlace } from './place';
import { TourPicker } from './TourPicker';
import { TourScreen } from './TourScreen';

/** The driver's way through the day: choose the tour, load it, deliver stop by stop. */
export function Screens() {
  const [place, go] = usePlace(() => ({ date: localDate() }));
  if (place.tourId && place.deliveryId)
    return <DeliveryScreen deliveryId={place.deliveryId} onBack={() => go({ ...place, deliveryId: undefined, tab: 'deliver' })} />;
  if (place.tourId)
    return (
      <TourScreen
        tourId={place.tourId}
        tab={place.tab ?? 'load'}
        onTab={(tab) => go({ ...place, tab })}
        onDelivery={(deliveryId) => go({ ...place, deliveryId })}
        onBack={() => go({ date: place.date })}
      />
    );
  return (
    <TourPicker date={place.date} onDate={(date) => go({ date })} onTour={(tourId) => go({ date: place.date, tourId, tab: 'load' })} />
  );
}
