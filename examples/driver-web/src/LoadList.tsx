import { useState } from 'react';
import type { TourDetails } from '@tourline/client';
import { useTourlineClient } from '@tourline/client/react';
import { Scanner } from './Scanner';

type Line = TourDetails['deliveries'][number]['positions'][number];

/** The first line of the tour still to load whose article number (or line id) is the code. */
function lineFor(view: TourDetails, code: string): Line | undefined {
  const articles = new Map(view.articles.map((a) => [a.id, a]));
  return view.deliveries
    .filter((d) => d.state === 'active')
    .flatMap((d) => d.positions)
    .find(
      (p) =>
        p.scannable &&
        p.state === 'InProgress' &&
        p.scannedQuantity < p.requiredQuantity &&
        (articles.get(p.articleId)?.articleNumber === code || p.id === code),
    );
}

/** "Laden": every scannable line of the tour with what is on the car; a scan adds one piece. */
export function LoadList({ view }: { view: TourDetails }) {
  const client = useTourlineClient();
  const [message, setMessage] = useState<string | null>(null);
  const articles = new Map(view.articles.map((a) => [a.id, a]));
  const lines = view.deliveries.flatMap((d) => d.positions.filter((p) => p.scannable).map((p) => ({ delivery: d, line: p })));
  const loaded = lines.reduce((n, { line }) => n + line.scannedQuantity, 0);
  const required = lines.reduce((n, { line }) => n + line.requiredQuantity - line.creditedQuantity, 0);

  const scan = async (code: string) => {
    const line = lineFor(view, code);
    if (!line) return setMessage(`Code ${code}: nichts mehr zu laden`);
    await client.scan(line.id);
    setMessage(`${articles.get(line.articleId)?.name ?? code}: ${line.scannedQuantity + 1} von ${line.requiredQuantity} geladen`);
  };

  return (
    <section>
      <Scanner onCode={(code) => void scan(code)} />
      {message && (
        <p className="hint" role="status">
          {message}
        </p>
      )}
      <p className="progress">
        Geladen: {loaded} von {required}
      </p>
      <ul className="lines">
        {lines.map(({ delivery, line }) => (
          <li key={line.id} className={line.state === 'InProgress' ? '' : 'done'}>
            <span>
              {articles.get(line.articleId)?.name} <small>{articles.get(line.articleId)?.articleNumber}</small>
            </span>
            <span>
              Stopp {delivery.sortOrder} · {line.scannedQuantity}/{line.requiredQuantity}
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}
