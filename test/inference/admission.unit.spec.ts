import type { CanonicalRequest } from '../../src/canonical/canonical';
import type { CatalogueModel, ModelHost } from '../../src/catalogue/catalogue';
import { highestPrices, insufficientCredits, planAdmission } from '../../src/inference/admission';
import { estimateInputTokens } from '../../src/inference/tokens';
import { chargeFor } from '../../src/ledger/money';

const host = (id: string, usable: boolean, input: number, output: number): ModelHost => ({
  host: { id, kind: 'openai', baseUrl: `http://${id}/v1`, apiKeyEnv: null, apiKey: null, usable },
  model: `${id}-model`,
  prices: { input, output },
  listPrices: { input: String(input / 1000), output: String(output / 1000) },
});

const model = (hosts: ModelHost[]): CatalogueModel => ({
  slug: 'vendor/model',
  id: '00000000-0000-4000-8000-000000000001',
  name: 'Model',
  contextLength: 128_000,
  maxOutputTokens: 1000,
  created: 1_700_000_000,
  hosts,
});

const request = (maxTokens?: number): CanonicalRequest => ({
  system: ['Be brief.'],
  messages: [{ role: 'user', content: 'Hello there' }],
  tools: [],
  maxTokens,
  stop: [],
  stream: true,
});

describe('admission', () => {
  describe('given the model asked for is not in the catalogue', () => {
    it('refuses with 404, logged under the name asked for', () => {
      expect(planAdmission('nobody/nothing', null, request())).toEqual({
        kind: 'refuse',
        model: 'nobody/nothing',
        error: expect.objectContaining({
          code: 'not_found',
          message: 'model "nobody/nothing" is not in the catalogue (GET /api/v1/models lists them)',
        }),
      });
    });
  });

  describe('given a model none of whose hosts is configured', () => {
    it('refuses with 404, logged under its slug', () => {
      const unhosted = model([host('a', false, 1, 1)]);
      expect(planAdmission(unhosted.id, unhosted, request())).toEqual({
        kind: 'refuse',
        model: 'vendor/model',
        error: expect.objectContaining({
          code: 'not_found',
          message: 'model "vendor/model" is not available here: none of its hosts is configured',
        }),
      });
    });
  });

  describe('given an output cap above the model limit', () => {
    it('lowers the cap to the limit: hosts get it and the reservation is sized by it', () => {
      const m = model([host('a', true, 1_000_000_000, 2_000_000_000)]);
      const plan = planAdmission(m.slug, m, request(32_000));
      if (plan.kind !== 'reserve') throw new Error('refused');
      expect(plan.request.maxTokens).toBe(1000);
      expect(plan.estimate.outputTokens).toBe(1000);
      expect(plan.amount).toBe(chargeFor({ inputTokens: plan.estimate.inputTokens, outputTokens: 1000 }, plan.prices));
    });

    it('keeps a cap at or below the limit as it is', () => {
      const m = model([host('a', true, 1, 1)]);
      for (const cap of [1, 999, 1000]) {
        const plan = planAdmission(m.slug, m, request(cap));
        expect(plan.kind === 'reserve' && plan.request.maxTokens).toBe(cap);
      }
    });
  });

  describe('given a servable model', () => {
    const cheap = host('cheap', true, 100_000_000, 900_000_000);
    const down = host('down', false, 5_000_000_000, 5_000_000_000);
    const dear = host('dear', true, 300_000_000, 600_000_000);
    const m = model([cheap, down, dear]);

    it('plans to call its usable hosts in catalogue order', () => {
      const plan = planAdmission(m.slug, m, request(200));
      expect(plan.kind === 'reserve' && plan.hosts).toEqual([cheap, dear]);
    });

    it("fills in the model's default cap when the client gave none, leaving the client's request as it was", () => {
      const asked = request();
      const plan = planAdmission(m.slug, m, asked);
      expect(plan.kind === 'reserve' && plan.request).toEqual({ ...asked, maxTokens: 1000 });
      expect(asked.maxTokens).toBeUndefined();
    });

    it('estimates the input from the request and the output at the cap', () => {
      const plan = planAdmission(m.slug, m, request(200));
      expect(plan.kind === 'reserve' && plan.estimate).toEqual({
        inputTokens: estimateInputTokens(request(200)),
        outputTokens: 200,
      });
    });

    it("reserves the estimate at the highest of the usable hosts' prices (a fallback stays covered)", () => {
      const plan = planAdmission(m.slug, m, request(200));
      if (plan.kind !== 'reserve') throw new Error('refused');
      expect(plan.prices).toEqual({ input: 300_000_000, output: 900_000_000 });
      expect(plan.amount).toBe(chargeFor(plan.estimate, plan.prices));
    });
  });

  it('takes the highest input and output prices separately', () => {
    expect(highestPrices([host('a', true, 1, 9), host('b', true, 5, 2)])).toEqual({ input: 5, output: 9 });
  });
});

describe('insufficient credits (402)', () => {
  // Prices are per million tokens: 1 and 2 credits a token.
  const prices = { input: 1_000_000_000_000_000, output: 2_000_000_000_000_000 };

  it('given a balance that covers the input and some output, says how many output tokens it could afford', () => {
    const error = insufficientCredits(10_000_000_000, { inputTokens: 4, outputTokens: 100 }, prices);
    expect(error.code).toBe('insufficient_credits');
    expect(error.message).toBe(
      'insufficient credits: 10 credits available, enough for at most 3 output tokens on this request (asked for 100); lower max_tokens or add credits',
    );
  });

  it('given a balance below the input alone, says so', () => {
    const error = insufficientCredits(3_000_000_000, { inputTokens: 4, outputTokens: 100 }, prices);
    expect(error.message).toBe("insufficient credits: 3 credits available, not enough for this request's input; add credits");
  });

  it('given a negative available balance, shows zero', () => {
    const error = insufficientCredits(-5, { inputTokens: 4, outputTokens: 100 }, prices);
    expect(error.message).toBe("insufficient credits: 0 credits available, not enough for this request's input; add credits");
  });

  it('given free output, the whole cap is affordable', () => {
    const error = insufficientCredits(0, { inputTokens: 4, outputTokens: 100 }, { input: 1, output: 0 });
    expect(error.message).toMatch(/enough for at most 100 output tokens on this request \(asked for 100\)/);
  });
});
