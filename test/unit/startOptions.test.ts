import { execFile } from 'node:child_process';
import os from 'node:os';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { imageStage, nodeOptions, repositoryRoot, scriptOptions } from '../helpers/image.js';

const run = promisify(execFile);
const imageOptions = nodeOptions(imageStage().cmd);

/** The threads of a Node process started with `options`, once it runs. */
async function threads(options: string[]): Promise<number> {
  const { stdout } = await run(process.execPath, [...options, '-e', "console.log(require('fs').readdirSync('/proc/self/task').length)"]);
  return Number(stdout.trim());
}

describe('the Node options the service starts with', () => {
  it('are the same for npm start, npm run start:prod and the image', () => {
    expect(imageOptions).toContain('--v8-pool-size=0');
    expect(scriptOptions(repositoryRoot, 'start:prod')).toEqual(imageOptions);
    expect(scriptOptions(repositoryRoot, 'start')).toEqual(imageOptions);
  });

  // Node's default is four helper threads, whatever the machine; on two CPUs a full collection's
  // marking on all four starved the main thread (docs/operations.md, "V8's helper threads").
  it.runIf(process.platform === 'linux')('give V8 one helper thread fewer than the CPUs, at least one', async () => {
    const helpers = Math.max(1, os.availableParallelism() - 1);
    expect((await threads([])) - (await threads(imageOptions))).toBe(4 - helpers);
  });
});
