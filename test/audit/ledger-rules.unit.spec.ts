import { LogAuditor } from '../../src/audit/ledger-audit';
import type { RecordedEvent } from '../../src/eventstore/event-store';

/** `ledger audit` checks the ledger's rules with the same functions as `ledger verify` (ledger-rules.ts), and names each. */
const org = 'org-1';
let position = 0;
const recorded = (type: string, data: Record<string, unknown>): RecordedEvent => ({
  streamId: `credits-${org}`,
  revision: position,
  position: ++position,
  type,
  data: { orgId: org, ...data },
  recordedAt: 1,
});
const grant = (grantId: string, amount: number) => recorded('CreditsGranted', { grantId, amount, reason: 'r', grantedAt: 1 });
const adjustment = (change: Record<string, unknown> = {}) =>
  recorded('CreditNoteIssued', {
    creditNoteId: `cn${position}`,
    idempotencyKey: `i${position}`,
    kind: 'adjustment',
    reservationId: null,
    keyId: null,
    amount: -1,
    reason: 'correction',
    issuedBy: 'cli',
    issuedAt: 1,
    ...change,
  });

function audit(events: RecordedEvent[]): string[] {
  const auditor = new LogAuditor();
  for (const event of events) auditor.check(event);
  return auditor.differences;
}

describe("ledger audit names each ledger rule an event breaks (the verifier's functions)", () => {
  it.each([
    [
      'a grant is a positive amount',
      () => [grant('g1', 5), grant('g2', -5)],
      'data.amount expected a positive integer of nano-credits, found -5',
    ],
    [
      'a grant id grants once',
      () => [grant('g1', 5), grant('g1', 5)],
      'data.grantId expected a grant id not granted before, found "g1"',
    ],
    [
      'an idempotency key issues one credit note',
      () => [grant('g1', 5), adjustment({ idempotencyKey: 'k' }), adjustment({ idempotencyKey: 'k' })],
      'data.idempotencyKey expected a key not used by an earlier note, found "k"',
    ],
    [
      "a credit note's reason is a known code",
      () => [grant('g1', 5), adjustment({ reason: 'because' })],
      'data.reason expected one of',
    ],
    [
      'an adjustment names no generation',
      () => [grant('g1', 5), adjustment({ reservationId: 'r1' })],
      'data.reservationId expected null, found "r1"',
    ],
  ])('"%s"', (rule, events, detail) => {
    const forged = events();
    const differences = audit(forged);
    expect(differences).toHaveLength(1);
    expect(differences[0]).toContain(
      `event ${forged[forged.length - 1].position} (${forged[forged.length - 1].type}): ${rule}: ${detail}`,
    );
  });

  it('finds events that keep the rules clean', () => {
    expect(
      audit([grant('g1', 5), grant('g2', 5), adjustment({ idempotencyKey: 'a' }), adjustment({ idempotencyKey: 'b' })]),
    ).toEqual([]);
  });
});
