import type { CatalogueModel, ModelHost } from '../../src/catalogue/catalogue';
import type { HostKindName } from '../../src/hosts/hosts';
import type { TokenPrices } from '../../src/ledger/money';
import type { PriceBand } from '../../src/ledger/price-bands';
import { DEFAULT_RETRY } from '../../src/routing/retry';

/**
 * A catalogue host entry for pure tests: prices in nano-credits per million tokens, the cache's
 * classes at the input price unless `cache` says otherwise; long-context `bands` when given.
 */
export function modelHost(
  id: string,
  options: {
    kind?: HostKindName;
    usable?: boolean;
    input?: number;
    output?: number;
    cache?: Partial<TokenPrices>;
    bands?: PriceBand[];
  } = {},
): ModelHost {
  const { kind = 'openai', usable = true, input = 1, output = 1, cache = {}, bands = [] } = options;
  const prices = { input, cacheRead: input, cacheWrite: input, cacheWrite1h: input, output, ...cache };
  const listed = (nano: number) => String(nano / 1e9);
  const endpoint = { id, baseUrl: `http://${id}/v1`, apiKey: `key-${id}`, settings: {} };
  const credentials = usable ? [{ id: `KEY_${id.toUpperCase().replace(/\W/g, '_')}`, weight: 1, endpoint }] : [];
  return {
    host: { ...endpoint, kind, apiKeyEnv: credentials[0]?.id ?? null, usable, retry: DEFAULT_RETRY, credentials },
    model: `${id}-model`,
    prices,
    listPrices: {
      input: listed(prices.input),
      cacheRead: listed(prices.cacheRead),
      cacheWrite: listed(prices.cacheWrite),
      cacheWrite1h: listed(prices.cacheWrite1h),
      output: listed(prices.output),
    },
    cachePricesAssumed: false,
    bands,
    listBands: bands.map((b) => ({
      aboveInputTokens: b.aboveInputTokens,
      prices: {
        input: listed(b.prices.input),
        cacheRead: listed(b.prices.cacheRead),
        cacheWrite: listed(b.prices.cacheWrite),
        cacheWrite1h: listed(b.prices.cacheWrite1h),
        output: listed(b.prices.output),
      },
    })),
  };
}

/** A catalogue model `vendor/model` (output limit 1,000 tokens) served by `hosts`. */
export const catalogueModel = (hosts: ModelHost[]): CatalogueModel => ({
  slug: 'vendor/model',
  kind: 'chat',
  id: '00000000-0000-4000-8000-000000000001',
  name: 'Model',
  contextLength: 128_000,
  maxOutputTokens: 1000,
  reasoning: true,
  created: 1_700_000_000,
  hosts,
});
