import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const sdkDir = path.resolve(import.meta.dirname, '../../client-sdk');

/** `npm pack` of the SDK (its prepack builds it), as a publish would make it. */
export const packSdk = () => packPackage(sdkDir);

/** `npm pack` of a package of the repository into a folder of its own; the tarball's path. */
export async function packPackage(dir: string): Promise<string> {
  const out = await mkdtemp(path.join(os.tmpdir(), 'tourline-pack-'));
  const { stdout } = await run('npm', ['pack', '--pack-destination', out, '--json'], { cwd: dir, maxBuffer: 16 * 2 ** 20 });
  const [{ filename }] = JSON.parse(stdout.slice(stdout.indexOf('[')));
  return path.join(out, filename);
}

/** An empty project with the tarball installed, as an app team would: offline, nothing but the tarball. */
export async function installInEmptyProject(tarball: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tourline-app-'));
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ name: 'driver-app', private: true, type: 'module' }));
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball], { cwd: dir });
  return dir;
}
