import path from 'node:path';

/**
 * The console's script bundled from console/src with esbuild, for the service run from its
 * sources (`npm start`, the tests): esbuild is a development dependency, so the build leaves
 * this module out (build.mjs) and serves the script it bundled into dist/console instead.
 */
export async function bundleConsole(consoleDir: string): Promise<string> {
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: [path.join(consoleDir, 'src/main.ts')],
    bundle: true,
    format: 'esm',
    target: 'es2022',
    write: false,
    minify: true,
    logLevel: 'silent',
  });
  return result.outputFiles[0].text;
}
