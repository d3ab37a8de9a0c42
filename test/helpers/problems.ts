import { expect } from 'vitest';
import { errorCatalogue } from '../../server/errors.js';
import { route } from '../../server/http/route.js';
import type { ApiResponse } from './server.js';

/** An answer is the problem+json of `code`: its status, the catalogue's title, a detail and the request's id. */
export function expectProblem(response: ApiResponse, status: number, code: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(response.body).toMatchObject({ status, code, title: errorCatalogue[code as keyof typeof errorCatalogue].title });
  expect(response.body.type).toEqual(expect.any(String));
  expect(response.body.detail).toEqual(expect.any(String));
  expect(response.headers.get('x-request-id')).toBeTruthy();
}

/** `GET /test/crash`, a route whose handler throws an unexpected error with `message`: a bug, as the service sees it. */
export const crashingRoute = (message: string) =>
  route({
    method: 'get',
    path: '/test/crash',
    auth: 'none',
    tags: ['Test'],
    summary: 'throws an unexpected error',
    handler: async () => {
      throw new Error(message);
    },
  });
