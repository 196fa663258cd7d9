import type { Admission, LedgerService } from '../../src/ledger/ledger.service';

/** Admits a request and waits until its reservation is in the log, as a test that then reads the log needs. */
export async function reserve(ledger: LedgerService, request: Parameters<LedgerService['admit']>[0]): Promise<Admission> {
  const admission = await ledger.admit(request);
  if (admission.admitted) await admission.ticket.recorded;
  return admission;
}
