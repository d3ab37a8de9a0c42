import { getJson } from '../api.js';
import { notice, table, when } from '../dom.js';
import type { Screen } from '../screen.js';

interface Device {
  device_id: string;
  account_id: number;
  app_name: string | null;
  app_version: string | null;
  sdk_version: string;
  pending_count: number;
  pending_completion_count: number;
  rejected_count: number;
  last_error_code: string | null;
  last_seen_at: string;
}

export function devicesScreen(): Screen {
  return {
    title: 'Geräte',
    everyMs: 10_000,
    draw: async () => {
      const { devices } = await getJson<{ devices: Device[] }>('/admin/devices');
      if (devices.length === 0) return notice('Noch kein Gerät hat berichtet.');
      return table(
        ['Fahrer', 'App', 'Ungesendet', 'Abschlüsse ungesendet', 'Abgelehnt', 'Letzter Fehler', 'Zuletzt gesehen'],
        devices.map((d) => [
          d.account_id,
          `${d.app_name ?? 'App'} ${d.app_version ?? ''} (SDK ${d.sdk_version})`,
          d.pending_count,
          d.pending_completion_count,
          d.rejected_count,
          d.last_error_code ?? '–',
          when(d.last_seen_at),
        ]),
        'Geräte und ihre ungesendete Arbeit',
      );
    },
  };
}
