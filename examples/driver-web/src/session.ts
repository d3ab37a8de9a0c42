import { IndexedDbAttachmentStore, IndexedDbStore, TourlineClient } from '@tourline/client';

/** What the driver entered at sign-in, kept in localStorage so the app opens offline. */
export interface Session {
  serviceUrl: string;
  token: string;
}

const KEY = 'driver-web/session';
const DATABASE = 'tourline-driver';
export const defaultServiceUrl: string = import.meta.env.VITE_TOURLINE_URL ?? 'http://localhost:3000';

export function storedSession(): Session | null {
  try {
    const value = JSON.parse(localStorage.getItem(KEY) ?? 'null') as Session | null;
    return value?.serviceUrl && value.token ? value : null;
  } catch {
    return null;
  }
}

export function saveSession(session: Session) {
  localStorage.setItem(KEY, JSON.stringify(session));
}

/** Signing out keeps the outbox in IndexedDB: what waits is still sent after the next sign-in. */
export function forgetSession() {
  localStorage.removeItem(KEY);
}

/**
 * The SDK on the browser's IndexedDB (outbox, tours, photos and signatures), fed the browser's
 * `online`/`offline` and visibility signals. A token cannot be refreshed here: a refused one
 * shows the sign-in again (`status().needsSignIn`).
 */
export async function openClient(session: Session): Promise<{ client: TourlineClient; close: () => Promise<void> }> {
  const client = await TourlineClient.open({
    baseUrl: session.serviceUrl.replace(/\/+$/, ''),
    getToken: () => session.token,
    storage: await IndexedDbStore.open(DATABASE),
    attachments: await IndexedDbAttachmentStore.open(DATABASE),
  });
  const online = () => client.online();
  const offline = () => client.offline();
  const visible = () => {
    if (document.visibilityState === 'visible') client.resume();
  };
  addEventListener('online', online);
  addEventListener('offline', offline);
  document.addEventListener('visibilitychange', visible);
  if (!navigator.onLine) client.offline();
  client.start();
  const close = async () => {
    removeEventListener('online', online);
    removeEventListener('offline', offline);
    document.removeEventListener('visibilitychange', visible);
    await client.close();
  };
  return { client, close };
}
