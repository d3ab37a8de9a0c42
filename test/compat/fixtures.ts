import { readFileSync } from 'node:fs';
import path from 'node:path';
import { rewriteIds, type MasterData, type Tour } from './scenario.js';

const here = import.meta.dirname;

export interface Release {
  version: string;
  /** Null until the release is cut. */
  commit: string | null;
  date: string | null;
  fixtures: string | null;
}

export function readReleases(): Release[] {
  return (JSON.parse(readFileSync(path.join(here, 'releases.json'), 'utf8')) as { releases: Release[] }).releases;
}

export const fixtureDir = (version: string) => path.join(here, version);

export type FormField = { name: string; value: string } | { name: string; fileName: string; type: string; base64: string };

/** A request the release's SDK sent, and what its service answered. */
export interface RecordedRequest {
  method: string;
  path: string;
  json?: unknown;
  form?: FormField[];
  status: number;
  answer: unknown;
}

/** One layout's day: the tour and master data it started from, what was sent, and the tour after it (none: nothing was sent). */
export interface Recording {
  tour: Tour;
  master: MasterData;
  requests: RecordedRequest[];
  tourAfter: Tour | null;
}

/** The storage layouts recorded: files (photos as files), SQLite (photos inside), and files after a 426 the release did not know. */
export const layouts = ['files', 'sqlite', 'refused'] as const;
export type Layout = (typeof layouts)[number];

export interface Fixtures {
  release: string;
  commit: string;
  recordings: Record<Layout, Recording>;
}

export function readFixtures(version: string): Fixtures {
  return JSON.parse(readFileSync(path.join(fixtureDir(version), 'recording.json'), 'utf8')) as Fixtures;
}

/** The recorded request for another service: its ids mapped, multipart rebuilt. */
export function replayed(request: RecordedRequest, ids: Map<string, string>): { path: string; body: unknown } {
  const map = (text: string) => rewriteIds(text, ids);
  if (!request.form)
    return { path: map(request.path), body: request.json === undefined ? undefined : JSON.parse(map(JSON.stringify(request.json))) };
  const form = new FormData();
  for (const field of request.form) {
    if ('value' in field) form.append(field.name, map(field.value));
    else form.append(field.name, new Blob([Buffer.from(field.base64, 'base64')], { type: field.type }), field.fileName);
  }
  return { path: map(request.path), body: form };
}
