import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CompleteDeliveryAcknowledgements } from '../../shared/schemas/deliveries.js';
import { PushRequest, SyncEvent } from '../../shared/schemas/sync.js';
import { fixtureDir, readFixtures, readReleases, type Fixtures } from './fixtures.js';

interface Schemas {
  push: z.ZodType;
  event: z.ZodType;
  acknowledgements: z.ZodType;
}

const current: Schemas = { push: PushRequest, event: SyncEvent, acknowledgements: CompleteDeliveryAcknowledgements };

/** What a release sent or keeps, each with where it comes from. */
function recorded(version: string, fixtures: Fixtures) {
  const items: { where: string; kind: keyof Schemas; value: unknown }[] = [];
  for (const [layout, recording] of Object.entries(fixtures.recordings))
    recording.requests.forEach((request, i) => {
      const where = `${version} ${layout} request ${i} (${request.method} ${request.path})`;
      if (request.path === '/sync/push') items.push({ where, kind: 'push', value: request.json });
      const part = request.form?.find((f) => f.name === 'acknowledgements');
      if (part && 'value' in part) items.push({ where, kind: 'acknowledgements', value: JSON.parse(part.value) });
    });
  const kv = path.join(fixtureDir(version), 'files', 'kv');
  for (const name of readdirSync(kv).filter((n) => n.startsWith('outbox'))) {
    const { action } = JSON.parse(readFileSync(path.join(kv, name), 'utf8'));
    const where = `${version} stored ${decodeURIComponent(name)}`;
    if (action.kind === 'event') items.push({ where, kind: 'event', value: action.event });
    if (action.kind === 'completion') items.push({ where, kind: 'acknowledgements', value: action.acknowledgements });
  }
  return items;
}

/** Every field of a release's fixtures that `schemas` no longer accept, named by its path. */
function misfits(version: string, schemas: Schemas): string[] {
  return recorded(version, readFixtures(version)).flatMap(({ where, kind, value }) => {
    const result = schemas[kind].safeParse(value);
    return result.success ? [] : result.error.issues.map((issue) => `${where}: ${issue.path.join('.') || '(whole)'}: ${issue.message}`);
  });
}

const versions = readReleases()
  .filter((r) => r.fixtures)
  .map((r) => r.version);

describe.each(versions)('the shared schemas and the fixtures of release %s', (version) => {
  it('hold every push body, event and completion the release sent or stored', () => {
    expect(recorded(version, readFixtures(version)).length).toBeGreaterThan(30);
    expect(misfits(version, current)).toEqual([]);
  });

  it('name the field when a schema change no longer fits the release', () => {
    const stricter: Schemas = {
      push: PushRequest.extend({ deviceName: z.string() }),
      event: z.object({ eventId: z.string(), occurredAt: z.number() }),
      acknowledgements: CompleteDeliveryAcknowledgements.extend({ receiptConfirmed: z.literal(false) }),
    };
    const found = misfits(version, stricter);
    expect(found).toContainEqual(expect.stringMatching(/request 0 \(POST \/sync\/push\): deviceName: /));
    expect(found).toContainEqual(expect.stringMatching(/stored outbox\/\S+: occurredAt: /));
    expect(found).toContainEqual(expect.stringMatching(/complete\): receiptConfirmed: /));
  });
});
