import fc from 'fast-check';
import { CanonicalEvent, HostError } from '../../src/canonical/canonical';
import { HOST_KINDS } from '../../src/hosts/hosts';
import { attemptStep, HOST_COMPLETE, initialAttempt } from '../../src/inference/attempt';
import { settlementFor } from '../../src/inference/settlement';
import type { UsageLimits } from '../../src/inference/usage-check';
import { chargeFor } from '../../src/ledger/money';
import { HostKindName, streamMessages, wholeReply } from '../support/upstream-arbitraries';

/**
 * The host decoders, fuzzed: whatever an upstream sends (random JSON, the format's shapes with
 * adversarial values, text that is not JSON), a decoder either refuses it with a HostError or
 * yields well-formed canonical events, and whatever usage they carry settles as whole numbers
 * within the request's limits, at a charge the ledger can compute.
 */

const KINDS: HostKindName[] = ['openai', 'anthropic', 'openai-responses', 'bedrock', 'gemini'];
const LIMITS: UsageLimits = { estimatedInput: 30, maxInput: 8192 + 120, maxOutput: 1000 };
const PRICES = { input: 3000, cacheRead: 300, cacheWrite: 3750, cacheWrite1h: 6000, output: 15000 };
const FINISH_REASONS = new Set(['stop', 'length', 'tool_calls', 'stop_sequence', 'content_filter']);
const USAGE_FIELDS = ['inputTokens', 'cacheReadTokens', 'cacheWriteTokens', 'cacheWrite1hTokens', 'outputTokens'] as const;

const isString = (value: unknown) => typeof value === 'string';
const optionalString = (value: unknown) => value === undefined || typeof value === 'string';
const isCount = (value: unknown) => Number.isSafeInteger(value) && (value as number) >= 0;

/** Why an event is not a well-formed canonical event, or null. */
function malformation(event: CanonicalEvent): string | null {
  switch (event.type) {
    case 'ready':
      return null;
    case 'text':
      return isString(event.text) ? null : 'text without a string';
    case 'reasoning':
      return isString(event.text) && optionalString(event.signature) ? null : 'reasoning with a non-string';
    case 'tool_call':
      return isCount(event.index) && optionalString(event.id) && optionalString(event.name) && isString(event.argumentsDelta)
        ? null
        : 'tool call with a bad index or a non-string';
    case 'finish':
      return FINISH_REASONS.has(event.reason) && optionalString(event.stopSequence) ? null : 'finish with an unknown reason';
    case 'usage':
      // Counts are passed on as the host wrote them (the pipeline checks them); they are numbers.
      return USAGE_FIELDS.every((f) => typeof event.usage[f] === 'number') && isCount(event.usage.reasoningTokens)
        ? null
        : 'usage with a count that is not a number';
    case 'upstream_id':
      // What any host's reply carries as its id is recorded: a short string of visible characters only.
      return /^[\x21-\x7e]{1,256}$/.test(event.id) ? null : 'upstream id that is not a short visible string';
    case 'pass_through':
      return typeof event.data === 'object' && event.data !== null && optionalString(event.event)
        ? null
        : 'pass_through without an object';
    default:
      return `unknown event ${JSON.stringify((event as { type: unknown }).type)}`;
  }
}

/** The events settle as a completed request would: whole counts within the limits, at a computable charge. */
function expectSettlesSoundly(events: CanonicalEvent[]): void {
  const attempt = initialAttempt(1);
  for (const event of events) attemptStep(attempt, event);
  expect(Number.isSafeInteger(attempt.deliveredChars)).toBe(true);
  attemptStep(attempt, HOST_COMPLETE);
  const settlement = settlementFor(attempt.ending!, attempt, LIMITS);
  if (settlement.action !== 'settle') throw new Error(`a completed request settles, not ${settlement.action}`);
  for (const field of USAGE_FIELDS) expect(isCount(settlement.usage[field])).toBe(true);
  expect(settlement.usage.outputTokens).toBeLessThanOrEqual(LIMITS.maxOutput);
  const input = USAGE_FIELDS.slice(0, 4).reduce((n, f) => n + settlement.usage[f], 0);
  expect(input).toBeLessThanOrEqual(LIMITS.maxInput);
  expect(() => chargeFor(settlement.usage, PRICES)).not.toThrow();
}

/** Runs `decode`: a HostError is a refusal (fine); anything else thrown fails; events must be well-formed. */
function decoded(decode: () => CanonicalEvent[]): CanonicalEvent[] | null {
  let events: CanonicalEvent[];
  try {
    events = decode();
  } catch (error) {
    if (error instanceof HostError) return null;
    throw error;
  }
  const problems = events.map(malformation).filter((p) => p !== null);
  expect(problems).toEqual([]);
  return events;
}

describe.each(KINDS)('the %s decoders, fuzzed', (kind) => {
  const host = HOST_KINDS[kind];

  it('read any stream message by message: HostErrors or well-formed events, settling within the limits', () => {
    fc.assert(
      fc.property(streamMessages(kind), fc.boolean(), (messages, passThrough) => {
        const decoder = host.decoder(passThrough);
        const events: CanonicalEvent[] = [];
        for (const message of messages) {
          if (decoder.done) break;
          const some = decoded(() => decoder.push(message));
          if (some === null) break; // the stream fails here: the request's provider error
          events.push(...some);
        }
        expectSettlesSoundly(events);
      }),
      { numRuns: 1500 },
    );
  });

  it('read any whole reply: a HostError or well-formed events, settling within the limits', () => {
    fc.assert(
      fc.property(wholeReply(kind), fc.boolean(), (body, passThrough) => {
        const events = decoded(() => host.decodeReply(body, passThrough));
        if (events !== null) expectSettlesSoundly(events);
      }),
      { numRuns: 1500 },
    );
  });
});
