import { useEffect, useState } from 'react';
import { useTourlineClient, useTours } from '@tourline/client/react';
import { localDate } from './format';

/** "Tour wählen": the driver's tours of a day, read from the service when it answers, else from the device. */
export function TourPicker({ date, onDate, onTour }: { date: string; onDate: (date: string) => void; onTour: (tourId: string) => void }) {
  const client = useTourlineClient();
  const tours = useTours(date);
  const [state, setState] = useState<'loading' | 'done' | string>('loading');

  const load = async () => {
    setState('loading');
    try {
      await Promise.all([client.loadTours({ date }), client.loadMasterData()]);
      setState('done');
    } catch (error) {
      setState((error as Error).message);
    }
  };
  useEffect(() => {
    void load();
  }, [date]);

  return (
    <main className="screen">
      <h1>Tour wählen</h1>
      <div className="row">
        <button type="button" className={date === localDate() ? 'chosen' : ''} onClick={() => onDate(localDate())}>
          Heute
        </button>
        <button type="button" className={date === localDate(1) ? 'chosen' : ''} onClick={() => onDate(localDate(1))}>
          Morgen
        </button>
        <input type="date" aria-label="Datum" value={date} onChange={(e) => e.target.value && onDate(e.target.value)} />
      </div>
      {state === 'loading' && <p className="hint">Touren werden abgerufen …</p>}
      {state !== 'loading' && state !== 'done' && <p className="hint">Keine Verbindung, gespeicherte Touren: {state}</p>}
      {tours.length === 0 && state !== 'loading' && <p className="hint">Keine Tour an diesem Tag.</p>}
      <ul className="list">
        {tours.map(({ tour, deliveries }) => (
          <li key={tour.id}>
            <button type="button" className="item" onClick={() => onTour(tour.id)}>
              <strong>{tour.name ?? 'Tour'}</strong>
              <span>
                {deliveries.length} Stopps · {deliveries.filter((d) => d.state === 'completed').length} zugestellt
              </span>
            </button>
          </li>
        ))}
      </ul>
      <button type="button" onClick={() => void load()}>
        Aktualisieren
      </button>
    </main>
  );
}
