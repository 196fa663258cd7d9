import { join } from 'node:path';
import { WrongExpectedRevisionError } from '../../src/eventstore/event-store';
import { SqliteEventStore } from '../../src/eventstore/sqlite-event-store';
import { TimedEventStore } from '../../src/eventstore/timed-event-store';
import { MemoryProjectionStore } from '../../src/projections/memory-projection-store';
import { Projector } from '../../src/projections/projector';
import { tempDir } from '../support/temp';
import { linesTo } from '../../src/runtime-log/runtime-log';

/**
 * An append that finds its stream gone back makes the projector look at the log (as the runtime
 * wires it): on a log that lost its identity it reports the log replaced, once; on the same log
 * an ordinary conflict changes nothing.
 */
it('an append finding its stream gone back: the log checked; replaced when it has no identity, said once; an ordinary conflict changes nothing', async () => {
  const dir = tempDir('log-replaced');
  const sqlite = new SqliteEventStore(join(dir.path, 'events.sqlite'));
  // The log as it would answer once emptied: no identity (the rest is the SQLite log's).
  let emptied = false;
  const answering = new (class extends TimedEventStore {
    readLogId = async () => (emptied ? null : sqlite.readLogId());
  })(sqlite);
  const events = new TimedEventStore(answering);
  const lines: string[] = [];
  const projector = new Projector(
    events,
    new MemoryProjectionStore(10),
    10,
    linesTo((line) => lines.push(line)),
  );
  const checks: Promise<boolean>[] = [];
  events.onRevisionWentBack(() => checks.push(projector.sameLog()));
  const conflict = (expected: number) => events.append('org-a', [{ type: 'Noted', data: {} }], expected);
  try {
    await events.append('org-a', [{ type: 'OrganizationCreated', data: { orgId: 'a', name: 'a', createdAt: 1 } }], 'no_stream');
    await projector.start();

    // Another writer moved the stream on: an ordinary conflict, no check.
    await expect(events.append('org-a', [{ type: 'Noted', data: {} }], 'no_stream')).rejects.toThrow(WrongExpectedRevisionError);
    expect(checks).toHaveLength(0);
    // Gone back on the same log (a writer's mistake, not a new log): checked, and the same.
    await expect(conflict(5)).rejects.toThrow(WrongExpectedRevisionError);
    expect(await Promise.all(checks)).toEqual([true]);
    expect(projector.logReplaced).toBeNull();

    emptied = true;
    await expect(conflict(5)).rejects.toThrow(WrongExpectedRevisionError);
    await expect(conflict(7)).rejects.toThrow(WrongExpectedRevisionError);
    expect(await Promise.all(checks)).toEqual([true, false, false]);
    expect(projector.logReplaced).toMatch(/^the log holds no identity/);
    expect(lines.filter((line) => line.includes('not the log the read models describe'))).toHaveLength(1);
    expect(lines[lines.length - 1]).toMatch(
      /model-gateway projections rebuild\) or restores the log, then restarts the gateway$/,
    );
  } finally {
    await projector.stop();
    await sqlite.close();
    dir.cleanup();
  }
});
