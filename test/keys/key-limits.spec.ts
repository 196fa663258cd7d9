import type { CreditsReserved, ReservationSettled } from '../../src/ledger/ledger.events';
import { periodOf, resetsAt } from '../../src/ledger/key-limit';
import { join } from 'node:path';
import { auditLedger } from '../../src/audit/ledger-audit';
import { MemoryProjectionStore } from '../../src/projections/memory-projection-store';
import { FakeUpstream, startFakeUpstream } from '../support/fake-upstream';
import { serviceEnv, TEST_MODELS } from '../support/gateway';
import { chatCompletion } from '../support/streams';
import { Child, eventually, ROOT, startService } from '../support/processes';
import { describeWithRedis } from '../support/redis';
import { fundedOrganization, openTestRuntime, TestRuntime } from '../support/runtime';
import { createKey } from '../support/keys';

/**
 * Per-key credit limits: held in the same atomic step as the organization's balance, across
 * instances, with periods that start afresh.
 */

const M = TEST_MODELS;

describe('key limit periods', () => {
  it('name the UTC day, the week from Monday, the month, or all time; and say when they end', () => {
    const sunday = Date.parse('2026-11-29T23:59:59Z');
    expect(periodOf('daily', sunday)).toBe('d:2026-11-29');
    expect(periodOf('weekly', sunday)).toBe('w:2026-11-23');
    expect(periodOf('weekly', Date.parse('2026-11-30T00:00:00Z'))).toBe('w:2026-11-30');
    expect(periodOf('monthly', sunday)).toBe('m:2026-11');
    expect(periodOf('never', sunday)).toBe('all');
    expect(new Date(resetsAt('daily', sunday)!).toISOString()).toBe('2026-11-30T00:00:00.000Z');
    expect(new Date(resetsAt('weekly', sunday)!).toISOString()).toBe('2026-11-30T00:00:00.000Z');
    expect(new Date(resetsAt('monthly', sunday)!).toISOString()).toBe('2026-12-01T00:00:00.000Z');
    expect(resetsAt('never', sunday)).toBeNull();
  });

  it('at a reset boundary: charges stay in the period their settlement landed in; holds count in the new one', async () => {
    const store = new MemoryProjectionStore(100);
    const before = Date.parse('2026-11-24T23:59:59Z');
    const after = Date.parse('2026-11-25T00:00:01Z');
    const event = (position: number, type: string, data: Record<string, unknown>) => ({
      position,
      streamId: `s${position}`,
      revision: 0,
      type,
      data,
      recordedAt: 0,
    });
    await store.apply([
      event(1, 'OrganizationCreated', { orgId: 'o', name: 'o', createdAt: 0 }),
      event(2, 'CreditsGranted', { orgId: 'o', grantId: 'g', amount: 1_000, reason: 't', grantedAt: 0 }),
      event(3, 'CreditsReserved', {
        reservationId: 'r1',
        orgId: 'o',
        amount: 100,
        keyId: 'k',
        requestId: 'q1',
        surface: 's',
        model: 'm',
        reservedAt: before,
        expiresAt: after + 60_000,
      }),
      event(4, 'ReservationSettled', {
        reservationId: 'r1',
        orgId: 'o',
        amount: 80,
        keyId: 'k',
        requestId: 'q1',
        surface: 's',
        model: 'm',
        settledAt: before,
        host: 'h',
        inputTokens: 1,
        outputTokens: 1,
        status: 'ok',
      }),
    ] as never);
    const daily = (now: number) => ({ keyId: 'k', limit: { amount: 100, period: periodOf('daily', now) } });
    // Yesterday's 80 spent: 20 left today-before-midnight; after midnight the whole 100.
    expect(await store.hold('o', 'h1', 30, before + 10_000, daily(before))).toEqual({
      admitted: false,
      available: 920,
      keyRemaining: 20,
    });
    expect(await store.hold('o', 'h2', 60, after + 10_000, daily(after))).toEqual({ admitted: true });
    // The new period's hold counts: 40 left of it.
    expect(await store.hold('o', 'h3', 50, after + 10_000, daily(after))).toEqual({
      admitted: false,
      available: 860,
      keyRemaining: 40,
    });
    expect(await store.keyUsage('o', 'k', periodOf('daily', after))).toBe(60);
    await store.dropHold('o', 'h2');
    expect(await store.keyUsage('o', 'k', periodOf('daily', after))).toBe(0);
    expect(await store.keyUsage('o', 'k', periodOf('never', after))).toBe(80);
  });
});

/**
 * Three gateway processes on one SQLite log and one Redis, their clocks (test/support/test-clock.js)
 * set to a minute before a UTC midnight and moved past it by the test, between the holds and the
 * settlements of a burst.
 */
describeWithRedis('a key limit under 200 concurrent requests from 3 processes sharing Redis and the log', () => {
  const MIDNIGHT = Date.parse('2026-12-31T00:00:00Z');
  let fake: FakeUpstream;
  let t: TestRuntime;
  let services: Child[] = [];
  let bases: string[] = [];
  let orgId: string;

  beforeAll(async () => {
    fake = await startFakeUpstream();
    t = await openTestRuntime({ redis: true });
    orgId = await fundedOrganization(t.runtime, 100_000_000_000);
    const env = serviceEnv(t, fake, {
      NODE_OPTIONS: `--require ${join(ROOT, 'test/support/test-clock.js')}`,
      TEST_CLOCK_AT: String(MIDNIGHT - 60_000),
      TEST_CLOCK_JUMP_MS: '90000',
    });
    const started = await Promise.all([0, 1, 2].map(() => startService(env)));
    services = started.map((s) => s.service);
    bases = started.map((s) => s.base);
  });
  afterAll(async () => {
    for (const service of services) service.process.kill('SIGTERM');
    await Promise.all(services.map((service) => service.exited()));
    await fake.close();
    await t.cleanup();
  });

  const ask = (base: string, key: string) =>
    chatCompletion(base, key, { max_tokens: 100 }).then(async (r) => ({ status: r.status, body: await r.text() }));
  /**
   * 200 requests at once over the 3 processes, the admitted ones held at the host (so every hold is
   * taken together): resolves once each request is answered or waiting there, and none is pending.
   */
  async function heldBurst(secret: string) {
    let release: () => void = () => {};
    fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' }, released: new Promise<void>((r) => (release = r)) });
    const atHost = fake.requests.length;
    let answered = 0;
    const answers = Promise.all(Array.from({ length: 200 }, (_, i) => ask(bases[i % 3], secret).finally(() => (answered += 1))));
    await eventually(
      async () => answered + fake.requests.length - atHost === 200 && (await t.runtime.projections.balance(orgId)).pending === 0,
    );
    return { waiting: fake.requests.length - atHost, release, answers };
  }
  const settledOf = async (keyId: string) =>
    (
      (await t.runtime.events.readAll(0, 1_000_000)).filter(
        (e) => e.type === 'ReservationSettled' && (e.data as ReservationSettled['data']).keyId === keyId,
      ) as unknown as ReservationSettled[]
    ).map((e) => e.data);

  it('exactly 20 admitted before midnight (402 naming the limit for the rest); settled after it, they count in the new day, as documented', async () => {
    // What one such request reserves, as the ledger recorded it.
    fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
    const probe = await createKey(t.runtime, orgId, 'probe');
    await t.runtime.projector.catchUp();
    expect((await ask(bases[0], probe.secret)).status).toBe(200);
    await eventually(async () => (await settledOf(probe.keyId)).length === 1);
    const reserved = (await t.runtime.events.readAll(0, 1_000_000)).find(
      (e) => e.type === 'CreditsReserved' && (e.data as CreditsReserved['data']).keyId === probe.keyId,
    )!.data as CreditsReserved['data'];
    const amount = reserved.amount;
    expect(reserved.reservedAt).toBeLessThan(MIDNIGHT);

    // A daily limit that covers exactly 20 of these reservations at once.
    const limit = 20 * amount + amount - 1;
    const { secret, keyId } = await createKey(t.runtime, orgId, 'capped', {
      limit: { amount: limit, reset: 'daily' },
    });
    await t.runtime.projector.catchUp();
    // The burst before midnight: the admitted ones wait at the host, holding their reservations.
    const before = await heldBurst(secret);
    expect(before.waiting).toBe(20);
    expect((await t.runtime.projections.balance(orgId)).reserved).toBe(20 * amount);
    // Midnight passes on every instance's clock; then the host answers.
    for (const service of services) service.process.kill('SIGUSR2');
    await Promise.all(services.map((service) => service.waitForLine('test clock moved')));
    before.release();
    const first = await before.answers;
    expect(first.filter((a) => a.status === 200)).toHaveLength(20);
    const refused = first.filter((a) => a.status === 402);
    expect(refused).toHaveLength(180);
    expect(JSON.parse(refused[0].body).error.message).toMatch(
      /^key limit reached: this key's daily limit is [\d.]+ credits and [\d.]+ remain until 2026-12-31T00:00:00.000Z/,
    );

    // Reserved before midnight, settled after: the charges count in the new day, none in the old.
    const settled = await settledOf(keyId);
    expect(settled).toHaveLength(20);
    for (const s of settled) expect(s.settledAt).toBeGreaterThanOrEqual(MIDNIGHT);
    const spent = settled.reduce((sum, s) => sum + s.amount, 0);
    expect(spent).toBeLessThanOrEqual(limit);
    await t.runtime.projector.catchUp();
    expect(await t.runtime.projections.keyUsage(orgId, keyId, periodOf('daily', MIDNIGHT - 1))).toBe(0);
    expect(await t.runtime.projections.keyUsage(orgId, keyId, periodOf('daily', MIDNIGHT))).toBe(spent);

    // A second burst after midnight: what the new day has left admits exactly its share.
    const after = await heldBurst(secret);
    const admitted = Math.floor((limit - spent) / amount);
    expect(after.waiting).toBe(admitted);
    after.release();
    const second = await after.answers;
    expect(second.filter((a) => a.status === 200)).toHaveLength(admitted);
    expect(second.filter((a) => a.status === 402)).toHaveLength(200 - admitted);
    const all = await settledOf(keyId);
    expect(all).toHaveLength(20 + admitted);
    expect(all.reduce((sum, s) => sum + s.amount, 0)).toBeLessThanOrEqual(limit);
    await t.runtime.projector.catchUp();
    expect((await auditLedger(t.runtime.events, t.runtime.projections)).differences).toEqual([]);
  }, 60_000);
});
