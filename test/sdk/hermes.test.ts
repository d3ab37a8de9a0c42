import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { SDK_VERSION } from '../../client-sdk/version.js';

const run = promisify(execFile);
const hermes = path.join(path.dirname(createRequire(import.meta.url).resolve('hermes-engine-cli/package.json')), 'linux64-bin/hermes');
let dir: string | undefined;
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/**
 * The SDK as React Native ships it to Hermes: bundled (esbuild, as Metro bundles), then lowered
 * to what the Hermes of the package runs (classes, async functions and let/const become ES5,
 * as React Native's Babel preset lowers them), prefixed with what React Native itself adds.
 */
async function hermesBundle(): Promise<string> {
  const bundled = await build({
    entryPoints: [path.join(import.meta.dirname, 'hermes/day.ts')],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'neutral',
    target: 'es2019',
    logLevel: 'silent',
  });
  const lowered = ts.transpileModule(bundled.outputFiles[0].text, {
    fileName: 'bundle.js',
    compilerOptions: { allowJs: true, target: ts.ScriptTarget.ES5, downlevelIteration: true, lib: ['lib.es2020.d.ts'] },
  }).outputText;
  const prelude = await readFile(path.join(import.meta.dirname, 'hermes/prelude.js'), 'utf8');
  dir = await mkdtemp(path.join(os.tmpdir(), 'tourline-hermes-'));
  const file = path.join(dir, 'bundle.js');
  await writeFile(file, `${prelude}\n${lowered}`);
  return file;
}

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('the SDK in a real Hermes VM', () => {
  it('runs an offline driver day: queued in a dead zone, shown at once, sent exactly once with React Native file parts when back', async () => {
    const bundle = await hermesBundle();
    const { stdout, stderr } = await run(hermes, ['-Xmicrotask-queue', bundle], { timeout: 60_000 });
    const line = stdout.split('\n').find((l) => l.startsWith('RESULT ') || l.startsWith('FAILED '));
    expect(line, `${stdout}\n${stderr}`).toMatch(/^RESULT /);
    const result = JSON.parse(line!.slice('RESULT '.length));
    expect(result).toMatchObject({
      offlinePending: 7,
      offlineOnline: false,
      viewed: { first: 'completed', second: 'held', scanned: [2, 2], notes: 1 },
      pending: 0,
      rejected: 0,
      online: true,
      // The photo and both signatures stay for the window of acknowledged actions.
      filesLeft: 3,
    });
    expect(result.offlineError).toMatch(/Network request failed/);
    // The health report went with the first push that arrived, as it stood before: seven actions waiting, one a completion.
    expect(result.report).toMatchObject({
      deviceId: expect.stringMatching(UUID_V7),
      platform: 'react-native',
      sdkVersion: SDK_VERSION,
      pendingCount: 7,
      oldestPending: { type: 'scan' },
      pendingCompletionCount: 1,
      rejectedCount: 0,
      attachmentBytes: 0,
      lastErrorCode: 'network',
    });
    expect(result.report.pendingCompletions).toHaveLength(1);
    expect(JSON.stringify(result.report)).not.toContain('Karton');
    expect(result.pushed).toEqual(['scan', 'scan', 'scan', 'scan', 'delivery.hold']);
    // Made by the SDK's own generator on Hermes: time-ordered, in the order the actions were queued.
    (result.eventIds as string[]).forEach((id) => expect(id).toMatch(UUID_V7));
    expect([...result.eventIds].sort()).toEqual(result.eventIds);
    const [photo, completion] = result.parts;
    expect(photo).toContainEqual(['file', { uri: 'file:///dcim/IMG_0001.jpg', name: 'note.jpeg', type: 'image/jpeg' }]);
    expect(completion).toContainEqual([
      'customer_signature',
      { uri: 'file:///sig/customer.png', name: 'customer_signature.png', type: 'image/png' },
    ]);
    expect(completion.find(([name]: [string]) => name === 'acknowledgements')[1]).toContain('"receiptConfirmed":true');
  }, 120_000);
});
