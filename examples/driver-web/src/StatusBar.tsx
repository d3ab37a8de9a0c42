import { useEffect } from 'react';
import { useRejected, useSyncStatus, useTourlineClient } from '@tourline/client/react';
import { actionLabels, clock } from './format';

const LAST_SYNC_KEY = 'driver-web/last-sync';

/** Always on top: what waits to be sent, offline or online, the last sync, and refused actions with their reason. */
export function StatusBar({ onSignOut }: { onSignOut: () => void }) {
  const client = useTourlineClient();
  const status = useSyncStatus();
  const refused = useRejected();
  // The SDK counts the last sync from its start; kept here so an offline restart still shows it.
  useEffect(() => {
    if (status.lastSyncAt) localStorage.setItem(LAST_SYNC_KEY, String(status.lastSyncAt));
  }, [status.lastSyncAt]);
  const lastSyncAt = status.lastSyncAt ?? (Number(localStorage.getItem(LAST_SYNC_KEY)) || null);
  return (
    <header className="status-bar" data-pending={status.pendingCount} data-online={status.online} data-refused={refused.length}>
      <div className="status-line">
        <span className={status.online ? 'badge online' : 'badge offline'}>{status.online ? 'Online' : 'Offline'}</span>
        <span className="pending">{status.pendingCount === 0 ? 'Alles gesendet' : `${status.pendingCount} ausstehend`}</span>
        <span className="last-sync">{lastSyncAt ? `Sync ${clock(lastSyncAt)}` : 'Noch kein Sync'}</span>
        <button type="button" className="small" onClick={onSignOut}>
          Abmelden
        </button>
      </div>
      {status.needsSignIn && (
        <p className="problem">Anmeldung abgelaufen: bitte abmelden und mit neuem Token anmelden. Nichts geht verloren.</p>
      )}
      {refused.length > 0 && (
        <ul className="refused">
          {refused.map((r) => (
            <li key={r.id}>
              <strong>{actionLabels[r.type] ?? r.type} abgelehnt:</strong> {r.message}
              {r.reason ? ` (${r.reason})` : ''}
              <button type="button" className="small" onClick={() => void client.dismissRejected(r.id)}>
                Verwerfen
              </button>
            </li>
          ))}
        </ul>
      )}
    </header>
  );
}
