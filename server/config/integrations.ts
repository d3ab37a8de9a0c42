import { z } from 'zod';
import { flag, optionalText } from './values.js';

// The systems the service talks to: the ERP and the document store.

export const erp = z.object({
  // No default here: outside production they default to demo and local, in production they must be chosen.
  ERP_MODE: z.enum(['demo', 'http']).optional().meta({
    description: '`demo`: generated tours from inside the process (refused in production). `http`: the ERP at `ERP_BASE_URL`.',
    derived: '`demo` outside production; required in production',
  }),
  ERP_BASE_URL: z.url().optional().describe('ERP address; required with `ERP_MODE=http`.'),
  ERP_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000).describe('Timeout of one ERP call.'),
  ERP_RETRIES: z.coerce.number().int().min(0).max(10).default(2).describe('Retries of a failed ERP call.'),
  ERP_TOKEN: optionalText.describe(
    'Static bearer token sent as `Authorization: Bearer …` on every ERP call; excludes basic and OAuth authentication.',
  ),
  // RFC 7617: a user-id with a colon cannot be told from the password.
  ERP_USERNAME: optionalText
    .refine((v) => v === undefined || !v.includes(':'), 'must not contain a colon (basic authentication)')
    .meta({
      description: 'User for basic authentication to the ERP (`Authorization: Basic …` on every call), with `ERP_PASSWORD`.',
      range: 'text without a colon',
    }),
  ERP_PASSWORD: z.string().min(1).optional().describe('Password for basic authentication to the ERP, with `ERP_USERNAME`.'),
  ERP_OAUTH_TOKEN_URL: z
    .url()
    .optional()
    .describe(
      'OAuth 2 token endpoint: every ERP call carries a bearer token got there by client credentials, renewed shortly before it expires and once when the ERP answers 401; with `ERP_OAUTH_CLIENT_ID` and `ERP_OAUTH_CLIENT_SECRET`.',
    ),
  ERP_OAUTH_CLIENT_ID: optionalText.describe('OAuth 2 client id for the ERP (sent to the token endpoint by basic authentication).'),
  ERP_OAUTH_CLIENT_SECRET: z.string().min(1).optional().describe('OAuth 2 client secret for the ERP.'),
  ERP_OAUTH_SCOPE: optionalText.describe('`scope` asked for at the token endpoint; none without it.'),
  ERP_IMPORT_ENABLED: flag.default(true).describe('Scheduled import and startup catch-up import.'),
  ERP_IMPORT_CRON: z
    .string()
    .default('0 5 * * *')
    .meta({ description: 'Schedule of the daily import, Berlin time.', range: 'cron syntax' }),
  ERP_IMPORT_OFFSET_DAYS: z.coerce.number().int().min(-7).max(30).default(1).describe('Import target date = today + this many days.'),
  ERP_IMPORT_RETRY_FIRST_MS: z.coerce
    .number()
    .int()
    .min(10)
    .max(30_000)
    .default(15_000)
    .describe('Wait before a failed scheduled or start-up import is tried again; each further try waits twice as long.'),
  ERP_IMPORT_RETRY_MAX_MS: z.coerce
    .number()
    .int()
    .min(10)
    .max(300_000)
    .default(300_000)
    .describe('Longest wait between two tries of a failed import; they go on until one succeeds or the next scheduled run takes over.'),
  ERP_PUSH_CANCELLATIONS: flag
    .default(false)
    .describe("Send drivers' cancellations to the ERP (`POST /documents/{belegartId}/{belegnummer}/cancellation`), like completions."),
  ERP_PUSH_POLL_MS: z.coerce
    .number()
    .int()
    .min(10)
    .default(15_000)
    .describe('How often the write-back job looks for completions whose ERP push or delivery report is still open.'),
  ERP_PUSH_RETRY_BASE_MS: z.coerce
    .number()
    .int()
    .min(10)
    .default(60_000)
    .describe('Wait before the first retry of a failed ERP push; doubles with every further attempt.'),
  ERP_PUSH_RETRY_MAX_MS: z.coerce
    .number()
    .int()
    .min(10)
    .default(6 * 3600 * 1000)
    .describe('Longest wait between two ERP push retries.'),
});

export const documents = z.object({
  DOCUMENT_STORE: z.enum(['local', 'http', 's3']).optional().meta({
    description:
      '`local`: files under `DATA_DIR/documents`, for one instance only (production warns at start). `http`: the document store at `DOCUMENT_STORE_URL`. `s3`: the S3 bucket `S3_BUCKET`.',
    derived: '`local` outside production; required in production',
  }),
  DOCUMENT_STORE_URL: z.url().optional().describe('Document store address; required with `DOCUMENT_STORE=http`.'),
  DOCUMENT_STORE_TOKEN: optionalText.describe('Bearer token for the HTTP document store.'),
  S3_BUCKET: optionalText.describe('Bucket of the S3 document store; required with `DOCUMENT_STORE=s3`.'),
  S3_REGION: z.string().min(1).default('us-east-1').describe('Region of the bucket.'),
  S3_ENDPOINT: z.url().optional().describe("Address of an S3-compatible service (MinIO, Ceph, GCS's S3 API); AWS S3 without it."),
  S3_FORCE_PATH_STYLE: flag.default(false).describe('Address the bucket in the path (`{endpoint}/{bucket}/{key}`), as MinIO needs.'),
  AWS_ACCESS_KEY_ID: optionalText.describe(
    'Key of the S3 store, with `AWS_SECRET_ACCESS_KEY`; without both the AWS default chain is used (profile, instance or task role).',
  ),
  AWS_SECRET_ACCESS_KEY: optionalText.describe('Secret of `AWS_ACCESS_KEY_ID`.'),
});
