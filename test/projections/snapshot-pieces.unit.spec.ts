import { RecordedEvent } from '../../src/eventstore/event-store';
import { ReadModel, ReadModelSnapshot, snapshotPieces } from '../../src/projections/read-model';
import type { RequestLogEntry } from '../../src/projections/read-models';

let position = 0;
const recorded = (streamId: string, type: string, data: object): RecordedEvent => {
  position += 1;
  return { streamId, revision: 0, position, recordedAt: 0, type, data };
};
const grant = (orgId: string, amount: number) =>
  recorded(`credits-${orgId}-${position}`, 'CreditsGranted', {
    orgId,
    grantId: `g${position}`,
    amount,
    reason: 'test',
    grantedAt: 0,
  });
const facts = (n: number) => ({ requestId: `req_${n}`, keyId: 'key-1', surface: 'chat-completions', model: 'm' });
const reserve = (orgId: string, n: number) =>
  recorded(`reservation-${n}`, 'CreditsReserved', {
    ...facts(n),
    reservationId: `r${n}`,
    orgId,
    amount: 100,
    reservedAt: n,
    expiresAt: n + 1000,
  });
const settle = (orgId: string, n: number) =>
  recorded(`reservation-${n}`, 'ReservationSettled', {
    ...facts(n),
    reservationId: `r${n}`,
    orgId,
    status: 'ok',
    latencyMs: 1,
    host: 'h',
    hostModel: 'hm',
    inputTokens: 1,
    outputTokens: 2,
    prices: { input: 1, output: 1 },
    amount: 40,
    held: 100,
    settledAt: 1_700_000_000_000 + n,
  });

const entry = (n: number): RequestLogEntry => ({
  requestId: `req_${n}`,
  reservationId: `r${n}`,
  time: n,
  surface: 'messages',
  model: 'm',
  host: 'h',
  keyId: 'k',
  inputTokens: n,
  cacheReadTokens: 2,
  cacheWriteTokens: 3,
  outputTokens: 1,
  cost: 7,
  latencyMs: 2,
  status: 'ok',
});

describe('read model snapshots, serialized between requests', () => {
  it('give the text of the snapshot, the request logs a slice at a time with a turn between slices', async () => {
    const snapshot: ReadModelSnapshot = {
      ...new ReadModel(10_000).toSnapshot(),
      requests: [
        ['org-big', Array.from({ length: 2_500 }, (_, i) => entry(i))],
        ['org-empty', []],
        ['org-small', [entry(1), entry(2)]],
      ],
    };
    let pauses = 0;
    const text = (await snapshotPieces(snapshot, 1000, async () => void (pauses += 1))).join('');
    expect(JSON.parse(text)).toEqual(snapshot);
    // 2,502 entries in slices of 1,000: two full slices' worth before the end.
    expect(pauses).toBe(2);
  });

  it('hold the models as they were when taken while events keep being applied', async () => {
    const model = new ReadModel(3);
    model.apply(grant('org-1', 1_000));
    for (let n = 1; n <= 3; n++) {
      model.apply(reserve('org-1', n));
      model.apply(settle('org-1', n));
    }
    const snapshot = model.toSnapshot();
    const before = JSON.stringify(snapshot);
    let pauses = 0;
    const pieces = await snapshotPieces(snapshot, 1, async () => {
      pauses += 1;
      // Events applied while the save is under way: the balance changes, the log grows and is trimmed.
      model.apply(grant('org-1', 500));
      model.apply(reserve('org-1', 10 + pauses));
      model.apply(settle('org-1', 10 + pauses));
    });
    expect(pauses).toBe(3);
    const text = pieces.join('');
    expect(JSON.parse(text)).toEqual(JSON.parse(before));
    expect(model.orgs.get('org-1')!.granted).toBe(2_500);
    expect(JSON.parse(text).orgs).toEqual([['org-1', expect.objectContaining({ granted: 1_000 })]]);
  });
});
