import { chargeOf, ListPrices } from './charges';
import type { FakeSearch } from './fake-upstream';

/** What the hosted-tools specs share: the searches a host reports running, the tokens beside them, and their charge. */

export const SEARCHES: FakeSearch[] = [
  { query: 'paris weather', url: 'https://weather.example/paris', title: 'Paris' },
  { query: 'paris forecast', url: 'https://forecast.example/paris', title: 'Forecast' },
  { query: 'paris rain', url: 'https://rain.example/paris', title: 'Rain' },
];

/** The tokens a reply reports beside its searches. */
export const USAGE = { input: 120, output: 30 };

/** The exact charge of a reply of USAGE's tokens and `searches` web searches at `prices`: ceil(Σ tokens × price / 1e6 + searches × price / 1e3). */
export const searchCharge = (prices: ListPrices, searches: number) => chargeOf(prices, USAGE, { webSearch: searches });
