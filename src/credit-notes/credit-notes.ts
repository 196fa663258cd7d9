import { ApiError, type ApiErrorCode } from '../http/api-error';
import type { Membership } from '../identity/organization.decider';
import type { KeyMaker } from '../keys/api-key/api-key.events';
import { LedgerRuleError } from '../ledger/ledger.decider';
import type { CreditNoteIssued } from '../ledger/ledger.events';
import type { CreditNoteRequest, IssuedCreditNote, LedgerService } from '../ledger/ledger.service';
import { creditsNumber, formatCredits, parseCredits } from '../ledger/money';
import type { ReadModels, RequestLogEntry } from '../projections/read-models';
import { requestIdsOf } from '../surfaces/reply-id';

/**
 * Credit notes from the front doors (management API, dashboard, operator tool): a generation named
 * as its callers know it, amounts as credits, the ledger's refusals as API errors, and a note as
 * they show it. The rules are the credit account decider's.
 */

/** How many of a generation's candidates an ambiguity names (the rest are counted). */
const CANDIDATES_NAMED = 20;

/**
 * The reservation a generation id names: the request log's entry for it (an x-request-id, or the id
 * its reply carried, as GET /generation finds it), else the id itself, taken as the reservation's
 * (the request log keeps the latest requests only; the reservation id is for good). Reply ids are not
 * unique (a host's may repeat, a client may reuse its own x-request-id), and the log's index finds only
 * the newest of an id: every logged generation it names is looked for, and more than one is a 409
 * naming them, never a guess.
 */
export async function reservationOf(readModels: ReadModels, orgId: string, id: string): Promise<string> {
  let entry = await readModels.request(orgId, id);
  let found = id;
  for (const requestId of requestIdsOf(id)) {
    if (entry !== null) break;
    entry = await readModels.request(orgId, requestId);
    found = requestId;
  }
  if (entry === null) return id;
  const log = await readModels.recentRequests(orgId, Number.MAX_SAFE_INTEGER);
  const generations = new Map<string, RequestLogEntry>();
  for (const e of log) {
    const names = e.requestId === found || e.upstreamId === found;
    if (names && e.reservationId !== null && !generations.has(e.reservationId)) generations.set(e.reservationId, e);
  }
  if (generations.size === 1) return [...generations.keys()][0];
  if (generations.size === 0) return entry.reservationId ?? id;
  throw ambiguous(id, [...generations.values()]);
}

/** A 409 naming the generations an id could mean, by their request ids (or, where those repeat too, their reservation ids). */
function ambiguous(id: string, candidates: RequestLogEntry[]): ApiError {
  const requestIds = new Set(candidates.map((e) => e.requestId));
  const byRequestId = requestIds.size === candidates.length;
  const names = candidates.map((e) => (byRequestId ? e.requestId : (e.reservationId ?? e.requestId)));
  const more = names.length > CANDIDATES_NAMED ? ` and ${names.length - CANDIDATES_NAMED} more` : '';
  return new ApiError(
    'conflict',
    `generation ${id} names ${candidates.length} generations (reply ids are not unique): name one by its ` +
      `${byRequestId ? 'request id (x-request-id)' : 'reservation id'}: ${names.slice(0, CANDIDATES_NAMED).join(', ')}${more}`,
    { param: 'generation' },
  );
}

/** A credit note asked for in the front doors' words: a generation id, credits as text or a JSON number. */
export interface CreditNoteAsked {
  orgId: string;
  kind: 'refund' | 'adjustment';
  generation?: string;
  /** Credits: a refund's (absent: all its generation's charge not yet refunded) or an adjustment's, signed. */
  amount?: string | number;
  reason: string;
  idempotencyKey: string;
  memo?: string;
  issuedBy: string;
}

/** Credits as text or a JSON number (signed, at most 9 decimals), in nano-credits. */
export function nanoCreditsOf(amount: string | number, param = 'amount'): number {
  const text = typeof amount === 'number' ? amount.toFixed(9) : amount.trim();
  if (typeof amount === 'number' && Number(text) !== amount)
    throw new ApiError('invalid_request', `${param}: an amount of credits has at most 9 decimals`, { param });
  const negative = text.startsWith('-');
  try {
    const nano = parseCredits(negative || text.startsWith('+') ? text.slice(1) : text);
    return negative ? -nano : nano;
  } catch (error) {
    throw new ApiError('invalid_request', `${param}: ${(error as Error).message}`, { param });
  }
}

/** Issues the note asked for; the ledger's refusals become API errors (a rule broken is never a 500). */
export async function issueCreditNote(ledger: LedgerService, readModels: ReadModels, asked: CreditNoteAsked) {
  // An adjustment's generation goes to the ledger as given, which refuses it (dropping it would hide the mistake).
  let reservationId = asked.generation ?? null;
  if (asked.kind === 'refund' && asked.generation !== undefined) {
    try {
      reservationId = await reservationOf(readModels, asked.orgId, asked.generation);
    } catch (error) {
      // The same key again returns the first note, even once its reply id has come to name several generations.
      const earlier = await ledger.creditNoteIssuedWith(asked.orgId, asked.idempotencyKey);
      if (earlier) return earlier;
      throw error;
    }
  }
  const request: CreditNoteRequest = {
    orgId: asked.orgId,
    kind: asked.kind,
    reservationId,
    amount: asked.amount === undefined ? null : nanoCreditsOf(asked.amount),
    reason: asked.reason,
    idempotencyKey: asked.idempotencyKey,
    issuedBy: asked.issuedBy,
    ...(asked.memo === undefined ? {} : { memo: asked.memo }),
  };
  try {
    return await ledger.issueCreditNote(request);
  } catch (error) {
    throw error instanceof LedgerRuleError ? refusalOf(error) : error;
  }
}

const REFUSALS: Partial<Record<LedgerRuleError['code'], ApiErrorCode>> = {
  organization_not_found: 'not_found',
  generation_not_found: 'not_found',
  credit_note_conflict: 'conflict',
  insufficient_balance: 'insufficient_credits',
};

/** What a caller sees of a ledger rule its credit note broke. */
export const refusalOf = (error: LedgerRuleError): ApiError =>
  new ApiError(REFUSALS[error.code] ?? 'invalid_request', error.message);

/** A credit note as the APIs show it; `already_issued`: its idempotency key had issued it before. */
export const creditNoteView = (note: CreditNoteIssued['data'], alreadyIssued?: boolean) => ({
  id: note.creditNoteId,
  kind: note.kind,
  generation: note.reservationId,
  key_id: note.keyId,
  amount: creditsNumber(note.amount),
  amount_nano: note.amount,
  reason: note.reason,
  memo: note.memo ?? null,
  idempotency_key: note.idempotencyKey,
  issued_by: note.issuedBy,
  issued_at: new Date(note.issuedAt).toISOString(),
  ...(alreadyIssued === undefined ? {} : { already_issued: alreadyIssued }),
});

/** The lines the operator tool prints for an issued note. */
export function creditNoteLines({ note, alreadyIssued }: IssuedCreditNote): string[] {
  const what =
    note.kind === 'refund'
      ? `refund of ${formatCredits(note.amount)} credits for generation ${note.reservationId}`
      : `adjustment of ${note.amount > 0 ? '+' : ''}${formatCredits(note.amount)} credits`;
  return [
    alreadyIssued
      ? `credit note ${note.creditNoteId} was already issued with key ${note.idempotencyKey} (${what}, ${note.reason}): nothing more issued`
      : `issued credit note ${note.creditNoteId}: ${what} (${note.reason})`,
  ];
}

/**
 * Who issued a note, as the operator tool names it. Notes are the operator's alone since
 * 2026-11-28; before, owners could issue them from the dashboard (their user id), and any
 * management key given billing rights could through the API. `unexpected`: not the operator's,
 * nor a key the operator made: a note worth a look.
 */
export type NoteIssuer =
  | { kind: 'operator'; unexpected: false }
  | { kind: 'management_key'; keyId: string; madeBy: KeyMaker | null; unexpected: boolean }
  | { kind: 'dashboard_user'; userId: string; email: string | null; unexpected: true };

/**
 * `key`: the key `issuedBy` names in the note's organization, if it is one (its maker, null when its
 * creation predates makers being recorded); `members`: the organization's, to name a user.
 */
export function noteIssuer(
  issuedBy: string,
  key: { madeBy: KeyMaker | null } | null,
  members: ReadonlyMap<string, Pick<Membership, 'email'>>,
): NoteIssuer {
  if (issuedBy === 'cli') return { kind: 'operator', unexpected: false };
  if (key !== null)
    return { kind: 'management_key', keyId: issuedBy, madeBy: key.madeBy, unexpected: key.madeBy?.kind !== 'operator' };
  // Neither the operator tool nor a key: the dashboard, which issued under the user's id.
  return { kind: 'dashboard_user', userId: issuedBy, email: members.get(issuedBy)?.email ?? null, unexpected: true };
}

/** How the operator tool's line names an issuer. */
export function issuerLine(issuer: NoteIssuer): string {
  switch (issuer.kind) {
    case 'operator':
      return 'the operator tool';
    case 'management_key': {
      const maker = issuer.madeBy;
      const made =
        maker === null
          ? 'maker not recorded'
          : maker.kind === 'operator'
            ? 'made by the operator'
            : `made by ${maker.kind === 'member' ? `user ${maker.userId}` : `key ${maker.keyId}`}`;
      return `management key ${issuer.keyId} (${made})`;
    }
    case 'dashboard_user':
      return `dashboard user ${issuer.userId}${issuer.email === null ? '' : ` <${issuer.email}>`}`;
  }
}
