import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../../client-sdk');
const shared = path.resolve(import.meta.dirname, '../../shared');

async function coreFiles(dir = root): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'examples' && entry.name !== 'dist' && entry.name !== 'node_modules') files.push(...(await coreFiles(full)));
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && full !== path.join(root, 'node.ts')) files.push(full);
  }
  return files;
}

describe('client SDK portability', () => {
  it('keeps Node-only modules and server code out of the core, which browsers and React Native bundle', async () => {
    const offenders: string[] = [];
    for (const file of await coreFiles()) {
      const source = await readFile(file, 'utf8');
      for (const [, specifier] of source.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)) {
        const target = path.resolve(path.dirname(file), specifier);
        const relative = specifier.startsWith('.');
        // The React bindings (their own entry, @tourline/client/react) import their peer, React.
        const peer = specifier === 'react' && file === path.join(root, 'react.ts');
        const allowed = specifier === 'zod' || peer || (relative && (target.startsWith(`${root}/`) || target.startsWith(`${shared}/`)));
        if (!allowed) offenders.push(`${path.relative(root, file)}: ${specifier}`);
      }
      if (/\bBuffer\b|\bprocess\.|require\(/.test(source)) offenders.push(`${path.relative(root, file)}: uses a Node global`);
      // What Hermes or React Native lack or only pretend to have.
      for (const missing of source.match(
        /structuredClone|\.set\(\s*'[^']*',\s*(?:toBlob|new Blob)|URLSearchParams|AbortSignal\.timeout|new URL\(|\batob\(|\bbtoa\(|queueMicrotask|new TextEncoder/g,
      ) ?? []) {
        offenders.push(`${path.relative(root, file)}: ${missing}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
