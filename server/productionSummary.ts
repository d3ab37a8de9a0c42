import path from 'node:path';
import type { Config } from './config.js';

/** Host, port and database of a postgres:// URL; its user, password and parameters stay out of the log. */
export function databaseAddress(url: string) {
  try {
    const parsed = new URL(url);
    const database = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || '(default)';
    return `${parsed.host || '(socket)'}/${database}`;
  } catch {
    return '(unreadable URL)';
  }
}

/** A URL without its user, password and query (where a token could sit). */
export function address(url: string) {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname.replace(/\/$/, '')}`;
}

function database(config: Config) {
  if (!config.databaseUrl) return `PGlite in ${config.dataDir}`;
  const pooled = databaseAddress(config.databaseUrl);
  const direct = config.databaseDirectUrl ? databaseAddress(config.databaseDirectUrl) : pooled;
  return direct === pooled ? `PostgreSQL ${pooled}` : `PostgreSQL ${pooled} (direct ${direct})`;
}

export function describeDocuments(config: Config) {
  const { mode, url, s3 } = config.documents;
  if (mode === 's3') return `s3 bucket ${s3.bucket}${s3.endpoint ? ` at ${address(s3.endpoint)}` : ''} (${s3.region})`;
  if (mode === 'http') return `http ${address(url!)}`;
  return `local ${path.join(config.dataDir, 'documents')}`;
}

// Which way the ERP is authenticated, never with what.
function erpAuth(auth: Config['erp']['auth']) {
  if (auth.kind === 'bearer') return ' with a bearer token';
  if (auth.kind === 'basic') return ' with basic authentication';
  if (auth.kind === 'oauth') return ` with OAuth 2 client credentials from ${address(auth.tokenUrl)}`;
  return '';
}

/**
 * The one line a production start logs: what the instance talks to, so an operator sees a wrong
 * setting at a glance. Addresses only: no password, key or token may ever reach it.
 */
export function productionSummary(config: Config) {
  const { auth, erp } = config;
  return [
    'Production settings:',
    `identity ${auth.mode} issuer ${auth.issuer ? address(auth.issuer) : '(development)'} audience ${auth.audience};`,
    `ERP ${erp.mode}${erp.baseUrl ? ` ${address(erp.baseUrl)}` : ''}${erpAuth(erp.auth)}, import ${erp.importEnabled ? `at ${erp.importCron}` : 'off'};`,
    `documents ${describeDocuments(config)};`,
    `metrics ${config.metricsPort === undefined ? 'off' : `on port ${config.metricsPort}`};`,
    `CORS ${config.corsOrigins.length ? config.corsOrigins.join(', ') : 'no origins'};`,
    `database ${database(config)}`,
  ].join(' ');
}

/** Settings production accepts but an operator should hear about once, at start. */
export function productionWarnings(config: Config) {
  const warnings: string[] = [];
  if (config.documents.mode === 'local')
    warnings.push(
      `DOCUMENT_STORE=local keeps documents in ${path.join(config.dataDir, 'documents')} on this machine: it serves one instance only; several instances need DOCUMENT_STORE=s3 or http`,
    );
  return warnings;
}
