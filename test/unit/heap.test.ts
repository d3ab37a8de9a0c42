import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const script = fileURLToPath(new URL('../helpers/heapLimit.ts', import.meta.url));

/** How far above the heap a full collection left alive V8 puts the next one, as V8 itself prints it. */
function growth(percent: number): number {
  const output = execFileSync(process.execPath, ['--expose-gc', '--trace-gc-verbose', '--import', 'tsx', script, String(percent)], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  expect(output).toContain('kept 500000');
  const limits = [...output.matchAll(/Limit: old size: (\d+) KB, new limit: (\d+) KB/g)];
  expect(limits.length).toBeGreaterThan(0);
  const [, live, limit] = limits.at(-1)!;
  return Number(limit) / Number(live);
}

describe('HEAP_GROWING_PERCENT', () => {
  it("sets how far old space grows before V8's next full collection, and 0 leaves it to V8", () => {
    // V8 never grows old space more than 4 times on its own: 900 % (10 times) is the setting's doing.
    expect(growth(900)).toBeGreaterThan(8);
    expect(growth(0)).toBeLessThan(5);
  });
});
