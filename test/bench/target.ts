import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../server/config.js';
import { startServer, type RunningServer, type StartOptions } from '../../server/server.js';

export type DatabaseKind = 'postgres' | 'pglite';
export const BENCH_ADMIN_KEY = 'bench-admin-key-0123456789abcdef';

/** Where one scenario keeps its data: a fresh PostgreSQL database, or a fresh PGlite directory on disk. */
export interface Target {
  kind: DatabaseKind;
  databaseUrl?: string;
  dataDir: string;
  /** The environment a server process for this target runs with. */
  env: Record<string, string>;
  dispose(): void;
}

/** `createDatabase` makes an empty PostgreSQL database and answers its URL (postgres only). */
export async function newTarget(kind: DatabaseKind, name: string, createDatabase?: (name: string) => Promise<string>): Promise<Target> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `tourline-bench-${name}-`));
  const databaseUrl = kind === 'postgres' ? await createDatabase!(name) : undefined;
  const env: Record<string, string> = {
    NODE_ENV: 'development',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    ADMIN_API_KEY: BENCH_ADMIN_KEY,
    ERP_IMPORT_ENABLED: 'false',
    DATA_DIR: dataDir,
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  };
  return { kind, databaseUrl, dataDir, env, dispose: () => rmSync(dataDir, { recursive: true, force: true }) };
}

/** The service in this process, configured as `npm start` would be apart from quieter logs and no scheduler. */
export function startBenchServer(target: Target, options: StartOptions & { env?: Record<string, string> } = {}): Promise<RunningServer> {
  const { env, ...start } = options;
  return startServer(loadConfig({ ...target.env, ...env }), start);
}
