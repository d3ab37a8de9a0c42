import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { request } from './http.js';
import { monotonicMs, sleep } from './stats.js';

/** One service process of the chaos run, started with `npm start`'s entry, killed and started again at will. */
export class Instance {
  process: ChildProcess | undefined;
  alive = false;
  stopping = false;
  output: string[] = [];
  constructor(
    readonly name: string,
    readonly port: number,
    private readonly env: Record<string, string>,
    /** Told when the process exits without being killed or stopped, with its last output. */
    private readonly onDied: (message: string, output: string) => void,
  ) {}
  get url() {
    return `http://127.0.0.1:${this.port}`;
  }

  async start() {
    const main = fileURLToPath(new URL('../../server/main.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', main], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...this.env, PORT: String(this.port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (chunk: Buffer) => {
      this.output.push(chunk.toString());
      if (this.output.length > 200) this.output.shift();
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    this.process = child;
    child.once('exit', (code, signal) => {
      if (this.process !== child || this.stopping || signal === 'SIGKILL') return;
      this.alive = false;
      this.onDied(`${this.name} died on its own (exit ${code})`, this.output.join('').slice(-3000));
    });
    const started = monotonicMs();
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${this.name} exited with ${child.exitCode}:\n${this.output.join('').slice(-2000)}`);
      if ((await request('GET', `${this.url}/health`).catch(() => undefined))?.status === 200) break;
      if (monotonicMs() - started > 60_000) throw new Error(`${this.name} did not answer /health within 60 s`);
      await sleep(50);
    }
    this.alive = true;
  }

  kill() {
    this.alive = false;
    this.process?.kill('SIGKILL');
  }

  async stop() {
    this.stopping = true;
    this.alive = false;
    if (!this.process || this.process.exitCode !== null) return;
    const exited = new Promise((resolve) => this.process!.once('exit', resolve));
    this.process.kill('SIGTERM');
    await Promise.race([exited, sleep(10_000).then(() => this.process!.kill('SIGKILL'))]);
  }
}
