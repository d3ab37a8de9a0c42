import { describe, it } from 'vitest';

/**
 * `TOURLINE_TEST_TARGET=build` (the `build` vitest project, `npm run test:build`): the test server
 * is the built service started as the image starts it, in a child process on PostgreSQL.
 */
export const againstBuild = process.env.TOURLINE_TEST_TARGET === 'build';

/**
 * A test (or block) that reaches into the service in a file that otherwise does not: it reads
 * query counts or the context, injects a fault, or uses the development identity provider that
 * production refuses. It runs in process only.
 */
export const inProcess = againstBuild
  ? { it: leftOut as unknown as typeof it, describe: leftOut as unknown as typeof describe }
  : { it, describe };

/** Such a test is not part of the `build` project at all, so that project shows no skipped tests. */
function leftOut() {}
leftOut.each = () => leftOut;
