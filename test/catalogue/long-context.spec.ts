import type { CatalogueLoaded } from '../../src/ledger/catalogue-loaded';
import { exportLedger } from '../../src/ledger-export/ledger-export';
import { ExportVerifier } from '../../src/ledger-export/ledger-verify';
import type { CreditsReserved, ReservationProgress, ReservationSettled } from '../../src/ledger/ledger.events';
import { monthOf } from '../../src/statements/statement';
import { readStatement } from '../../src/statements/statement.query';
import type { FakeUsage } from '../support/fake-upstream';
import { startGateway, TestGateway, testCatalogueFile } from '../support/gateway';
import { chatCompletion } from '../support/streams';

/**
 * Long-context price bands end to end: a catalogue read from its file (versioned, its prices and
 * bands recorded in the log), a Gemini 2.5 Pro on a `gemini` host and a Claude Sonnet 4 with the
 * 1M-context beta on an `anthropic` host, both fakes. A request whose prompt (the cache's tokens
 * included) is above 200,000 tokens is billed at the band for every token; one at or below, at the
 * base prices. `ledger audit` passes both and names a forged one; the standalone verifier and the
 * statement recompute them from the log alone.
 */

/** Google's list prices for Gemini 2.5 Pro: prompts ≤ 200k tokens $1.25 / $0.125 cached / $10; > 200k $2.50 / $0.25 / $15. */
const GEMINI = { slug: 'test/gemini-2.5-pro', id: 'd1d1d1d1-d1d1-4d1d-8d1d-d1d1d1d1d1d1', hostModel: 'gemini-2.5-pro' };
/** Anthropic's for Claude Sonnet 4: ≤ 200K input tokens $3 / $15; > 200K $6 / $22.50, the cache's multiples on top. */
const CLAUDE = {
  slug: 'test/claude-sonnet-4',
  id: 'd2d2d2d2-d2d2-4d2d-8d2d-d2d2d2d2d2d2',
  hostModel: 'claude-sonnet-4-20250514',
};

function catalogue(fake: Parameters<typeof testCatalogueFile>[0]) {
  const file = testCatalogueFile(fake);
  return {
    hosts: [
      ...file.hosts,
      { id: 'fake-gemini', kind: 'gemini', baseUrl: `${fake.url}/v1beta`, apiKeyEnv: 'FAKE_OPENAI_KEY', retry: { attempts: 0 } },
    ],
    models: [
      ...file.models,
      {
        slug: GEMINI.slug,
        id: GEMINI.id,
        name: 'Gemini 2.5 Pro',
        contextLength: 1_048_576,
        maxOutputTokens: 1000,
        reasoning: true,
        hosts: [
          {
            host: 'fake-gemini',
            model: GEMINI.hostModel,
            pricing: { input: '1.25', output: '10.00', cacheRead: '0.125' },
            longContext: { aboveInputTokens: 200_000, input: '2.50', output: '15.00', cacheRead: '0.25' },
          },
        ],
      },
      {
        slug: CLAUDE.slug,
        id: CLAUDE.id,
        name: 'Claude Sonnet 4',
        // With the 1M-context beta (the client's anthropic-beta is passed on).
        contextLength: 1_000_000,
        maxOutputTokens: 1000,
        hosts: [
          {
            host: 'fake-anthropic',
            model: CLAUDE.hostModel,
            pricing: { input: '3.00', output: '15.00' },
            // The cache's prices: Anthropic's multiples of the band's input price (0.1×, 1.25×, 2×).
            longContext: { aboveInputTokens: 200_000, input: '6.00', output: '22.50' },
          },
        ],
      },
    ],
  };
}

let g: TestGateway;
beforeAll(async () => {
  // Streams record their progress every 100 ms: what an expiry would bill if the gateway died mid-stream.
  g = await startGateway({ catalogue, versioned: true, env: { PROGRESS_INTERVAL_MS: '100' } });
});
afterAll(async () => {
  await g.close();
});

/** Reads the log: every event, in order. */
const log = async () => g.t.runtime.events.readAll(0, 100_000);

/** The settlement and reservation of the request a response names, once its settlement is in the read models. */
async function billed(res: Response): Promise<{ settled: ReservationSettled['data']; reserved: CreditsReserved['data'] }> {
  const requestId = res.headers.get('x-request-id')!;
  await g.logged(requestId);
  await g.settled();
  const events = await log();
  const of = <T>(type: string) =>
    events.find((e) => e.type === type && (e.data as { requestId: string }).requestId === requestId)!.data as T;
  return {
    settled: of<ReservationSettled['data']>('ReservationSettled'),
    reserved: of<CreditsReserved['data']>('CreditsReserved'),
  };
}

/**
 * A request of `model`, its host reporting `usage`; `content` the user's text. Gemini's is a
 * chat-completions client's; Claude's a messages client's asking for the 1M-context beta (passed on whole).
 */
async function ask(
  model: typeof GEMINI,
  usage: FakeUsage,
  options: { stream?: boolean; content?: string; text?: string; chunkDelayMs?: number } = {},
) {
  const { stream = false, content = 'Summarize the attached corpus.', text = 'Read it all.', chunkDelayMs } = options;
  g.fake.on(model.hostModel, { kind: 'reply', reply: { text, usage }, ...(chunkDelayMs === undefined ? {} : { chunkDelayMs }) });
  const messages = [{ role: 'user', content }];
  const res =
    model === CLAUDE
      ? await fetch(`${g.baseUrl}/api/v1/messages`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-api-key': g.key,
            'anthropic-version': '2023-06-01',
            'anthropic-beta': 'context-1m-2025-08-07',
          },
          body: JSON.stringify({ model: model.slug, max_tokens: 1000, messages, stream }),
        })
      : await chatCompletion(g.baseUrl, g.key, {
          model: model.slug,
          max_tokens: 1000,
          messages,
          ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
        });
  expect(res.status).toBe(200);
  await res.text();
  return billed(res);
}

const GEMINI_BASE = { input: 1_250_000_000, cacheRead: 125_000_000, output: 10_000_000_000 };
const GEMINI_BAND = { input: 2_500_000_000, cacheRead: 250_000_000, output: 15_000_000_000 };

describe('a Gemini 2.5 Pro request', () => {
  it('of 250,000 prompt tokens is billed at the band, every token: input, cache and output', async () => {
    const { settled } = await ask(GEMINI, { input: 250_000, output: 800 });
    // 250,000 × $2.50 + 800 × $15 = $637,000 per million tokens: 637,000,000 nano-credits
    expect(settled).toMatchObject({ inputTokens: 250_000, outputTokens: 800, prices: GEMINI_BAND, amount: 637_000_000 });
  });

  it('of 150,000 prompt tokens is billed at the base prices', async () => {
    const { settled } = await ask(GEMINI, { input: 150_000, output: 800 });
    // 150,000 × $1.25 + 800 × $10 = $195,500 per million tokens: 195,500,000 nano-credits
    expect(settled).toMatchObject({ inputTokens: 150_000, outputTokens: 800, prices: GEMINI_BASE, amount: 195_500_000 });
  });

  it('counts the cached content in the prompt: 100,000 uncached and 150,000 cached tokens take the band', async () => {
    const { settled } = await ask(GEMINI, { input: 100_000, cacheRead: 150_000, output: 800 });
    // 100,000 × $2.50 + 150,000 × $0.25 + 800 × $15 = 250,000 + 37,500 + 12,000 = $299,500 per million
    expect(settled).toMatchObject({ cacheReadTokens: 150_000, prices: GEMINI_BAND, amount: 299_500_000 });
  });

  it('streamed, takes the band from 200,001 prompt tokens on, and not at 200,000 ("prompts > 200k tokens")', async () => {
    const above = await ask(GEMINI, { input: 200_001, output: 1 }, { stream: true });
    // 200,001 × $2.50 + 1 × $15 = $500,017.5 per million: 500,017,500 nano-credits
    expect(above.settled).toMatchObject({ prices: GEMINI_BAND, amount: 500_017_500 });
    const at = await ask(GEMINI, { input: 200_000, output: 1 }, { stream: true });
    // 200,000 × $1.25 + 1 × $10 = $250,010 per million
    expect(at.settled).toMatchObject({ prices: GEMINI_BASE, amount: 250_010_000 });
  });

  it('estimated above the threshold, is held at the band (a hold never below its charge as estimated)', async () => {
    // 879,972 characters: 219,993 tokens, plus the message's framing: 220,000 estimated.
    const content = 'x'.repeat(879_972);
    const long = await ask(GEMINI, { input: 220_000, output: 1000 }, { content });
    // 220,000 × $2.50 + 1,000 (the cap) × $15 = $565,000 per million; the base would hold $285,000.
    expect(long.reserved.amount).toBe(565_000_000);
    expect(long.settled).toMatchObject({ held: 565_000_000, amount: 565_000_000, prices: GEMINI_BAND });
    // Estimated at the threshold (799,972 characters: 200,000 tokens), at the base prices:
    // 200,000 × $1.25 + 1,000 × $10 = $260,000 per million.
    const short = await ask(GEMINI, { input: 150_000, output: 10 }, { content: 'x'.repeat(799_972) });
    expect(short.reserved.amount).toBe(260_000_000);
  });
});

describe('a Claude Sonnet 4 request with the 1M-context beta', () => {
  it('whose input, cache reads and cache writes pass 200,000 together is billed at the band, the cache at its multiples', async () => {
    const { settled } = await ask(CLAUDE, { input: 50_000, cacheRead: 120_000, cacheWrite: 40_000, output: 1_000 });
    // 50,000 × $6 + 120,000 × $0.60 + 40,000 × $7.50 + 1,000 × $22.50 = 300,000 + 72,000 + 300,000 + 22,500 = $694,500 per million
    expect(settled).toMatchObject({
      prices: {
        input: 6_000_000_000,
        cacheRead: 600_000_000,
        cacheWrite: 7_500_000_000,
        cacheWrite1h: 12_000_000_000,
        output: 22_500_000_000,
      },
      amount: 694_500_000,
    });
    expect(g.fake.requests.at(-1)!.headers['anthropic-beta']).toBe('context-1m-2025-08-07');
  });

  it('of 200,000 input tokens in all is billed at the base prices', async () => {
    const { settled } = await ask(CLAUDE, { input: 50_000, cacheRead: 110_000, cacheWrite: 40_000, output: 1_000 });
    // 50,000 × $3 + 110,000 × $0.30 + 40,000 × $3.75 + 1,000 × $15 = 150,000 + 33,000 + 150,000 + 15,000 = $348,000 per million
    expect(settled).toMatchObject({ prices: { input: 3_000_000_000, output: 15_000_000_000 }, amount: 348_000_000 });
  });

  it('streamed, records its progress at the band (what an expiry bills if the gateway dies mid-stream)', async () => {
    // 24 words, one every 25 ms: about six progress records, each with the prompt message_start counted.
    const text = Array.from({ length: 24 }, (_, i) => `word${i} `).join('');
    const { settled } = await ask(CLAUDE, { input: 210_000, output: 30 }, { stream: true, text, chunkDelayMs: 25 });
    const progress = (await log())
      .filter(
        (e) => e.type === 'ReservationProgress' && (e.data as { reservationId: string }).reservationId === settled.reservationId,
      )
      .map((e) => e.data as ReservationProgress['data']);
    expect(progress.length).toBeGreaterThanOrEqual(1);
    for (const p of progress)
      expect(p).toMatchObject({ inputTokens: 210_000, prices: { input: 6_000_000_000, output: 22_500_000_000 } });
    // 210,000 × $6 + 30 × $22.50 = $1,260,675 per million
    expect(settled).toMatchObject({ prices: { input: 6_000_000_000 }, amount: 1_260_675_000 });
  });
});

describe('the bands, read back', () => {
  it('the model list shows them as OpenRouter does, from the first prompt token they price', async () => {
    const res = await fetch(`${g.baseUrl}/api/v1/models/${GEMINI.slug}`, { headers: { authorization: `Bearer ${g.key}` } });
    const { pricing } = (await res.json()) as { pricing: Record<string, unknown> };
    expect(pricing).toEqual({
      input: '1.25',
      output: '10.00',
      cache_read: '0.125',
      cache_write: '1.25',
      cache_write_1h: '1.25',
      unit: 'USD per million tokens',
      overrides: [
        {
          min_prompt_tokens: 200_001,
          input: '2.50',
          output: '15.00',
          cache_read: '0.25',
          cache_write: '2.5',
          cache_write_1h: '2.5',
        },
      ],
    });
    const plain = await fetch(`${g.baseUrl}/api/v1/models/test/gpt`, { headers: { authorization: `Bearer ${g.key}` } });
    expect(((await plain.json()) as { pricing: object }).pricing).not.toHaveProperty('overrides');
  });

  it('the log records the bands with the catalogue version, and ledger audit finds every settlement at its version’s prices', async () => {
    const loaded = (await log()).filter((e) => e.type === 'CatalogueLoaded');
    expect(loaded).toHaveLength(1);
    const prices = (loaded[0].data as CatalogueLoaded['data']).prices;
    expect(prices.find((p) => p.model === GEMINI.slug)!.longContext).toEqual([
      {
        aboveInputTokens: 200_000,
        prices: {
          input: 2_500_000_000,
          cacheRead: 250_000_000,
          cacheWrite: 2_500_000_000,
          cacheWrite1h: 2_500_000_000,
          output: 15_000_000_000,
        },
      },
    ]);
    expect(prices.find((p) => p.model === 'test/gpt')).not.toHaveProperty('longContext');
    const report = await g.audit();
    expect(report.differences).toEqual([]);
    expect(report.settlements).toBe(10);
    // And as the operator runs it, beside the serving gateway.
    const { code, report: tool } = await g.auditWithOperatorTool();
    expect(tool.differences).toEqual([]);
    expect(code).toBe(0);
  });

  it('the standalone verifier recomputes every charge from the export alone, and the statement folds them by class', async () => {
    const settlements = (await log())
      .filter((e) => e.type === 'ReservationSettled')
      .map((e) => e.data as ReservationSettled['data']);
    const charged = settlements.reduce((sum, s) => sum + s.amount, 0);
    const verifier = new ExportVerifier();
    for await (const line of exportLedger(g.t.runtime.events, g.orgId)) verifier.line(line);
    const verified = verifier.finish();
    expect(verified.differences).toEqual([]);
    expect(verified.figures!.charged).toBe(charged);

    const { statement } = await readStatement(g.t.runtime.events, g.orgId, monthOf(Date.now()));
    expect(statement.charges.amount).toBe(charged);
    const input = statement.charges.byClass.find((l) => l.class === 'input')!;
    expect(input.quantity).toBe(settlements.reduce((n, s) => n + s.inputTokens, 0));
    expect(BigInt(input.costMicroNano)).toBe(
      settlements.reduce((n, s) => n + BigInt(s.inputTokens) * BigInt(s.prices.input), 0n),
    );
  });

  it('ledger audit names a settlement of a prompt above the threshold at the base prices (and one below it at the band’s)', async () => {
    const events = await log();
    const version = (events.find((e) => e.type === 'CatalogueLoaded')!.data as CatalogueLoaded['data']).version;
    const forge = async (id: string, inputTokens: number, prices: typeof GEMINI_BASE, amount: number) => {
      const facts = {
        requestId: `q-${id}`,
        keyId: g.keyId,
        surface: 'chat',
        model: GEMINI.slug,
        reservationId: id,
        orgId: g.orgId,
      };
      const reserved = {
        type: 'CreditsReserved',
        data: { ...facts, amount: 900_000_000, reservedAt: 1, expiresAt: 9e12, catalogueVersion: version },
      };
      const settled = {
        type: 'ReservationSettled',
        data: {
          ...facts,
          inputTokens,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          cacheWrite1hTokens: 0,
          outputTokens: 0,
          host: 'fake-gemini',
          hostModel: GEMINI.hostModel,
          prices: { ...prices, cacheWrite: prices.input, cacheWrite1h: prices.input },
          amount,
          held: 900_000_000,
          status: 'ok',
          latencyMs: 1,
          settledAt: 2,
          catalogueVersion: version,
        },
      };
      await g.t.runtime.events.append(`reservation-${id}`, [reserved, settled], 'no_stream');
    };
    // Its charge is right for the prices it names: only the prices are wrong for its tokens.
    await forge('forged-base-above', 250_000, GEMINI_BASE, 312_500_000);
    await forge('forged-band-below', 150_000, GEMINI_BAND, 375_000_000);
    const report = await g.audit();
    expect(report.differences).toEqual([
      expect.stringMatching(
        new RegExp(
          `^event \\d+ \\(ReservationSettled\\): prices .*"input":1250000000.* are not catalogue version ${version}'s for gemini-2.5-pro on fake-gemini \\(.*"input":2500000000.* \\(its band above 200000 prompt tokens: this one has 250000\\)\\)$`,
        ),
      ),
      expect.stringMatching(
        /\(ReservationSettled\): prices .*"input":2500000000.* are not catalogue version .*"input":1250000000.* \(its base prices/,
      ),
    ]);
  });
});
