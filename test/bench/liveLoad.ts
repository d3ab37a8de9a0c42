/**
 * One load process of the live scenario (forked by live.ts; a process holds a few thousand
 * sockets, below the open-file limit). Its drivers each hold a WebSocket of /sync/ws, some a
 * second one (another device of the account), and push one scan at random moments, on average
 * one per interval (a Poisson process per driver, so the service sees no synchronised waves).
 */
import { deferred } from '../../server/db/combining.js';
import { newId } from '../../shared/ids.js';
import { request } from './http.js';
import { LiveSocket } from './liveSocket.js';
import type { ScanEvent } from './jobs.js';
import { SLOW_PUSH_MS, threadTimes, timesBetween, watchStalls, type Stalls, type ThreadTimes } from './stalls.js';
import { monotonicMs, sleep } from './stats.js';

export interface LiveDriver {
  personalnummer: number;
  token: string;
  deliveryId: string;
  items: string[];
  /** Holds a second device, whose receipts of this driver's changes are the fan-out samples. */
  secondDevice: boolean;
}

export type LiveCommand =
  | { type: 'init'; url: string; cursor: string; drivers: LiveDriver[]; connectConcurrency: number }
  | { type: 'connect' }
  /** Pushes from `startAt` (monotonic ms, shared by every process on the host); samples after the warm-up. */
  | { type: 'run'; startAt: number; warmupMs: number; durationMs: number; intervalMs: number }
  | { type: 'disconnect' };

export interface LiveRun {
  pushLatencies: number[];
  /** [when it was sent, how long it took, ms] for each measured push slower than SLOW_PUSH_MS. */
  slowPushes: [number, number][];
  fanoutLatencies: number[];
  /** This load process's own stalls over the measured window: they delay what it measures. */
  stalls: Stalls;
  /** Load-process CPU over the measured window, ms. */
  cpuMs: number;
  /** Its main thread's time on a CPU and waiting for one over the measured window (Linux only). */
  mainThread?: ThreadTimes;
  errors: Record<string, number>;
  examples: string[];
}

export type LiveReply =
  | { type: 'ready' }
  | { type: 'connected'; errors: Record<string, number>; examples: string[] }
  | ({ type: 'ran' } & LiveRun)
  | { type: 'done' };

const stalls = watchStalls();
let init: Extract<LiveCommand, { type: 'init' }>;
const sockets: LiveSocket[] = [];
let closing = false;
let errors: Record<string, number> = {};
let examples: string[] = [];
/** Fan-out: per event id of a pushing driver with a second device, when the answer and the receipt came. */
const fanout = new Map<string, { answeredAt?: number; receivedAt?: number; measured: boolean }>();
let fanoutLatencies: number[] = [];

function error(kind: string, detail: string) {
  errors[kind] = (errors[kind] ?? 0) + 1;
  if (examples.length < 5) examples.push(`${kind}: ${detail}`);
}

function settleFanout(eventId: string) {
  const entry = fanout.get(eventId);
  if (entry?.answeredAt === undefined || entry.receivedAt === undefined) return;
  // The change may reach the other device before the answer reaches the pushing one: no wait then.
  if (entry.measured) fanoutLatencies.push(Math.max(0, entry.receivedAt - entry.answeredAt));
  fanout.delete(eventId);
}

/** A device: resumes from the cursor and is ready at the first `changes` message. */
async function openDevice(driver: LiveDriver, watchesFanout: boolean): Promise<void> {
  const first = deferred<void>();
  let isReady = false;
  const ws = await LiveSocket.open(
    `${init.url.replace(/^http/, 'ws')}/sync/ws`,
    { Authorization: `Bearer ${driver.token}` },
    {
      message: (text) => {
        if (!isReady) {
          isReady = true;
          first.resolve();
        }
        if (!watchesFanout) return;
        const now = monotonicMs();
        const message = JSON.parse(text) as { type: string; changes?: { eventIds?: string[] }[] };
        if (message.type !== 'changes') return error('unexpected_message', text.slice(0, 200));
        for (const id of (message.changes ?? []).flatMap((c) => c.eventIds ?? [])) {
          const entry = fanout.get(id);
          if (!entry) continue;
          entry.receivedAt = now;
          settleFanout(id);
        }
      },
      error: (e) => (isReady ? error('socket_error', String(e)) : first.reject(e)),
      close: (code) => {
        if (isReady && !closing) error('socket_closed', `closed ${code}`);
        else if (!isReady) first.reject(new Error(`closed ${code} before the first message`));
      },
    },
  );
  sockets.push(ws);
  ws.send(JSON.stringify({ type: 'resume', cursor: init.cursor }));
  return first.promise;
}

async function connect() {
  const devices = init.drivers.flatMap((d) =>
    d.secondDevice
      ? [
          { d, fan: false },
          { d, fan: true },
        ]
      : [{ d, fan: false }],
  );
  let next = 0;
  // A few upgrades at a time per process: each costs the service a token check and a first read.
  await Promise.all(
    Array.from({ length: init.connectConcurrency }, async () => {
      while (next < devices.length) {
        const { d, fan } = devices[next++];
        await openDevice(d, fan).catch((e: Error) => error('connect_failed', e.message));
      }
    }),
  );
}

async function drive(
  driver: LiveDriver,
  run: Extract<LiveCommand, { type: 'run' }>,
  pushLatencies: number[],
  slowPushes: [number, number][],
) {
  const measureFrom = run.startAt + run.warmupMs;
  const end = measureFrom + run.durationMs;
  const gap = () => -Math.log(1 - Math.random()) * run.intervalMs;
  let at = run.startAt + gap();
  let item = Math.floor(Math.random() * driver.items.length);
  // The next push may be due long after the end: stop without waiting for it.
  while (at < end) {
    await sleep(at - monotonicMs());
    const event: ScanEvent = {
      eventId: newId(), // as the SDK makes them: time-ordered
      occurredAt: new Date().toISOString(),
      type: 'scan',
      deliveryItemId: driver.items[item++ % driver.items.length],
      action: 'scan',
    };
    const started = monotonicMs();
    const measured = started >= measureFrom;
    if (driver.secondDevice && sockets.length > 0) fanout.set(event.eventId, { measured });
    try {
      const reply = await request('POST', `${init.url}/sync/push`, {
        token: driver.token,
        body: { clientId: `live-${driver.personalnummer}`, events: [event] },
      });
      const answeredAt = monotonicMs();
      const result = reply.status === 200 ? (JSON.parse(reply.text) as { results: { status: string }[] }).results[0] : undefined;
      if (result?.status !== 'applied') {
        error('push_failed', `${reply.status} ${reply.text.slice(0, 200)}`);
        fanout.delete(event.eventId);
      } else {
        if (measured) pushLatencies.push(answeredAt - started);
        if (measured && answeredAt - started > SLOW_PUSH_MS) slowPushes.push([started, answeredAt - started]);
        const entry = fanout.get(event.eventId);
        if (entry) {
          entry.answeredAt = answeredAt;
          settleFanout(event.eventId);
        }
      }
    } catch (e) {
      error('push_failed', String(e));
      fanout.delete(event.eventId);
    }
    at = Math.max(at + gap(), monotonicMs());
  }
}

async function run(command: Extract<LiveCommand, { type: 'run' }>): Promise<LiveRun> {
  errors = {};
  examples = [];
  fanoutLatencies = [];
  const pushLatencies: number[] = [];
  const slowPushes: [number, number][] = [];
  let window: Stalls = { stalls: [], collections: [] };
  let cpuFrom: NodeJS.CpuUsage | undefined;
  let cpuMs = 0;
  let timesFrom: ThreadTimes | undefined;
  let mainThread: ThreadTimes | undefined;
  const windowEnd = command.startAt + command.warmupMs + command.durationMs;
  void sleep(command.startAt + command.warmupMs - monotonicMs()).then(() => {
    cpuFrom = process.cpuUsage();
    timesFrom = threadTimes();
    stalls.take();
  });
  const ended = sleep(windowEnd - monotonicMs()).then(() => {
    const used = process.cpuUsage(cpuFrom);
    cpuMs = (used.user + used.system) / 1000;
    mainThread = timesBetween(timesFrom, threadTimes());
    window = stalls.take();
  });
  await Promise.all(init.drivers.map((driver) => drive(driver, command, pushLatencies, slowPushes)));
  // Every driver may have sent its last push before the window's end: its mark still comes.
  await ended;
  // Late receipts count with their real latency for up to two seconds; then they are missing.
  for (let waited = 0; waited < 2000 && [...fanout.values()].some((f) => f.answeredAt !== undefined); waited += 50) await sleep(50);
  for (const entry of fanout.values()) if (entry.answeredAt !== undefined && entry.measured) error('fanout_missing', 'no receipt in 2 s');
  fanout.clear();
  return { pushLatencies, slowPushes, fanoutLatencies, cpuMs, mainThread, stalls: window, errors, examples };
}

const reply = (message: LiveReply) => process.send!(message);

process.on('message', (command: LiveCommand) => {
  const work = async () => {
    switch (command.type) {
      case 'init':
        init = command;
        return reply({ type: 'ready' });
      case 'connect':
        errors = {};
        examples = [];
        await connect();
        return reply({ type: 'connected', errors, examples });
      case 'run':
        return reply({ type: 'ran', ...(await run(command)) });
      case 'disconnect':
        closing = true;
        for (const ws of sockets.splice(0)) ws.terminate();
        return reply({ type: 'done' });
    }
  };
  work().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
});
