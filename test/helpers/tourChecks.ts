import { count, gt } from 'drizzle-orm';
import { expect } from 'vitest';
import { changeLog } from '../../server/db/schema.js';
import type { TestServer } from './server.js';

/** Drivers of their own from `firstDriver` on, and reads of what the tour endpoints left behind. */
export function tourChecks(api: TestServer, firstDriver: number) {
  let nextDriver = firstDriver;
  const nextPersonalnummer = () => nextDriver++;
  return {
    nextPersonalnummer,
    async driver() {
      const number = nextPersonalnummer();
      return { personalnummer: number, token: await api.token(number) };
    },
    changeCount: async () => (await api.db.select({ n: count() }).from(changeLog))[0].n,
    maxSeq: async () => (await api.db.select({ seq: changeLog.seq }).from(changeLog).orderBy(changeLog.seq)).at(-1)?.seq ?? 0,
    changesSince: (seq: number) => api.db.select().from(changeLog).where(gt(changeLog.seq, seq)).orderBy(changeLog.seq),
    async details(tourId: string, token: string) {
      const response = await api.get(`/tours/${tourId}`, { token });
      expect(response.status).toBe(200);
      return response.body;
    },
  };
}
