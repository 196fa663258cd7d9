import { GetCreditsHandler, GetCreditsQuery } from '../../src/credits/get-credits.query';
import type { Balance, ReadModels } from '../../src/projections/read-models';

/** GET /credits' figures from a balance: OpenRouter's floats, and beside them the exact nano-credits. */
const creditsOf = (balance: Balance) =>
  new GetCreditsHandler({ balance: async () => balance } as unknown as ReadModels).execute(new GetCreditsQuery('org'));

describe("GET /credits' exact figures", () => {
  it('carries each amount exactly in nano-credits where the float cannot', async () => {
    // 8,999,999.999999999 credits: more significant digits than a double keeps (it reads 8999999.999999998).
    const view = await creditsOf({ granted: 8_999_999_999_999_999, spent: 7, reserved: 3, pending: 2 });
    expect(view).toMatchObject({
      total_credits_nano: 8_999_999_999_999_999,
      total_usage_nano: 7,
      reserved_nano: 5,
      available_nano: 8_999_999_999_999_987,
    });
    expect(view.total_credits).toBe(8999999.999999998);
    expect(view.total_usage).toBe(0.000000007);
  });

  it('writes a figure past 2^53 as its decimal digits, never a float', async () => {
    const view = await creditsOf({ granted: 2 ** 60, spent: 2 ** 60 - 1024, reserved: 0, pending: 0 });
    expect(view.total_credits_nano).toBe('1152921504606846976');
    expect(view.total_usage_nano).toBe('1152921504606845952');
    expect(view.available_nano).toBe(1024);
    expect(JSON.stringify(view)).toContain('"total_credits_nano":"1152921504606846976"');
  });

  it('answers an overdrawn balance (a settlement above its hold) as a negative integer', async () => {
    const view = await creditsOf({ granted: 100, spent: 150, reserved: 0, pending: 0 });
    expect(view.available_nano).toBe(-50);
  });
});
