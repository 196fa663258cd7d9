import {
  CreditAccount,
  decideGrant,
  decideRefusal,
  decideReservation,
  evolveCreditAccount,
  evolveReservation,
  GrantCredits,
  grantMade,
  initialCreditAccount,
  initialReservation,
  LedgerRuleError,
  RecordProgress,
  Reservation,
  Reserve,
  ReservationCommand,
  Settle,
} from '../../src/ledger/ledger.decider';
import { CreditsGranted, ReservationEvent, settledCharge, settledPrices, settledUsage } from '../../src/ledger/ledger.events';
import { chargeFor, MAX_NANO, uncachedUsage } from '../../src/ledger/money';

const facts = { requestId: 'req-1', keyId: 'key-1', surface: 'chat-completions', model: 'openai/gpt-4o-mini' };
const reserve = (amount = 1_000_000, now = 1_000): ReservationCommand => ({
  type: 'Reserve',
  reservationId: 'r-1',
  orgId: 'org-1',
  amount,
  now,
  ttlMs: 60_000,
  ...facts,
});
const settle: Settle = {
  type: 'Settle',
  usage: { inputTokens: 1200, cacheReadTokens: 4000, cacheWriteTokens: 0, cacheWrite1hTokens: 0, outputTokens: 345 },
  prices: { input: 150_000_000, cacheRead: 75_000_000, cacheWrite: 150_000_000, cacheWrite1h: 150_000_000, output: 600_000_000 },
  host: 'openai',
  hostModel: 'gpt-4o-mini',
  status: 'ok',
  latencyMs: 812,
  now: 2_000,
};

/** given events, when command, then events (or an error code). */
function given(...history: ReservationEvent[]) {
  const state = history.reduce<Reservation>(evolveReservation, initialReservation());
  return {
    when: (command: ReservationCommand) => {
      try {
        return { events: decideReservation(command, state), error: null };
      } catch (error) {
        return { events: [], error: (error as LedgerRuleError).code };
      }
    },
  };
}

describe('reservation decider', () => {
  const [reserved] = decideReservation(reserve(), initialReservation());

  it('records a reservation with its expiry', () => {
    expect(reserved).toEqual({
      type: 'CreditsReserved',
      data: { ...facts, reservationId: 'r-1', orgId: 'org-1', amount: 1_000_000, reservedAt: 1_000, expiresAt: 61_000 },
    });
  });

  it('settles from usage and prices, the charge recomputable from the event alone', () => {
    const { events } = given(reserved).when(settle);
    expect(events).toHaveLength(1);
    const settled = events[0];
    if (settled.type !== 'ReservationSettled') throw new Error('expected a settlement');
    // 1200 × 0.15 + 4000 cache reads × 0.075 + 345 × 0.60 = 180 + 300 + 207 = 687 credits per million → 687,000 nano-credits
    expect(settled.data.amount).toBe(687_000);
    expect(settled.data).toMatchObject({
      inputTokens: 1200,
      cacheReadTokens: 4000,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      outputTokens: 345,
      prices: settle.prices,
    });
    expect(chargeFor(settledUsage(settled.data), settledPrices(settled.data))).toBe(settled.data.amount);
    expect(settled.data).toMatchObject({ host: 'openai', model: 'openai/gpt-4o-mini', held: 1_000_000, orgId: 'org-1' });
  });

  it('settles hosted-tool uses with the price of each class used, the charge recomputable from the event alone', () => {
    const perUse = { webSearch: 10_000_000_000, fileSearch: 2_500_000_000 };
    const withUses: Settle = {
      ...settle,
      usage: { ...settle.usage, hostedToolUses: { webSearch: 3, fileSearch: 0 } },
      prices: { ...settle.prices, hostedToolUses: perUse },
    };
    const [settled] = given(reserved).when(withUses).events;
    if (settled.type !== 'ReservationSettled') throw new Error('expected a settlement');
    // The tokens' 687,000 nano-credits, plus 3 searches × $10 / 1,000 = 30,000,000.
    expect(settled.data.amount).toBe(687_000 + 30_000_000);
    // The classes used, each with its price: a class not used is not written.
    expect(settled.data.hostedToolUses).toEqual({ webSearch: 3 });
    expect(settled.data.prices.hostedToolUses).toEqual({ webSearch: 10_000_000_000 });
    expect(settledCharge(settled.data)).toBe(settled.data.amount);
    // No use: the event's older shape, with no field for them.
    const plain = given(reserved).when(settle).events[0];
    expect(plain.data).not.toHaveProperty('hostedToolUses');
    expect((plain as { data: { prices: object } }).data.prices).not.toHaveProperty('hostedToolUses');
  });

  it('refuses hosted-tool uses without a price, or that are not whole numbers of a known class', () => {
    const uses = (hostedToolUses: Record<string, number>, perUse?: Record<string, number>): Settle => ({
      ...settle,
      usage: { ...settle.usage, hostedToolUses },
      prices: { ...settle.prices, ...(perUse ? { hostedToolUses: perUse } : {}) },
    });
    expect(given(reserved).when(uses({ webSearch: 1 })).error).toBe('invalid_usage');
    expect(given(reserved).when(uses({ webSearch: 1.5 }, { webSearch: 1 })).error).toBe('invalid_usage');
    expect(given(reserved).when(uses({ teleport: 1 }, { webSearch: 1 })).error).toBe('invalid_usage');
  });

  it('an interrupted stream whose progress counted uses is billed them at expiry', () => {
    const progress = given(reserved).when({
      type: 'RecordProgress',
      usage: { ...uncachedUsage(10, 10), hostedToolUses: { webSearch: 2 } },
      prices: { ...settle.prices, hostedToolUses: { webSearch: 10_000_000_000 } },
      host: 'openai',
      hostModel: 'gpt-4o-mini',
      deliveredChars: 40,
      now: 1_500,
    }).events[0];
    expect(progress.data).toMatchObject({ hostedToolUses: { webSearch: 2 } });
    const [expired] = given(reserved, progress).when({ type: 'Expire', now: 61_000 }).events;
    expect(expired).toMatchObject({
      type: 'ReservationSettled',
      data: { hostedToolUses: { webSearch: 2 }, status: 'interrupted' },
    });
    // Never more than was held (1,000,000): the two searches alone cost 20,000,000.
    expect((expired as { data: { amount: number } }).data.amount).toBe(1_000_000);
  });

  it("marks a settlement whose host usage was not believed, and writes no mark otherwise (the event's old shape)", () => {
    const flagged = given(reserved).when({ ...settle, usageFlag: 'outputTokens -5 is not a whole number ≥ 0' }).events[0];
    expect(flagged).toMatchObject({
      type: 'ReservationSettled',
      data: { usageFlag: 'outputTokens -5 is not a whole number ≥ 0' },
    });
    expect(given(reserved).when(settle).events[0].data).not.toHaveProperty('usageFlag');
  });

  it('respects an explicit zero usage', () => {
    const { events } = given(reserved).when({ ...settle, usage: uncachedUsage(0, 0) });
    expect(events[0]).toMatchObject({ type: 'ReservationSettled', data: { amount: 0 } });
  });

  it('resolves a reservation exactly once', () => {
    const [settled] = given(reserved).when(settle).events;
    expect(given(reserved, settled).when(settle).error).toBe('already_resolved');
    expect(
      given(reserved, settled).when({ type: 'Release', reason: 'x', host: null, status: 'error', latencyMs: 1, now: 3 }).error,
    ).toBe('already_resolved');
    expect(given(reserved, settled).when({ type: 'Expire', now: 10_000_000 }).error).toBe('already_resolved');
  });

  it('releases the whole hold with its reason', () => {
    const { events } = given(reserved).when({
      type: 'Release',
      reason: 'upstream failed before any output',
      host: 'openai',
      status: 'provider_error',
      latencyMs: 40,
      now: 1_500,
    });
    expect(events[0]).toMatchObject({
      type: 'ReservationReleased',
      data: { held: 1_000_000, reason: 'upstream failed before any output' },
    });
  });

  it('expires only after the expiry', () => {
    expect(given(reserved).when({ type: 'Expire', now: 60_999 }).error).toBe('not_expired');
    expect(given(reserved).when({ type: 'Expire', now: 61_000 }).events[0]).toMatchObject({
      type: 'ReservationExpired',
      data: { held: 1_000_000, expiredAt: 61_000 },
    });
  });

  describe("a stream's progress, and a crash that stops it", () => {
    const progress = (outputTokens: number, now: number, deliveredChars = outputTokens * 4): RecordProgress => ({
      type: 'RecordProgress',
      usage: { ...settle.usage, outputTokens },
      prices: settle.prices,
      host: 'openai',
      hostModel: 'gpt-4o-mini',
      deliveredChars,
      now,
    });

    it('records what was delivered so far, moving no credits; the reservation stays open', () => {
      const [first] = given(reserved).when(progress(40, 3_000)).events;
      expect(first).toEqual({
        type: 'ReservationProgress',
        data: {
          ...facts,
          reservationId: 'r-1',
          orgId: 'org-1',
          host: 'openai',
          hostModel: 'gpt-4o-mini',
          ...settle.usage,
          outputTokens: 40,
          prices: settle.prices,
          deliveredChars: 160,
          recordedAt: 3_000,
        },
      });
      // Settled as usual once the stream ends: progress changes nothing of a settlement.
      expect(given(reserved, first).when(settle).events).toEqual(given(reserved).when(settle).events);
    });

    it('given progress and no settlement, the expiry bills the last progress: interrupted, recomputable from its event', () => {
      const [first] = given(reserved).when(progress(40, 3_000)).events;
      const [last] = given(reserved, first).when(progress(90, 5_000)).events;
      expect(given(reserved, first, last).when({ type: 'Expire', now: 60_999 }).error).toBe('not_expired');
      const [expired] = given(reserved, first, last).when({ type: 'Expire', now: 61_000 }).events;
      if (expired.type !== 'ReservationSettled') throw new Error(`expected a settlement, got ${expired.type}`);
      const usage = { ...settle.usage, outputTokens: 90 };
      expect(expired.data).toMatchObject({
        ...facts,
        host: 'openai',
        hostModel: 'gpt-4o-mini',
        ...usage,
        amount: chargeFor(usage, settle.prices),
        held: 1_000_000,
        status: 'interrupted',
        latencyMs: 5_000 - 1_000,
        settledAt: 61_000,
        interrupted: { progressAt: 5_000, deliveredChars: 360 },
      });
      expect(settledCharge(expired.data)).toBe(expired.data.amount);
      expect(given(reserved, first, last, expired).when(settle).error).toBe('already_resolved');
    });

    it("settles at its reservation's catalogue version, as an interrupted stream's expiry does; names none when reserved with none", () => {
      const [versioned] = decideReservation({ ...(reserve() as Reserve), catalogueVersion: 'c0ffee' }, initialReservation());
      expect(versioned.data).toMatchObject({ catalogueVersion: 'c0ffee' });
      expect(given(versioned).when(settle).events[0].data).toMatchObject({ catalogueVersion: 'c0ffee' });
      const [first] = given(versioned).when(progress(40, 3_000)).events;
      expect(given(versioned, first).when({ type: 'Expire', now: 61_000 }).events[0].data).toMatchObject({
        status: 'interrupted',
        catalogueVersion: 'c0ffee',
      });
      expect(given(reserved).when(settle).events[0].data).not.toHaveProperty('catalogueVersion');
    });

    it('never bills an interrupted stream more than its reservation held', () => {
      const [huge] = given(reserved).when(progress(1_000_000, 3_000)).events;
      const [expired] = given(reserved, huge).when({ type: 'Expire', now: 61_000 }).events;
      if (expired.type !== 'ReservationSettled') throw new Error(`expected a settlement, got ${expired.type}`);
      expect(chargeFor(settledUsage(expired.data), settledPrices(expired.data))).toBeGreaterThan(1_000_000);
      expect(expired.data.amount).toBe(1_000_000);
      expect(settledCharge(expired.data)).toBe(1_000_000);
    });

    it('records progress only of an open reservation, with counts and prices that are integers', () => {
      const [settled] = given(reserved).when(settle).events;
      expect(given().when(progress(1, 2)).error).toBe('reservation_not_found');
      expect(given(reserved, settled).when(progress(1, 2)).error).toBe('already_resolved');
      expect(given(reserved).when({ ...progress(1, 2), usage: uncachedUsage(1.5, 0) }).error).toBe('invalid_usage');
    });
  });

  it('carries the hosted tools left out of the call from the reservation to its resolution, whichever it is', () => {
    const omittedTools = ['web_search', 'image_generation'];
    const reserveWith = (types: string[]): Reserve => ({ ...(reserve() as Reserve), omittedTools: types });
    const [withTools] = decideReservation(reserveWith(omittedTools), initialReservation());
    expect(withTools.data).toMatchObject({ omittedTools });
    const { usage, prices, host, hostModel } = settle;
    const progressed: RecordProgress = { type: 'RecordProgress', usage, prices, host, hostModel, deliveredChars: 4, now: 1_500 };
    const [progress] = given(withTools).when(progressed).events;
    for (const resolved of [
      given(withTools).when(settle).events[0],
      given(withTools).when({ type: 'Release', reason: 'x', host: null, status: 'provider_error', latencyMs: 1, now: 2 })
        .events[0],
      given(withTools).when({ type: 'Expire', now: 61_000 }).events[0],
      given(withTools, progress).when({ type: 'Expire', now: 61_000 }).events[0],
    ])
      expect(resolved.data).toMatchObject({ omittedTools });
    // None left out: no field at all (the events' shape before it).
    expect(given(reserved).when(settle).events[0].data).not.toHaveProperty('omittedTools');
    for (const bad of [[], [''], ['x'.repeat(65)], Array.from({ length: 17 }, (_, i) => `t${i}`)])
      expect(given().when(reserveWith(bad)).error).toBe('invalid_omitted_tools');
  });

  it('records the attempts on the settlement or release (only their fields), and refuses malformed ones', () => {
    const attempts = [
      { host: 'first', credential: 'FIRST_KEY', status: 429, reason: 'rate_limited', durationMs: 3 },
      { host: 'second', credential: null, status: null, reason: 'ok', durationMs: 40 },
    ];
    const release = { type: 'Release', reason: 'x', host: 'second', status: 'provider_error', latencyMs: 1, now: 2 } as const;
    expect(given(reserved).when({ ...settle, attempts }).events[0].data).toMatchObject({ attempts });
    expect(given(reserved).when({ ...release, attempts }).events[0].data).toMatchObject({ attempts });
    const extra = [{ ...attempts[0], apiKey: 'sk-not-recorded' }];
    expect(given(reserved).when({ ...settle, attempts: extra }).events[0].data).toMatchObject({ attempts: [attempts[0]] });
    expect(JSON.stringify(given(reserved).when({ ...settle, attempts: extra }).events)).not.toContain('sk-not-recorded');
    // None given: no field (the events' shape before attempts were recorded).
    expect(given(reserved).when(settle).events[0].data).not.toHaveProperty('attempts');
    for (const bad of [
      [{ ...attempts[0], host: '' }],
      [{ ...attempts[0], host: 'a b' }],
      [{ ...attempts[0], status: 42 }],
      [{ ...attempts[0], durationMs: -1 }],
      [{ ...attempts[0], durationMs: 1.5 }],
      Array.from({ length: 65 }, () => attempts[0]),
    ])
      expect(given(reserved).when({ ...settle, attempts: bad }).error).toBe('invalid_attempts');
  });

  it('refuses unknown, duplicate and malformed reservations', () => {
    expect(given().when(settle).error).toBe('reservation_not_found');
    expect(given(reserved).when(reserve()).error).toBe('reservation_exists');
    expect(given().when(reserve(-1)).error).toBe('invalid_amount');
    expect(given().when(reserve(0.5)).error).toBe('invalid_amount');
    expect(given(reserved).when({ ...settle, usage: uncachedUsage(-1, 0) }).error).toBe('invalid_usage');
    expect(given(reserved).when({ ...settle, usage: { ...uncachedUsage(1, 0), cacheWrite1hTokens: 0.5 } }).error).toBe(
      'invalid_usage',
    );
    expect(given(reserved).when({ ...settle, prices: { ...settle.prices, cacheRead: -1 } }).error).toBe('invalid_usage');
  });
});

describe('credit account decider', () => {
  const grant: GrantCredits = { type: 'GrantCredits', orgId: 'o', grantId: 'g', amount: 5, reason: 'r', now: 1 };

  /** given grants, when a grant, then events (or an error code). */
  function givenGrants(...history: CreditsGranted[]) {
    const state = history.reduce<CreditAccount>(evolveCreditAccount, initialCreditAccount());
    return {
      state,
      when: (command: GrantCredits) => {
        try {
          return { events: decideGrant(command, state), error: null };
        } catch (error) {
          return { events: [], error: (error as LedgerRuleError).code, message: (error as Error).message };
        }
      },
    };
  }

  it('grants positive amounts only', () => {
    const events = decideGrant(grant, initialCreditAccount());
    expect(events).toEqual([
      { type: 'CreditsGranted', data: { orgId: 'o', grantId: 'g', amount: 5, reason: 'r', grantedAt: 1 } },
    ]);
    expect(evolveCreditAccount(initialCreditAccount(), events[0]).granted).toBe(5);
    expect(() => decideGrant({ ...grant, amount: 0 }, initialCreditAccount())).toThrow(LedgerRuleError);
    expect(() => decideGrant({ ...grant, amount: -3 }, initialCreditAccount())).toThrow(LedgerRuleError);
    expect(() => decideGrant({ ...grant, amount: 1 }, { ...initialCreditAccount(), granted: Number.MAX_SAFE_INTEGER })).toThrow(
      LedgerRuleError,
    );
  });

  it('given a grant, when the same grant id is granted again, decides nothing and keeps the grant made', () => {
    const [made] = decideGrant(grant, initialCreditAccount());
    const given = givenGrants(made);
    expect(given.when({ ...grant, now: 99, reason: 'retried' })).toEqual({ events: [], error: null });
    expect(grantMade(given.state, 'g')).toEqual(made.data);
    expect(given.state.granted).toBe(5);
  });

  it('given a grant, when its id comes with another amount, refuses it, saying both amounts', () => {
    const given = givenGrants(...decideGrant(grant, initialCreditAccount()));
    const refused = given.when({ ...grant, amount: 6_000_000_000 });
    expect(refused).toMatchObject({ events: [], error: 'grant_conflict' });
    expect(refused.message).toMatch(/grant g was already made for 0\.000000005 credits, not 6 credits/);
  });

  it('given grants, when a new grant id is granted, grants it beside them', () => {
    const given = givenGrants(...decideGrant(grant, initialCreditAccount()));
    expect(given.when({ ...grant, grantId: 'g2' }).events).toEqual([
      { type: 'CreditsGranted', data: { orgId: 'o', grantId: 'g2', amount: 5, reason: 'r', grantedAt: 1 } },
    ]);
  });

  it("given a balance at the ledger's limit, when a grant already made is retried, answers it rather than refusing it", () => {
    const [made] = decideGrant({ ...grant, amount: MAX_NANO }, initialCreditAccount());
    expect(givenGrants(made).when({ ...grant, amount: MAX_NANO })).toEqual({ events: [], error: null });
    expect(givenGrants(made).when({ ...grant, grantId: 'g2', amount: 1 }).error).toBe('balance_overflow');
  });
});

describe('refusal decider', () => {
  it('records what was turned away and why, moving no credits', () => {
    const [event] = decideRefusal({
      type: 'Refuse',
      refusalId: 'x',
      orgId: 'o',
      status: 'insufficient_credits',
      reason: 'too poor',
      latencyMs: 2,
      now: 9,
      ...facts,
    });
    expect(event).toEqual({
      type: 'RequestRefused',
      data: {
        ...facts,
        refusalId: 'x',
        orgId: 'o',
        status: 'insufficient_credits',
        reason: 'too poor',
        latencyMs: 2,
        refusedAt: 9,
      },
    });
    expect(event.data).not.toHaveProperty('amount');
  });
});
