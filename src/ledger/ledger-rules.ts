import { CREDIT_NOTE_REASONS, type CreditNoteIssued, type CreditsGranted } from './ledger.events';
import { isNanoAmount } from './money';

/**
 * Rules an organization's ledger events keep, as a reader of the log checks them after the fact: the
 * rules the deciders enforce when the events are written, checked again on what was written. One pure
 * function per rule, shared by `ledger audit` (the log) and `ledger verify` (an export alone), so the
 * two never check a rule two ways. Each answers the breach, or null; rules over earlier events take
 * what the caller has seen of the organization's before (its own events only: rules are per organization).
 */
export interface RuleBreach {
  /** The rule, named as refusals say it. */
  rule: string;
  /** The event's field at fault. */
  field: string;
  expected: unknown;
  found: unknown;
}

/** A grant adds credits: a positive integer of nano-credits (never a debit; that is an adjustment). */
export function grantNotPositive(grant: CreditsGranted['data']): RuleBreach | null {
  if (isNanoAmount(grant.amount) && grant.amount > 0) return null;
  return {
    rule: 'a grant is a positive amount',
    field: 'data.amount',
    expected: 'a positive integer of nano-credits',
    found: grant.amount,
  };
}

/** A grant id grants once per organization (asked again, the grant made is answered: nothing is written). `made`: the ids before. */
export function grantIdReused(grant: CreditsGranted['data'], made: ReadonlySet<string>): RuleBreach | null {
  if (grant.grantId === undefined || !made.has(grant.grantId)) return null;
  return {
    rule: 'a grant id grants once',
    field: 'data.grantId',
    expected: 'a grant id not granted before',
    found: grant.grantId,
  };
}

/** A credit note's reason is one of the known codes. */
export function creditNoteReasonUnknown(note: CreditNoteIssued['data']): RuleBreach | null {
  if ((CREDIT_NOTE_REASONS as readonly string[]).includes(note.reason)) return null;
  return {
    rule: "a credit note's reason is a known code",
    field: 'data.reason',
    expected: `one of ${CREDIT_NOTE_REASONS.join(', ')}`,
    found: note.reason,
  };
}

/** An idempotency key issues one credit note per organization (asked again, the first is answered). `issued`: the keys before. */
export function idempotencyKeyReused(note: CreditNoteIssued['data'], issued: ReadonlySet<string>): RuleBreach | null {
  if (!issued.has(note.idempotencyKey)) return null;
  return {
    rule: 'an idempotency key issues one credit note',
    field: 'data.idempotencyKey',
    expected: 'a key not used by an earlier note',
    found: note.idempotencyKey,
  };
}

/** An adjustment moves the balance and names no generation (a refund does). */
export function adjustmentNamesGeneration(note: CreditNoteIssued['data']): RuleBreach | null {
  if (note.kind !== 'adjustment' || note.reservationId === null) return null;
  return {
    rule: 'an adjustment names no generation',
    field: 'data.reservationId',
    expected: null,
    found: note.reservationId,
  };
}

/** A breach in one line, for reports that are lines (`ledger audit`). */
export const describeBreach = (b: RuleBreach): string =>
  `${b.rule}: ${b.field} expected ${typeof b.expected === 'string' ? b.expected : JSON.stringify(b.expected)}, found ${JSON.stringify(b.found)}`;
