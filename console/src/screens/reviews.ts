import { getJson, postJson } from '../api.js';
import { euro, h, notice, table, when } from '../dom.js';
import type { Screen } from '../screen.js';

interface Change {
  kind: string;
  at: string;
  article_name: string | null;
  line_number: number | null;
  quantity: number | null;
  amount_cents: number | null;
  reason: string | null;
  car_plate: string | null;
  account_id: number;
}
interface Review {
  delivery_id: string;
  belegnummer: string;
  tour_date: string;
  state: string;
  driver: { personalnummer: number; name: string };
  customer: { name: string };
  deviation: { removed_lines: number; credited_lines: number; credited_pieces: number; money_credit_cents: number | null };
  changes: Change[];
}
interface History {
  belegnummer: string;
  resolutions: { processor: string; resolved_at: string; authenticated_by: string }[];
}

const kinds: Record<string, string> = {
  line_removed: 'Position entfernt',
  pieces_credited: 'Stück gutgeschrieben',
  line_restored: 'Position wiederhergestellt',
  money_credit_set: 'Geldgutschrift gesetzt',
  money_credit_removed: 'Geldgutschrift entfernt',
};

const states: Record<string, string> = { active: 'offen', held: 'angehalten', canceled: 'storniert', completed: 'abgeschlossen' };

/** What the office confirmed in this session, with the history the service keeps for it. */
const confirmed: History[] = [];

function card(review: Review, redraw: () => void): HTMLElement {
  const { deviation } = review;
  const resolve = async (event: Event) => {
    (event.currentTarget as HTMLButtonElement).disabled = true;
    await postJson(`/admin/reviews/${review.delivery_id}/resolve`, {});
    confirmed.unshift(await getJson<History>(`/admin/reviews/${review.delivery_id}/history`));
    redraw();
  };
  return h(
    'article',
    { class: 'card', 'data-delivery-id': review.delivery_id, 'aria-label': `Beleg ${review.belegnummer}` },
    h('h2', {}, `Beleg ${review.belegnummer} · ${review.customer.name}`),
    h(
      'p',
      { class: 'meta' },
      `Tour ${review.tour_date} · ${review.driver.name} (${review.driver.personalnummer}) · ${states[review.state] ?? review.state}`,
    ),
    h(
      'p',
      {},
      `Entfernte Positionen: ${deviation.removed_lines} · Gutgeschriebene Positionen: ${deviation.credited_lines} (${deviation.credited_pieces} Stück) · Geldgutschrift: ${euro(deviation.money_credit_cents)}`,
    ),
    table(
      ['Zeit', 'Änderung', 'Position', 'Menge', 'Betrag', 'Grund', 'Fahrzeug', 'Fahrer'],
      review.changes.map((c) => [
        when(c.at),
        kinds[c.kind] ?? c.kind,
        c.article_name ? `${c.line_number} ${c.article_name}` : '–',
        c.quantity ?? '–',
        euro(c.amount_cents),
        c.reason ?? '–',
        c.car_plate ?? '–',
        c.account_id,
      ]),
      `Änderungen an Beleg ${review.belegnummer}`,
    ),
    h('p', {}, h('button', { type: 'button', onclick: (event: Event) => void resolve(event) }, `Beleg ${review.belegnummer} bestätigen`)),
  );
}

const history = () =>
  h(
    'section',
    { 'aria-label': 'Zuletzt bestätigt', class: 'card' },
    h('h2', {}, 'Zuletzt bestätigt'),
    h(
      'ul',
      { class: 'history' },
      ...confirmed.map((entry) =>
        h('li', {}, `Beleg ${entry.belegnummer}: `, entry.resolutions.map((r) => `${r.processor} am ${when(r.resolved_at)}`).join('; ')),
      ),
    ),
  );

export function reviewsScreen(): Screen {
  let redraw = () => undefined as void;
  return {
    title: 'Prüfungen',
    everyMs: 3000,
    toolbar: (again) => {
      redraw = again;
      return h('div');
    },
    draw: async () => {
      const reviews = await getJson<Review[]>('/admin/reviews');
      return h(
        'div',
        {},
        reviews.length === 0
          ? notice('Keine Prüfungen offen.')
          : h('div', { class: 'cards' }, ...reviews.map((r) => card(r, () => redraw()))),
        confirmed.length > 0 && history(),
      );
    },
  };
}
