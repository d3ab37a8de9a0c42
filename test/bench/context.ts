import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RunningServer } from '../../server/server.js';
import type { LoadJob, Measured, OnMark, WindowMark } from './jobs.js';
import type { Sizes } from './sizes.js';
import { startBenchServer, type DatabaseKind, type Target } from './target.js';

export type Metrics = Record<string, number>;
export type Results = Record<string, Metrics>;

export interface BenchContext {
  kind: DatabaseKind;
  sizes: Sizes;
  newTarget(name: string): Promise<Target>;
  log(message: string): void;
  /** The push scenario's pushes carry a device health report each (`--device-reports`). */
  deviceReports?: boolean;
  /** Whatever went wrong besides timing (refused requests, lost changes); the smoke test expects none. */
  problems: string[];
}

const loadScript = fileURLToPath(new URL('./load.ts', import.meta.url));

type LoadMessage = { mark: WindowMark } | { ok: boolean; result?: Measured; error?: string };

/** Runs a job in a forked load process; the service stays alone in this one. */
export function runLoad(job: LoadJob, onMark: OnMark = () => undefined): Promise<Measured> {
  const child = fork(loadScript, [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  child.send(job);
  return new Promise((resolve, reject) => {
    child.on('message', (message: LoadMessage) => {
      if ('mark' in message) onMark(message.mark);
      else if (message.ok) resolve(message.result!);
      else reject(new Error(`load process: ${message.error}`));
    });
    child.once('exit', (code) => reject(new Error(`load process exited with ${code} before answering`)));
  });
}

export function reportErrors(ctx: BenchContext, scenario: string, measured: Measured) {
  for (const error of measured.errors) problem(ctx, `${scenario}: ${error}`);
}

export function problem(ctx: BenchContext, message: string) {
  ctx.problems.push(message);
  ctx.log(`  ${message}`);
}

export async function withServer<T>(
  target: Target,
  work: (server: RunningServer) => Promise<T>,
  options: Parameters<typeof startBenchServer>[1] = {},
): Promise<T> {
  const server = await startBenchServer(target, options);
  try {
    return await work(server);
  } finally {
    await server.close();
    target.dispose();
  }
}
