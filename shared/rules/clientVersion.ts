/**
 * How a client names itself to the service: the SDK's release and the sync protocol it speaks,
 * on every request as the header `Tourline-Client: @tourline/client/0.2.0; protocol=1` and on
 * the WebSocket (whose browsers cannot set headers) as the query parameter `client` of the
 * same value. The service serves a window of them (docs/sync-protocol.md, "Versions").
 */
export const PROTOCOL_VERSION = 1;
export const CLIENT_HEADER = 'tourline-client';
export const CLIENT_QUERY_PARAMETER = 'client';
export const SDK_PRODUCT = '@tourline/client';

export interface ClientName {
  product: string;
  version: string;
  protocol: number;
}

export const clientName = (version: string, product = SDK_PRODUCT, protocol = PROTOCOL_VERSION) =>
  `${product}/${version}; protocol=${protocol}`;

const RELEASE = /^(\d{1,6})\.(\d{1,6})\.(\d{1,6})(?:[-+][0-9A-Za-z.+-]*)?$/;

/** `product/version; protocol=N`; undefined when it is not that form. */
export function parseClientName(value: string): ClientName | undefined {
  const [name, ...parameters] = value.split(';').map((part) => part.trim());
  const slash = name.lastIndexOf('/');
  if (slash <= 0) return undefined;
  const version = name.slice(slash + 1);
  if (!RELEASE.test(version)) return undefined;
  const protocol = parameters.map((p) => /^protocol=(\d{1,4})$/.exec(p)?.[1]).find((p) => p !== undefined);
  if (protocol === undefined) return undefined;
  return { product: name.slice(0, slash), version, protocol: Number(protocol) };
}

/** Negative, 0 or positive as release `a` is older than, the same as or newer than `b` (a pre-release counts as its release). */
export function compareReleases(a: string, b: string): number {
  const parts = (v: string) => (RELEASE.exec(v) ?? []).slice(1, 4).map(Number);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
}

export const isRelease = (value: string) => RELEASE.test(value);
