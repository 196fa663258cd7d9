import { HostError } from '../../src/canonical/canonical';
import type { Ending } from '../../src/inference/attempt';
import {
  answerAtEnd,
  billedOf,
  endingError,
  nothingDelivered,
  progressOf,
  providerFailure,
  settlementFor,
} from '../../src/inference/settlement';
import type { UsageLimits } from '../../src/inference/usage-check';
import type { ReservationEvent } from '../../src/ledger/ledger.events';
import { uncachedUsage } from '../../src/ledger/money';
import { usage } from '../support/usage';

const ESTIMATED_INPUT = 40;
const LIMITS: UsageLimits = { estimatedInput: ESTIMATED_INPUT, maxInput: 8192 + 160, maxOutput: 1000 };
const nothing = { produced: false, usage: null, deliveredChars: 0 };
const partial = { produced: true, usage: null, deliveredChars: 10 };
const reported = {
  produced: true,
  usage: usage({ inputTokens: 12, cacheReadTokens: 300, cacheWriteTokens: 20, cacheWrite1hTokens: 10, outputTokens: 34 }),
  deliveredChars: 10,
};
/** Cut after the host counted its input (at the start), before it counted the output (at the end). */
const countedAtStart = {
  produced: true,
  usage: usage({ inputTokens: 12, cacheReadTokens: 300, outputTokens: 1 }),
  deliveredChars: 40,
};

const failed = (error: HostError): Ending => ({ kind: 'failed', error });
const connection = new HostError('connection', 'upstream connection failed: reset');
const slow = new HostError('timeout', 'upstream did not answer in time');

describe('the settlement', () => {
  describe('given a completed request', () => {
    it('bills the usage the host reported, class by class', () => {
      expect(settlementFor({ kind: 'complete' }, reported, LIMITS)).toEqual({
        action: 'settle',
        status: 'ok',
        usage: reported.usage,
        flag: null,
        estimated: [],
      });
    });

    it('without reported usage, bills the estimated input as uncached and the characters delivered (four a token, rounded up), flagged', () => {
      expect(settlementFor({ kind: 'complete' }, partial, LIMITS)).toEqual({
        action: 'settle',
        status: 'ok',
        usage: uncachedUsage(40, 3),
        flag: 'the host reported no usage',
        estimated: ['input', 'cacheRead', 'cacheWrite', 'cacheWrite1h', 'output'],
      });
    });

    it('bills even an empty reply', () => {
      expect(settlementFor({ kind: 'complete' }, nothing, LIMITS)).toEqual({
        action: 'settle',
        status: 'ok',
        usage: uncachedUsage(40, 0),
        flag: 'the host reported no usage',
        estimated: ['input', 'cacheRead', 'cacheWrite', 'cacheWrite1h', 'output'],
      });
    });

    it("with usage that fails the checks, bills the gateway's own count and says why", () => {
      const negative = { ...reported, usage: usage({ inputTokens: 12, outputTokens: -5 }) };
      expect(settlementFor({ kind: 'complete' }, negative, LIMITS)).toEqual({
        action: 'settle',
        status: 'ok',
        usage: { ...negative.usage, outputTokens: 3 },
        flag: 'outputTokens -5 is not a whole number ≥ 0',
        estimated: ['output'],
      });
    });
  });

  describe('given a request cut after output', () => {
    it.each<[string, Ending, string]>([
      ['by the client', { kind: 'abort' }, 'client_abort'],
      ["by the shutdown's grace period ending", { kind: 'shutdown' }, 'shutdown'],
      ['by the deadline', { kind: 'timeout' }, 'provider_timeout'],
      ["by the host's timeout", failed(slow), 'provider_timeout'],
      ["by the host's failure", failed(connection), 'provider_error'],
    ])('%s: bills what was delivered', (_name, ending, status) => {
      expect(settlementFor(ending, partial, LIMITS)).toEqual({
        action: 'settle',
        status,
        usage: uncachedUsage(40, 3),
        flag: null,
        estimated: ['input', 'cacheRead', 'cacheWrite', 'cacheWrite1h', 'output'],
      });
      expect(settlementFor(ending, reported, LIMITS)).toMatchObject({ usage: reported.usage });
    });

    it('after the host counted its input but not yet its output: bills that input, and the output delivered (40 characters, 10 tokens)', () => {
      expect(settlementFor({ kind: 'abort' }, countedAtStart, LIMITS)).toEqual({
        action: 'settle',
        status: 'client_abort',
        usage: { ...countedAtStart.usage, outputTokens: 10 },
        flag: null,
        estimated: ['output'],
      });
    });
  });

  describe('given a client that left while its host was read to the end', () => {
    const readToEnd: Ending = { kind: 'abort', readToEnd: true };

    it("bills the host's count as a completed reply's, under the client's leaving", () => {
      expect(settlementFor(readToEnd, reported, LIMITS)).toEqual({
        action: 'settle',
        status: 'client_abort',
        usage: reported.usage,
        flag: null,
        estimated: [],
      });
    });

    it('bills it even when nothing had been delivered (a reply answered in one piece, a host still thinking)', () => {
      expect(settlementFor(readToEnd, { ...reported, produced: false, deliveredChars: 0 }, LIMITS)).toMatchObject({
        action: 'settle',
        status: 'client_abort',
        usage: reported.usage,
      });
    });
  });

  describe('given a request that ended before any output', () => {
    it.each<[string, Ending, string, string]>([
      ['the client left', { kind: 'abort' }, 'client_abort', 'client_abort'],
      ["the shutdown's grace period ended", { kind: 'shutdown' }, 'shutdown', 'shutdown'],
      ['the deadline passed', { kind: 'timeout' }, 'provider_timeout', 'provider_timeout'],
      ['the host timed out', failed(slow), 'provider_timeout', 'upstream did not answer in time'],
      ['the host failed', failed(connection), 'provider_error', 'upstream connection failed: reset'],
    ])('%s: releases the whole hold', (_name, ending, status, reason) => {
      expect(settlementFor(ending, nothing, LIMITS)).toEqual({ action: 'release', status, reason });
    });
  });

  it('bills reported usage over the estimate', () => {
    expect(settlementFor({ kind: 'complete' }, reported, LIMITS)).toMatchObject({ usage: reported.usage, flag: null });
    expect(settlementFor({ kind: 'abort' }, reported, LIMITS)).toMatchObject({ usage: reported.usage, flag: null });
  });
});

describe('the settlement of a reply answered in one piece (nothing delivered before it completes)', () => {
  it.each<[string, Exclude<Ending, { kind: 'complete' }>, string, string]>([
    ['the host timed out', { kind: 'failed', error: slow }, 'provider_timeout', 'upstream did not answer in time'],
    ['the host failed', { kind: 'failed', error: connection }, 'provider_error', 'upstream connection failed: reset'],
    ["the shutdown's grace period ended", { kind: 'shutdown' }, 'shutdown', 'shutdown'],
  ])('given %s, releases the whole hold, as a streamed request before output', (_name, ending, status, reason) => {
    expect(nothingDelivered(ending)).toEqual({ action: 'release', status, reason });
    expect(nothingDelivered(ending)).toEqual(settlementFor(ending, nothing, LIMITS));
  });
});

describe('what the client is told once the ledger has answered', () => {
  it('the ending as it is, when the log took the settlement or release', () => {
    expect(answerAtEnd({ kind: 'complete' }, 'host-a', 600_000, true)).toBeNull();
    expect(answerAtEnd(failed(connection), 'host-a', 600_000, true)).toEqual(providerFailure(connection, 'host-a'));
  });

  it('a completed reply whose charge the log did not take: withdrawn, a 503', () => {
    expect(answerAtEnd({ kind: 'complete' }, 'host-a', 600_000, false)).toMatchObject({
      code: 'unavailable',
      status: 503,
      message: expect.stringContaining('the charge for this reply could not be recorded'),
    });
  });

  it("a failure whose release the log did not take: the failure's own error stands", () => {
    expect(answerAtEnd(failed(connection), 'host-a', 600_000, false)).toEqual(providerFailure(connection, 'host-a'));
    expect(answerAtEnd({ kind: 'timeout' }, 'host-a', 600_000, false)).toMatchObject({ code: 'provider_timeout' });
  });

  it('a 503 with Retry-After for a request the shutdown ended, whatever the log did (what it delivered is billed, or the hold returns)', () => {
    for (const recorded of [true, false]) {
      const error = answerAtEnd({ kind: 'shutdown' }, 'host-a', 600_000, recorded)!;
      expect(error).toMatchObject({ code: 'unavailable', status: 503, headers: { 'retry-after': '1' } });
      expect(error.message).toMatch(
        /^the gateway is shutting down and this request was still running when its grace period ended/,
      );
    }
  });

  it('nothing for a client that left, whatever the log did', () => {
    expect(answerAtEnd({ kind: 'abort' }, 'host-a', 600_000, true)).toBeNull();
    expect(answerAtEnd({ kind: 'abort' }, 'host-a', 600_000, false)).toBeNull();
  });
});

describe('what the client is told', () => {
  it('nothing more for a completed request, nor for a client that left', () => {
    expect(endingError({ kind: 'complete' }, 'host-a', 600_000)).toBeNull();
    expect(endingError({ kind: 'abort' }, 'host-a', 600_000)).toBeNull();
  });

  it('a 504 when the deadline passed', () => {
    expect(endingError({ kind: 'timeout' }, 'host-a', 600_000)).toMatchObject({
      code: 'provider_timeout',
      message: 'the provider did not finish within 600000 ms',
    });
  });

  it("the host's failure, mapped", () => {
    expect(endingError(failed(connection), 'host-a', 600_000)).toEqual(providerFailure(connection, 'host-a'));
  });

  it.each<[string, HostError, string, string]>([
    ['a timeout', slow, 'provider_timeout', 'provider host-a did not answer in time'],
    ['a 400', new HostError('status', 'bad field', 400), 'invalid_request', 'provider host-a rejected the request: bad field'],
    ['a 413', new HostError('status', 'too big', 413), 'invalid_request', 'provider host-a rejected the request: too big'],
    [
      'a 422',
      new HostError('status', 'unprocessable', 422),
      'invalid_request',
      'provider host-a rejected the request: unprocessable',
    ],
    ['a 500', new HostError('status', 'oops', 500), 'provider_error', 'provider host-a failed: oops'],
    ['a broken connection', connection, 'provider_error', 'provider host-a failed: upstream connection failed: reset'],
    ['a malformed stream', new HostError('malformed', 'bad json'), 'provider_error', 'provider host-a failed: bad json'],
  ])('a host failure (%s)', (_name, error, code, message) => {
    expect(providerFailure(error, 'host-a')).toMatchObject({ code, message });
  });
});

describe('the billed event', () => {
  const facts = { requestId: 'r', keyId: 'k', surface: 'native', model: 'vendor/model', reservationId: 'res', orgId: 'o' };

  it('reports a settlement: tokens by class, charge and host', () => {
    const settled: ReservationEvent = {
      type: 'ReservationSettled',
      data: {
        ...facts,
        status: 'ok',
        latencyMs: 5,
        host: 'host-a',
        hostModel: 'm',
        inputTokens: 12,
        cacheReadTokens: 300,
        cacheWriteTokens: 20,
        cacheWrite1hTokens: 10,
        outputTokens: 34,
        prices: { input: 1, cacheRead: 1, cacheWrite: 1, cacheWrite1h: 1, output: 2 },
        amount: 99,
        held: 100,
        settledAt: 1,
      },
    };
    expect(billedOf(settled, 'host-a', 42)).toEqual({
      type: 'billed',
      usage: { inputTokens: 12, cacheReadTokens: 300, cacheWriteTokens: 20, cacheWrite1hTokens: 10, outputTokens: 34 },
      cost: 99,
      host: 'host-a',
      position: 42,
    });
  });

  it('is nothing for any other resolution', () => {
    const released: ReservationEvent = {
      type: 'ReservationReleased',
      data: { ...facts, status: 'ok', latencyMs: 5, host: 'host-a', held: 100, reason: 'x', releasedAt: 1 },
    };
    expect(billedOf(released, 'host-a', 42)).toBeNull();
  });
});

describe("a stream's progress", () => {
  it('is what a cut at that moment would bill: the usage so far, delivered output counted', () => {
    for (const delivered of [partial, reported]) {
      const cut = settlementFor({ kind: 'abort' }, delivered, LIMITS);
      if (cut.action !== 'settle') throw new Error('expected a settlement');
      expect(progressOf(delivered, LIMITS)).toEqual({ usage: cut.usage, flag: cut.flag, estimated: cut.estimated });
    }
  });
});
