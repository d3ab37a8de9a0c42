import { ApiError, call, getJson } from '../api.js';
import { berlinToday, h, notice, table, when } from '../dom.js';
import type { Screen } from '../screen.js';

interface WriteBack {
  delivery_id: string;
  belegnummer: string;
  customer_name: string;
  completed_at: string;
  status: 'pending' | 'failed';
  attempts: number;
  error: string | null;
}

export function erpScreen(): Screen {
  const message = h('div', { 'aria-live': 'polite' });
  const say = (text: string, kind: 'info' | 'error' = 'info') => message.replaceChildren(notice(text, kind));
  const attempt = async (what: string, work: () => Promise<unknown>, redraw: () => void) => {
    try {
      await work();
      say(`${what}: erledigt.`);
    } catch (error) {
      say(`${what}: ${(error as ApiError).message}`, 'error');
    }
    redraw();
  };
  let redraw = () => undefined as void;
  return {
    title: 'ERP',
    everyMs: 5000,
    toolbar: (again) => {
      redraw = again;
      const importNow = () => attempt('Import', () => call(`/admin/import-erp?date=${berlinToday()}`, { method: 'POST' }), again);
      return h(
        'div',
        {},
        h('div', { class: 'toolbar' }, h('button', { type: 'button', onclick: () => void importNow() }, 'jetzt importieren')),
        message,
      );
    },
    draw: async () => {
      const { write_backs: open } = await getJson<{ write_backs: WriteBack[] }>('/admin/write-backs');
      const send = (w: WriteBack) =>
        attempt(
          `Beleg ${w.belegnummer} senden`,
          () => call(`/admin/push-completion?delivery_id=${w.delivery_id}`, { method: 'POST' }),
          redraw,
        );
      return h(
        'section',
        { 'aria-label': 'Rückmeldungen an das ERP' },
        h('h2', {}, 'Rückmeldungen an das ERP'),
        open.length === 0
          ? notice('Alle Abschlüsse sind im ERP.')
          : table(
              ['Beleg', 'Kunde', 'Abgeschlossen', 'Stand', 'Versuche', 'Fehler', ''],
              open.map((w) => [
                w.belegnummer,
                w.customer_name,
                when(w.completed_at),
                w.status === 'failed' ? h('span', { class: 'badge' }, 'fehlgeschlagen') : 'offen',
                w.attempts,
                w.error ?? '–',
                h('button', { type: 'button', onclick: () => void send(w) }, `Beleg ${w.belegnummer} erneut senden`),
              ]),
              'Offene Rückmeldungen',
            ),
      );
    },
  };
}
