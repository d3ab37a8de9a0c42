/**
 * The service under test of the live scenario, in a process of its own: it starts `server/main.ts`
 * of the checkout it runs in (its working directory, which may be another one than the bench's),
 * so one load tool measures two versions. Over IPC it answers its CPU time and, after a full
 * collection (run with --expose-gc), its heap, and where its event loop stood still.
 */
import path from 'node:path';
import v8 from 'node:v8';
import { pathToFileURL } from 'node:url';
import { threadTimes, watchStalls, type Stalls, type ThreadTimes } from './stalls.js';

export interface ServiceUsage {
  /** User and system time of every thread of the process, in ms. */
  cpuMs: number;
  heapUsedBytes: number;
  /** The main thread's time on a CPU and waiting for one (Linux only). */
  mainThread?: ThreadTimes;
  /** The event loop's stalls and long collections since the last question. */
  stalls: Stalls;
}

const stalls = watchStalls();

// v8's own figures: process.memoryUsage() opens /proc/self/statm, which fails when the sockets took every file descriptor.
process.on('message', (question: { usage: boolean; gc: boolean }) => {
  if (question.gc) globalThis.gc?.();
  const cpu = process.cpuUsage();
  const answer: ServiceUsage = {
    cpuMs: (cpu.user + cpu.system) / 1000,
    heapUsedBytes: v8.getHeapStatistics().used_heap_size,
    mainThread: threadTimes(),
    stalls: stalls.take(),
  };
  process.send!(answer);
});

await import(pathToFileURL(path.join(process.cwd(), 'server/main.ts')).href);
