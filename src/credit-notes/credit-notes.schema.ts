import { CREDIT_NOTE_REASONS } from '../ledger/ledger.events';
import { MAX_MEMO_LENGTH } from '../ledger/ledger.decider';

/** A credit note's body, in the management API and the dashboard: unknown fields are refused. */
export interface CreditNoteBody {
  kind: 'refund' | 'adjustment';
  /** A refund's generation: its x-request-id, its reply's id, or its reservation id. */
  generation?: string;
  /** Credits (a JSON number or decimal text): a refund's (absent: all of its charge not yet refunded); an adjustment's, + or −. */
  amount?: number | string;
  reason: (typeof CREDIT_NOTE_REASONS)[number];
  /** Absent: the Idempotency-Key header's. */
  idempotency_key?: string;
  memo?: string;
}

export const creditNoteSchema = {
  type: 'object',
  required: ['kind', 'reason'],
  properties: {
    kind: { enum: ['refund', 'adjustment'] },
    generation: { type: 'string', minLength: 1, maxLength: 200 },
    amount: {
      anyOf: [{ type: 'number' }, { type: 'string', minLength: 1, maxLength: 40 }],
      'x-message': 'must be an amount of credits (a number, or decimal text such as "-2.50")',
    },
    reason: { enum: [...CREDIT_NOTE_REASONS] },
    idempotency_key: { type: 'string', minLength: 1, maxLength: 128 },
    memo: { type: 'string', maxLength: MAX_MEMO_LENGTH },
  },
  additionalProperties: false,
};
