import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { RecordedEvent } from '../../src/eventstore/event-store';
import { loadConfig } from '../../src/config/config';
import type { ReadModelStore } from '../../src/projections/projection-store';
import { ReadModel } from '../../src/projections/read-model';
import { availableOf } from '../../src/projections/read-models';
import { ReadModelsLostError, RedisProjectionStore } from '../../src/projections/redis-projection-store';
import { scanKeys, type RedisTarget } from '../../src/projections/redis-client';
import { APPLY } from '../../src/projections/redis-scripts';
import type { StoredKey } from '../../src/projections/writes';
import { openRuntime } from '../../src/runtime/runtime';
import { uniquePrefix } from './redis';
import { openTestRuntime } from './runtime';

/**
 * The read models' stores' contract: every store (in the process, a single Redis, a Redis Cluster)
 * passes the same suite.
 */

/** A small log written by hand: one organization, a key, grants, reservations and resolutions. */
export function sampleLog(orgId = 'org-a') {
  const log: RecordedEvent[] = [];
  const add = (type: string, data: Record<string, unknown>) =>
    log.push({ type, data, streamId: 's', revision: 0, position: log.length + 1, recordedAt: 0 });
  const facts = { requestId: 'q', keyId: 'k1', surface: 'chat-completions', model: 'm' };
  add('OrganizationCreated', { orgId, name: 'A', createdAt: 1 });
  add('ApiKeyCreated', { keyId: 'k1', orgId, name: 'ci', hash: `hash-${orgId}`, prefix: 'sk-svc-abcdef', createdAt: 2 });
  add('CreditsGranted', { orgId, grantId: 'g', amount: 1_000, reason: 'r', grantedAt: 3 });
  add('CreditsReserved', { ...facts, reservationId: 'r1', orgId, amount: 300, reservedAt: 4, expiresAt: 100 });
  add('CreditsReserved', { ...facts, reservationId: 'r2', orgId, amount: 200, reservedAt: 5, expiresAt: 5_000 });
  add('ReservationSettled', {
    ...facts,
    reservationId: 'r1',
    orgId,
    host: 'h',
    hostModel: 'hm',
    inputTokens: 1,
    outputTokens: 1,
    prices: { input: 100_000_000, output: 150_000_000 },
    amount: 250,
    held: 300,
    status: 'ok',
    latencyMs: 9,
    settledAt: 6,
  });
  add('ApiKeyRevoked', { keyId: 'k1', orgId, hash: `hash-${orgId}`, revokedAt: 7 });
  return log;
}

export function describeProjectionStore(name: string, open: () => Promise<ReadModelStore>, enabled = true) {
  (enabled ? describe : describe.skip)(`projection store: ${name}`, () => {
    let store: ReadModelStore;
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.reset();
      await store.close();
    });

    it('projects balances, keys and the request log from events', async () => {
      await store.apply(sampleLog());
      expect(await store.balance('org-a')).toEqual({ granted: 1_000, spent: 250, reserved: 200, pending: 0 });
      expect(await store.keyByHash('hash-org-a')).toMatchObject({ keyId: 'k1', orgId: 'org-a', revokedAt: 7 });
      expect((await store.keysOf('org-a')).map((k) => k.keyId)).toEqual(['k1']);
      expect(await store.organization('org-a')).toMatchObject({ name: 'A' });
      const [entry] = await store.recentRequests('org-a', 10);
      expect(entry).toMatchObject({ reservationId: 'r1', cost: 250, inputTokens: 1, status: 'ok', host: 'h' });
      expect(await store.checkpoint()).toBe(7);
    });

    it('logs a refused request beside the others, holding and charging nothing', async () => {
      const log = sampleLog();
      const refused = {
        requestId: 'q2',
        keyId: 'k1',
        surface: 'messages',
        model: 'm',
        refusalId: 'x1',
        orgId: 'org-a',
        status: 'insufficient_credits',
        reason: 'insufficient credits',
        latencyMs: 1,
        refusedAt: 9,
      };
      log.push({ type: 'RequestRefused', data: refused, streamId: 'refusal-x1', revision: 0, position: 8, recordedAt: 0 });
      await store.apply(log);
      await store.apply(log);
      expect(await store.balance('org-a')).toEqual({ granted: 1_000, spent: 250, reserved: 200, pending: 0 });
      const entries = await store.recentRequests('org-a', 10);
      expect(entries).toHaveLength(2);
      expect(entries[0]).toEqual({
        requestId: 'q2',
        reservationId: null,
        time: 9,
        surface: 'messages',
        model: 'm',
        host: null,
        keyId: 'k1',
        inputTokens: 0,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        outputTokens: 0,
        cost: 0,
        latencyMs: 1,
        status: 'insufficient_credits',
      });
      expect((await store.ledgers()).get('org-a')?.position).toBe(8);
      expect(await store.dailySpend('org-a')).toEqual(new Map([['1970-01-01', 250]]));
    });

    it("logs a settlement's cache reads and writes (5-minute and 1-hour together); a settlement written before them has none", async () => {
      const log = sampleLog();
      log.push({
        type: 'ReservationSettled',
        data: {
          requestId: 'q3',
          keyId: 'k1',
          surface: 'messages',
          model: 'm',
          reservationId: 'r2',
          orgId: 'org-a',
          host: 'h',
          hostModel: 'hm',
          inputTokens: 10,
          cacheReadTokens: 2000,
          cacheWriteTokens: 300,
          cacheWrite1hTokens: 100,
          outputTokens: 5,
          prices: { input: 3_000, cacheRead: 300, cacheWrite: 3_750, cacheWrite1h: 6_000, output: 15_000 },
          // 10 × 3,000 + 2,000 × 300 + 300 × 3,750 + 100 × 6,000 + 5 × 15,000 = 2,430,000; / 1e6 → 3
          amount: 3,
          held: 200,
          status: 'ok',
          latencyMs: 9,
          settledAt: 8,
        },
        streamId: 's',
        revision: 0,
        position: 8,
        recordedAt: 0,
      });
      await store.apply(log);
      const [cached, older] = await store.recentRequests('org-a', 10);
      expect(cached).toMatchObject({
        requestId: 'q3',
        inputTokens: 10,
        cacheReadTokens: 2000,
        cacheWriteTokens: 400,
        outputTokens: 5,
      });
      expect(older).toMatchObject({
        reservationId: 'r1',
        inputTokens: 1,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        outputTokens: 1,
      });
    });

    it('projects memberships, spend per day and when each key was last used', async () => {
      const log = sampleLog();
      log.push({
        type: 'MemberAdded',
        data: { orgId: 'org-a', userId: 'u1', role: 'owner', addedAt: 8 },
        streamId: 's',
        revision: 0,
        position: 8,
        recordedAt: 0,
      });
      await store.apply(log);
      expect(await store.organizationsOf('u1')).toEqual([{ orgId: 'org-a', name: 'A', createdAt: 1 }]);
      expect(await store.organizationsOf('nobody')).toEqual([]);
      expect(await store.dailySpend('org-a')).toEqual(new Map([['1970-01-01', 250]]));
      expect((await store.keysOf('org-a'))[0].lastUsedAt).toBe(6);
      const model = new ReadModel(5);
      log.forEach((e) => model.apply(e));
      await store.reset();
      await store.load(model);
      expect(await store.organizationsOf('u1')).toHaveLength(1);
      expect(await store.dailySpend('org-a')).toEqual(new Map([['1970-01-01', 250]]));
      expect((await store.keysOf('org-a'))[0].lastUsedAt).toBe(6);
    });

    it('projects members: added (with their email), allowed to manage keys, removed; applied twice or loaded, the same', async () => {
      const log = sampleLog();
      const add = (type: string, data: Record<string, unknown>) =>
        log.push({ type, data, streamId: 's', revision: 0, position: log.length + 1, recordedAt: 0 });
      add('MemberAdded', { orgId: 'org-a', userId: 'u1', role: 'owner', addedAt: 8, email: 'ann@example.com' });
      add('MemberAdded', { orgId: 'org-a', userId: 'u2', role: 'member', addedAt: 9, email: 'bob@example.com' });
      add('MemberAdded', { orgId: 'org-a', userId: 'u3', role: 'member', addedAt: 10 });
      add('MemberKeyAccessSet', { orgId: 'org-a', userId: 'u2', manageKeys: true, setAt: 11 });
      add('MemberRemoved', { orgId: 'org-a', userId: 'u3', removedAt: 12 });
      const expected = [
        { userId: 'u1', email: 'ann@example.com', role: 'owner', manageKeys: false, addedAt: 8 },
        { userId: 'u2', email: 'bob@example.com', role: 'member', manageKeys: true, addedAt: 9 },
      ];
      await store.apply(log);
      await store.apply(log.slice(-3));
      expect(await store.membersOf('org-a')).toEqual(expected);
      expect(await store.membership('org-a', 'u2')).toEqual(expected[1]);
      expect(await store.membership('org-a', 'u3')).toBeNull();
      expect(await store.organizationsOf('u3')).toEqual([]);
      const model = new ReadModel(5);
      log.forEach((e) => model.apply(e));
      await store.reset();
      await store.load(model);
      expect(await store.membersOf('org-a')).toEqual(expected);
      expect(await store.organizationsOf('u3')).toEqual([]);
      expect(await store.organizationsOf('u2')).toHaveLength(1);
    });

    it('applies each event once, however often it is delivered', async () => {
      const log = sampleLog();
      await store.apply(log);
      await store.apply(log);
      await store.apply(log.slice(2, 5));
      expect(await store.balance('org-a')).toEqual({ granted: 1_000, spent: 250, reserved: 200, pending: 0 });
      expect(await store.recentRequests('org-a', 10)).toHaveLength(1);
    });

    it('admits a hold only when the available balance covers it, and turns it into a reservation', async () => {
      const log = sampleLog().slice(0, 3);
      await store.apply(log);
      expect(await store.hold('org-a', 'x1', 600, 10, { keyId: 'k' })).toEqual({ admitted: true });
      expect(await store.hold('org-a', 'x2', 401, 10, { keyId: 'k' })).toEqual({ admitted: false, available: 400 });
      expect(availableOf(await store.balance('org-a'))).toBe(400);
      await store.apply([
        {
          type: 'CreditsReserved',
          data: {
            requestId: 'q',
            keyId: 'k',
            surface: 's',
            model: 'm',
            reservationId: 'x1',
            orgId: 'org-a',
            amount: 600,
            reservedAt: 1,
            expiresAt: 9,
          },
          streamId: 's',
          revision: 0,
          position: 4,
          recordedAt: 0,
        },
      ]);
      expect(await store.balance('org-a')).toEqual({ granted: 1_000, spent: 0, reserved: 600, pending: 0 });
      expect((await store.expiredReservations(9, 10)).map((r) => r.reservationId)).toEqual(['x1']);
      expect(await store.expiredReservations(8, 10)).toEqual([]);
    });

    it('undoes dropped holds and sweeps holds whose event never came', async () => {
      await store.apply(sampleLog().slice(0, 3));
      await store.hold('org-a', 'h1', 100, 50, { keyId: 'k' });
      await store.hold('org-a', 'h2', 100, 500, { keyId: 'k' });
      await store.dropHold('org-a', 'h1');
      expect((await store.balance('org-a')).pending).toBe(100);
      expect(await store.sweepPendingHolds(499)).toBe(0);
      expect(await store.sweepPendingHolds(500)).toBe(1);
      expect((await store.balance('org-a')).pending).toBe(0);
    });

    it('keeps only the newest requests, newest first', async () => {
      const log = sampleLog().slice(0, 3);
      for (let i = 0; i < 8; i++) {
        const facts = { requestId: `q${i}`, keyId: 'k', surface: 's', model: 'm', orgId: 'org-a', reservationId: `z${i}` };
        log.push(
          {
            type: 'CreditsReserved',
            data: { ...facts, amount: 1, reservedAt: 1, expiresAt: 9 },
            streamId: 's',
            revision: 0,
            position: log.length + 1,
            recordedAt: 0,
          },
          {
            type: 'ReservationReleased',
            data: { ...facts, host: null, held: 1, reason: 'x', status: 'provider_error', latencyMs: 1, releasedAt: i },
            streamId: 's',
            revision: 1,
            position: log.length + 2,
            recordedAt: 0,
          },
        );
      }
      await store.apply(log);
      const recent = await store.recentRequests('org-a', 100);
      expect(recent.length).toBeLessThanOrEqual(5);
      expect(recent[0].requestId).toBe('q7');
      expect(recent.map((r) => r.requestId)).toEqual(['q7', 'q6', 'q5', 'q4', 'q3'].slice(0, recent.length));
    });

    it('finds a request by its id while the log keeps it (the newest, when a client used its id twice), as after a rebuild', async () => {
      const log = sampleLog().slice(0, 3);
      const released = (requestId: string, n: number) => {
        const facts = { requestId, keyId: 'k1', surface: 's', model: 'm', orgId: 'org-a', reservationId: `z${n}` };
        log.push(
          {
            type: 'CreditsReserved',
            data: { ...facts, amount: 1, reservedAt: 1, expiresAt: 9 },
            streamId: `z${n}`,
            revision: 0,
            position: log.length + 1,
            recordedAt: 0,
          },
          {
            type: 'ReservationReleased',
            data: { ...facts, host: null, held: 1, reason: 'x', status: 'provider_error', latencyMs: 1, releasedAt: 100 + n },
            streamId: `z${n}`,
            revision: 1,
            position: log.length + 2,
            recordedAt: 0,
          },
        );
      };
      ['q0', 'q1', 'q2', 'q3', 'q4', 'q5', 'q3'].forEach(released);
      await store.apply(log);
      // Kept (retention 5): q2, q3, q4, q5, q3 again.
      expect(await store.request('org-a', 'q3')).toMatchObject({ requestId: 'q3', reservationId: 'z6', time: 106 });
      expect(await store.request('org-a', 'q2')).toMatchObject({ reservationId: 'z2' });
      expect(await store.request('org-a', 'q1')).toBeNull();
      expect(await store.request('org-b', 'q3')).toBeNull();
      // Three more: the older q3 and q2 leave the log, the newer q3 stays.
      const more = log.length;
      ['x7', 'x8', 'x9'].forEach((id, i) => released(id, 7 + i));
      await store.apply(log.slice(more));
      expect(await store.request('org-a', 'q2')).toBeNull();
      expect(await store.request('org-a', 'q3')).toMatchObject({ reservationId: 'z6' });
      expect((await store.recentRequests('org-a', 10)).map((e) => e.requestId)).toEqual(['x9', 'x8', 'x7', 'q3', 'q5']);

      const model = new ReadModel(5);
      log.forEach((e) => model.apply(e));
      await store.reset();
      await store.load(model);
      expect(await store.request('org-a', 'q3')).toMatchObject({ reservationId: 'z6' });
      expect(await store.request('org-a', 'q4')).toBeNull();
      expect((await store.recentRequests('org-a', 10)).map((e) => e.requestId)).toEqual(['x9', 'x8', 'x7', 'q3', 'q5']);
      // Logged after the rebuild: the log goes on from what was loaded.
      const after = log.length;
      released('q3', 10);
      await store.apply(log.slice(after));
      expect(await store.request('org-a', 'q3')).toMatchObject({ reservationId: 'z10' });
      expect((await store.recentRequests('org-a', 10)).map((e) => e.requestId)).toEqual(['q3', 'x9', 'x8', 'x7', 'q3']);
    });

    it("finds a request by its host's id for a reply passed whole while the log keeps it, as after a rebuild", async () => {
      const log = sampleLog().slice(0, 3);
      const settled = (requestId: string, n: number, upstreamId?: string) => {
        const facts = { requestId, keyId: 'k1', surface: 's', model: 'm', orgId: 'org-a', reservationId: `u${n}` };
        const prices = { input: 1_000, output: 1_000 };
        log.push(
          {
            type: 'CreditsReserved',
            data: { ...facts, amount: 1, reservedAt: 1, expiresAt: 9 },
            streamId: `u${n}`,
            revision: 0,
            position: log.length + 1,
            recordedAt: 0,
          },
          {
            type: 'ReservationSettled',
            data: {
              ...facts,
              host: 'h',
              hostModel: 'hm',
              inputTokens: 1,
              outputTokens: 1,
              prices,
              amount: 1,
              held: 1,
              status: 'ok',
              latencyMs: 1,
              settledAt: 100 + n,
              ...(upstreamId === undefined ? {} : { upstreamId }),
            },
            streamId: `u${n}`,
            revision: 1,
            position: log.length + 2,
            recordedAt: 0,
          },
        );
      };
      settled('q1', 1, 'chatcmpl-host1');
      settled('q2', 2);
      settled('q3', 3, 'msg_host3');
      await store.apply(log);
      expect(await store.request('org-a', 'chatcmpl-host1')).toMatchObject({ requestId: 'q1', upstreamId: 'chatcmpl-host1' });
      expect(await store.request('org-a', 'msg_host3')).toMatchObject({ requestId: 'q3' });
      expect(await store.request('org-a', 'q2')).not.toHaveProperty('upstreamId');
      expect(await store.request('org-b', 'msg_host3')).toBeNull();
      // Three more (retention 5): q1 leaves the log, and its host's id with it.
      const more = log.length;
      ['x4', 'x5', 'x6'].forEach((id, i) => settled(id, 4 + i));
      await store.apply(log.slice(more));
      expect(await store.request('org-a', 'chatcmpl-host1')).toBeNull();
      expect(await store.request('org-a', 'msg_host3')).toMatchObject({ requestId: 'q3' });

      const model = new ReadModel(5);
      log.forEach((e) => model.apply(e));
      await store.reset();
      await store.load(model);
      expect(await store.request('org-a', 'msg_host3')).toMatchObject({ requestId: 'q3' });
      expect(await store.request('org-a', 'chatcmpl-host1')).toBeNull();
    });

    it('reads one key of an organization, with its spend and last use', async () => {
      await store.apply(sampleLog());
      const key = await store.key('org-a', 'k1');
      expect(key).toMatchObject({ keyId: 'k1', orgId: 'org-a', name: 'ci', spent: 250, lastUsedAt: 6, revokedAt: 7 });
      expect(key).toEqual((await store.keysOf('org-a'))[0]);
      expect(await store.key('org-a', 'k2')).toBeNull();
      expect(await store.key('org-b', 'k1')).toBeNull();
    });

    it("counts a key's billing rights from the operator only: not an owner's, not a key of a log from before makers were recorded, not a record an earlier version wrote", async () => {
      const log = sampleLog();
      const made = (keyId: string, extra: Record<string, unknown>) =>
        log.push({
          type: 'ApiKeyCreated',
          data: {
            ...{ keyId, orgId: 'org-a', name: keyId, hash: `hash-${keyId}`, prefix: 'sk-svc-abcdef', createdAt: 8 },
            ...{ kind: 'management', billing: true, ...extra },
          },
          streamId: `apikey-${keyId}`,
          revision: 0,
          position: log.length + 1,
          recordedAt: 0,
        });
      made('operators', { createdBy: { kind: 'operator' } });
      made('owners', { createdBy: { kind: 'member', userId: 'u1' } });
      made('unknown', {});
      await store.apply(log);
      expect(await store.keyByHash('hash-operators')).toMatchObject({ kind: 'management', billing: true });
      for (const hash of ['hash-owners', 'hash-unknown']) {
        const key = await store.keyByHash(hash);
        expect(key).toMatchObject({ kind: 'management' });
        expect(key).not.toHaveProperty('billing');
      }
      expect((await store.keysOf('org-a')).filter((k) => k.billing).map((k) => k.keyId)).toEqual(['operators']);

      // Read models an earlier version wrote hold `billing` on the record of every key made with it,
      // an owner's too: kept (not rebuilt) by this version, they give no rights.
      const model = new ReadModel(5);
      log.forEach((e) => model.apply(e));
      for (const hash of ['hash-owners', 'hash-unknown']) {
        const { billingRights: _none, ...earlier } = model.keyRecords.get(hash)!;
        model.keyRecords.set(hash, { ...earlier, billing: true } as Partial<StoredKey>);
      }
      await store.reset();
      await store.load(model);
      expect(await store.keyByHash('hash-owners')).not.toHaveProperty('billing');
      expect(await store.keyByHash('hash-unknown')).not.toHaveProperty('billing');
      expect(await store.keyByHash('hash-operators')).toMatchObject({ billing: true });
    });

    it('reloads to the same state from a fold of the log', async () => {
      const log = sampleLog();
      await store.apply(log);
      const before = await store.ledgers();
      await store.reset();
      // In Redis, read models being rebuilt answer nothing (others may read them meanwhile); in the process, nothing reads them.
      if (store.kind === 'redis') await expect(store.balance('org-a')).rejects.toBeInstanceOf(ReadModelsLostError);
      else expect(await store.balance('org-a')).toEqual({ granted: 0, spent: 0, reserved: 0, pending: 0 });
      const model = new ReadModel(5);
      log.forEach((e) => model.apply(e));
      await store.load(model);
      expect(await store.ledgers()).toEqual(before);
      expect(await store.keyByHash('hash-org-a')).toMatchObject({ revokedAt: 7 });
      expect(await store.recentRequests('org-a', 10)).toHaveLength(1);
      expect(await store.checkpoint()).toBe(7);
    });
  });
}

/** What a Redis store does when Redis loses the read models or its scripts; `env`: the environment that reaches the same Redis. */
export function describeRedisReadModelsLost(name: string, target: () => RedisTarget, env: () => Record<string, string>) {
  describe(`${name} read models lost`, () => {
    it('notices when Redis was emptied under it', async () => {
      const store = await RedisProjectionStore.connect(target(), uniquePrefix('lost'), 5, 'test-log');
      const log = sampleLog();
      await store.apply(log.slice(0, 4));
      await store.reset(); // as if someone emptied Redis
      await expect(store.apply(log.slice(4))).rejects.toBeInstanceOf(ReadModelsLostError);
      await store.close();
    });

    it('while emptied or being rebuilt, answers no read with "nothing there": a key, a balance, a hold, an organization', async () => {
      const prefix = uniquePrefix('emptied');
      const store = await RedisProjectionStore.connect(target(), prefix, 5, 'test-log');
      const log = sampleLog();
      await store.apply(log.slice(0, 3));
      expect(await store.keyByHash('hash-org-a')).toMatchObject({ keyId: 'k1' });
      expect(await store.keyByHash('hash-unknown')).toBeNull();
      expect(await store.hold('org-unknown', 'x', 1, 10, { keyId: 'k' })).toEqual({ admitted: false, available: 0 });
      // Redis restarted without its data: every key of the test's own prefix gone (the test Redis is shared).
      for await (const keys of scanKeys(store.client, `${prefix}*`))
        await Promise.all(keys.map((key) => store.client.unlink(key)));
      for (const read of [
        () => store.keyByHash('hash-org-a'),
        () => store.balance('org-a'),
        () => store.hold('org-a', 'x', 1, 10, { keyId: 'k1' }),
        () => store.organization('org-a'),
        () => store.key('org-a', 'k1'),
        () => store.request('org-a', 'q'),
      ]) {
        await expect(read()).rejects.toBeInstanceOf(ReadModelsLostError);
      }
      const model = new ReadModel(5);
      log.forEach((e) => model.apply(e));
      await store.load(model);
      expect(await store.keyByHash('hash-org-a')).toMatchObject({ keyId: 'k1', revokedAt: 7 });
      expect(await store.balance('org-a')).toMatchObject({ granted: 1_000 });
      await store.reset();
      await store.close();
    });

    it('applies what comes after Redis lost its scripts (a restart that kept the data)', async () => {
      const store = await RedisProjectionStore.connect(target(), uniquePrefix('scripts'), 5, 'test-log');
      const log = sampleLog();
      await store.apply(log.slice(0, 4));
      await store.flushScripts();
      await store.apply(log.slice(3));
      expect(await store.balance('org-a')).toEqual({ granted: 1_000, spent: 250, reserved: 200, pending: 0 });
      await store.reset();
      await store.close();
    });

    it('rebuilds, at start, read models an older version of the service left (another schema: members missing)', async () => {
      const first = await openTestRuntime({ redis: true, env: env() });
      const { identity, projector } = first.runtime;
      const { orgId } = await identity.createOrganization('Old');
      await identity.registerUser('old@example.com', 'a long password');
      await identity.addMember(orgId, 'old@example.com', 'owner');
      await projector.catchUp();
      // As the previous version left them: no members, no schema number.
      const store = first.runtime.projections as RedisProjectionStore;
      const prefix = first.env.REDIS_PREFIX;
      // One DEL each: on a cluster, the keys of one command must share a slot.
      await Promise.all([`${prefix}schema`, `${prefix}{org:${orgId}}:members`].map((key) => store.client.del(key)));
      await first.runtime.close();

      const second = await openRuntime(loadConfig(first.env));
      try {
        expect(await second.projections.membersOf(orgId)).toEqual([
          expect.objectContaining({ email: 'old@example.com', role: 'owner' }),
        ]);
      } finally {
        // The first runtime is closed: its cleanup (reset, close, remove its directory) runs on the second's.
        await second.projections.reset();
        await second.close();
        rmSync(first.env.DATA_DIR, { recursive: true, force: true });
      }
    });
  });
}

/**
 * Several followers of one log sharing read models in Redis (the workers of a set, instances): what
 * the shared checkpoint covers, another follower has applied; it is neither folded nor sent again.
 */
export function describeRedisFollowersSharing(name: string, target: () => RedisTarget) {
  describe(`${name} read models shared by followers`, () => {
    it("a follower's batch is sent only past the shared checkpoint, and its apply answers the checkpoint", async () => {
      const prefix = uniquePrefix('sharing');
      const first = await RedisProjectionStore.connect(target(), prefix, 5, 'test-log');
      const second = await RedisProjectionStore.connect(target(), prefix, 5, 'test-log');
      try {
        const log = sampleLog();
        log.push({
          type: 'CreditsGranted',
          data: { orgId: 'org-a', grantId: 'g2', amount: 500, reason: 'r', grantedAt: 8 },
          streamId: 's',
          revision: 0,
          position: 8,
          recordedAt: 0,
        });
        expect(await first.apply(log.slice(0, 7))).toBe(7);
        expect(await second.checkpoint()).toBe(7);
        // What the second follower sends by script (EVALSHA, or EVAL after NOSCRIPT), observed on its way to Redis.
        const evalSha = jest.spyOn(second.client, 'evalSha');
        const evalScript = jest.spyOn(second.client, 'eval');
        // Wholly covered (the first follower applied it): nothing sent; the answer is past the batch.
        expect(await second.apply(log.slice(0, 4))).toBe(7);
        expect(evalSha).not.toHaveBeenCalled();
        expect(evalScript).not.toHaveBeenCalled();
        // Partly covered: only the event past the checkpoint is folded and sent (APPLY's ARGV[1]: its position).
        expect(await second.apply(log.slice(4))).toBe(8);
        const applySha = createHash('sha1').update(APPLY).digest('hex');
        const applied = [...evalSha.mock.calls, ...evalScript.mock.calls]
          .filter(([script]) => script === APPLY || script === applySha)
          .map(([, options]) => Number((options as { arguments: string[] }).arguments[0]));
        expect(new Set(applied)).toEqual(new Set([8]));
        expect(await first.balance('org-a')).toEqual({ granted: 1_500, spent: 250, reserved: 200, pending: 0 });
        expect(await first.checkpoint()).toBe(8);
      } finally {
        jest.restoreAllMocks();
        await first.reset();
        await first.close();
        await second.close();
      }
    });
  });
}
