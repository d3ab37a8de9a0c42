import { type ApiError, call, getJson } from '../api.js';
import { berlinToday, h, notice, table, when } from '../dom.js';
import type { Screen } from '../screen.js';

interface WriteBack {
  kind: 'completion' | 'cancellation';
  delivery_id: string;
  belegnummer: string;
  recorded_at: string;
  status: 'pending' | 'failed' | 'rejected' | 'succeeded';
  attempts: number;
  error: string | null;
  next_attempt_at: string | null;
}
interface ImportRun {
  run_id: string;
  target_date: string;
  trigger: string;
  success: boolean;
  skipped: boolean;
  started_at: string;
  error: string | null;
}

const statuses: Record<WriteBack['status'], string> = {
  pending: 'offen',
  failed: 'fehlgeschlagen',
  rejected: 'vom ERP abgelehnt',
  succeeded: 'gesendet',
};
const kinds: Record<WriteBack['kind'], string> = { completion: 'Abschluss', cancellation: 'Storno' };
const triggers: Record<string, string> = { scheduler: 'Zeitplan', startup: 'Start', manual: 'von Hand', retry: 'Wiederholung' };

export function erpScreen(): Screen {
  const message = h('div', { 'aria-live': 'polite' });
  const say = (text: string, kind: 'info' | 'error' = 'info') => message.replaceChildren(notice(text, kind));
  let redraw = () => undefined as void;
  const attempt = async (what: string, work: () => Promise<unknown>) => {
    try {
      await work();
      say(`${what}: erledigt.`);
    } catch (error) {
      say(`${what}: ${(error as ApiError).message}`, 'error');
    }
    redraw();
  };
  const send = (w: WriteBack) =>
    attempt(`Beleg ${w.belegnummer} senden`, () =>
      call(`/admin/${w.kind === 'completion' ? 'push-completion' : 'push-cancellation'}?delivery_id=${w.delivery_id}`, { method: 'POST' }),
    );
  const importNow = () => attempt('Import', () => call(`/admin/import-erp?date=${berlinToday()}`, { method: 'POST' }));
  return {
    title: 'ERP',
    everyMs: 5000,
    toolbar: (again) => {
      redraw = again;
      return h(
        'div',
        {},
        h('div', { class: 'toolbar' }, h('button', { type: 'button', onclick: () => void importNow() }, 'jetzt importieren')),
        message,
      );
    },
    draw: async () => {
      const [{ write_backs: open }, { runs }] = await Promise.all([
        getJson<{ write_backs: WriteBack[] }>('/admin/erp-write-backs'),
        getJson<{ runs: ImportRun[] }>('/admin/import-runs?limit=10'),
      ]);
      return h(
        'div',
        {},
        h(
          'section',
          { 'aria-label': 'Rückmeldungen an das ERP' },
          h('h2', {}, 'Rückmeldungen an das ERP'),
          open.length === 0
            ? notice('Alle Rückmeldungen sind im ERP.')
            : table(
                ['Beleg', 'Art', 'Erfasst', 'Stand', 'Versuche', 'Fehler', 'Nächster Versuch', ''],
                open.map((w) => [
                  w.belegnummer,
                  kinds[w.kind],
                  when(w.recorded_at),
                  w.status === 'pending' ? statuses.pending : h('span', { class: 'badge' }, statuses[w.status]),
                  w.attempts,
                  w.error ?? '–',
                  when(w.next_attempt_at),
                  h('button', { type: 'button', onclick: () => void send(w) }, `Beleg ${w.belegnummer} erneut senden`),
                ]),
                'Offene Rückmeldungen',
              ),
        ),
        h(
          'section',
          { 'aria-label': 'Importläufe' },
          h('h2', {}, 'Importläufe'),
          runs.length === 0
            ? notice('Noch kein Import gelaufen.')
            : table(
                ['Beginn', 'Tourtag', 'Anlass', 'Ergebnis', 'Fehler'],
                runs.map((r) => [
                  when(r.started_at),
                  r.target_date,
                  triggers[r.trigger] ?? r.trigger,
                  r.skipped
                    ? 'übersprungen'
                    : r.success
                      ? h('span', { class: 'badge ok' }, 'erfolgreich')
                      : h('span', { class: 'badge' }, 'fehlgeschlagen'),
                  r.error ?? '–',
                ]),
                'Letzte Importläufe',
              ),
        ),
      );
    },
  };
}
