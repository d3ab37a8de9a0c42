// Sign-in through the issuer's authorization code flow with PKCE (S256). The access token stays in
// this module's memory only; what survives the redirect to the issuer (verifier, state, the
// screen to return to) is kept in sessionStorage for that one round trip.

interface SignInSettings {
  clientId: string;
  scope: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
}

const PENDING = 'tourline-console-sign-in';
let settings: SignInSettings | undefined;
let session: { token: string; expiresAt: number; name: string } | undefined;
let renewal: ReturnType<typeof setTimeout> | undefined;

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
const randomText = (size: number) => base64url(crypto.getRandomValues(new Uint8Array(size)));
const redirectUri = () => `${location.origin}/console/`;

async function loadSettings(): Promise<SignInSettings> {
  if (settings) return settings;
  const response = await fetch('/console/config.json');
  if (!response.ok) throw new Error(`Anmeldedaten nicht erreichbar (${response.status})`);
  settings = (await response.json()) as SignInSettings;
  return settings;
}

/** To the issuer's sign-in; back on this screen afterwards. */
export async function signIn(returnTo = location.hash): Promise<never> {
  const { clientId, scope, authorizationEndpoint } = await loadSettings();
  const verifier = randomText(48);
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
  const state = randomText(16);
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state, returnTo }));
  const url = new URL(authorizationEndpoint, location.origin);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri(),
    scope,
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  location.assign(url.toString());
  return new Promise<never>(() => undefined);
}

/** The name the token names (read, not verified: the service verifies every call). */
function nameOf(token: string): string {
  try {
    const claims = JSON.parse(atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
    return String(claims.name ?? claims.preferred_username ?? claims.sub ?? '');
  } catch {
    return '';
  }
}

/** After the issuer sent the browser back with a code: exchanges it. False when this is no such return. */
export async function completeSignIn(): Promise<boolean> {
  const params = new URLSearchParams(location.search);
  const code = params.get('code');
  const pending = sessionStorage.getItem(PENDING);
  sessionStorage.removeItem(PENDING);
  if (!code || !pending) return false;
  const { verifier, state, returnTo } = JSON.parse(pending) as { verifier: string; state: string; returnTo: string };
  history.replaceState(null, '', `/console/${returnTo}`);
  if (params.get('state') !== state) throw new Error('Die Anmeldung passt nicht zu dieser Sitzung. Bitte erneut anmelden.');
  const { clientId, tokenEndpoint } = await loadSettings();
  const response = await fetch(new URL(tokenEndpoint, location.origin), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri(),
      client_id: clientId,
      code_verifier: verifier,
    }),
  });
  if (!response.ok) throw new Error(`Anmeldung abgelehnt (${response.status}). Bitte erneut anmelden.`);
  const answer = (await response.json()) as { access_token: string; expires_in?: number };
  const expiresAt = Date.now() + (answer.expires_in ?? 300) * 1000;
  session = { token: answer.access_token, expiresAt, name: nameOf(answer.access_token) };
  // Shortly before the token expires, a new sign-in (silent where the issuer still knows the person).
  clearTimeout(renewal);
  renewal = setTimeout(() => void signIn(), Math.max(0, expiresAt - Date.now() - 30_000));
  return true;
}

export const currentUser = () => session?.name;
export const accessToken = () => (session && session.expiresAt > Date.now() ? session.token : undefined);

export function signOut() {
  session = undefined;
  clearTimeout(renewal);
}
