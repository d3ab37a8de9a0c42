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
