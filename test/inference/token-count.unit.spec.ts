import { HostError, type CanonicalRequest } from '../../src/canonical/canonical';
import type { ModelHost } from '../../src/catalogue/catalogue';
import type { HostKindName } from '../../src/hosts/hosts';
import { planTokenCount, tokenCountOf } from '../../src/inference/token-count';
import { estimateInputTokens } from '../../src/inference/tokens';
import { catalogueModel, modelHost } from '../support/catalogue-entries';

const host = (id: string, kind: HostKindName, usable = true): ModelHost => modelHost(id, { kind, usable });
const model = catalogueModel;

const body = { model: 'vendor/model', messages: [{ role: 'user', content: 'Hello there' }] };
const request: CanonicalRequest = {
  system: [],
  messages: [{ role: 'user', content: 'Hello there' }],
  tools: [],
  stop: [],
  stream: false,
  betas: ['token-counting-2024-11-01'],
};

describe('counting tokens, planned', () => {
  it('asks the usable hosts whose kind counts, in catalogue order, with the body on each host model and the betas', () => {
    const m = model([host('oa', 'openai'), host('down', 'anthropic', false), host('an1', 'anthropic'), host('an2', 'anthropic')]);
    const plan = planTokenCount(m.slug, m, body, request);
    if (plan.kind !== 'hosts') throw new Error(`planned ${plan.kind}`);
    expect(plan.calls.map((c) => c.served.host.id)).toEqual(['an1', 'an2']);
    expect(plan.calls[0].upstream).toMatchObject({
      path: '/messages/count_tokens',
      headers: { 'x-api-key': 'key-an1', 'anthropic-beta': 'token-counting-2024-11-01' },
      body: { ...body, model: 'an1-model' },
    });
  });

  it('estimates when no host of the model counts', () => {
    const m = model([host('oa', 'openai')]);
    expect(planTokenCount(m.slug, m, body, request)).toEqual({ kind: 'estimate', inputTokens: estimateInputTokens(request) });
  });

  it('refuses an unknown model, or one no configured host serves, with 404', () => {
    expect(planTokenCount('nobody/nothing', null, body, request)).toMatchObject({
      kind: 'refuse',
      error: { code: 'model_not_found' },
    });
    const unhosted = model([host('an', 'anthropic', false)]);
    expect(planTokenCount(unhosted.slug, unhosted, body, request)).toMatchObject({
      kind: 'refuse',
      error: { code: 'model_not_found' },
    });
  });
});

describe("a host's token count", () => {
  it('is its answer whole, when input_tokens is a whole number of at least 0', () => {
    expect(tokenCountOf({ input_tokens: 0 })).toEqual({ input_tokens: 0 });
    const beta = { input_tokens: 12, context_management: { original_input_tokens: 40 } };
    expect(tokenCountOf(beta)).toBe(beta);
  });

  it.each([null, [], 'twelve', {}, { input_tokens: -1 }, { input_tokens: 1.5 }, { input_tokens: '12' }])(
    'is malformed for %j',
    (answer) => {
      let thrown: unknown = null;
      try {
        tokenCountOf(answer);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(HostError);
      expect(thrown).toMatchObject({ kind: 'malformed' });
    },
  );
});
