import type { HostError } from '../canonical/canonical';
import type { ModelHost } from '../catalogue/catalogue';
import { ApiError, shuttingDown } from '../http/api-error';
import { HostAttempt, ReservationEvent, settledUsage, type TokenClass } from '../ledger/ledger.events';
import type { TokenUsage } from '../ledger/money';
import type { AttemptState, Ending } from './attempt';
import type { Billed } from './inference.command';
import { checkedUsage, UsageLimits } from './usage-check';

/**
 * The settlement, decided: given how a request ended and what was delivered, what the ledger
 * records (a settlement for what was used, or the hold released) and what the client is told.
 */

/**
 * The request log's status of a request that was served (or began to be): `client_abort`, its client
 * left; `shutdown`, the gateway shutting down ended it (still open at its grace period's end; logs
 * written before this status existed say `client_abort` for those).
 */
export type SettlementStatus = 'ok' | 'client_abort' | 'shutdown' | 'provider_timeout' | 'provider_error';

export type Settlement =
  /**
   * Bill `usage`. A completed request (`ok`) reports its charge at once, before the event is written.
   * `flag`: why some of the tokens are the gateway's own count, not the host's (see usage-check.ts);
   * `estimated`: which classes are ([]: none).
   */
  | { action: 'settle'; status: SettlementStatus; usage: TokenUsage; flag: string | null; estimated: TokenClass[] }
  /** Nothing was delivered: the whole hold returns. */
  | { action: 'release'; status: Exclude<SettlementStatus, 'ok'>; reason: string };

/** What was delivered, as the attempt counted it. */
export type Delivered = Pick<AttemptState, 'produced' | 'usage' | 'deliveredChars'>;

/** A billed request's call, ended: the host that served last (after another: `fallback`), how it ended, and what to record. */
export interface CallEnded {
  served: ModelHost;
  fallback: boolean;
  ending: Ending;
  settlement: Settlement;
  /** The serving host's own id for its reply, when it gave one (a client of its format sees it). */
  upstreamId?: string | null;
  /** Every host call on the way, in order (recorded with the settlement or release). */
  attempts?: HostAttempt[];
}

type Unfinished = Exclude<Ending, { kind: 'complete' }>;

/** The status of a request that did not complete: the client left, the gateway shut down, or the provider timed out or failed. */
const unfinishedStatus = (ending: Unfinished): Exclude<SettlementStatus, 'ok'> =>
  ending.kind === 'abort'
    ? 'client_abort'
    : ending.kind === 'shutdown'
      ? 'shutdown'
      : ending.kind === 'timeout' || ending.error.kind === 'timeout'
        ? 'provider_timeout'
        : 'provider_error';

/**
 * A completed request is billed (from its usage, as checked), and so is one whose client left while
 * its host was read to the end; one that did not complete is billed for what was delivered, or
 * released in full when nothing was.
 */
export function settlementFor(ending: Ending, delivered: Delivered, limits: UsageLimits): Settlement {
  if (ending.kind === 'complete') return { action: 'settle', status: 'ok', ...checked(delivered, limits, true) };
  // The client left and the host was read to its end: its reply's count, as a completed reply's is.
  if (ending.kind === 'abort' && ending.readToEnd)
    return { action: 'settle', status: 'client_abort', ...checked(delivered, limits, true) };
  if (!delivered.produced) return nothingDelivered(ending);
  return { action: 'settle', status: unfinishedStatus(ending), ...checked(delivered, limits, false) };
}

/**
 * A request that did not complete and delivered nothing (a reply answered in one piece delivers
 * nothing before it completes): its hold released in full.
 */
export function nothingDelivered(ending: Unfinished): Settlement {
  const status = unfinishedStatus(ending);
  return { action: 'release', status, reason: ending.kind === 'failed' ? ending.error.message : status };
}

/**
 * What a stream has delivered so far, billed as a cut at this moment would be: recorded at
 * intervals, so that a crash that stops it still bills it (up to its last record).
 */
export const progressOf = (delivered: Delivered, limits: UsageLimits) => checked(delivered, limits, false);

const checked = (delivered: Delivered, limits: UsageLimits, complete: boolean) =>
  checkedUsage(delivered.usage, delivered.deliveredChars, limits, complete);

/** What a request the shutdown ended is told: a 503 (a stream that has started: in its last event). */
export const endedByShutdown = () =>
  shuttingDown(
    'the gateway is shutting down and this request was still running when its grace period ended: send it again (to another instance)',
  );

/**
 * What the client is told of an ending other than completion (an error for the stream), or null:
 * a completed request ends normally and an aborted one has nobody left to tell.
 */
export function endingError(ending: Ending, hostId: string, requestTimeoutMs: number): ApiError | null {
  switch (ending.kind) {
    case 'complete':
    case 'abort':
      return null;
    case 'shutdown':
      return endedByShutdown();
    case 'timeout':
      return new ApiError('provider_timeout', `the provider did not finish within ${requestTimeoutMs} ms`);
    case 'failed':
      return providerFailure(ending.error, hostId);
  }
}

/**
 * What the client is told once the ledger has answered (`recorded`: the log took the settlement or
 * release): the ending's error; a completed reply whose charge the log did not take is withdrawn,
 * and a failure's own error stands. Null: billed and complete, or nobody left to tell.
 */
export function answerAtEnd(ending: Ending, hostId: string, requestTimeoutMs: number, recorded: boolean): ApiError | null {
  if (ending.kind === 'abort') return null;
  const error = endingError(ending, hostId, requestTimeoutMs);
  return recorded ? error : (error ?? chargeNotRecorded());
}

/** A host's failure as the client sees it. */
export function providerFailure(error: HostError, hostId: string): ApiError {
  if (error.kind === 'timeout') return new ApiError('provider_timeout', `provider ${hostId} did not answer in time`);
  // Every host skipped: none is called while it keeps failing (see routing/breaker.ts).
  if (error.kind === 'circuit_open')
    return new ApiError('unavailable', "the model's hosts are failing and are passed over for now; try again shortly");
  // The upstream refused the request itself (not its own failure): the caller can fix it.
  if (error.kind === 'status' && (error.status === 400 || error.status === 413 || error.status === 422)) {
    return new ApiError('invalid_request', `provider ${hostId} rejected the request: ${error.message}`);
  }
  return new ApiError('provider_error', `provider ${hostId} failed: ${error.message}`);
}

/** The last event of a completed request, from its settlement: what was charged, and by whom. */
export function billedOf(event: ReservationEvent, hostId: string, position: number): Billed | null {
  if (event.type !== 'ReservationSettled') return null;
  return { type: 'billed', usage: settledUsage(event.data), cost: event.data.amount, host: hostId, position };
}

/** The reply whose charge the log did not take: withdrawn (in-stream error, or 503), nothing billed. */
export const chargeNotRecorded = () =>
  new ApiError(
    'unavailable',
    'the charge for this reply could not be recorded, so the reply is withdrawn and nothing is billed; try again',
  );
