import { HostError } from '../../src/canonical/canonical';
import { ApiError } from '../../src/http/api-error';
import { describeEnding, describeRefusal } from '../../src/inference/facts';
import type { CallEnded } from '../../src/inference/settlement';
import type { Resolution } from '../../src/ledger/ledger.service';
import { uncachedUsage } from '../../src/ledger/money';
import type { RequestFacts } from '../../src/observability/request-facts';
import { modelHost } from '../support/catalogue-entries';

const reservation = { requestId: 'r', keyId: 'k', surface: 'native', model: 'vendor/model', reservationId: 'res', orgId: 'o' };
const usage = uncachedUsage(12, 34);
const settled: Resolution = {
  position: 7,
  event: {
    type: 'ReservationSettled',
    data: {
      ...reservation,
      status: 'ok',
      latencyMs: 5,
      host: 'b',
      hostModel: 'b-model',
      ...usage,
      prices: { input: 1, cacheRead: 1, cacheWrite: 1, cacheWrite1h: 1, output: 2 },
      amount: 99,
      held: 100,
      settledAt: 1,
    },
  },
};
const released: Resolution = {
  position: 8,
  event: {
    type: 'ReservationReleased',
    data: { ...reservation, status: 'provider_error', latencyMs: 5, host: 'a', held: 100, reason: 'x', releasedAt: 1 },
  },
};
const failure = new ApiError('provider_error', 'provider a failed: reset');

describe("what a request's log line, metrics and trace show of its end", () => {
  it('given a refusal: its code (finer when it has one) and what the client was told', () => {
    const facts: RequestFacts = { surface: 'embeddings', orgId: 'o' };
    describeRefusal(facts, new ApiError('insufficient_credits', 'key limit reached').as('key_limit'));
    expect(facts).toEqual({ surface: 'embeddings', orgId: 'o', outcome: 'key_limit', error: 'key limit reached' });
  });

  it('given a completed request the ledger settled: the host, no fallback, ok, the tokens billed and the charge, no error', () => {
    const facts: RequestFacts = {};
    const ended: CallEnded = {
      served: modelHost('b'),
      fallback: false,
      ending: { kind: 'complete' },
      settlement: { action: 'settle', status: 'ok', usage, flag: null, estimated: [] },
    };
    describeEnding(facts, ended, null, settled);
    expect(facts).toEqual({ host: 'b', fallback: false, outcome: 'ok', usage, cost: 99 });
  });

  it('given a failure after a fallback, its hold released: the last host, the fallback, the status and the error, nothing billed', () => {
    const facts: RequestFacts = {};
    const ended: CallEnded = {
      served: modelHost('a'),
      fallback: true,
      ending: { kind: 'failed', error: new HostError('connection', 'reset') },
      settlement: { action: 'release', status: 'provider_error', reason: 'reset' },
    };
    describeEnding(facts, ended, failure, released);
    expect(facts).toEqual({ host: 'a', fallback: true, outcome: 'provider_error', error: failure.message });
  });

  it('given a settlement the log did not take: the status and the withdrawn reply, nothing billed', () => {
    const facts: RequestFacts = {};
    const withdrawn = new ApiError('unavailable', 'the charge for this reply could not be recorded');
    const ended: CallEnded = {
      served: modelHost('b'),
      fallback: false,
      ending: { kind: 'complete' },
      settlement: { action: 'settle', status: 'ok', usage, flag: null, estimated: [] },
    };
    describeEnding(facts, ended, withdrawn, null);
    expect(facts).toEqual({ host: 'b', fallback: false, outcome: 'ok', error: withdrawn.message });
  });
});
