import { accessToken, signIn } from './auth.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A call of the admin API with the signed-in person's token; without a valid one, to the sign-in. */
export async function call(path: string, init: RequestInit = {}): Promise<Response> {
  const token = accessToken();
  if (!token) return signIn();
  const response = await fetch(path, {
    ...init,
    headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` },
  });
  if (response.status === 401) return signIn();
  if (!response.ok) {
    const problem = (await response.json().catch(() => ({}))) as { title?: string; detail?: string };
    throw new ApiError(response.status, problem.detail ?? problem.title ?? `Fehler ${response.status}`);
  }
  return response;
}

export const getJson = async <T>(path: string): Promise<T> => (await call(path)).json() as Promise<T>;

export const postJson = (path: string, body?: unknown) =>
  call(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

/** Bytes (an image, a report) as an object URL for an element of this page. */
export async function objectUrl(path: string): Promise<string> {
  return URL.createObjectURL(await (await call(path)).blob());
}
