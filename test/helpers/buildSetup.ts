import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import { repositoryRoot } from './image.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The image's /app: the build under dist/, package.json, node_modules (the checkout's, linked). */
    builtApp: string;
  }
}

/** Builds the service once for the run (`node build.mjs`, as the Dockerfile does). */
export default async function setup(project: TestProject) {
  const app = mkdtempSync(path.join(os.tmpdir(), 'tourline-build-'));
  await promisify(execFile)(process.execPath, [path.join(repositoryRoot, 'build.mjs'), '--outdir', path.join(app, 'dist')], {
    cwd: repositoryRoot,
  });
  copyFileSync(path.join(repositoryRoot, 'package.json'), path.join(app, 'package.json'));
  symlinkSync(path.join(repositoryRoot, 'node_modules'), path.join(app, 'node_modules'), 'dir');
  project.provide('builtApp', app);
  return () => rmSync(app, { recursive: true, force: true });
}
