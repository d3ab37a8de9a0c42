/**
 * Query parameters that may carry a credential, by lower-case name. The service reads credentials
 * only from headers, but a client that puts a token into the address must not find it in a log
 * line or a span: whatever it sent under such a name is replaced. Also the names OpenTelemetry
 * redacts by default (signed S3 and GCS addresses).
 */
export const credentialParams = [
  'access_token',
  'token',
  'id_token',
  'refresh_token',
  'key',
  'api_key',
  'apikey',
  'admin_key',
  'x-admin-api-key',
  'authorization',
  'cookie',
  'password',
  'secret',
  'client_secret',
  'code',
  'awsaccesskeyid',
  'signature',
  'sig',
  'x-goog-signature',
];
const credentialParamSet = new Set(credentialParams);

/** `url` (a path with its query) with the value of every credential parameter replaced by `REDACTED`. */
export function redactUrl(url: string): string {
  const mark = url.indexOf('?');
  if (mark === -1) return url;
  const query = url
    .slice(mark + 1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      const rawName = equals === -1 ? pair : pair.slice(0, equals);
      return credentialParamSet.has(decodeName(rawName).toLowerCase()) ? `${rawName}=REDACTED` : pair;
    });
  return `${url.slice(0, mark)}?${query.join('&')}`;
}

function decodeName(name: string) {
  try {
    return decodeURIComponent(name.replaceAll('+', ' '));
  } catch {
    return name;
  }
}
