import type { ApiError } from '../http/api-error';
import type { Resolution } from '../ledger/ledger.service';
import type { RequestFacts } from '../observability/request-facts';
import type { CallEnded } from './settlement';

/**
 * What a billed request's log line, metrics and trace show of how it ended, filled in once (in
 * place: the request's one facts object) from its refusal or from its settlement.
 */

/** A request turned away: the refusal's code and what the client was told. */
export function describeRefusal(facts: RequestFacts, error: ApiError): void {
  facts.outcome = error.outcome;
  facts.error = error.message;
}

/**
 * A request that ended: the host that served last and whether it was a fallback, the ledger's
 * status, what the client was told (`told`: an error, or null), and, when the ledger took the
 * settlement (`resolution`), the tokens billed and the charge.
 */
export function describeEnding(
  facts: RequestFacts,
  { served, fallback, settlement, attempts }: CallEnded,
  told: ApiError | null,
  resolution: Resolution | null,
): void {
  facts.host = served.host.id;
  facts.fallback = fallback;
  if (attempts !== undefined) facts.attempts = attempts;
  facts.outcome = settlement.status;
  if (told) facts.error = told.message;
  if (settlement.action === 'settle' && resolution?.event.type === 'ReservationSettled') {
    facts.usage = settlement.usage;
    facts.cost = resolution.event.data.amount;
  }
}
