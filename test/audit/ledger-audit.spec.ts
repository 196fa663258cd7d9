import { auditLedger } from '../../src/audit/ledger-audit';
import { Projector } from '../../src/projections/projector';
import { fundedOrganization, openTestRuntime } from '../support/runtime';
import { describeWithRedis } from '../support/redis';
import type { RedisProjectionStore } from '../../src/projections/redis-projection-store';
import { createKey } from '../support/keys';

describe('ledger audit while requests append', () => {
  it('waits for read models that have not applied the latest events, and says so when they do not catch up', async () => {
    const t = await openTestRuntime();
    let follower: Projector | null = null;
    try {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 1_000_000_000);
      // The log moves on while the read models stand still: a reservation they have not applied.
      await runtime.projector.stop();
      const admission = await runtime.ledger.admit({
        requestId: 'q1',
        keyId: 'k',
        surface: 'native',
        model: 'm',
        orgId,
        amount: 5_000_000,
      });
      expect(admission.admitted).toBe(true);

      const stale = await auditLedger(runtime.events, runtime.projections, { projectionWaitMs: 50 });
      expect(stale.differences).toEqual([
        expect.stringMatching(new RegExp(`^organization ${orgId}: read models behind the log`)),
      ]);

      // The same audit, with the read models catching up while it waits: clean, reservation included.
      const auditing = auditLedger(runtime.events, runtime.projections, { projectionWaitMs: 10_000 });
      follower = new Projector(runtime.events, runtime.projections, runtime.config.requestLogRetention);
      await follower.start();
      const report = await auditing;
      expect(report.differences).toEqual([]);
      expect(report.totals.reserved).toBe(5_000_000);
    } finally {
      await follower?.stop();
      await t.cleanup();
    }
  });
});

describe('ledger audit across versions of the settlement event', () => {
  it('recomputes settlements written before the cache classes (input and output only) and after (every class), and finds the log clean', async () => {
    const t = await openTestRuntime();
    try {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 1_000_000_000);
      const facts = (id: string) => ({
        requestId: `q-${id}`,
        keyId: 'k',
        surface: 'messages',
        model: 'm',
        reservationId: id,
        orgId,
      });
      const outcome = { host: 'h', hostModel: 'hm', held: 50_000_000, status: 'ok', latencyMs: 1, settledAt: 2 };
      const settle = async (id: string, settled: Record<string, unknown>) => {
        const reserved = { type: 'CreditsReserved', data: { ...facts(id), amount: 50_000_000, reservedAt: 1, expiresAt: 9e12 } };
        const event = { type: 'ReservationSettled', data: { ...facts(id), ...outcome, ...settled } };
        await runtime.events.append(`reservation-${id}`, [reserved, event], 'no_stream');
      };
      // Written before the cache's classes: every input token counted as input, at the input price.
      // 24,100 × $3/M + 500 × $15/M = 72,300 + 7,500 = $79,800/M → 79,800,000 nano-credits
      await settle('old', {
        inputTokens: 24_100,
        outputTokens: 500,
        prices: { input: 3_000_000_000, output: 15_000_000_000 },
        amount: 79_800_000,
      });
      // Written now: every class with its price.
      // 100 × $3 + 20,000 × $0.30 + 3,000 × $3.75 + 1,000 × $6 + 500 × $15 = $31,050/M → 31,050,000 nano-credits
      const prices = {
        input: 3_000_000_000,
        cacheRead: 300_000_000,
        cacheWrite: 3_750_000_000,
        cacheWrite1h: 6_000_000_000,
        output: 15_000_000_000,
      };
      const tokens = {
        inputTokens: 100,
        cacheReadTokens: 20_000,
        cacheWriteTokens: 3_000,
        cacheWrite1hTokens: 1_000,
        outputTokens: 500,
      };
      await settle('new', { ...tokens, prices, amount: 31_050_000 });
      await runtime.projector.catchUp();

      const report = await auditLedger(runtime.events, runtime.projections);
      expect(report.differences).toEqual([]);
      expect(report).toMatchObject({ settlements: 2, totals: { spent: 79_800_000 + 31_050_000, reserved: 0 } });

      // The audit prices every class: the new settlement's charge at the plain input price would not pass.
      await settle('tampered', { ...tokens, prices, amount: 79_800_000 });
      await runtime.projector.catchUp();
      expect((await auditLedger(runtime.events, runtime.projections)).differences).toEqual([
        expect.stringMatching(/\(ReservationSettled\): charge 79800000 but tokens × prices give 31050000$/),
      ]);
    } finally {
      await t.cleanup();
    }
  });
});

describe('ledger audit of spending above grants', () => {
  it('names an organization whose log shows charges its grants do not cover, and allows a settlement above its hold', async () => {
    const t = await openTestRuntime();
    try {
      const { runtime } = t;
      const granted = 100_000_000;
      const [overdrawn, estimatedLow] = [await fundedOrganization(runtime, granted), await fundedOrganization(runtime, granted)];
      // 1,000 output tokens at $15/M = 15,000,000 nano-credits.
      const settled = { host: 'h', hostModel: 'hm', status: 'ok', latencyMs: 1, settledAt: 2 };
      const charge = {
        inputTokens: 0,
        outputTokens: 1_000,
        prices: { input: 3_000_000_000, output: 15_000_000_000 },
        amount: 15_000_000,
      };
      const request = async (orgId: string, id: string, held: number) => {
        const facts = { requestId: `q-${id}`, keyId: 'k', surface: 'chat', model: 'm', reservationId: id, orgId };
        const reserved = { type: 'CreditsReserved', data: { ...facts, amount: held, reservedAt: 1, expiresAt: 9e12 } };
        const event = { type: 'ReservationSettled', data: { ...facts, ...settled, ...charge, held } };
        await runtime.events.append(`reservation-${id}`, [reserved, event], 'no_stream');
      };
      // A request estimated below what it used: its settlement goes past its hold and the balance below
      // zero (the overdraw the ledger allows), yet within its hold the grants cover it.
      await request(estimatedLow, 'e1', 95_000_000);
      await request(estimatedLow, 'e2', 5_000_000);
      await runtime.projector.catchUp();
      expect((await auditLedger(runtime.events, runtime.projections)).differences).toEqual([]);

      // Seven charges held within holds are 105,000,000 against grants of 100,000,000: no whole log shows that.
      for (let i = 0; i < 7; i++) await request(overdrawn, `o${i}`, 15_000_000);
      await runtime.projector.catchUp();
      const report = await auditLedger(runtime.events, runtime.projections);
      expect(report.differences).toEqual([
        `organization ${overdrawn}: spending above grants (charged 105000000 within its holds, granted 100000000 in the log)`,
      ]);
      // Also when the audit is of that one organization, and not of the other.
      expect((await auditLedger(runtime.events, runtime.projections, { orgId: overdrawn })).differences).toHaveLength(1);
      expect((await auditLedger(runtime.events, runtime.projections, { orgId: estimatedLow })).differences).toEqual([]);

      // Counted per organization when the audit is of one: its own events, reservations and settlements.
      const whole = await auditLedger(runtime.events, runtime.projections);
      const one = await auditLedger(runtime.events, runtime.projections, { orgId: estimatedLow });
      const other = await auditLedger(runtime.events, runtime.projections, { orgId: overdrawn });
      expect([whole.reservations, one.reservations, other.reservations]).toEqual([9, 2, 7]);
      expect([whole.settlements, one.settlements, other.settlements]).toEqual([9, 2, 7]);
      // Each organization's own events: the same set-up, and two events a request (five requests more).
      expect(other.events - one.events).toBe(10);
      expect(one.events + other.events).toBeLessThanOrEqual(whole.events);
    } finally {
      await t.cleanup();
    }
  });
});

describeWithRedis("ledger audit of each key's spend", () => {
  it("replays every key's settled charges and finds a read model that disagrees", async () => {
    const t = await openTestRuntime({ redis: true });
    try {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 1_000_000_000);
      const { keyId } = await createKey(runtime, orgId, 'spender');
      const facts = { requestId: 'q-1', keyId, surface: 'native', model: 'm', reservationId: 'r-1', orgId };
      await runtime.events.append(
        'reservation-r-1',
        [
          { type: 'CreditsReserved', data: { ...facts, amount: 50_000_000, reservedAt: 1, expiresAt: 9e12 } },
          {
            type: 'ReservationSettled',
            data: {
              ...facts,
              host: 'h',
              hostModel: 'hm',
              held: 50_000_000,
              status: 'ok',
              latencyMs: 1,
              settledAt: 2,
              inputTokens: 1_000,
              outputTokens: 100,
              prices: { input: 3_000_000_000, output: 15_000_000_000 },
              amount: 4_500_000,
            },
          },
        ],
        'no_stream',
      );
      await runtime.projector.catchUp();
      expect((await auditLedger(runtime.events, runtime.projections)).differences).toEqual([]);

      // A read model that lost track of what the key spent (the organization's totals still agree).
      const store = runtime.projections as RedisProjectionStore;
      await store.client.hSet(`${t.env.REDIS_PREFIX}{org:${orgId}}:key-spend`, keyId, '1');
      expect((await auditLedger(runtime.events, runtime.projections)).differences).toEqual([
        `key ${keyId}: spent replayed 4500000, projected 1`,
      ]);
    } finally {
      await t.cleanup();
    }
  });
});

describe('ledger audit of catalogue versions', () => {
  it("checks each settlement's prices against the catalogue version it names, as the log recorded it", async () => {
    const t = await openTestRuntime();
    try {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 1_000_000_000);
      const priced = (input: number, output: number) => ({
        input,
        cacheRead: input,
        cacheWrite: input,
        cacheWrite1h: input,
        output,
      });
      const [v1, v2] = [priced(1_000_000_000, 2_000_000_000), priced(4_000_000_000, 8_000_000_000)];
      const listed = (prices: typeof v1) => [{ model: 'test/m', host: 'h', hostModel: 'hm', prices }];
      await runtime.ledger.recordCatalogue({ version: 'v1', recordedAt: 1, prices: listed(v1) });
      await runtime.ledger.recordCatalogue({ version: 'v2', recordedAt: 2, prices: listed(v2) });
      // A version is recorded once: another instance (or a restart) recording it again adds nothing.
      await runtime.ledger.recordCatalogue({ version: 'v1', recordedAt: 3, prices: listed(v2) });

      const settle = async (id: string, reservedWith: string, settledWith: string, prices: typeof v1) => {
        const facts = { requestId: `q-${id}`, keyId: 'k', surface: 'chat', model: 'test/m', reservationId: id, orgId };
        const reserved = {
          type: 'CreditsReserved',
          data: { ...facts, amount: 50_000_000, reservedAt: 1, expiresAt: 9e12, catalogueVersion: reservedWith },
        };
        // 1,000 input and 100 output tokens: each settlement's charge is right for its own prices.
        const tokens = { inputTokens: 1_000, cacheReadTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0, outputTokens: 100 };
        const amount = (1_000 * prices.input + 100 * prices.output) / 1e6;
        const settled = {
          type: 'ReservationSettled',
          data: {
            ...facts,
            ...tokens,
            host: 'h',
            hostModel: 'hm',
            prices,
            amount,
            held: 50_000_000,
            status: 'ok',
            latencyMs: 1,
            settledAt: 2,
            catalogueVersion: settledWith,
          },
        };
        await runtime.events.append(`reservation-${id}`, [reserved, settled], 'no_stream');
      };
      await settle('at-v1', 'v1', 'v1', v1);
      await settle('at-v2', 'v2', 'v2', v2);
      await runtime.projector.catchUp();
      const clean = await auditLedger(runtime.events, runtime.projections);
      expect(clean.differences).toEqual([]);
      expect(clean.settlements).toBe(2);

      await settle('v2-prices-named-v1', 'v1', 'v1', v2);
      await settle('unknown-version', 'v9', 'v9', v1);
      await settle('not-its-reservations', 'v1', 'v2', v2);
      await runtime.projector.catchUp();
      expect((await auditLedger(runtime.events, runtime.projections)).differences).toEqual([
        expect.stringMatching(/\(ReservationSettled\): prices .* are not catalogue version v1's for hm on h/),
        expect.stringMatching(/\(ReservationSettled\): catalogue version v9 is not in the log$/),
        expect.stringMatching(/\(ReservationSettled\): catalogue version v2, its reservation's v1$/),
      ]);
    } finally {
      await t.cleanup();
    }
  });
});

describe('ledger audit of sums past 2^53 nano-credits', () => {
  it('adds the totals across organizations exactly', async () => {
    const t = await openTestRuntime();
    try {
      const { runtime } = t;
      // Two organizations of about 4.5 million credits each: their sum passes 2^53, neither's does.
      const half = 4_503_599_627_370_497;
      await fundedOrganization(runtime, half);
      await fundedOrganization(runtime, half + 2);
      await runtime.projector.catchUp();
      const report = await auditLedger(runtime.events, runtime.projections);
      expect(report.differences).toEqual([]);
      expect(report.totals.granted).toBe((2n * BigInt(half) + 2n).toString());
    } finally {
      await t.cleanup();
    }
  });
});
