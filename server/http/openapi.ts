import { STATUS_CODES } from 'node:http';
import { z } from 'zod';
import { Problem } from '../../shared/schemas/common.js';
import { errorCatalogue } from '../errors.js';
import type { AnyRoute, AuthKind } from './route.js';

type Json = Record<string, unknown>;
type Io = 'input' | 'output';

const DEFS = '#/$defs/';
const COMPONENTS = '#/components/schemas/';

const refsOf = (value: unknown): string[] => [...JSON.stringify(value).matchAll(/"\$ref":"#\/\$defs\/([^"]+)"/g)].map((m) => m[1]);

/**
 * Turns zod schemas into JSON Schema whose named parts (`.meta({ id })`) land in
 * `components.schemas`. A request and a response may see the same named schema differently
 * (defaults, transforms, zod closing output objects): the output keeps the name, a differing
 * input becomes `<name>Input`, so neither direction documents the other's shape.
 */
function schemaConverter(components: Record<string, Json>) {
  const rawByName = new Map<string, string>();

  // Also takes JSON Schema that a route generated itself (a multipart part), so its `$defs` land here too.
  return (schema: z.ZodType | Json, io: Io): Json => {
    const json =
      schema instanceof z.ZodType ? (z.toJSONSchema(schema, { io, target: 'draft-2020-12', unrepresentable: 'any' }) as Json) : schema;
    const { $defs = {}, $schema: _schema, id, ...root } = json as Json & { $defs?: Record<string, Json>; id?: unknown };
    const defs: Record<string, Json> = { ...$defs };
    let top: Json = root;
    if (typeof id === 'string') {
      defs[id] = root;
      top = { $ref: `${DEFS}${id}` };
    }

    // A part is renamed when an equally named component differs, or when a part it refers to is renamed.
    const renamed = new Set(Object.keys(defs).filter((name) => rawByName.has(name) && rawByName.get(name) !== JSON.stringify(defs[name])));
    for (let grew = true; grew;) {
      grew = false;
      for (const name of Object.keys(defs)) {
        if (!renamed.has(name) && refsOf(defs[name]).some((ref) => renamed.has(ref))) {
          renamed.add(name);
          grew = true;
        }
      }
    }
    const target = (name: string) => (renamed.has(name) ? `${name}${io === 'input' ? 'Input' : 'Output'}` : name);
    const relink = (value: Json) =>
      JSON.parse(
        JSON.stringify(value).replace(/"\$ref":"#\/\$defs\/([^"]+)"/g, (_m, name: string) => `"$ref":"${COMPONENTS}${target(name)}"`),
      ) as Json;

    for (const [name, def] of Object.entries(defs)) {
      const finalName = target(name);
      if (!renamed.has(name)) rawByName.set(name, JSON.stringify(def));
      components[finalName] ??= relink(def);
    }
    return relink(top);
  };
}

/** A hand-written multipart schema whose parts may embed generated JSON Schema with local `$defs`. */
function rawBodySchema(schema: Json, convert: ReturnType<typeof schemaConverter>): Json {
  const properties = schema.properties as Record<string, Json> | undefined;
  if (!properties) return schema;
  const parts = Object.entries(properties).map(([name, part]) => [name, part.$defs || refsOf(part).length ? convert(part, 'input') : part]);
  return { ...schema, properties: Object.fromEntries(parts) };
}

/** Properties of an object schema, following a component reference or an `allOf`. */
function objectShape(json: Json, components: Record<string, Json>): { properties: Record<string, Json>; required: string[] } {
  if (typeof json.$ref === 'string' && json.$ref.startsWith(COMPONENTS))
    return objectShape(components[json.$ref.slice(COMPONENTS.length)] ?? {}, components);
  const shape = {
    properties: { ...(json.properties as Record<string, Json> | undefined) },
    required: [...((json.required as string[] | undefined) ?? [])],
  };
  for (const part of (json.allOf as Json[] | undefined) ?? []) {
    const inner = objectShape(part, components);
    Object.assign(shape.properties, inner.properties);
    shape.required.push(...inner.required);
  }
  return shape;
}

function parameters(route: AnyRoute, convert: ReturnType<typeof schemaConverter>, components: Record<string, Json>) {
  const list: Json[] = [];
  for (const [location, schema] of [
    ['path', route.params],
    ['query', route.query],
  ] as const) {
    if (!schema) continue;
    const { properties, required } = objectShape(convert(schema, 'input'), components);
    for (const [name, { description, ...property }] of Object.entries(properties)) {
      list.push({
        name,
        in: location,
        required: location === 'path' || required.includes(name),
        ...(typeof description === 'string' ? { description } : {}),
        schema: property,
      });
    }
  }
  if (route.conditional) {
    list.push({
      name: 'If-None-Match',
      in: 'header',
      required: false,
      description: 'An ETag of an earlier answer: 304 while it is still current.',
      schema: { type: 'string' },
    });
  }
  // A path placeholder without a params schema still has to be declared.
  for (const [, name] of route.path.matchAll(/\{(\w+)\}/g)) {
    if (!list.some((p) => p.in === 'path' && p.name === name)) list.push({ name, in: 'path', required: true, schema: { type: 'string' } });
  }
  return list;
}

const operationId = (route: AnyRoute) =>
  route.method +
  route.path
    .split('/')
    .filter(Boolean)
    .map((segment) => segment.replace(/^\{(\w+)\}$/, 'By_$1'))
    .flatMap((segment) => segment.split(/[^A-Za-z0-9]+/))
    .filter(Boolean)
    .map((word) => word[0].toUpperCase() + word.slice(1))
    .join('');

function errorStatuses(route: AnyRoute): number[] {
  const statuses = new Set(route.errors ?? []);
  if (route.auth !== 'none') statuses.add(401);
  if (route.auth === 'admin') statuses.add(403);
  // Every operation needs the database, and a bearer token may need the identity provider: either
  // can be out of reach for a while (503 with Retry-After).
  statuses.add(503);
  // Refusals under these prefixes are rate limited (refusalLimit.ts).
  if (route.path.startsWith('/admin/') || route.path.startsWith('/dev/')) statuses.add(429);
  if (route.params || route.query || route.body || route.rawBody) statuses.add(400);
  if (route.body || route.rawBody) {
    statuses.add(413);
    statuses.add(415);
  }
  return [...statuses].sort((a, b) => a - b);
}

// `sync` takes either scheme.
const securityOf: Record<AuthKind, Json[]> = {
  none: [],
  bearer: [{ bearer_auth: [] }],
  // A bearer token here must carry the back-office role (403 otherwise).
  admin: [{ admin_api_key: [] }, { bearer_auth: [] }],
  sync: [{ bearer_auth: [] }, { admin_api_key: [] }],
};

/** Named schemas that are no route's but belong to the API's contract: what the ERP gateway answers Tourline (input) and what Tourline sends it (output). */
export interface ContractSchemas {
  input?: z.ZodType[];
  output?: z.ZodType[];
}

export function buildOpenApi(routes: AnyRoute[], info: { version: string }, contract: ContractSchemas = {}) {
  const components: Record<string, Json> = {};
  const convert = schemaConverter(components);
  const problem = convert(Problem, 'output');
  // Responses first, so that a schema used both ways keeps its plain name for the response shape.
  const responseSchemas = new Map(routes.map((route) => [route, route.response ? convert(route.response, 'output') : {}]));
  const requestId = { $ref: '#/components/headers/RequestId' };
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of routes) {
    const responses: Record<string, Json> = {};
    if (route.status === 204) responses['204'] = { description: 'Done', headers: { 'X-Request-Id': requestId } };
    else if (route.webSocket) {
      // OpenAPI has no words for messages over a socket: the server's go in the 101 answer, the client's beside them.
      responses['101'] = {
        description:
          'Switching Protocols: from then on a WebSocket, not an HTTP body. Each frame is one JSON text message: ' +
          'the server sends the messages of this schema, the client those of x-client-messages (see the operation description).',
        content: { 'application/json': { schema: convert(route.webSocket.serverMessages, 'output') } },
        'x-client-messages': convert(route.webSocket.clientMessages, 'input'),
      };
    } else {
      const content = route.produces
        ? Object.fromEntries(
            route.produces.map((type) => [
              type,
              { schema: type.startsWith('text/') ? { type: 'string' } : { type: 'string', format: 'binary' } },
            ]),
          )
        : { 'application/json': { schema: responseSchemas.get(route) } };
      const etag = route.conditional
        ? { ETag: { description: 'The version of the answer; send it back in If-None-Match.', schema: { type: 'string' } } }
        : {};
      const link = route.paged
        ? {
            Link: {
              description: 'On a page that is not the last: `<url>; rel="next"`, the next page\'s URL with its cursor.',
              schema: { type: 'string' },
            },
          }
        : {};
      responses['200'] = { description: 'OK', headers: { 'X-Request-Id': requestId, ...etag, ...link }, content };
      if (route.conditional)
        responses['304'] = {
          description: 'Not Modified: unchanged since the ETag named in If-None-Match',
          headers: { 'X-Request-Id': requestId },
        };
    }
    for (const status of errorStatuses(route)) {
      const entry = Object.values(errorCatalogue).find((e) => e.status === status);
      const retryAfter =
        status === 503 ? { 'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer' } } } : {};
      responses[String(status)] = {
        description:
          status === 503
            ? 'Service Unavailable: the database or the identity provider is out of reach; try again after Retry-After'
            : (entry?.title ?? STATUS_CODES[status] ?? 'Error'),
        headers: { 'X-Request-Id': requestId, ...retryAfter },
        content: { 'application/problem+json': { schema: problem } },
      };
    }
    const requestBody = route.rawBody
      ? { required: true, content: { [route.rawBody.contentType]: { schema: rawBodySchema(route.rawBody.schema, convert) } } }
      : route.body
        ? { required: true, content: { 'application/json': { schema: convert(route.body, 'input') } } }
        : undefined;
    paths[route.path] ??= {};
    paths[route.path][route.method] = {
      operationId: operationId(route),
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: route.tags,
      security: securityOf[route.auth as AuthKind],
      parameters: parameters(route, convert, components),
      ...(requestBody ? { requestBody } : {}),
      responses,
    };
  }
  for (const schema of contract.input ?? []) convert(schema, 'input');
  for (const schema of contract.output ?? []) convert(schema, 'output');
  return {
    openapi: '3.1.0',
    info: { title: 'Tourline', version: info.version, description: 'Offline-first sync server for delivery drivers.' },
    // Relative: the document is served by the service it describes, wherever that is reached.
    servers: [{ url: '/', description: 'The service that serves this document' }],
    paths,
    components: {
      schemas: components,
      headers: {
        RequestId: {
          description: 'Id of the request in the service log; a valid incoming `X-Request-Id` is echoed.',
          schema: { type: 'string' },
        },
      },
      securitySchemes: {
        bearer_auth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        admin_api_key: { type: 'apiKey', in: 'header', name: 'X-Admin-Api-Key' },
      },
    },
  };
}
