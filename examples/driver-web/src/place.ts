import { useState } from 'react';

/** Where the driver is in the app; kept across a reload, so an offline restart returns to the same screen. */
export interface Place {
  date: string;
  tourId?: string;
  tab?: 'load' | 'deliver';
  deliveryId?: string;
}

const KEY = 'driver-web/place';

export function usePlace(initial: () => Place): [Place, (next: Place) => void] {
  const [place, setPlace] = useState<Place>(() => {
    try {
      return (JSON.parse(localStorage.getItem(KEY) ?? 'null') as Place | null) ?? initial();
    } catch {
      return initial();
    }
  });
  const go = (next: Place) => {
    localStorage.setItem(KEY, JSON.stringify(next));
    setPlace(next);
    scrollTo(0, 0);
  };
  return [place, go];
}
