import fc from 'fast-check';
import type { CanonicalRequest } from '../../src/canonical/canonical';
import { MAX_CHARS_PER_TOKEN } from '../../src/inference/tokens';
import { checkedUsage, UsageLimits, usageLimits } from '../../src/inference/usage-check';
import { uncachedUsage } from '../../src/ledger/money';
import { usage } from '../support/usage';

const LIMITS: UsageLimits = { estimatedInput: 40, maxInput: 8192 + 160, maxOutput: 1000 };
const COMPLETE = true;
const CUT = false;

const request = (extra: Partial<CanonicalRequest> = {}): CanonicalRequest => ({
  system: [],
  messages: [{ role: 'user', content: 'hi' }],
  tools: [],
  stop: [],
  stream: false,
  maxTokens: 500,
  ...extra,
});

describe("a request's limits", () => {
  it('allow the context length plus the characters sent (four a token of the estimate), and the cap', () => {
    expect(usageLimits(8192, 40, request())).toEqual({ estimatedInput: 40, maxInput: 8192 + 160, maxOutput: 500 });
  });
});

describe("the host's usage, checked", () => {
  const sound = usage({ inputTokens: 12, cacheReadTokens: 300, cacheWriteTokens: 20, cacheWrite1hTokens: 10, outputTokens: 34 });

  it('is billed as reported when every count passes (the same object: nothing is copied)', () => {
    expect(checkedUsage(sound, 100, LIMITS, COMPLETE)).toEqual({ usage: sound, flag: null, estimated: [] });
    expect(checkedUsage(sound, 100, LIMITS, COMPLETE).usage).toBe(sound);
  });

  it.each([
    ['negative', -5, 'outputTokens -5 is not a whole number ≥ 0'],
    ['fractional', 12.5, 'outputTokens 12.5 is not a whole number ≥ 0'],
    ['infinite (1e400 in JSON)', Infinity, 'outputTokens Infinity is not a whole number ≥ 0'],
    ['beyond exact integers', 2 ** 60, `outputTokens ${2 ** 60} is not a whole number ≥ 0`],
    ['not a number (a string in JSON)', NaN, 'outputTokens not a number is not a whole number ≥ 0'],
    ['above the cap (10^12)', 1e12, '1000000000000 output tokens exceed the cap (1000)'],
  ])(
    'an output count that is %s is replaced by the characters delivered (four a token), flagged',
    (_name, outputTokens, flag) => {
      expect(checkedUsage({ ...sound, outputTokens }, 100, LIMITS, COMPLETE)).toEqual({
        usage: { ...sound, outputTokens: 25 },
        flag,
        estimated: ['output'],
      });
    },
  );

  it.each([
    ['negative', { inputTokens: -1 }, 'inputTokens -1 is not a whole number ≥ 0'],
    ['fractional', { cacheReadTokens: 0.5 }, 'cacheReadTokens 0.5 is not a whole number ≥ 0'],
    ['not a number', { cacheWrite1hTokens: NaN }, 'cacheWrite1hTokens not a number is not a whole number ≥ 0'],
    [
      'beyond the context length plus what was sent',
      { inputTokens: 1e12 },
      '1000000000330 input tokens exceed the context length plus what was sent (8352)',
    ],
  ])('input counts that are %s are replaced by the estimate (as uncached input), flagged', (_name, counts, flag) => {
    expect(checkedUsage({ ...sound, ...counts }, 100, LIMITS, COMPLETE)).toEqual({
      usage: uncachedUsage(40, 34),
      flag,
      estimated: ['input', 'cacheRead', 'cacheWrite', 'cacheWrite1h'],
    });
  });

  it('the input is bounded over every class together', () => {
    const each = usage({ inputTokens: 3000, cacheReadTokens: 3000, cacheWriteTokens: 3000, outputTokens: 1 });
    expect(checkedUsage(each, 0, LIMITS, COMPLETE).flag).toBe(
      '9000 input tokens exceed the context length plus what was sent (8352)',
    );
  });

  it('both failing: both replaced, both reasons given', () => {
    expect(checkedUsage(usage({ inputTokens: -1, outputTokens: -1 }), 8, LIMITS, COMPLETE)).toEqual({
      usage: uncachedUsage(40, 2),
      flag: 'inputTokens -1 is not a whole number ≥ 0; outputTokens -1 is not a whole number ≥ 0',
      estimated: ['input', 'cacheRead', 'cacheWrite', 'cacheWrite1h', 'output'],
    });
  });

  it(`a completed reply's output below one token per ${MAX_CHARS_PER_TOKEN} characters delivered is not believed`, () => {
    const chars = 16 * 10;
    expect(checkedUsage({ ...sound, outputTokens: 10 }, chars, LIMITS, COMPLETE).flag).toBeNull();
    expect(checkedUsage({ ...sound, outputTokens: 9 }, chars, LIMITS, COMPLETE)).toEqual({
      usage: { ...sound, outputTokens: 40 },
      flag: '9 output tokens are too few for what was delivered (at least 10)',
      estimated: ['output'],
    });
    // Any delivered text is at least a token: 0 for a delivered reply is not believed.
    expect(checkedUsage({ ...sound, outputTokens: 0 }, 1, LIMITS, COMPLETE).flag).toMatch(/too few/);
  });

  it('5 MB of text reported as 5 tokens is billed as the most the host could have produced: the cap', () => {
    expect(checkedUsage({ ...sound, outputTokens: 5 }, 5 * 1024 * 1024, LIMITS, COMPLETE)).toEqual({
      usage: { ...sound, outputTokens: 1000 },
      flag: '5 output tokens are too few for what was delivered (at least 1000)',
      estimated: ['output'],
    });
  });

  it('a completed reply with no usage at all is billed the estimate and the characters delivered, flagged', () => {
    expect(checkedUsage(null, 10, LIMITS, COMPLETE)).toEqual({
      usage: uncachedUsage(40, 3),
      flag: 'the host reported no usage',
      estimated: ['input', 'cacheRead', 'cacheWrite', 'cacheWrite1h', 'output'],
    });
  });

  it("the gateway's own count of the output never exceeds the cap", () => {
    expect(checkedUsage(null, 10_000_000, LIMITS, COMPLETE).usage.outputTokens).toBe(1000);
    expect(checkedUsage(null, 10_000_000, LIMITS, CUT).usage.outputTokens).toBe(1000);
  });

  describe('given a request cut short', () => {
    it('missing usage is expected, not flagged: the estimate and what was delivered', () => {
      expect(checkedUsage(null, 10, LIMITS, CUT)).toEqual({
        usage: uncachedUsage(40, 3),
        flag: null,
        estimated: ['input', 'cacheRead', 'cacheWrite', 'cacheWrite1h', 'output'],
      });
    });

    it("the host's input is kept and the output is at least what was delivered (a host counts it at its end), not flagged", () => {
      const atStart = usage({ inputTokens: 12, outputTokens: 1 });
      expect(checkedUsage(atStart, 40, LIMITS, CUT)).toEqual({
        usage: { ...atStart, outputTokens: 10 },
        flag: null,
        estimated: ['output'],
      });
      expect(checkedUsage({ ...atStart, outputTokens: 30 }, 40, LIMITS, CUT)).toEqual({
        usage: { ...atStart, outputTokens: 30 },
        flag: null,
        estimated: [],
      });
    });

    it('counts that fail the checks are flagged as on a completed reply', () => {
      expect(checkedUsage(usage({ inputTokens: 12, outputTokens: -3 }), 40, LIMITS, CUT)).toEqual({
        usage: usage({ inputTokens: 12, outputTokens: 10 }),
        flag: 'outputTokens -3 is not a whole number ≥ 0',
        estimated: ['output'],
      });
    });
  });

  it('whatever the counts, what is billed is whole numbers ≥ 0 within the limits, flagged whenever not the host’s own', () => {
    const anyCount = fc.oneof(
      fc.integer({ min: -1e6, max: 1e6 }),
      fc.double(),
      fc.constantFrom(1e12, 2 ** 60, -0, Infinity, NaN),
      fc.nat({ max: 20_000 }),
    );
    const anyUsage = fc.record({
      inputTokens: anyCount,
      cacheReadTokens: anyCount,
      cacheWriteTokens: anyCount,
      cacheWrite1hTokens: anyCount,
      outputTokens: anyCount,
      reasoningTokens: fc.nat(),
    });
    fc.assert(
      fc.property(fc.option(anyUsage), fc.nat({ max: 10_000_000 }), fc.boolean(), (reported, chars, complete) => {
        const { usage: billed, flag, estimated } = checkedUsage(reported, chars, LIMITS, complete);
        const counts = [billed.inputTokens, billed.cacheReadTokens, billed.cacheWriteTokens, billed.cacheWrite1hTokens];
        for (const n of [...counts, billed.outputTokens]) expect(Number.isSafeInteger(n) && n >= 0).toBe(true);
        expect(billed.outputTokens).toBeLessThanOrEqual(LIMITS.maxOutput);
        expect(counts.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(LIMITS.maxInput);
        if (flag === null && reported !== null && complete) expect(billed).toBe(reported);
        // Provenance: a class not named as the gateway's estimate is billed exactly as the host counted it.
        const classes = {
          input: 'inputTokens',
          cacheRead: 'cacheReadTokens',
          cacheWrite: 'cacheWriteTokens',
          cacheWrite1h: 'cacheWrite1hTokens',
          output: 'outputTokens',
        } as const;
        if (reported === null) expect(estimated).toHaveLength(5);
        else
          for (const [tokenClass, field] of Object.entries(classes))
            if (!estimated.includes(tokenClass as keyof typeof classes))
              // By value (a host's -0 is billed as 0).
              expect(billed[field] === reported[field]).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("the host's hosted-tool uses, checked", () => {
  const carrying = usageLimits(8192, 40, request({ carriedTools: { classes: ['webSearch'], maxUses: 5 } }));
  const withUses = (hostedToolUses: Record<string, number>) =>
    usage({ inputTokens: 12, outputTokens: 34, hostedToolUses: hostedToolUses });

  it('a request carrying a tool allows the uses its reservation held for, of that class only', () => {
    expect(carrying.maxHostedToolUses).toEqual({ webSearch: 5 });
    const reported = withUses({ webSearch: 3 });
    expect(checkedUsage(reported, 100, carrying, COMPLETE)).toEqual({ usage: reported, flag: null, estimated: [] });
  });

  it.each([
    ['above the bound', { webSearch: 9 }, { webSearch: 5 }, '9 webSearch uses exceed the bound (5)'],
    ['not a whole number', { webSearch: 2.5 }, undefined, 'webSearch uses 2.5 is not a whole number ≥ 0'],
    [
      'of a tool not carried',
      { webSearch: 1, fileSearch: 2 },
      { webSearch: 1 },
      '2 fileSearch uses of a tool the request did not carry',
    ],
  ])('%s: billed within what the request allowed, flagged', (_case, reported, billed, flag) => {
    const checked = checkedUsage(withUses(reported), 100, carrying, COMPLETE);
    expect(checked.flag).toBe(flag);
    expect(checked.usage.hostedToolUses).toEqual(billed);
    // The tokens stand as reported: only the uses were not believed.
    expect(checked.usage).toMatchObject({ inputTokens: 12, outputTokens: 34 });
  });

  it('a request carrying none bills none, whatever the host says', () => {
    const checked = checkedUsage(withUses({ webSearch: 4 }), 100, LIMITS, CUT);
    expect(checked.usage.hostedToolUses).toBeUndefined();
    expect(checked.flag).toBe('4 webSearch uses of a tool the request did not carry');
  });
});
