import { randomUUID } from 'node:crypto';
import { EventStore, RecordedEvent, WrongExpectedRevisionError } from '../../src/eventstore/event-store';

/** One contract every event store adapter passes. `open` gives a store over an empty or shared log. */
export function describeEventStoreContract(name: string, open: () => Promise<EventStore>, enabled = true): void {
  (enabled ? describe : describe.skip)(`event store contract: ${name}`, () => {
    let store: EventStore;
    const stream = () => `contract-${randomUUID()}`;
    const ev = (n: number) => ({ type: 'Happened', data: { n, text: `é ${n} "quoted"` } });

    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });

    it('appends to a new stream and reads it back in order', async () => {
      const s = stream();
      const first = await store.append(s, [ev(1), ev(2)], 'no_stream');
      expect(first.nextExpectedRevision).toBe(1);
      const second = await store.append(s, [ev(3)], 1);
      expect(second.nextExpectedRevision).toBe(2);
      expect(second.position).toBeGreaterThan(first.position);
      const read = await store.readStream(s);
      expect(read.map((e) => [e.revision, e.type, (e.data as { n: number }).n])).toEqual([
        [0, 'Happened', 1],
        [1, 'Happened', 2],
        [2, 'Happened', 3],
      ]);
      expect(read[0].data).toEqual(ev(1).data);
      expect(read.every((e) => e.streamId === s && Number.isSafeInteger(e.position) && e.position > 0)).toBe(true);
      expect(read[2].position).toBe(second.position);
      expect(Math.abs(read[0].recordedAt - Date.now())).toBeLessThan(60_000);
    });

    it('has an identity: the same however often and however concurrently it is asked, whatever is appended', async () => {
      const [first, second] = await Promise.all([store.logId(), store.logId()]);
      expect(first).toMatch(/^[0-9a-f-]{36}$/);
      expect(second).toBe(first);
      await store.append(stream(), [ev(1)], 'no_stream');
      expect(await store.logId()).toBe(first);
    });

    it('reads an unknown stream as empty', async () => {
      expect(await store.readStream(stream())).toEqual([]);
    });

    it('rejects a wrong expected revision and writes nothing', async () => {
      const s = stream();
      await store.append(s, [ev(1)], 'no_stream');
      await expect(store.append(s, [ev(2)], 'no_stream')).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      await expect(store.append(s, [ev(2)], 5)).rejects.toMatchObject({ streamId: s, actual: 0 });
      await expect(store.append(stream(), [ev(2)], 0)).rejects.toMatchObject({ actual: 'no_stream' });
      expect(await store.readStream(s)).toHaveLength(1);
    });

    it('says it takes appends (no failure) while they succeed, and after a conflict, which is no failure of the store', async () => {
      const s = stream();
      expect(await store.appendFailure()).toBeNull();
      await store.append(s, [ev(1)], 'no_stream');
      await expect(store.append(s, [ev(2)], 'no_stream')).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      expect(await store.appendFailure()).toBeNull();
    });

    it("appends with 'any' whatever the stream holds", async () => {
      const s = stream();
      await store.append(s, [ev(1)], 'any');
      await store.append(s, [ev(2)], 'any');
      expect((await store.readStream(s)).map((e) => e.revision)).toEqual([0, 1]);
    });

    it('lets exactly one of concurrent appends with the same expected revision win', async () => {
      const s = stream();
      await store.append(s, [ev(0)], 'no_stream');
      const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => store.append(s, [ev(i)], 0)));
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(rejected.every((r) => r.reason instanceof WrongExpectedRevisionError)).toBe(true);
      expect(await store.readStream(s)).toHaveLength(2);
    });

    it('reads all events after a position, in log order, with a limit', async () => {
      const before = await store.headPosition();
      const s1 = stream();
      const s2 = stream();
      await store.append(s1, [ev(1)], 'no_stream');
      await store.append(s2, [ev(2), ev(3)], 'no_stream');
      await store.append(s1, [ev(4)], 0);
      const all = (await store.readAll(before, 1000)).filter((e) => e.streamId === s1 || e.streamId === s2);
      expect(all.map((e) => (e.data as { n: number }).n)).toEqual([1, 2, 3, 4]);
      const positions = all.map((e) => e.position);
      expect([...positions].sort((a, b) => a - b)).toEqual(positions);
      expect(new Set(positions).size).toBe(4);
      expect(await store.headPosition()).toBe(positions[3]);
      const page = await store.readAll(before, 2);
      expect(page).toHaveLength(2);
      const rest = await store.readAll(page[1].position, 1000);
      expect(rest.every((e) => e.position > page[1].position)).toBe(true);
    });

    it('gives the events of one append distinct, increasing positions, and answers with the last one', async () => {
      const s = stream();
      const result = await store.append(s, [ev(1), ev(2), ev(3)], 'no_stream');
      const read = await store.readStream(s);
      const positions = read.map((e) => e.position);
      expect(positions[0]).toBeLessThan(positions[1]);
      expect(positions[1]).toBeLessThan(positions[2]);
      expect(result).toEqual({ nextExpectedRevision: 2, position: positions[2] });
      // Each of them is a place to read on from.
      const ours = async (after: number) =>
        (await store.readAll(after, 1000)).filter((e) => e.streamId === s).map((e) => (e.data as { n: number }).n);
      expect(await ours(positions[0])).toEqual([2, 3]);
      expect(await ours(positions[1])).toEqual([3]);
      expect(await ours(positions[2])).toEqual([]);
    });

    it('reads what follows any number, not only an event position (a checkpoint minus one, one from another log)', async () => {
      const before = await store.headPosition();
      const s = stream();
      await store.append(s, [ev(1)], 'no_stream');
      await store.append(s, [ev(2), ev(3)], 0);
      await store.append(s, [ev(4)], 2);
      const events = await store.readStream(s);
      const p = events.map((e) => e.position);
      const expected = (after: number) => events.filter((e) => e.position > after).map((e) => (e.data as { n: number }).n);
      const numbers = [
        before,
        before + 1,
        p[0] - 1,
        p[0],
        p[0] + 1,
        p[1] - 1,
        p[1] + 1,
        p[2] - 1,
        p[2] + 1,
        p[3] - 1,
        p[3],
        p[3] + 1,
      ];
      for (const after of numbers) {
        const read = (await store.readAll(after, 1000)).filter((e) => e.streamId === s);
        expect({ after, read: read.map((e) => (e.data as { n: number }).n) }).toEqual({ after, read: expected(after) });
      }
      // The first event after a number is the first with a greater position, whatever came before.
      const [next] = await store.readAll(p[1] - 1, 1);
      expect(next.position).toBeGreaterThan(p[1] - 1);
      expect(next.position).toBeLessThanOrEqual(p[1]);
      // A checkpoint far below every position (another log's), and one beyond the head.
      const [first] = await store.readAll(0, 1);
      expect((await store.readAll(1, 1))[0]?.position).toBeGreaterThan(1);
      expect(first.position).toBeGreaterThan(0);
      expect(await store.readAll(Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
    });

    it('subscribes from a number that is not an event position', async () => {
      const s = stream();
      await store.append(s, [ev(1), ev(2)], 'no_stream');
      const [, second] = await store.readStream(s);
      const abort = new AbortController();
      const seen: number[] = [];
      const done = (async () => {
        for await (const batch of store.subscribe(second.position - 1, abort.signal)) {
          for (const e of batch) if (e.streamId === s) seen.push((e.data as { n: number }).n);
          if (seen.length >= 2) abort.abort();
        }
      })();
      await store.append(s, [ev(3)], 1);
      await done;
      expect(seen).toEqual([2, 3]);
    });

    it('subscribes: catches up from a position, then delivers live events in order', async () => {
      const s = stream();
      await store.append(s, [ev(1), ev(2)], 'no_stream');
      const from = (await store.readStream(s))[0].position;
      const abort = new AbortController();
      const seen: RecordedEvent[] = [];
      const done = (async () => {
        for await (const batch of store.subscribe(from, abort.signal)) {
          for (const e of batch) if (e.streamId === s) seen.push(e);
          if (seen.length >= 3) abort.abort();
        }
      })();
      await store.append(s, [ev(3)], 1);
      await store.append(s, [ev(4)], 2);
      await done;
      expect(seen.map((e) => (e.data as { n: number }).n)).toEqual([2, 3, 4]);
    });

    it('ends a subscription when its signal aborts, even with nothing to deliver', async () => {
      const abort = new AbortController();
      const head = await store.headPosition();
      const consumed = (async () => {
        let batches = 0;
        for await (const _ of store.subscribe(head, abort.signal)) batches += 1;
        return batches;
      })();
      abort.abort();
      expect(await consumed).toBe(0);
    });
  });
}
