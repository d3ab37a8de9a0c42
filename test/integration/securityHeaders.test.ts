import { describe, expect, it } from 'vitest';
import { databaseKinds } from '../helpers/databases.js';
import { useTestServer } from '../helpers/server.js';

const apiPolicy = "default-src 'none';frame-ancestors 'none';base-uri 'none';form-action 'none'";

describe.each(databaseKinds)('security headers on %s', (kind) => {
  const api = useTestServer(kind);

  it.each([
    ['a JSON answer', 'GET', '/health'],
    ['a problem', 'GET', '/nowhere'],
    ['a refusal', 'GET', '/me/tours'],
    ['a push answered before express', 'POST', '/sync/push'],
    ['the OpenAPI document', 'GET', '/openapi.json'],
  ])('%s carries nosniff, no referrer and a policy that runs nothing', async (_what, method, path) => {
    const response = await api.request(method, path);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    expect(response.headers.get('content-security-policy')).toBe(apiPolicy);
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    expect(response.headers.has('strict-transport-security')).toBe(false);
  });

  it('gives the API reference a policy that runs only its own scripts, and serves its start script', async () => {
    const page = await api.get('/docs');
    const policy = page.headers.get('content-security-policy')!;
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toMatch(/script-src[^;]*unsafe-inline/);
    expect(page.text).not.toMatch(/<script>/);
    const init = await api.get('/docs/init.js');
    expect(init.status).toBe(200);
    expect(init.headers.get('content-type')).toMatch(/javascript/);
    expect(init.text).toContain("url: '/openapi.json'");
    const asset = await api.get('/docs/assets/swagger-ui-bundle.js');
    expect(asset.headers.get('x-content-type-options')).toBe('nosniff');
  });
});

describe('HSTS', () => {
  const api = useTestServer('pglite', { HSTS_MAX_AGE_SECONDS: '31536000' });

  it('is sent with the configured age when set', async () => {
    expect((await api.get('/health')).headers.get('strict-transport-security')).toBe('max-age=31536000; includeSubDomains');
  });
});
