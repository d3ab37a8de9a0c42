import { useEffect, useState } from 'react';
import type { TourlineClient } from '@tourline/client';
import { TourlineProvider } from '@tourline/client/react';
import { Login } from './Login';
import { Screens } from './Screens';
import { StatusBar } from './StatusBar';
import { forgetSession, openClient, saveSession, storedSession, type Session } from './session';

/** Sign-in, then the driver's screens under the status bar. */
export function App() {
  const [session, setSession] = useState<Session | null>(storedSession);
  const [client, setClient] = useState<TourlineClient | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (!session) return;
    let close: (() => Promise<void>) | undefined;
    let cancelled = false;
    openClient(session).then(
      (opened) => {
        close = opened.close;
        if (cancelled) void close();
        else setClient(opened.client);
      },
      (e: Error) => setError(e.message),
    );
    return () => {
      cancelled = true;
      setClient(null);
      void close?.();
    };
  }, [session]);

  if (!session)
    return (
      <Login
        onSignIn={(s) => {
          saveSession(s);
          setSession(s);
        }}
      />
    );
  if (error) return <p className="problem">Speicher nicht verfügbar: {error}</p>;
  if (!client) return <p className="loading">Lädt …</p>;
  return (
    <TourlineProvider client={client}>
      <StatusBar
        onSignOut={() => {
          forgetSession();
          setSession(null);
        }}
      />
      <Screens />
    </TourlineProvider>
  );
}
