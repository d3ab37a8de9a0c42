import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { againstBuild } from './target.js';

export type DatabaseKind = 'pglite' | 'postgres';
/** The databases every integration test runs on; the built service is tested on PostgreSQL only. */
export const databaseKinds: readonly DatabaseKind[] = againstBuild ? ['postgres'] : ['pglite', 'postgres'];

/** A fresh, empty PostgreSQL database for one test file or server. */
export async function createPostgresDatabase(): Promise<string> {
  const adminUrl = inject('postgresAdminUrl');
  const name = `t_${randomUUID().replaceAll('-', '')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
