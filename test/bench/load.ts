/**
 * The load generator: a separate process (forked by the bench) so that the service's event
 * loop does not share a thread with its clients. It receives one job, runs it over loopback
 * and answers with raw measurements.
 */
import { runJob, type LoadJob } from './jobs.js';

process.once('message', (job: LoadJob) => {
  runJob(job, (mark) => process.send!({ mark })).then(
    (result) => process.send!({ ok: true, result }, () => process.exit(0)),
    (error: unknown) =>
      process.send!({ ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) }, () => process.exit(1)),
  );
});
