import { useState } from 'react';
import { defaultServiceUrl, type Session } from './session';

/** Sign-in with a token (development: `npm run token -- 1001`) and the service's address. */
export function Login({ onSignIn }: { onSignIn: (session: Session) => void }) {
  const [serviceUrl, setServiceUrl] = useState(defaultServiceUrl);
  const [token, setToken] = useState('');
  return (
    <form
      className="screen login"
      onSubmit={(e) => {
        e.preventDefault();
        if (token.trim()) onSignIn({ serviceUrl: serviceUrl.trim(), token: token.trim() });
      }}
    >
      <h1>Tourline Fahrer</h1>
      <label>
        Server
        <input name="serviceUrl" type="url" value={serviceUrl} onChange={(e) => setServiceUrl(e.target.value)} required />
      </label>
      <label>
        Anmelde-Token
        <textarea name="token" rows={4} value={token} onChange={(e) => setToken(e.target.value)} required />
      </label>
      <button type="submit" className="primary">
        Anmelden
      </button>
    </form>
  );
}
