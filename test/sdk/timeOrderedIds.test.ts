import { afterEach, describe, expect, it } from 'vitest';
import { TourlineClient } from '../../client-sdk/index.js';
import { MemoryStore } from '../../client-sdk/storage/keyValue.js';
import { fakeService, newTour } from './fakes.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const clients: TourlineClient[] = [];
afterEach(async () => {
  while (clients.length) await clients.pop()!.close();
});

describe('the ids the SDK makes', () => {
  it('are time-ordered UUIDv7: event (and scan) ids and note ids sort as the actions were made, also after a restart', async () => {
    const service = fakeService();
    const storage = new MemoryStore();
    const tour = newTour({ deliveries: 2, positions: 3 });
    const open = async () => {
      const client = await TourlineClient.open({
        baseUrl: 'http://tourline.test',
        getToken: () => 'token',
        webSocket: null,
        fetch: service.fetch,
        storage,
      });
      clients.push(client);
      return client;
    };
    const first = await open();
    await first.state.putTour(tour);
    const made: string[] = [];
    for (const position of tour.deliveries[0].positions) made.push((await first.scan(position.id)).eventId);
    const note = await first.createNote(tour.deliveries[1].id, { text: 'Hintereingang' });
    made.push(note.noteId, note.eventId); // the note id is made first
    await first.close();
    clients.pop();
    const second = await open();
    made.push((await second.scan(tour.deliveries[1].positions[0].id)).eventId);

    expect(second.clientId).toMatch(UUID_V7);
    made.forEach((id) => expect(id).toMatch(UUID_V7));
    expect([...made].sort()).toEqual(made);
    const pending = second.outbox.pending().map((e) => e.id);
    expect(pending).toEqual(made.filter((id) => id !== note.noteId));
  });
});
