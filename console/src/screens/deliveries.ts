import { getJson, objectUrl } from '../api.js';
import { berlinToday, h, notice, table, when } from '../dom.js';
import type { Screen } from '../screen.js';

interface Completed {
  delivery_id: string;
  belegnummer: string;
  customer_name: string;
  completed_at: string;
  positions_modified: boolean;
}
interface Details {
  deliveries: {
    id: string;
    completion: { customer_signature_id: string; driver_signature_id: string; report_attachment_id: string | null } | null;
  }[];
}

const preview = (id: string, width: number) => `/admin/attachments/${id}?w=${width}&h=0&ext=png`;

/** Opens the delivery's signatures and its report (PDF) beside its row. */
async function showDocuments(entry: Completed, target: HTMLElement) {
  const details = await getJson<Details>(`/admin/belege/${encodeURIComponent(entry.belegnummer)}`);
  const completion = details.deliveries.find((d) => d.id === entry.delivery_id)?.completion;
  if (!completion) return target.replaceChildren(notice('Kein Abschluss gespeichert.'));
  const image = async (id: string, alt: string, width: number) => h('img', { src: await objectUrl(preview(id, width)), alt, width });
  const report = completion.report_attachment_id;
  target.replaceChildren(
    h(
      'div',
      { class: 'signatures' },
      await image(completion.customer_signature_id, `Unterschrift Kunde, Beleg ${entry.belegnummer}`, 240),
      ' ',
      await image(completion.driver_signature_id, `Unterschrift Fahrer, Beleg ${entry.belegnummer}`, 240),
      report
        ? h(
            'p',
            {},
            h(
              'a',
              {
                href: await objectUrl(`/admin/deliveries/${entry.delivery_id}/report`),
                download: `Lieferbericht-${entry.belegnummer}.pdf`,
              },
              'Lieferbericht öffnen',
            ),
          )
        : h('p', {}, 'Lieferbericht wird noch erstellt.'),
    ),
  );
}

export function deliveriesScreen(): Screen {
  const date = h('input', { type: 'date', id: 'delivery-date', value: berlinToday() }) as HTMLInputElement;
  const open = new Map<string, HTMLElement>();
  return {
    title: 'Zustellungen',
    everyMs: 15_000,
    toolbar: (redraw) => {
      date.addEventListener('change', () => {
        open.clear();
        redraw();
      });
      return h('div', { class: 'toolbar' }, h('label', { for: 'delivery-date' }, 'Tag (Berlin)', date));
    },
    draw: async () => {
      const day = (date.value || berlinToday()).split('-').reverse().join('-');
      const { deliveries } = await getJson<{ deliveries: Completed[] }>(`/admin/completed-deliveries?day=${day}`);
      if (deliveries.length === 0) return notice('Keine abgeschlossenen Zustellungen an diesem Tag.');
      return table(
        ['Beleg', 'Kunde', 'Abgeschlossen', 'Positionen', 'Dokumente'],
        deliveries.map((d) => {
          const documents = open.get(d.delivery_id) ?? h('div');
          open.set(d.delivery_id, documents);
          return [
            d.belegnummer,
            d.customer_name,
            when(d.completed_at),
            d.positions_modified ? h('span', { class: 'badge' }, 'geändert') : h('span', { class: 'badge ok' }, 'unverändert'),
            h(
              'div',
              {},
              h(
                'button',
                {
                  type: 'button',
                  class: 'secondary',
                  onclick: () =>
                    void showDocuments(d, documents).catch((error: Error) => documents.replaceChildren(notice(error.message, 'error'))),
                },
                `Dokumente zu ${d.belegnummer}`,
              ),
              documents,
            ),
          ];
        }),
        'Abgeschlossene Zustellungen',
      );
    },
  };
}
