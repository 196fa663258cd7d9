import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EventStoreDbEventStore } from '../../src/eventstore/eventstoredb-event-store';
import { MemoryProjectionStore } from '../../src/projections/memory-projection-store';
import { Projector } from '../../src/projections/projector';
import { SimulatedEventStoreDb } from '../support/simulated-eventstoredb';
import { tempDir } from '../support/temp';
import { linesTo } from '../../src/runtime-log/runtime-log';

// EVENTSTORE_URL without REDIS_URL: the in-process read models start from their saved snapshot,
// checked with readAll(saved.position - 1, 1) — a number that is never an EventStoreDB position.
describe('in-process read models saved over EventStoreDB (simulated server)', () => {
  const dir = tempDir('esdb-snapshot');
  afterAll(() => dir.cleanup());
  const over = (server: SimulatedEventStoreDb) =>
    EventStoreDbEventStore.withClient(server, { appendCredentials: { username: 'u', password: 'p' }, retryDelaysMs: [] });

  it('start again from their snapshot in a new process, sending the server only exact positions', async () => {
    const server = new SimulatedEventStoreDb();
    const file = join(dir.path, 'a.snapshot.json');
    const first = over(server);
    // Identified when opened, as the runtime does.
    const logId = await first.logId();
    await first.append('s', [{ type: 'Happened', data: { n: 1 } }], 'no_stream');
    server.systemEvent();
    await first.append('s', [{ type: 'Happened', data: { n: 2 } }], 0);
    const saved = new MemoryProjectionStore(100, { file, everyMs: 0, logId });
    await saved.apply(await first.readAll(0, 100));
    await saved.close();
    await first.close();

    const later = over(server);
    const loaded = new MemoryProjectionStore(100, { file, everyMs: 0, logId });
    expect(loaded.loadSnapshot()).toBe(true);
    // The projector checks the event at their checkpoint is the one they end with, and trusts them.
    const lines: string[] = [];
    const projector = new Projector(
      later,
      loaded,
      100,
      linesTo((line) => lines.push(line)),
    );
    await projector.start();
    expect(lines).toEqual([]);
    expect(await loaded.checkpoint()).toBe((await later.readStream('s'))[1].position);
    expect(server.invalidPositions).toEqual([]);
    await projector.stop();
    await later.close();
  });

  it('ignore a snapshot saved over the SQLite log, without an error', async () => {
    const server = new SimulatedEventStoreDb();
    const store = over(server);
    await store.append('s', [{ type: 'Happened', data: { n: 1 } }], 'no_stream');
    const file = join(dir.path, 'b.snapshot.json');
    writeFileSync(
      file,
      JSON.stringify({
        version: 3,
        position: 3,
        last: { streamId: 's', revision: 0 },
        orgs: [],
        orgRecords: [],
        open: [],
        keys: [],
        requests: [],
        memberships: [],
        dailySpend: [],
      }),
    );
    const loaded = new MemoryProjectionStore(100, { file, everyMs: 0, logId: await store.logId() });
    expect(loaded.loadSnapshot()).toBe(false);
    expect(server.invalidPositions).toEqual([]);
    await store.close();
  });
});
