import { ApiError } from '../http/api-error';

/**
 * Read your writes, for clients: every reply names the ledger position of its settlement (the
 * event that charged it, or released its hold) in this header, and the read routes (`/credits`,
 * `/key`, `/generation`) answer `min_position=P` only once their read models include every event
 * up to P, naming the position they reflect in the same header.
 */
export const LEDGER_POSITION_HEADER = 'x-ledger-position';

/** The header naming a ledger position. */
export const ledgerPositionHeader = (position: number): Record<string, string> => ({
  [LEDGER_POSITION_HEADER]: String(position),
});

/** What `?min_position=` asks, as the query string gave it: absent, or a position of the log (an integer ≥ 0). */
export function minPositionOf(text: unknown): number | null {
  if (text === undefined) return null;
  // A repeated parameter arrives as an array: one position only.
  if (typeof text !== 'string' || !/^\d{1,16}$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new ApiError(
      'invalid_request',
      "min_position must be a ledger position: a whole number ≥ 0, as a reply's x-ledger-position header gave it",
      { param: 'min_position' },
    );
  }
  return Number(text);
}

/** A position past the log's head was never given by a reply of this log: a mistake, not a wait. */
export const beyondHead = (position: number, head: number) =>
  new ApiError(
    'invalid_request',
    `min_position ${position} is beyond the ledger's last event (${head}): no reply of this gateway named it`,
    { param: 'min_position' },
  );

/** The read models did not reach the position within the bound. */
export const notReached = (position: number, reached: number, waitMs: number) =>
  new ApiError(
    'unavailable',
    `the read models did not reach ledger position ${position} within ${waitMs} ms (they are at ${reached}); try again`,
  );
