import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repositoryRoot = fileURLToPath(new URL('../..', import.meta.url));

/** The final stage of the Dockerfile: its ENV, CMD and HEALTHCHECK, which the tests run as they are. */
export function imageStage() {
  const text = readFileSync(path.join(repositoryRoot, 'Dockerfile'), 'utf8');
  const final = text.slice(text.lastIndexOf('\nFROM '));
  const env = Object.fromEntries([...final.matchAll(/^ENV (\w+)=(\S+)$/gm)].map((m) => [m[1], m[2]]));
  const json = (instruction: string) => JSON.parse(new RegExp(`^${instruction} (\\[.*\\])$`, 'm').exec(final)![1]) as string[];
  return { env, cmd: json('CMD'), healthcheck: json('HEALTHCHECK .*CMD'), user: /^USER (\S+)$/m.exec(final)?.[1] };
}

/** The Node options a command passes ahead of its entry file: `--v8-pool-size=0` of `node --v8-pool-size=0 dist/server/main.js`. */
export function nodeOptions(command: string[]): string[] {
  const entry = command.findIndex((word) => /\.[cm]?[jt]s$/.test(word));
  return command.slice(0, entry === -1 ? undefined : entry).filter((word) => word.startsWith('--'));
}

/** The Node options of a checkout's npm script (`start`, `start:prod`), as npm runs it. */
export function scriptOptions(checkout: string, script: string): string[] {
  const { scripts } = JSON.parse(readFileSync(path.join(checkout, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  return nodeOptions(scripts[script].split(/\s+/));
}
