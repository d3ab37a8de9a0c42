import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

interface LockedPackage {
  license?: string;
  dev?: boolean;
  devOptional?: boolean;
  optional?: boolean;
}
const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8')) as {
  packages: Record<string, LockedPackage>;
};

// Whoever runs the service for others would have to publish its source under these.
const copyleft = /^(A?GPL)-/;
const forbidden = (license: string) => !/\bOR\b/.test(license) && license.split(/[\s()]+/).some((term) => copyleft.test(term));

describe('licences of the production dependencies', () => {
  const production = Object.entries(lock.packages).filter(([name, p]) => name.startsWith('node_modules/') && !p.dev && !p.devOptional);

  it('are read from the lockfile', () => {
    expect(production.length).toBeGreaterThan(50);
    expect(production.map(([name]) => name)).toContain('node_modules/pdfjs-dist');
  });

  it('include no GPL or AGPL package', () => {
    const listed = production.map(([name, p]) => `${name.replace(/^.*node_modules\//, '')} ${p.license ?? 'unknown'}`);
    expect(listed.filter((line) => forbidden(line.slice(line.indexOf(' ') + 1)))).toEqual([]);
  });

  it('would catch one', () => {
    expect(['AGPL-3.0-or-later', 'GPL-2.0-only', '(MIT AND GPL-3.0)'].every(forbidden)).toBe(true);
    expect(['MIT', 'Apache-2.0', 'LGPL-3.0-or-later', '(MIT OR GPL-3.0)'].some(forbidden)).toBe(false);
  });
});
