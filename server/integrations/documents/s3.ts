import { createHash } from 'node:crypto';
import { notFound, upstream } from '../../errors.js';
import { requestIdHeader } from '../../observability/requestContext.js';
import type { DocumentStore } from './store.js';

export interface S3DocumentStoreOptions {
  bucket: string;
  region: string;
  /** An S3-compatible service (MinIO, Ceph, GCS's XML API); AWS itself without it. */
  endpoint?: string;
  forcePathStyle: boolean;
  /** Without them the AWS default chain is asked (environment, profile, instance or task role). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  timeoutMs?: number;
}

const REFERENCE = /^~sha256\/([0-9a-f]{64})$/;
const objectKey = (hex: string) => `sha256/${hex}`;

/**
 * Documents as objects of one bucket, addressed by the sha256 of their bytes as in the local
 * store: storing the same bytes twice writes the same object, a failed transaction after a put
 * leaves at most an unreferenced object, and references stay valid when documents move between
 * the local and the S3 store.
 */
export function createS3DocumentStore(options: S3DocumentStoreOptions): DocumentStore {
  // Loaded when first used: the SDK takes a while to load, and most instances never need it.
  let loaded: Promise<{ sdk: typeof import('@aws-sdk/client-s3'); client: import('@aws-sdk/client-s3').S3Client }> | undefined;
  const s3 = () =>
    (loaded ??= import('@aws-sdk/client-s3').then((sdk) => {
      const client = new sdk.S3Client({
        region: options.region,
        endpoint: options.endpoint,
        forcePathStyle: options.forcePathStyle,
        credentials: options.credentials,
        requestHandler: { requestTimeout: options.timeoutMs ?? 30_000, connectionTimeout: 5_000 },
      });
      // X-Request-Id on every call, as the ERP and the HTTP store get it; added before signing, so it is signed too.
      client.middlewareStack.add(
        (next) => (args) => {
          const request = args.request as { headers?: Record<string, string> };
          if (request.headers) Object.assign(request.headers, requestIdHeader());
          return next(args);
        },
        { step: 'build', name: 'requestIdHeader' },
      );
      return { sdk, client };
    }));

  const failed = (error: unknown, what: string) => {
    const service = error as { name?: string; $metadata?: { httpStatusCode?: number } };
    // Without a status the store never answered (refused, timed out): its message says why.
    const status = service.$metadata?.httpStatusCode;
    const detail = status ? ` (${service.name}, ${status})` : `: ${(error as Error).message || service.name}`;
    return upstream(`Document store ${what} failed${detail}`);
  };

  return {
    async put(bytes, contentType, name) {
      const hex = createHash('sha256').update(bytes).digest('hex');
      const { sdk, client } = await s3();
      try {
        await client.send(
          new sdk.PutObjectCommand({
            Bucket: options.bucket,
            Key: objectKey(hex),
            Body: bytes,
            ContentType: contentType,
            // Object metadata travels as HTTP headers, which take only ASCII.
            ...(name ? { Metadata: { name: encodeURIComponent(name) } } : {}),
          }),
        );
      } catch (error) {
        throw failed(error, 'upload');
      }
      return `~sha256/${hex}`;
    },
    async get(reference) {
      const match = REFERENCE.exec(reference);
      if (!match) throw notFound('Document');
      const { sdk, client } = await s3();
      try {
        const object = await client.send(new sdk.GetObjectCommand({ Bucket: options.bucket, Key: objectKey(match[1]) }));
        return {
          bytes: Buffer.from(await object.Body!.transformToByteArray()),
          contentType: object.ContentType ?? 'application/octet-stream',
        };
      } catch (error) {
        if (error instanceof sdk.NoSuchKey) throw notFound('Document');
        throw failed(error, 'download');
      }
    },
    async close() {
      if (loaded) (await loaded).client.destroy();
    },
  };
}
