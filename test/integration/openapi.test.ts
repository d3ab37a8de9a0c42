import { randomUUID } from 'node:crypto';
import { Validator } from '@seriousme/openapi-schema-validator';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { QueryBoolean } from '../../shared/schemas/common.js';
import { buildOpenApi } from '../../server/http/openapi.js';
import { route, type AnyRoute } from '../../server/http/route.js';
import { apiRoutes } from '../../server/http/routes/index.js';
import { databaseKinds } from '../helpers/databases.js';
import { newTour } from '../helpers/factories.js';
import { useTestServer } from '../helpers/server.js';

type Operation = {
  operationId: string;
  security: Record<string, string[]>[];
  parameters: { name: string; in: string; required: boolean; schema: Record<string, unknown> }[];
  requestBody?: { content: Record<string, { schema: Record<string, unknown> }> };
  responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }>;
};
type Document = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Record<string, unknown>>; securitySchemes: Record<string, unknown> };
};

const placeholders = (path: string) => [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
const referencedSchemas = (document: unknown) =>
  [...JSON.stringify(document).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]);

describe.each(databaseKinds)('OpenAPI document and reference on %s', (kind) => {
  const api = useTestServer(kind);
  const document = async () => {
    const response = await api.get<Document>('/openapi.json');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('application/json');
    return response.body;
  };

  /** Keys of `value` that the response schema (with its references) does not declare, as paths. */
  function undeclaredKeys(doc: Document, value: unknown, schema: Record<string, any>, path = '$'): string[] {
    if (schema.$ref) return undeclaredKeys(doc, value, doc.components.schemas[String(schema.$ref).split('/').pop()!], path);
    for (const variant of schema.anyOf ?? schema.oneOf ?? []) {
      const misses = undeclaredKeys(doc, value, variant, path);
      if (value !== null && (variant.type === 'object' || variant.$ref || variant.type === 'array')) return misses;
    }
    if (Array.isArray(value))
      return value.flatMap((item, i) => (schema.items ? undeclaredKeys(doc, item, schema.items, `${path}[${i}]`) : []));
    if (value === null || typeof value !== 'object' || !schema.properties) return [];
    return Object.entries(value).flatMap(([key, item]) =>
      key in schema.properties
        ? undeclaredKeys(doc, item, schema.properties[key], `${path}.${key}`)
        : schema.additionalProperties === false
          ? [`${path}.${key}`]
          : [],
    );
  }

  it('declares every field that the answers really carry', async () => {
    const doc = await document();
    const token = await api.token(9901);
    const {
      deliveries: [{ delivery, items }],
    } = await newTour(api.db, { accountId: 9901, positions: [{ scannable: true, quantity: 2, scannedQuantity: 0, state: 'InProgress' }] });
    const schemaOf = (path: string, method: string) => doc.paths[path][method].responses['200'].content!['application/json'].schema;
    const scans = await api.post(
      '/scans',
      {
        scans: [
          { clientScanId: randomUUID(), deliveryItemId: items[0].id, action: 'scan', occurredAt: new Date().toISOString() },
          { clientScanId: randomUUID(), deliveryItemId: randomUUID(), action: 'scan', occurredAt: new Date().toISOString() },
        ],
      },
      { token },
    );
    const push = await api.post(
      '/sync/push',
      {
        clientId: 'c',
        events: [
          { eventId: randomUUID(), occurredAt: new Date().toISOString(), type: 'scan', deliveryItemId: items[0].id, action: 'scan' },
          { eventId: randomUUID(), occurredAt: new Date().toISOString(), type: 'delivery.resume', deliveryId: delivery.id },
        ],
      },
      { token },
    );
    const belege = await api.get(`/admin/belege/${delivery.belegnummer}`, { admin: true });
    const tour = await api.get(`/tours/${delivery.tourId}`, { token });
    expect([scans.status, push.status, belege.status, tour.status]).toEqual([200, 200, 200, 200]);
    expect(push.body.results[1]).toMatchObject({ status: 'rejected', reason: expect.any(String) });
    expect(undeclaredKeys(doc, scans.body, schemaOf('/scans', 'post'))).toEqual([]);
    expect(undeclaredKeys(doc, push.body, schemaOf('/sync/push', 'post'))).toEqual([]);
    expect(undeclaredKeys(doc, belege.body, schemaOf('/admin/belege/{belegnummer}', 'get'))).toEqual([]);
    expect(undeclaredKeys(doc, tour.body, schemaOf('/tours/{tour_id}', 'get'))).toEqual([]);
  });

  it('is a valid OpenAPI 3.1.0 document', async () => {
    const doc = await document();
    expect(doc.openapi).toBe('3.1.0');
    const result = await new Validator().validate(doc as unknown as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('documents every route of the route list with its authentication', async () => {
    const doc = await document();
    expect(apiRoutes.length).toBeGreaterThan(0);
    for (const r of apiRoutes) {
      const operation = doc.paths[r.path]?.[r.method];
      expect(operation, `${r.method.toUpperCase()} ${r.path}`).toBeDefined();
      const expected = {
        bearer: [{ bearer_auth: [] }],
        admin: [{ admin_api_key: [] }, { bearer_auth: [] }],
        sync: [{ bearer_auth: [] }, { admin_api_key: [] }],
        none: [],
      }[r.auth as string];
      expect(operation.security, `${r.method.toUpperCase()} ${r.path}`).toEqual(expected);
      if (r.auth !== 'none') {
        expect(operation.responses['401']?.content?.['application/problem+json'], `${r.method.toUpperCase()} ${r.path}`).toBeDefined();
      }
      expect(operation.responses['502'] !== undefined, `${r.method.toUpperCase()} ${r.path}`).toBe((r.errors ?? []).includes(502));
      expect(JSON.stringify(operation.responses['503'] ?? null), `${r.method.toUpperCase()} ${r.path}`).toContain('Retry-After');
      const declared = operation.parameters
        .filter((p) => p.in === 'path')
        .map((p) => p.name)
        .sort();
      expect(declared, `${r.method.toUpperCase()} ${r.path}`).toEqual(placeholders(r.path).sort());
      if (r.body) expect(operation.requestBody?.content['application/json'], `${r.method.toUpperCase()} ${r.path}`).toBeDefined();
      expect(operation.responses[r.webSocket ? '101' : String(r.status ?? 200)], `${r.method.toUpperCase()} ${r.path}`).toBeDefined();
    }
  });

  it('documents the WebSocket feed with the messages each side sends', async () => {
    const { paths, components } = await document();
    const feed = paths['/sync/ws'].get as Omit<Operation, 'responses'> & {
      responses: Record<string, { content?: Record<string, { schema: unknown }>; 'x-client-messages'?: unknown }>;
    };
    expect(feed.security).toEqual([{ bearer_auth: [] }]);
    expect(feed.responses['101'].content!['application/json'].schema).toEqual({ $ref: '#/components/schemas/WsServerMessage' });
    expect(feed.responses['101']['x-client-messages']).toEqual({ $ref: '#/components/schemas/WsClientMessage' });
    expect(Object.keys(feed.responses).sort()).toEqual(['101', '400', '401', '403', '503']);
    expect(JSON.stringify(components.schemas.WsServerMessage)).toContain('pong');
    expect(JSON.stringify(components.schemas.WsClientMessage)).toContain('resume');
  });

  it('declares the security schemes bearer_auth and admin_api_key', async () => {
    const { components } = await document();
    expect(components.securitySchemes).toEqual({
      bearer_auth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      admin_api_key: { type: 'apiKey', in: 'header', name: 'X-Admin-Api-Key' },
    });
  });

  it('resolves every schema reference and gives every operation a unique id', async () => {
    const doc = await document();
    expect(referencedSchemas(doc).filter((name) => !doc.components.schemas[name])).toEqual([]);
    const ids = Object.values(doc.paths).flatMap((operations) => Object.values(operations).map((o) => o.operationId));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('documents the problem+json error body with its machine-readable code', async () => {
    const { components } = await document();
    expect(components.schemas.Problem).toMatchObject({
      type: 'object',
      required: expect.arrayContaining(['type', 'title', 'status', 'detail', 'code']),
      properties: { code: { enum: expect.arrayContaining(['validation', 'unauthorized', 'not_found', 'internal']) } },
    });
  });

  it('documents the tour read as conditional: ETag, If-None-Match and 304', async () => {
    const { paths } = await document();
    const read = paths['/tours/{tour_id}'].get;
    expect(read.responses['200']).toHaveProperty('headers.ETag');
    expect(read.responses).toHaveProperty('304');
    expect(read.parameters).toContainEqual(expect.objectContaining({ name: 'If-None-Match', in: 'header', required: false }));
    expect(paths['/me/tours'].get.responses).not.toHaveProperty('304');
  });

  it('documents parameters that arrive as text as what they mean: integers and booleans', async () => {
    const { paths } = await document();
    const parameter = (path: string, name: string) => paths[path].get.parameters.find((p: { name: string }) => p.name === name)?.schema;
    expect(parameter('/accounts/{personalnummer}', 'personalnummer')).toEqual({ type: 'integer', format: 'int64' });
    expect(parameter('/attachments/{id}', 'w')).toEqual({ type: 'integer', format: 'int32', minimum: 0, maximum: 2_147_483_647 });
    expect(parameter('/attachments/{id}', 'q')).toEqual({ type: 'integer', format: 'int32', minimum: 0, maximum: 100 });
    expect(parameter('/me/cars', 'includeInactive')).toEqual({ type: 'boolean' });
  });

  it('documents ERP numbers as int64, as the specification types them', async () => {
    const {
      components: { schemas },
    } = await document();
    const property = (schema: string, name: string) => (schemas[schema].properties as Record<string, Record<string, unknown>>)[name];
    expect(property('Account', 'personalnummer')).toMatchObject({ type: 'integer', format: 'int64' });
    expect(property('Car', 'accountId')).toMatchObject({ type: 'integer', format: 'int64' });
    expect(property('Customer', 'erpCustomerId')).toMatchObject({ type: 'integer', format: 'int64' });
  });

  it('serves the interactive reference at /docs with its assets', async () => {
    const page = await api.get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(assets).toContain('/docs/init.js');
    expect((await api.get('/docs/init.js')).text).toContain('/openapi.json');
    expect(assets.length).toBeGreaterThanOrEqual(3);
    for (const asset of assets) {
      const response = await api.get(asset);
      expect(response.status, asset).toBe(200);
      if (asset !== '/docs/init.js') expect(response.text.length, asset).toBeGreaterThan(1000);
      expect(response.headers.get('content-type'), asset).toMatch(asset.endsWith('.css') ? /text\/css/ : /javascript/);
    }
  });
});

describe('buildOpenApi', () => {
  const build = (routes: AnyRoute[]) => buildOpenApi(routes, { version: 'test' }) as unknown as Document;

  it('documents query parameters of optional, defaulted and transformed schemas, also behind a reference', () => {
    const Query = z
      .object({
        includeInactive: QueryBoolean,
        limit: z.coerce.number().int().min(1).default(50).describe('page size'),
        day: z
          .string()
          .regex(/^\d{2}-\d{2}-\d{4}$/)
          .optional(),
        since: z.string().transform((v) => v.trim()),
      })
      .meta({ id: 'ListQuery' });
    const doc = build([
      route({
        method: 'get',
        path: '/things',
        auth: 'bearer',
        tags: ['T'],
        summary: 's',
        query: Query,
        response: z.object({}),
        handler: async () => ({}),
      }),
    ]);
    const parameters = doc.paths['/things'].get.parameters;
    expect(parameters).toEqual([
      {
        name: 'includeInactive',
        in: 'query',
        required: false,
        description: 'true or 1; false or 0, in any case (default false)',
        schema: { type: 'boolean' },
      },
      {
        name: 'limit',
        in: 'query',
        required: false,
        description: 'page size',
        schema: expect.objectContaining({ type: 'integer', default: 50 }),
      },
      { name: 'day', in: 'query', required: false, schema: expect.objectContaining({ type: 'string', pattern: expect.any(String) }) },
      { name: 'since', in: 'query', required: true, schema: { type: 'string' } },
    ]);
  });

  it('declares a path placeholder even without a params schema', () => {
    const doc = build([
      route({
        method: 'delete',
        path: '/things/{thing_id}',
        auth: 'admin',
        tags: ['T'],
        summary: 's',
        status: 204,
        handler: async () => undefined,
      }),
    ]);
    expect(doc.paths['/things/{thing_id}'].delete.parameters).toEqual([
      { name: 'thing_id', in: 'path', required: true, schema: { type: 'string' } },
    ]);
  });

  it('keeps the response shape under the plain name and names a differing request shape <name>Input', () => {
    const Thing = z.object({ name: z.string(), size: z.number().int().default(1) }).meta({ id: 'Thing' });
    const Envelope = z.object({ thing: Thing }).meta({ id: 'Envelope' });
    const doc = build([
      route({
        method: 'post',
        path: '/things',
        auth: 'bearer',
        tags: ['T'],
        summary: 's',
        body: Envelope,
        response: Envelope,
        handler: async () => ({}),
      }),
    ]);
    const { schemas } = doc.components;
    expect(schemas.Thing).toMatchObject({ required: ['name', 'size'] });
    expect(schemas.ThingInput).toMatchObject({ required: ['name'] });
    // The request envelope refers to the request shape of its part, so it is renamed too.
    expect(schemas.EnvelopeInput).toMatchObject({ properties: { thing: { $ref: '#/components/schemas/ThingInput' } } });
    expect(doc.paths['/things'].post.requestBody?.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/EnvelopeInput',
    });
    expect(doc.paths['/things'].post.responses['200'].content?.['application/json'].schema).toEqual({
      $ref: '#/components/schemas/Envelope',
    });
  });

  it('moves the definitions of a generated multipart part into the components', () => {
    const Part = z.object({ confirmed: z.boolean() }).meta({ id: 'Part' });
    const schema = {
      type: 'object',
      properties: {
        file: { type: 'string', format: 'binary' },
        json: { ...z.toJSONSchema(Part, { io: 'input' }), description: 'JSON part' },
      },
    };
    const doc = build([
      route({
        method: 'post',
        path: '/upload',
        auth: 'bearer',
        tags: ['T'],
        summary: 's',
        rawBody: { contentType: 'multipart/form-data', schema },
        response: z.object({}),
        handler: async () => ({}),
      }),
    ]);
    const upload = doc.paths['/upload'].post.requestBody?.content['multipart/form-data'].schema as { properties: Record<string, unknown> };
    expect(upload.properties.json).toEqual({ $ref: '#/components/schemas/Part', description: 'JSON part' });
    expect(doc.components.schemas.Part).toMatchObject({ properties: { confirmed: { type: 'boolean' } } });
    expect(JSON.stringify(doc)).not.toContain('$defs');
  });

  it('uses one component for a schema that reads the same both ways', () => {
    const Same = z.object({ id: z.string() }).strict().meta({ id: 'Same' });
    const doc = build([
      route({
        method: 'put',
        path: '/same',
        auth: 'bearer',
        tags: ['T'],
        summary: 's',
        body: Same,
        response: Same,
        handler: async () => ({}),
      }),
    ]);
    expect(Object.keys(doc.components.schemas).filter((name) => name.startsWith('Same'))).toEqual(['Same']);
  });
});
