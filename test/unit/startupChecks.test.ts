import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startStartupChecks } from '../../server/startupChecks.js';

/** A dependency that fails with `reason` until it is `up`, counting the times it was asked. */
function dependency() {
  const state = { up: false, reason: 'connect ECONNREFUSED', asked: 0 };
  const check = {
    name: 'issuer',
    target: 'https://login.example.com',
    run: async () => {
      state.asked += 1;
      if (!state.up) throw new Error(state.reason);
    },
  };
  return { state, check };
}

describe('the start checks', () => {
  const lines: { level: number; msg: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  beforeEach(() => {
    vi.useFakeTimers();
    lines.length = 0;
  });
  afterEach(() => vi.useRealTimers());

  it('turns ready within 2 s of the dependency answering, however long it was away', async () => {
    const { state, check } = dependency();
    const checks = startStartupChecks([check], logger);
    await checks.first;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(checks.pending()).toEqual([{ path: 'issuer', message: 'https://login.example.com: connect ECONNREFUSED' }]);
    state.up = true;
    await vi.advanceTimersByTimeAsync(2000);
    expect(checks.pending()).toEqual([]);
    expect(lines.at(-1)).toMatchObject({ level: 30, msg: 'issuer answered: https://login.example.com' });
    checks.stop();
  });

  it('asks often at first, then every 2 s, and warns once per reason, again after 30 s or when the reason changes', async () => {
    const { state, check } = dependency();
    const checks = startStartupChecks([check], logger);
    await checks.first;
    await vi.advanceTimersByTimeAsync(1000);
    expect(state.asked).toBe(3); // at 0, 0.25 and 0.75 s
    await vi.advanceTimersByTimeAsync(19_000);
    expect(state.asked).toBe(13); // then at 1.75 s, and every 2 s from 3.75 to 19.75 s
    expect(lines.filter((l) => l.level === 40)).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(12_000);
    expect(lines.filter((l) => l.level === 40)).toHaveLength(2);
    state.reason = 'OIDC discovery names another issuer';
    await vi.advanceTimersByTimeAsync(2000);
    expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual([
      'not ready: issuer https://login.example.com did not answer (connect ECONNREFUSED)',
      'not ready: issuer https://login.example.com did not answer (connect ECONNREFUSED)',
      'not ready: issuer https://login.example.com did not answer (OIDC discovery names another issuer)',
    ]);
    checks.stop();
    const asked = state.asked;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(state.asked).toBe(asked);
  });

  it('writes no answer line for a dependency that answered at once', async () => {
    const { state, check } = dependency();
    state.up = true;
    const checks = startStartupChecks([check], logger);
    await checks.first;
    expect(checks.pending()).toEqual([]);
    expect(lines).toEqual([]);
  });
});
