import { z } from 'zod';
import { Problem } from '../../shared/schemas/common.js';
import { errorCatalogue } from '../errors.js';
import type { AnyRoute } from './route.js';

type Json = Record<string, unknown>;

/** Turns a zod schema into JSON Schema whose named parts land in `components.schemas`. */
function schemaConverter(components: Record<string, Json>) {
  return (schema: z.ZodType, io: 'input' | 'output'): Json => {
    const json = z.toJSONSchema(schema, { io, target: 'draft-2020-12', unrepresentable: 'any' }) as Json;
    const { $defs, $schema: _s, id, ...rest } = json as Json & { $defs?: Record<string, Json>; id?: string };
    const relink = (value: Json) => JSON.parse(JSON.stringify(value).replaceAll('"#/$defs/', '"#/components/schemas/')) as Json;
    for (const [name, def] of Object.entries($defs ?? {})) components[name] ??= relink(def);
    if (typeof id === 'string') {
      components[id] ??= relink(rest);
      return { $ref: `#/components/schemas/${id}` };
    }
    return relink(rest);
  };
}

function parameters(schema: z.ZodType | undefined, location: 'path' | 'query', convert: ReturnType<typeof schemaConverter>) {
  if (!schema) return [];
  const json = convert(schema, 'input') as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, property]) => ({
    name, in: location, required: location === 'path' || (json.required ?? []).includes(name), schema: property,
  }));
}

export function buildOpenApi(routes: AnyRoute[], info: { version: string }) {
  const components: Record<string, Json> = {};
  const convert = schemaConverter(components);
  const problem = convert(Problem, 'output');
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of routes) {
    const responses: Record<string, Json> = {};
    if (route.status === 204) responses['204'] = { description: 'Done' };
    else if (route.produces) responses['200'] = { description: 'OK', content: Object.fromEntries(route.produces.map((t) => [t, { schema: { type: 'string', format: 'binary' } }])) };
    else responses['200'] = { description: 'OK', content: { 'application/json': { schema: route.response ? convert(route.response, 'output') : {} } } };
    const errors = new Set([...(route.errors ?? []), ...(route.auth === 'none' ? [] : [401]), ...(route.params || route.query || route.body ? [400] : [])]);
    for (const status of [...errors].sort()) {
      const entry = Object.values(errorCatalogue).find((e) => e.status === status);
      responses[String(status)] = { description: entry?.title ?? 'Error', content: { 'application/problem+json': { schema: problem } } };
    }
    const requestBody = route.rawBody
      ? { required: true, content: { [route.rawBody.contentType]: { schema: route.rawBody.schema } } }
      : route.body ? { required: true, content: { 'application/json': { schema: convert(route.body, 'input') } } } : undefined;
    paths[route.path] ??= {};
    paths[route.path][route.method] = {
      summary: route.summary,
      tags: route.tags,
      security: route.auth === 'bearer' ? [{ bearer_auth: [] }] : route.auth === 'admin' ? [{ admin_api_key: [] }] : [],
      parameters: [...parameters(route.params, 'path', convert), ...parameters(route.query, 'query', convert)],
      ...(requestBody ? { requestBody } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Tourline', version: info.version, description: 'Offline-first sync server for delivery drivers.' },
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        bearer_auth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        admin_api_key: { type: 'apiKey', in: 'header', name: 'X-Admin-Api-Key' },
      },
    },
  };
}
