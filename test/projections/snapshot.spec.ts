import { existsSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/config';
import { SqliteEventStore } from '../../src/eventstore/sqlite-event-store';
import { MemoryProjectionStore } from '../../src/projections/memory-projection-store';
import { STALE_SIDE_FILE_MS } from '../../src/projections/snapshot-file';
import { openRuntime } from '../../src/runtime/runtime';
import { fundedOrganization } from '../support/runtime';
import { tempDir } from '../support/temp';
import { linesTo } from '../../src/runtime-log/runtime-log';

describe('in-process read models saved with their checkpoint', () => {
  it('start again from the saved position instead of replaying the whole log', async () => {
    const dir = tempDir('snapshot');
    const env = { DATA_DIR: dir.path, REDIS_URL: '' };
    try {
      const first = await openRuntime(loadConfig(env));
      const orgId = await fundedOrganization(first, 5_000_000);
      await first.close();
      expect(existsSync(join(dir.path, 'read-models.snapshot.json'))).toBe(true);

      // An event appended while no instance runs is the only one replayed at the next start.
      const log = new SqliteEventStore(join(dir.path, 'events.sqlite'));
      const head = await log.headPosition();
      await log.close();
      const second = await openRuntime(loadConfig(env));
      expect(second.projector.position).toBe(head);
      await second.ledger.grant(orgId, 1_000_000, 'more');
      await second.projector.catchUp();
      expect((await second.projections.balance(orgId)).granted).toBe(6_000_000);
      await second.close();
    } finally {
      dir.cleanup();
    }
  });

  it('a start removes the side files of saves a killed process never finished, saying so, and keeps a fresh one', async () => {
    const dir = tempDir('snapshot-side-files');
    try {
      const stale = join(dir.path, 'read-models.snapshot.json.6d1e.partial');
      const fresh = join(dir.path, 'read-models.snapshot.json.a7c3.partial');
      writeFileSync(stale, '{"version":6,"posi');
      writeFileSync(fresh, '{"version":6,"posi');
      const killedAt = (Date.now() - STALE_SIDE_FILE_MS - 60_000) / 1000;
      utimesSync(stale, killedAt, killedAt);
      const lines: string[] = [];
      const runtime = await openRuntime(loadConfig({ DATA_DIR: dir.path, REDIS_URL: '' }), {
        log: linesTo((line) => lines.push(line)),
      });
      await runtime.close();
      expect(lines).toContainEqual(
        expect.stringMatching(
          /read-models\.snapshot\.json: removed 1 side file\(s\) of saves never finished \(read-models\.snapshot\.json\.6d1e\.partial\)$/,
        ),
      );
      expect(readdirSync(dir.path).filter((name) => name.endsWith('.partial'))).toEqual([
        'read-models.snapshot.json.a7c3.partial',
      ]);
    } finally {
      dir.cleanup();
    }
  });

  it('rebuilds, saying why, from a saved state that belongs to another log, even one as long', async () => {
    const a = tempDir('snapshot-a');
    try {
      const runtime = await openRuntime(loadConfig({ DATA_DIR: a.path, REDIS_URL: '' }));
      await fundedOrganization(runtime, 1);
      await runtime.close();
      // A new log in the same place (the old one deleted), with as many events as the snapshot's position.
      for (const f of ['events.sqlite', 'events.sqlite-wal', 'events.sqlite-shm']) rmSync(join(a.path, f), { force: true });
      const other = new SqliteEventStore(join(a.path, 'events.sqlite'));
      for (let i = 0; i < 5; i++) await other.append(`other-${i}`, [{ type: 'Unrelated', data: {} }], 'no_stream');
      await other.close();
      const lines: string[] = [];
      const again = await openRuntime(loadConfig({ DATA_DIR: a.path, REDIS_URL: '' }), {
        log: linesTo((line) => lines.push(line)),
      });
      expect(lines[0]).toMatch(/^projector: the read models are of another log \(.+\): rebuilding$/);
      expect(await again.projections.ledgers()).toEqual(new Map());
      expect(await again.projections.checkpoint()).toBe(5);
      await again.close();
    } finally {
      a.cleanup();
    }
  });

  it('saves in the background while serving, one save at a time, and for good on close', async () => {
    const dir = tempDir('snapshot-periodic');
    try {
      const file = join(dir.path, 'read-models.snapshot.json');
      const store = new MemoryProjectionStore(10, { file, everyMs: 0, logId: 'test-log' });
      const grant = (position: number) => ({
        streamId: 'credits-org-1',
        revision: position - 1,
        position,
        recordedAt: 0,
        type: 'CreditsGranted',
        data: { orgId: 'org-1', grantId: `g${position}`, amount: 1000, reason: 'test', grantedAt: 0 },
      });
      await store.apply([grant(1)]);
      // A second batch while the first save is still writing does not start another one.
      await store.apply([grant(2)]);
      expect(existsSync(file)).toBe(false);
      await store.close();
      const saved = JSON.parse(readFileSync(file, 'utf8')) as { position: number };
      expect(saved.position).toBe(2);
      expect(existsSync(`${file}.${process.pid}.partial`)).toBe(false);
    } finally {
      dir.cleanup();
    }
  });
});
