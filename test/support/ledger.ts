import type { TokenPrices } from '../../src/ledger/money';
import type { Admission, LedgerService } from '../../src/ledger/ledger.service';

/** Admits a request and waits until its reservation is in the log, as a test that then reads the log needs. */
export async function reserve(ledger: LedgerService, request: Parameters<LedgerService['admit']>[0]): Promise<Admission> {
  const admission = await ledger.admit(request);
  if (admission.admitted) await admission.ticket.recorded;
  return admission;
}

/** Prices by class: the cache's at the input price unless `cache` says otherwise. */
export const pricesOf = (input: number, output: number, cache: Partial<TokenPrices> = {}): TokenPrices => ({
  input,
  cacheRead: input,
  cacheWrite: input,
  cacheWrite1h: input,
  output,
  ...cache,
});
