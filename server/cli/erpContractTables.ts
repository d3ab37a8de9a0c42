import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { CancellationWriteBack, CompletionWriteBack, ErpToursAnswer } from '../../shared/schemas/erp.js';

export const GUIDE = fileURLToPath(new URL('../../docs/erp-integration.md', import.meta.url));

type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  anyOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  format?: string;
  description?: string;
  $defs?: Record<string, JsonSchema>;
};

/** The contract's schemas whose fields the guide lists, each between its own markers. */
export const contractSchemas = { tours: ErpToursAnswer, completion: CompletionWriteBack, cancellation: CancellationWriteBack };

function typeOf(schema: JsonSchema, defs: Record<string, JsonSchema>): string {
  if (schema.$ref) return typeOf(defs[schema.$ref.split('/').pop()!], defs);
  if (schema.anyOf) return schema.anyOf.map((s) => typeOf(s, defs)).join(' or ');
  if (schema.const !== undefined) return `\`${JSON.stringify(schema.const)}\``;
  if (schema.enum) return schema.enum.map((v) => `\`${String(v)}\``).join(', ');
  if (schema.type === 'array') return `array of ${typeOf(schema.items ?? {}, defs)}`;
  if (schema.type === 'integer') return schema.format === 'int64' ? 'integer (int64)' : 'integer';
  if (Array.isArray(schema.type)) return schema.type.join(' or ');
  return String(schema.type ?? 'any');
}

/** Each field of an object schema, nested ones with their path (`deliveries[].positions[].lineNumber`). */
function rows(schema: JsonSchema, defs: Record<string, JsonSchema>, prefix: string, out: string[]) {
  const resolved = schema.$ref ? defs[schema.$ref.split('/').pop()!] : schema;
  const object = resolved.anyOf?.find((s) => s.type === 'object' || s.$ref) ?? resolved;
  const target = object.$ref ? defs[object.$ref.split('/').pop()!] : object;
  for (const [name, field] of Object.entries(target.properties ?? {})) {
    const path = `${prefix}${name}`;
    const required = target.required?.includes(name) ? 'yes' : 'no';
    const description = field.description ?? (field.$ref ? defs[field.$ref.split('/').pop()!].description : undefined) ?? '';
    out.push(`| \`${path}\` | ${typeOf(field, defs)} | ${required} | ${description.replaceAll('|', '\\|')} |`);
    const nested = field.$ref ? defs[field.$ref.split('/').pop()!] : field;
    if (nested.type === 'array' && nested.items) rows(nested.items, defs, `${path}[].`, out);
    else if (nested.properties || nested.anyOf?.some((s) => s.type === 'object' || s.$ref)) rows(nested, defs, `${path}.`, out);
  }
}

/** The field table of one contract schema, as the guide shows it. */
export function fieldTable(schema: z.ZodType, prefix = ''): string {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const out = ['| Field | Type | Required | Meaning |', '|---|---|---|---|'];
  rows(json, json.$defs ?? {}, prefix, out);
  return out.join('\n');
}

const markers = (name: string) => [
  `<!-- fields:${name}: written by \`npm run docs:erp\` from shared/schemas -->`,
  `<!-- /fields:${name} -->`,
];

/** The guide with every field table between its markers replaced by the current one. */
export function withFieldTables(text: string): string {
  let result = text;
  for (const [name, schema] of Object.entries(contractSchemas)) {
    const [start, end] = markers(name);
    const from = result.indexOf(start);
    const to = result.indexOf(end);
    if (from < 0 || to < from) throw new Error(`The markers of the field table are missing: ${start} ... ${end}`);
    result = `${result.slice(0, from + start.length)}\n${fieldTable(schema)}\n${result.slice(to)}`;
  }
  return result;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(GUIDE, withFieldTables(readFileSync(GUIDE, 'utf8')));
}
