import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { attachments } from '../../server/db/schema.js';
import { DomainError } from '../../server/errors.js';
import { createS3DocumentStore, type S3DocumentStoreOptions } from '../../server/integrations/documents/s3.js';
import { createDocumentStore, type DocumentStore } from '../../server/integrations/documents/store.js';
import { withRequestId } from '../../server/observability/requestContext.js';
import { databaseKinds } from '../helpers/databases.js';
import { documentStoreContract } from '../helpers/documentStoreContract.js';
import { newTour } from '../helpers/factories.js';
import { useTestServer } from '../helpers/server.js';
import { completionForm } from '../helpers/uploads.js';

const BUCKET = 'tourline-documents';
// s3rver's own credentials (it does not check the secret).
const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

// An S3-protocol server of our own, as msw stands in for the HTTP store: a system we do not own.
const directory = mkdtempSync(path.join(os.tmpdir(), 'tourline-s3-'));
const s3rver = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: BUCKET, configs: [] }] });
let endpoint = '';
/** The X-Request-Id of every request s3rver received, in order. */
const requestIds: (string | undefined)[] = [];
beforeAll(async () => {
  const { port } = (await s3rver.run()) as AddressInfo;
  endpoint = `http://127.0.0.1:${port}`;
  (s3rver as unknown as { httpServer: http.Server }).httpServer.on('request', (req: http.IncomingMessage) => {
    requestIds.push(req.headers['x-request-id'] as string | undefined);
  });
});
afterAll(async () => {
  await s3rver.close();
  rmSync(directory, { recursive: true, force: true });
});

const options = (extra: Partial<S3DocumentStoreOptions> = {}): S3DocumentStoreOptions => ({
  bucket: BUCKET,
  region: 'eu-central-1',
  endpoint,
  forcePathStyle: true,
  credentials,
  timeoutMs: 5_000,
  ...extra,
});

async function codeOf(promise: Promise<unknown>) {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DomainError);
  return (error as DomainError).code;
}

describe('S3 document store', () => {
  let store: DocumentStore;
  beforeAll(() => {
    store = createS3DocumentStore(options());
  });
  afterAll(() => store.close?.());
  documentStoreContract('S3', () => store);

  it('addresses content by its sha256, as the local store does', async () => {
    const bytes = Buffer.from('Lieferschein 4711');
    expect(await store.put(bytes, 'text/plain')).toBe(`~sha256/${createHash('sha256').update(bytes).digest('hex')}`);
  });

  it('sends the request id with its calls, and none outside a request', async () => {
    const reference = await withRequestId('upload-s3', () => store.put(Buffer.from(`with id ${Math.random()}`), 'text/plain'));
    expect(requestIds.at(-1)).toBe('upload-s3');
    await withRequestId('read-s3', () => store.get(reference));
    expect(requestIds.at(-1)).toBe('read-s3');
    await store.get(reference);
    expect(requestIds.at(-1)).toBeUndefined();
  });

  it.each([
    ['a bucket that does not exist', () => options({ bucket: 'no-such-bucket' })],
    ['an endpoint nobody listens on', () => options({ endpoint: 'http://127.0.0.1:9' })],
  ])('answers upstream_unavailable for %s', async (_name, settings) => {
    const broken = createS3DocumentStore(settings());
    try {
      expect(await codeOf(broken.put(Buffer.from('x'), 'text/plain'))).toBe('upstream_unavailable');
      expect(await codeOf(broken.get(`~sha256/${'b'.repeat(64)}`))).toBe('upstream_unavailable');
    } finally {
      await broken.close?.();
    }
  });

  it('is chosen by DOCUMENT_STORE=s3 with S3_BUCKET, S3_ENDPOINT, S3_FORCE_PATH_STYLE and the AWS keys', async () => {
    const config = loadConfig({
      DOCUMENT_STORE: 's3',
      S3_BUCKET: BUCKET,
      S3_REGION: 'eu-central-1',
      S3_ENDPOINT: endpoint,
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    });
    const configured = createDocumentStore(config.documents, undefined);
    try {
      const reference = await configured.put(Buffer.from('via config'), 'text/plain');
      expect((await store.get(reference)).bytes.toString()).toBe('via config');
    } finally {
      await configured.close?.();
    }
  });

  it.each([
    [{ DOCUMENT_STORE: 's3' }, 'S3_BUCKET'],
    [{ DOCUMENT_STORE: 's3', S3_BUCKET: BUCKET, AWS_ACCESS_KEY_ID: 'only-the-id' }, 'AWS_SECRET_ACCESS_KEY'],
    [{ DOCUMENT_STORE: 's3', S3_BUCKET: BUCKET, S3_ENDPOINT: 'not a url' }, 'S3_ENDPOINT'],
    [{ DOCUMENT_STORE: 's3', S3_BUCKET: BUCKET, S3_FORCE_PATH_STYLE: 'yes' }, 'S3_FORCE_PATH_STYLE'],
  ])('refuses the settings %j naming %s', (env, variable) => {
    expect(() => loadConfig(env)).toThrow(variable);
  });
});

describe.each(databaseKinds)('S3 document store behind the service on %s', (kind) => {
  const api = useTestServer(kind, {
    DOCUMENT_STORE: 's3',
    S3_BUCKET: BUCKET,
    S3_REGION: 'eu-central-1',
    S3_FORCE_PATH_STYLE: 'true',
    AWS_ACCESS_KEY_ID: credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    // The endpoint is known only once s3rver listens; useTestServer starts after the file's beforeAll.
    get S3_ENDPOINT() {
      return endpoint;
    },
  });

  it('stores the delivery report in the bucket and renders its preview', async () => {
    const driver = 65_001 + databaseKinds.indexOf(kind);
    const token = await api.token(driver);
    const {
      deliveries: [{ delivery }],
    } = await newTour(api.db, { accountId: driver });
    expect((await api.post(`/deliveries/${delivery.id}/complete`, await completionForm(), { token })).status).toBe(200);
    const [report] = await api.db
      .select()
      .from(attachments)
      .where(eq(attachments.deliveryId, delivery.id))
      .then((rows) => rows.filter((r) => r.kind === 'delivery_report'));
    const stored = createS3DocumentStore(options());
    try {
      expect((await stored.get(report.reference)).bytes.subarray(0, 5).toString()).toBe('%PDF-');
    } finally {
      await stored.close?.();
    }
    const preview = await api.get(`/attachments/${report.id}?w=100&h=80&ext=png`, { token });
    expect(preview.status).toBe(200);
    expect(preview.headers.get('content-type')).toBe('image/png');
  });
});
