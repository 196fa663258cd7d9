import { HostError } from '../../src/canonical/canonical';
import {
  billedEmbeddingTokens,
  embeddingTokensBound,
  embeddingsReplyOf,
  estimateEmbeddingTokens,
  planEmbeddings,
} from '../../src/embeddings/embeddings.decisions';
import { reservationFor } from '../../src/ledger/money';
import { catalogueModel, modelHost } from '../support/catalogue-entries';

const embeddingModel = (hosts = [modelHost('a', { input: 20_000_000, output: 0 })]) => ({
  ...catalogueModel(hosts),
  kind: 'embedding' as const,
  maxOutputTokens: 0,
});

describe('embeddings: the input estimate', () => {
  it('counts a text by the chars-per-token rule, each text rounded up on its own', () => {
    expect(estimateEmbeddingTokens('abcdefgh')).toBe(2);
    expect(estimateEmbeddingTokens('abcde')).toBe(2);
    expect(estimateEmbeddingTokens(['abcde', 'a'])).toBe(3);
  });

  it('counts a token array by its length, and token arrays by the sum', () => {
    expect(estimateEmbeddingTokens([5, 6, 7])).toBe(3);
    expect(estimateEmbeddingTokens([[5, 6, 7], [8]])).toBe(4);
  });

  it('bounds what a host may report: a token per byte of text, a token array its length, two per input for markers', () => {
    expect(embeddingTokensBound('héllo')).toBe(6 + 2);
    expect(embeddingTokensBound([[1, 2], [3]])).toBe(3 + 4);
  });
});

describe('embeddings: the plan', () => {
  const body = { model: 'vendor/model', input: 'abcdefgh', dimensions: 64, encoding_format: 'base64' };

  it('given an unknown model, refuses with 404', () => {
    expect(planEmbeddings('nobody/nothing', null, body)).toMatchObject({ kind: 'refuse', error: { code: 'model_not_found' } });
  });

  it('given a chat model, refuses with 400 naming the chat routes', () => {
    const chat = catalogueModel([modelHost('a')]);
    expect(planEmbeddings(chat.slug, chat, body)).toMatchObject({
      kind: 'refuse',
      model: 'vendor/model',
      error: {
        code: 'invalid_request',
        message: expect.stringMatching(
          /"vendor\/model" is a chat model: it is served by the chat routes \(POST \/api\/v1\/chat\/completions/,
        ),
      },
    });
  });

  it('given an embedding model with no configured host, refuses with 404', () => {
    const unhosted = embeddingModel([modelHost('a', { usable: false })]);
    expect(planEmbeddings(unhosted.slug, unhosted, body)).toMatchObject({ kind: 'refuse', error: { code: 'model_not_found' } });
  });

  it('calls the usable hosts in order, each with the body whole on its own model, and reserves the input at the dearest input price', () => {
    const hosts = [
      modelHost('a', { input: 20_000_000, output: 0 }),
      modelHost('off', { usable: false, input: 90_000_000_000 }),
      modelHost('b', { input: 130_000_000, output: 0 }),
    ];
    const plan = planEmbeddings('vendor/model', embeddingModel(hosts), body);
    if (plan.kind !== 'reserve') throw new Error('refused');
    expect(plan.calls.map((c) => c.served.host.id)).toEqual(['a', 'b']);
    // With the key its pool lends the call.
    expect(plan.calls[1].upstream('key-b-2')).toEqual({
      path: '/embeddings',
      headers: { 'content-type': 'application/json', accept: 'application/json', authorization: 'Bearer key-b-2' },
      body: { ...body, model: 'b-model' },
    });
    expect(plan.inputTokens).toBe(2);
    // 2 tokens × $0.13 per million = 260 nano-credits.
    expect(plan.amount).toBe(260);
    expect(plan.amount).toBe(reservationFor(2, 0, plan.prices));
  });
});

describe('embeddings: the reply and its usage', () => {
  const plan = { inputTokens: 5, maxInputTokens: 40 };

  it('bills the host count when it is a whole number within the bound', () => {
    expect(billedEmbeddingTokens({ usage: { prompt_tokens: 40 } }, plan)).toEqual({ tokens: 40, counted: true });
    expect(billedEmbeddingTokens({ usage: { prompt_tokens: 0 } }, plan)).toEqual({ tokens: 0, counted: true });
  });

  it('bills the estimate when the host gives no count, a count that is not a whole number ≥ 0, or one past the bound', () => {
    for (const usage of [
      undefined,
      null,
      {},
      { prompt_tokens: -1 },
      { prompt_tokens: 2.5 },
      { prompt_tokens: '7' },
      { prompt_tokens: 41 },
    ]) {
      expect(billedEmbeddingTokens({ usage }, plan)).toEqual({ tokens: 5, counted: false });
    }
  });

  it('takes a reply with a data list, and refuses anything else as the host failing (not worth another host)', () => {
    expect(embeddingsReplyOf({ data: [], object: 'list' })).toEqual({ data: [], object: 'list' });
    for (const answer of [null, [], 'text', { object: 'list' }, { data: {} }]) {
      expect(() => embeddingsReplyOf(answer)).toThrow(HostError);
      try {
        embeddingsReplyOf(answer);
      } catch (error) {
        expect((error as HostError).kind).toBe('malformed');
      }
    }
  });
});
