import { getJson } from '../api.js';
import { berlinToday, h, notice, table } from '../dom.js';
import type { Screen } from '../screen.js';

interface TourProgress {
  id: string;
  name: string | null;
  driver: { personalnummer: number; name: string };
  deliveries: { total: number; active: number; held: number; canceled: number; completed: number };
  lines: { total: number; loaded: number; removed: number; held: number };
}

export function toursScreen(): Screen {
  const date = h('input', { type: 'date', id: 'tour-date', value: berlinToday() }) as HTMLInputElement;
  return {
    title: 'Touren heute',
    everyMs: 2000,
    toolbar: (redraw) => {
      date.addEventListener('change', redraw);
      return h('div', { class: 'toolbar' }, h('label', { for: 'tour-date' }, 'Tag', date));
    },
    draw: async () => {
      const { tours } = await getJson<{ tours: TourProgress[] }>(`/admin/tours?date=${encodeURIComponent(date.value || berlinToday())}`);
      if (tours.length === 0) return notice('Keine Touren an diesem Tag.');
      return table(
        ['Fahrer', 'Tour', 'Zustellungen erledigt', 'Offen', 'Angehalten', 'Storniert', 'Positionen geladen'],
        tours.map((t) => [
          `${t.driver.name} (${t.driver.personalnummer})`,
          t.name ?? '–',
          `${t.deliveries.completed} von ${t.deliveries.total}`,
          t.deliveries.active,
          t.deliveries.held,
          t.deliveries.canceled,
          h(
            'span',
            { 'data-tour-id': t.id, 'data-loaded': t.lines.loaded },
            h('progress', { max: t.lines.total || 1, value: t.lines.loaded, 'aria-label': `Geladen bei ${t.driver.name}` }),
            ` ${t.lines.loaded} von ${t.lines.total}`,
          ),
        ]),
        'Touren des Tages',
      );
    },
  };
}
