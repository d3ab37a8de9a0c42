import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider from 'oidc-provider';

export const AUDIENCE = 'tourline';
const CLIENT_SECRET = 'driver-client-secret-0123456789';

export interface IssuerKey {
  kid: string;
  alg: 'RS256' | 'ES256';
  jwk: JWK;
}

let keyCount = 0;
export async function newIssuerKey(alg: IssuerKey['alg']): Promise<IssuerKey> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true });
  keyCount += 1;
  const kid = `${alg.toLowerCase()}-${keyCount}`;
  return { kid, alg, jwk: { ...(await exportJWK(privateKey)), kid, alg, use: 'sig' } };
}

/**
 * A real OpenID provider (`oidc-provider`) on a port of its own: client credentials, JWT access
 * tokens for the resource `tourline` with the driver's Personalnummer. One client per driver
 * (`driver-<personalnummer>`). It can be killed, frozen and brought back on the same address.
 */
export class RealIssuer {
  /** Keys published in the key set; tokens are signed with `signWith`. */
  private published: IssuerKey[] = [];
  private signWith!: IssuerKey;
  /** How far the issuer's clock runs ahead of ours; it sets `nbf` as Entra does. */
  clockAheadSeconds = 0;
  ttlSeconds = 600;
  private handler: http.RequestListener = () => undefined;
  private server?: http.Server;
  private port = 0;
  readonly hits = { discovery: 0, jwks: 0 };

  constructor(private readonly drivers: number[]) {}

  get url() {
    return `http://127.0.0.1:${this.port}`;
  }

  async start() {
    this.server = http.createServer((req, res) => {
      if (req.url?.startsWith('/.well-known/openid-configuration')) this.hits.discovery += 1;
      if (req.url?.startsWith('/jwks')) this.hits.jwks += 1;
      this.handler(req, res);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    if (this.published.length) this.publish(this.published, this.signWith);
    return this;
  }

  /** Publishes these keys (a new provider, as after a restart with a new configuration) and signs with one of them. */
  publish(keys: IssuerKey[], signWith: IssuerKey) {
    this.published = keys;
    this.signWith = signWith;
    if (!this.server) return;
    const provider = new Provider(this.url, {
      clients: this.drivers.map((n) => ({
        client_id: `driver-${n}`,
        client_secret: CLIENT_SECRET,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        token_endpoint_auth_method: 'client_secret_post',
        id_token_signed_response_alg: keys[0].alg,
      })),
      jwks: { keys: keys.map((k) => k.jwk) },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => 'urn:tourline',
          useGrantedResource: () => true,
          getResourceServerInfo: () => ({
            scope: 'tourline',
            audience: AUDIENCE,
            accessTokenFormat: 'jwt',
            accessTokenTTL: this.ttlSeconds,
            jwt: { sign: { alg: this.signWith.alg, kid: this.signWith.kid } },
          }),
        },
      },
      ttl: { ClientCredentials: () => this.ttlSeconds },
      extraTokenClaims: (_ctx, token) => ({ personalnummer: Number((token as { clientId: string }).clientId.replace('driver-', '')) }),
      formats: {
        customizers: {
          jwt: (_ctx, _token, jwt) => {
            const payload = jwt.payload as { iat: number; exp: number; nbf?: number };
            payload.iat += this.clockAheadSeconds;
            payload.exp += this.clockAheadSeconds;
            payload.nbf = payload.iat;
          },
        },
      },
    });
    this.handler = provider.callback();
  }

  /** An access token of the driver's client, from the token endpoint. */
  async token(personalnummer: number): Promise<string> {
    const response = await fetch(`${this.url}/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: `driver-${personalnummer}`, client_secret: CLIENT_SECRET }),
    });
    const body = (await response.json()) as { access_token?: string };
    if (!response.ok || !body.access_token) throw new Error(`token endpoint answered ${response.status}: ${JSON.stringify(body)}`);
    return body.access_token;
  }

  /** Down: the port refuses connections, and open ones are cut. */
  async kill() {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  /** Frozen: connections are accepted, requests are never answered (until `thaw`). */
  freeze() {
    const answering = this.handler;
    const held: http.ServerResponse[] = [];
    this.handler = (_req, res) => {
      held.push(res);
    };
    this.thaw = () => {
      this.handler = answering;
      for (const res of held) res.destroy();
    };
  }

  thaw = () => undefined as void;

  async restart() {
    await this.kill();
    await this.start();
  }
}
