import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort } from '../helpers/embeddedPostgres.js';
import type { BenchContext, Metrics } from './context.js';
import { request } from './http.js';
import { monotonicMs, round, sleep } from './stats.js';
import type { Target } from './target.js';

/** `npm start` as a process: to the first 200 from /health on an empty database, then on the same one again. */
export async function startup(ctx: BenchContext): Promise<Metrics> {
  const target = await ctx.newTarget('startup');
  try {
    const fresh = await startProcess(target);
    const existing = await startProcess(target);
    return { fresh_ms: Math.round(fresh.ms), existing_ms: Math.round(existing.ms), rss_mb: round(existing.rssMb) };
  } finally {
    target.dispose();
  }
}

async function startProcess(target: Target): Promise<{ ms: number; rssMb: number }> {
  const port = await freePort();
  const main = fileURLToPath(new URL('../../server/main.ts', import.meta.url));
  const started = monotonicMs();
  const child = spawn(process.execPath, ['--import', 'tsx', main], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...target.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode} before answering`);
      const reply = await request('GET', `http://127.0.0.1:${port}/health`).catch(() => undefined);
      if (reply?.status === 200) break;
      if (monotonicMs() - started > 60_000) throw new Error('no 200 from /health within 60 s');
      await sleep(10);
    }
    const ms = monotonicMs() - started;
    // Resident memory once the process has settled, idle.
    await sleep(1000);
    const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
    return { ms, rssMb: rss ? Number(rss[1]) / 1024 : NaN };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}
