import { z } from 'zod';
import { DomainError, type FieldProblem } from '../../errors.js';
import { logAt } from '../requestLog.js';
import { migrationsApplied } from '../../queries/serviceState.js';
import { route } from '../route.js';

const Ready = z.object({ status: z.literal('ready') });

/** Resolves with `work`'s answer, or with `undefined` after `ms`. */
async function within<T>(ms: number, work: Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Kubernetes-style probes; `/health` (system.ts) keeps its own contract. */
export const probeRoutes = [
  route({
    method: 'get',
    path: '/livez',
    auth: 'none',
    tags: ['System'],
    summary: 'Liveness: the process answers (the database is not asked)',
    description: 'Always 200 `ok` while the event loop turns: a database outage must not get healthy instances restarted.',
    produces: ['text/plain'],
    handler: async ({ res }) => {
      res.type('text/plain').send('ok');
    },
  }),
  route({
    method: 'get',
    path: '/readyz',
    auth: 'none',
    tags: ['System'],
    errors: [503],
    response: Ready,
    summary:
      'Readiness: the document store and the issuer answered once since the start, the database answers within READINESS_TIMEOUT_MS, its migrations are applied, LISTEN is up, not draining',
    description:
      '503 problem+json (`upstream_unavailable`, with Retry-After) names each failing check in `errors`: ' +
      '`draining` (SIGTERM received, requests still served), `documents` or `issuer` (not reached once since the start: ' +
      'the document store took no write, the issuer answered no discovery or key set), `listener`, `database`, `migrations`.',
    handler: async ({ ctx, res }) => {
      const problems: FieldProblem[] = [];
      if (ctx.lifecycle.draining) problems.push({ path: 'draining', message: 'shutting down: send new requests elsewhere' });
      problems.push(...ctx.startup.pending());
      if (!ctx.database.health.listening)
        problems.push({ path: 'listener', message: "the LISTEN connection that carries other instances' changes is down" });
      const ms = ctx.config.readinessTimeoutMs;
      const migrated = await within(
        ms,
        migrationsApplied(ctx.database.db).catch((error: unknown) => error as Error),
      );
      if (migrated === undefined) problems.push({ path: 'database', message: `did not answer within ${ms} ms` });
      else if (migrated instanceof Error) problems.push({ path: 'database', message: 'unavailable' });
      else if (!migrated) problems.push({ path: 'migrations', message: 'the database lacks migrations this version ships' });
      if (problems.length) {
        // Not ready is a state the probe asks about, not a failure of this request: no stack. A
        // drain is planned, so its 503s are logged at info; an outage is logged once by `health`.
        logAt(res, ctx.lifecycle.draining ? 'info' : 'warn');
        throw new DomainError('upstream_unavailable', 'Not ready', problems, 503, 1);
      }
      return { status: 'ready' as const };
    },
  }),
];
