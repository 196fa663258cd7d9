import type { CreditsReserved, ReservationSettled } from '../../src/ledger/ledger.events';
import { periodOf, resetsAt } from '../../src/ledger/key-limit';
import { MemoryProjectionStore } from '../../src/projections/memory-projection-store';
import { OtherInstance, startGateway, startOtherInstance, TEST_MODELS, TestGateway } from '../support/gateway';
import { describeWithRedis } from '../support/redis';

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

describeWithRedis('a key limit under 200 concurrent requests on 3 instances sharing Redis and the log', () => {
  let g: TestGateway;
  let others: OtherInstance[];

  beforeAll(async () => {
    g = await startGateway({ redis: true });
    others = [await startOtherInstance(g), await startOtherInstance(g)];
  });
  afterAll(async () => {
    for (const other of others) await other.close();
    await g.close();
  });

  const ask = (base: string, key: string) =>
    fetch(`${base}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: M.gpt.slug, max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] }),
    });

  it('exactly 20 admitted (402 naming the limit for the rest), spend never above the limit, audit clean', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
    const probe = await ask(g.baseUrl, g.key);
    await probe.text();
    const events = await g.t.runtime.events.readAll(0, 100_000);
    const amount = (
      events.find(
        (e) =>
          e.type === 'CreditsReserved' && (e.data as CreditsReserved['data']).requestId === probe.headers.get('x-request-id'),
      )!.data as CreditsReserved['data']
    ).amount;

    // A limit that covers exactly 20 of these reservations at once; the host answers after a second, so all are held together.
    const limit = 20 * amount + amount - 1;
    const { secret, keyId } = await g.t.runtime.identity.createApiKey(g.orgId, 'capped', {
      limit: { amount: limit, reset: 'monthly' },
    });
    await g.t.runtime.projector.catchUp();
    for (const other of others) await other.runtime.projector.catchUp();
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' }, firstByteDelayMs: 1000 });
    const bases = [g.baseUrl, ...others.map((o) => o.url)];
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        ask(bases[i % 3], secret).then(async (r) => ({ status: r.status, body: await r.text() })),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(20);
    const refused = answers.filter((a) => a.status === 402);
    expect(refused).toHaveLength(180);
    expect(JSON.parse(refused[0].body).error.message).toMatch(
      /^key limit reached: this key's monthly limit is [\d.]+ credits and [\d.]+ remain until \d{4}-\d{2}-01T00:00:00.000Z/,
    );

    await g.settled();
    const settled = (await g.t.runtime.events.readAll(0, 1_000_000)).filter(
      (e) => e.type === 'ReservationSettled' && (e.data as ReservationSettled['data']).keyId === keyId,
    ) as unknown as ReservationSettled[];
    const spent = settled.reduce((sum, s) => sum + s.data.amount, 0);
    expect(settled).toHaveLength(20);
    expect(spent).toBeLessThanOrEqual(limit);
    const view = (await (await fetch(`${g.baseUrl}/api/v1/key`, { headers: { authorization: `Bearer ${secret}` } })).json()) as {
      data: { limit: number; limit_usage: number; limit_remaining: number; limit_reset: string };
    };
    expect(view.data).toMatchObject({ limit: limit / 1e9, limit_usage: spent / 1e9, limit_reset: 'monthly' });
    expect((await g.audit()).differences).toEqual([]);
  });
});
