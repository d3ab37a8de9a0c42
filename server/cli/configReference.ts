import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { secretVariables, settingGroups } from '../config/variables.js';

// npm run docs:config: writes docs/configuration.md and the README's short settings table from
// server/config/variables.ts; test/unit/config.test.ts fails when either is stale.
export const REFERENCE = fileURLToPath(new URL('../../docs/configuration.md', import.meta.url));
export const README = fileURLToPath(new URL('../../README.md', import.meta.url));

/** The settings a newcomer needs to start, connect PostgreSQL and go to production: the README's table. */
export const newcomerSettings = [
  'NODE_ENV',
  'PORT',
  'DATA_DIR',
  'DATABASE_URL',
  'OIDC_ISSUER',
  'OIDC_AUDIENCE',
  'ADMIN_API_KEY',
  'ERP_MODE',
  'ERP_BASE_URL',
  'DOCUMENT_STORE',
  'S3_BUCKET',
  'METRICS_PORT',
];

const START = '<!-- settings: written by `npm run docs:config` from server/config/variables.ts -->';
const END = '<!-- /settings -->';

interface Setting {
  name: string;
  defaultValue: string;
  range: string;
  meaning: string;
}

const code = (value: unknown) => `\`${String(value)}\``;

function describe(name: string, schema: z.ZodType): Setting {
  const meta = (schema.meta() ?? {}) as { description?: string; derived?: string; range?: string };
  if (!meta.description) throw new Error(`${name} has no description in server/config/`);
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  const def = (schema as z.ZodType & { _zod: { def: { type: string; defaultValue?: unknown } } })._zod.def;
  const given = def.type === 'default' ? def.defaultValue : json.default;
  const defaultValue = meta.derived ?? (given === undefined || given === '' ? '—' : code(given));
  return { name, defaultValue, range: meta.range ?? rangeOf(json), meaning: meta.description };
}

/** The values a variable takes, in words, from its JSON schema. */
function rangeOf(json: Record<string, unknown>): string {
  if (Array.isArray(json.enum)) return json.enum.map(code).join(', ');
  if (json.format === 'uri') return 'URL';
  if (json.type === 'integer' || json.type === 'number') {
    const kind = json.type === 'integer' ? 'integer' : 'number';
    const { minimum: min, maximum: max } = json as { minimum?: number; maximum?: number };
    if (min !== undefined && max !== undefined && max < Number.MAX_SAFE_INTEGER) return `${kind} ${min}–${max}`;
    if (min !== undefined) return `${kind} ≥ ${min}`;
    return kind;
  }
  return 'text';
}

/** A row; the documents a meaning names (`docs/x.md#part`) become links, relative to the file the row is written into. */
const row = (s: Setting, docs: 'docs/' | '') =>
  `| \`${s.name}\` | ${s.defaultValue} | ${s.range} | ${s.meaning.replace(/\bdocs\/([\w-]+\.md)(#[\w-]+)?/g, (_all, file: string, part = '') => `[${file}](${docs}${file}${part})`)} |`;
const header = ['| Variable | Default | Range | Meaning |', '|---|---|---|---|'];

export function settings(): Setting[] {
  return Object.values(settingGroups).flatMap((group) => Object.entries(group.shape).map(([name, schema]) => describe(name, schema)));
}

/** docs/configuration.md as it must read. */
export function configurationReference(): string {
  const groups = Object.entries(settingGroups).flatMap(([title, group]) => [
    `## ${title}`,
    '',
    ...header,
    ...Object.entries(group.shape).map(([name, schema]) => row(describe(name, schema), '')),
    '',
  ]);
  const secrets = secretVariables.map(
    (name) => `| \`${name}_FILE\` | — | a readable file | Reads \`${name}\` from this file; not together with \`${name}\`. |`,
  );
  return [
    '# Configuration',
    '',
    '<!-- Written by `npm run docs:config` from server/config/variables.ts: change a setting there and run it again; a test fails when this file is stale. -->',
    '',
    'Environment variables, checked at start: a bad value stops the start with one line naming the',
    'variable (exit code 1); an empty value is unset. What the groups are for:',
    '[operations.md](operations.md#settings-groups).',
    '',
    ...groups,
    '## Secrets from files',
    '',
    'Each secret may come from a file instead (Docker and Kubernetes secrets); a trailing newline is dropped.',
    '',
    ...header,
    ...secrets,
    '',
  ].join('\n');
}

/** The README's short table between its markers, the rest linked. */
export function withNewcomerTable(readme: string): string {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error(`The markers of the settings table are missing: ${START} ... ${END}`);
  const byName = new Map(settings().map((s) => [s.name, s]));
  const rows = newcomerSettings.map((name) => row(byName.get(name)!, 'docs/'));
  return `${readme.slice(0, start + START.length)}\n${[...header, ...rows].join('\n')}\n${readme.slice(end)}`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(REFERENCE, configurationReference());
  writeFileSync(README, withNewcomerTable(readFileSync(README, 'utf8')));
}
