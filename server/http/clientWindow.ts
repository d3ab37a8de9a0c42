import type { IncomingMessage } from 'node:http';
import {
  CLIENT_HEADER,
  CLIENT_QUERY_PARAMETER,
  PROTOCOL_VERSION,
  SDK_PRODUCT,
  compareReleases,
  parseClientName,
} from '../../shared/rules/clientVersion.js';
import { DomainError, validation } from '../errors.js';

/** The oldest sync protocol served; raised only in a release whose notes say so (docs/sync-protocol.md, "Versions"). */
export const MINIMUM_PROTOCOL = PROTOCOL_VERSION;
/** An app that names no release: 0.1.0 did not, nor do REST clients without the SDK. */
const UNNAMED_RELEASE = '0.1.0';

const tooOld = (detail: string, minimumVersion: string) =>
  new DomainError('client_too_old', detail, undefined, undefined, undefined, { minimumVersion });

/**
 * Refuses a driver app outside the window the service serves: 426 `client_too_old` with the
 * oldest release served. The name comes from the `Tourline-Client` header or, on a WebSocket
 * handshake, from the `client` query parameter.
 */
export function checkClient(req: IncomingMessage, minimumVersion: string) {
  const named = req.headers[CLIENT_HEADER] ?? queryClient(req.url);
  if (named === undefined) {
    if (compareReleases(UNNAMED_RELEASE, minimumVersion) < 0)
      throw tooOld(`An app that does not name its release is ${UNNAMED_RELEASE}; update to ${minimumVersion} or later`, minimumVersion);
    return;
  }
  const client = parseClientName(String(named));
  if (!client)
    throw validation('The Tourline-Client header is not "<product>/<release>; protocol=<n>"', [
      { path: `headers.${CLIENT_HEADER}`, message: 'not a client name' },
    ]);
  if (client.protocol < MINIMUM_PROTOCOL)
    throw tooOld(`Protocol ${client.protocol} is no longer served; update to ${minimumVersion} or later`, minimumVersion);
  if (client.product === SDK_PRODUCT && compareReleases(client.version, minimumVersion) < 0)
    throw tooOld(
      `${SDK_PRODUCT} ${client.version} is older than this service serves; update to ${minimumVersion} or later`,
      minimumVersion,
    );
}

function queryClient(url: string | undefined): string | undefined {
  const query = url?.split('?')[1];
  if (!query) return undefined;
  for (const pair of query.split('&')) {
    const [key, value = ''] = pair.split('=');
    if (key !== CLIENT_QUERY_PARAMETER) continue;
    try {
      return decodeURIComponent(value.replace(/\+/g, ' '));
    } catch {
      return value;
    }
  }
  return undefined;
}
