/**
 * The host's TCP counters that tell why connections fail (`/proc/net/netstat`, Linux only): a
 * full accept queue, connections reset because a side closed with unread data, SYNs answered with
 * a challenge (a reused port meeting an old connection's state). Host-wide: whatever else runs
 * on the host counts too.
 */
import { readFileSync } from 'node:fs';

const WATCHED = [
  'ListenOverflows',
  'TCPSynRetrans',
  'TCPAbortOnData',
  'TCPAbortOnClose',
  'TCPSYNChallenge',
  'TCPReqQFullDrop',
  'TCPReqQFullDoCookies',
  'TCPTimeWaitOverflow',
];

export type TcpCounters = Record<string, number> | undefined;

export function tcpCounters(): TcpCounters {
  try {
    const lines = readFileSync('/proc/net/netstat', 'latin1').split('\n');
    const header = lines.findIndex((line) => line.startsWith('TcpExt:'));
    const names = lines[header].split(/\s+/);
    const values = lines[header + 1].split(/\s+/).map(Number);
    return Object.fromEntries(WATCHED.map((name) => [name, values[names.indexOf(name)] ?? 0]));
  } catch {
    return undefined;
  }
}

/** The watched counters that grew between two readings, or that none did. */
export function describeTcp(from: TcpCounters, to: TcpCounters): string {
  if (!from || !to) return 'TCP counters unknown';
  const grown = WATCHED.filter((name) => to[name] > from[name]).map((name) => `${name} +${to[name] - from[name]}`);
  return grown.length > 0 ? `TCP: ${grown.join(', ')}` : 'TCP: no overflow, abort or challenge';
}
