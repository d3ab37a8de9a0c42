import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from './embeddedPostgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A PostgreSQL URL with rights to create databases; each test file makes its own. */
    postgresAdminUrl: string;
  }
}

/** Uses DATABASE_URL when set, else starts a throwaway PostgreSQL for the whole run. */
export default async function setup(project: TestProject) {
  if (process.env.DATABASE_URL) {
    project.provide('postgresAdminUrl', process.env.DATABASE_URL);
    return;
  }
  // Durability is not under test here; the benchmarks measure with it on.
  const postgres = await startEmbeddedPostgres({
    prefix: 'tourline-pg-',
    settings: ['max_connections=300', 'fsync=off', 'synchronous_commit=off', 'full_page_writes=off'],
  });
  project.provide('postgresAdminUrl', postgres.adminUrl);
  return () => postgres.stop();
}
