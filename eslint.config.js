// The layers of the design, as lint rules:
//
//   server/http ──▶ server/engine ──▶ server/db
//              └──▶ server/queries ──┘
//   shared/      imports nothing of ours (zod only)
//   client-sdk/  imports shared/ only
//   examples/    the SDK through its package entries (@tourline/client...), never our sources
//
// - http (routes, middleware) calls one engine operation or one query; it never touches drizzle
//   or the schema itself.
// - engine writes; it never imports http or queries (a read it needs lives in the engine).
// - queries only read: they import no engine code, and a query that calls insert/update/delete
//   or writes INSERT/UPDATE/DELETE in SQL fails below. A query may open a transaction for a
//   consistent snapshot; that it writes nothing inside it is what the syntax rule checks.
// - Row-to-API mapping has one home, server/shapes/: the mappers and the one SQL that renders a
//   tour's details as API shapes. Engine and queries both import it; it imports neither, and it
//   only reads, like queries.
// - db, integrations and shapes import none of the layers above them.
// Tests may import anything.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** An import whose path (as written) matches `regex` is refused with `message`. */
const refuse = (regex, message) => ({ regex, message });

const drizzle = refuse('^drizzle-orm(/|$)', 'drizzle belongs to server/db, server/queries and server/engine.');
const schema = refuse(
  '(^|/)db/(schema|client|tables/\\w+)(\\.js)?$',
  'the schema and the connection belong to server/queries and server/engine.',
);
const http = refuse('(^|/)http/', 'nothing below the HTTP layer imports it.');
const engine = refuse('(^|/)engine/', 'the engine is called from http and jobs only.');
const queries = refuse('(^|/)queries/', 'the read layer is called from http and jobs only.');
const jobs = refuse('(^|/)jobs/', 'jobs are started by the server, not imported by a layer.');
const ours = refuse('^(\\.\\./)+(server|client-sdk|test|examples)(/|$)', 'shared/ imports nothing of ours.');
const serverSide = refuse('^(\\.\\./)+(server|test)(/|$)', 'the client SDK imports shared/ only.');
const sdkEntries = refuse(
  '^(\\.\\./)+(server|shared|client-sdk|test)(/|$)',
  'the example app uses the SDK through its package entries only.',
);

const layer = (files, ...patterns) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns }] },
});

// Writes in the read layer: drizzle's write builders on a handle, or SQL text that writes.
const writeCall =
  'CallExpression[callee.property.name=/^(insert|update|delete)$/]:matches([callee.object.name=/^(db|tx)$/], [callee.object.property.name=/^(db|tx)$/])';
const writeSql = 'TemplateElement[value.raw=/\\b(INSERT\\s+INTO|UPDATE\\s+\\w+\\s+SET|DELETE\\s+FROM)\\b/i]';

export default tseslint.config(
  { ignores: ['node_modules/**', 'data/**', 'migrations/**', '.tmp/**', '**/dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  // Tests and the SDK's platform seams (WebSocket, IndexedDB) hold values of unknown shape.
  { files: ['test/**', 'client-sdk/**'], rules: { '@typescript-eslint/no-explicit-any': 'off' } },

  layer(['server/http/**'], drizzle, schema),
  layer(['server/engine/**'], http, queries, jobs),
  layer(['server/queries/**'], http, engine, jobs),
  layer(['server/shapes/**'], http, engine, queries, jobs),
  layer(['server/db/**', 'server/integrations/**'], http, engine, queries, jobs),
  layer(['shared/**'], ours),
  layer(['client-sdk/**'], serverSide),
  layer(['examples/**'], sdkEntries),
  {
    files: ['server/queries/**', 'server/shapes/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: writeCall, message: 'queries only read: the write belongs in server/engine.' },
        { selector: writeSql, message: 'queries only read: the write belongs in server/engine.' },
      ],
    },
  },
);
