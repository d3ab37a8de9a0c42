import { clientName } from '../shared/rules/clientVersion.js';

/** This release of the SDK; equal to `version` in client-sdk/package.json (a test holds them together). */
export const SDK_VERSION = '0.2.0';

/** What the SDK sends as `Tourline-Client` with every request and as `client` when it opens the socket. */
export const SDK_CLIENT_NAME = clientName(SDK_VERSION);
