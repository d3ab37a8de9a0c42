import http from 'node:http';

export interface Reply { status: number; text: string }

const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

/** A plain keep-alive HTTP request: the load generator should cost less than fetch. */
export function request(method: string, url: string, options: { token?: string; admin?: string; body?: unknown } = {}): Promise<Reply> {
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.admin) headers['x-admin-api-key'] = options.admin;
  if (payload !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

export async function requestJson<T = any>(method: string, url: string, options: Parameters<typeof request>[2] = {}): Promise<T> {
  const reply = await request(method, url, options);
  if (reply.status >= 300) throw new Error(`${method} ${url}: ${reply.status} ${reply.text.slice(0, 300)}`);
  return (reply.text ? JSON.parse(reply.text) : undefined) as T;
}
