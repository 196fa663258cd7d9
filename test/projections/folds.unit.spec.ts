import type { RecordedEvent } from '../../src/eventstore/event-store';
import {
  dailySpendFold,
  type Fold,
  foldEvent,
  keysFold,
  ledgerFold,
  refundsFold,
  organizationsFold,
  type ProjectedEvent,
  requestLogFold,
} from '../../src/projections/folds';
import type { ReadModelWrites } from '../../src/projections/writes';

/** The writes a fold asks for, as plain lists: [write, ...its arguments]. */
class RecordedWrites implements ReadModelWrites {
  readonly writes: unknown[][] = [];
  constructor(private readonly known = false) {}
  begin(orgId: string, position: number, creates: boolean): boolean {
    this.writes.push(['begin', orgId, position, creates]);
    return !this.known;
  }
  add(table: string, field: string, by: number) {
    this.writes.push(['add', table, field, by]);
  }
  release(table: string, field: string, held: string, reservationId: string) {
    this.writes.push(['release', table, field, held, reservationId]);
  }
  raise(table: string, field: string, value: number) {
    this.writes.push(['raise', table, field, value]);
  }
  set(table: string, field: string, value: unknown) {
    this.writes.push(['set', table, field, value]);
  }
  push(entry: unknown) {
    this.writes.push(['push', entry]);
  }
  clearPendingHold(reservationId: string) {
    this.writes.push(['clearPendingHold', reservationId]);
  }
  update(table: string, id: string, fields: unknown, cleared: readonly unknown[]) {
    this.writes.push(['update', table, id, fields, [...cleared]]);
  }
  include(table: string, id: string, member: string) {
    this.writes.push(['include', table, id, member]);
  }
  exclude(table: string, id: string, member: string) {
    this.writes.push(['exclude', table, id, member]);
  }
  schedule(orgId: string, reservationId: string, at: number) {
    this.writes.push(['schedule', orgId, reservationId, at]);
  }
  unschedule(orgId: string, reservationId: string) {
    this.writes.push(['unschedule', orgId, reservationId]);
  }
}

const recorded = (type: string, data: object, position = 7): RecordedEvent => ({
  type,
  data: data,
  streamId: 's',
  revision: 0,
  position,
  recordedAt: 0,
});

/** What one slice writes for an event. */
function writesOf(fold: Fold, type: string, data: object): unknown[][] {
  const writes = new RecordedWrites();
  const handle = fold[type as ProjectedEvent['type']] as ((e: unknown, w: ReadModelWrites) => void) | undefined;
  handle?.(recorded(type, data), writes);
  return writes.writes;
}

const facts = { requestId: 'q1', keyId: 'k1', surface: 'messages', model: 'vendor/m', orgId: 'o1' };
const NOV_24 = Date.parse('2026-11-24T10:00:00Z');
const reserved = { ...facts, reservationId: 'r1', amount: 300, reservedAt: NOV_24, expiresAt: NOV_24 + 900_000 };
const settled = (amount: number) => ({
  ...facts,
  reservationId: 'r1',
  host: 'h',
  hostModel: 'hm',
  inputTokens: 10,
  cacheReadTokens: 20,
  cacheWriteTokens: 3,
  cacheWrite1hTokens: 4,
  outputTokens: 5,
  prices: { input: 1, output: 1 },
  amount,
  held: 300,
  status: 'ok',
  latencyMs: 80,
  settledAt: NOV_24 + 1_000,
});
const released = {
  ...facts,
  reservationId: 'r1',
  host: null,
  held: 300,
  reason: 'x',
  status: 'provider_error',
  latencyMs: 9,
  releasedAt: NOV_24 + 2,
};
const expired = { ...facts, reservationId: 'r1', held: 300, expiredAt: NOV_24 + 900_000 };
const refused = { ...facts, refusalId: 'x1', reason: 'r', status: 'insufficient_credits', latencyMs: 1, refusedAt: NOV_24 + 3 };

describe('the ledger fold: balance, ledger totals and open reservations', () => {
  it('adds a grant to what was granted', () => {
    expect(
      writesOf(ledgerFold, 'CreditsGranted', { orgId: 'o1', grantId: 'g', amount: 1_000, reason: 'r', grantedAt: 1 }),
    ).toEqual([['add', 'ledger', 'granted', 1_000]]);
  });

  it('turns a reservation’s pending hold into a recorded one: held by the organization and its key, open until it expires', () => {
    expect(writesOf(ledgerFold, 'CreditsReserved', reserved)).toEqual([
      ['clearPendingHold', 'r1'],
      ['add', 'ledger', 'reserved', 300],
      ['add', 'keyOpen', 'k1', 300],
      ['set', 'open', 'r1', 300],
      ['schedule', 'o1', 'r1', NOV_24 + 900_000],
    ]);
  });

  const resolution = [
    ['release', 'ledger', 'reserved', 'open', 'r1'],
    ['release', 'keyOpen', 'k1', 'open', 'r1'],
    ['set', 'open', 'r1', undefined],
    ['unschedule', 'o1', 'r1'],
  ];

  it('on a settlement, returns what the reservation held and counts the charge as spent', () => {
    expect(writesOf(ledgerFold, 'ReservationSettled', settled(250))).toEqual([...resolution, ['add', 'ledger', 'spent', 250]]);
  });

  it('on a settlement of nothing, a release or an expiry, returns what the reservation held and spends nothing', () => {
    expect(writesOf(ledgerFold, 'ReservationSettled', settled(0))).toEqual(resolution);
    expect(writesOf(ledgerFold, 'ReservationReleased', released)).toEqual(resolution);
    expect(writesOf(ledgerFold, 'ReservationExpired', expired)).toEqual(resolution);
  });

  it('moves nothing for a refused request', () => {
    expect(writesOf(ledgerFold, 'RequestRefused', refused)).toEqual([]);
  });
});

describe('the keys fold: records, spend, spend per period, last use', () => {
  const created = {
    keyId: 'k1',
    orgId: 'o1',
    name: 'ci',
    hash: 'h1',
    prefix: 'sk-svc-ab',
    createdAt: 1,
    limit: { amount: 5, reset: 'daily' },
  };

  it('lists a created key in its organization and stores its record by hash', () => {
    expect(writesOf(keysFold, 'ApiKeyCreated', created)).toEqual([
      ['set', 'keys', 'k1', 'h1'],
      ['update', 'keyRecords', 'h1', created, []],
    ]);
  });

  it('sets what an update sets and clears what it clears (null, or disabled: false)', () => {
    const changes = { name: 'new', limit: null, rateLimits: { requestsPerMinute: 5 }, expiresAt: null, disabled: false };
    expect(writesOf(keysFold, 'ApiKeyUpdated', { keyId: 'k1', orgId: 'o1', hash: 'h1', changes, updatedAt: 2 })).toEqual([
      ['update', 'keyRecords', 'h1', { name: 'new', rateLimits: { requestsPerMinute: 5 } }, ['limit', 'expiresAt', 'disabled']],
    ]);
    expect(
      writesOf(keysFold, 'ApiKeyUpdated', { keyId: 'k1', orgId: 'o1', hash: 'h1', changes: { disabled: true }, updatedAt: 2 }),
    ).toEqual([['update', 'keyRecords', 'h1', { disabled: true }, []]]);
  });

  it('records a revocation on the key’s record', () => {
    expect(writesOf(keysFold, 'ApiKeyRevoked', { keyId: 'k1', orgId: 'o1', hash: 'h1', revokedAt: 9 })).toEqual([
      ['update', 'keyRecords', 'h1', { revokedAt: 9 }, []],
    ]);
  });

  it('counts a charge in the key’s spend and in every period it falls in, and when the key was last used', () => {
    expect(writesOf(keysFold, 'ReservationSettled', settled(250))).toEqual([
      ['raise', 'keyLastUsed', 'k1', NOV_24 + 1_000],
      ['add', 'keySpend', 'k1', 250],
      ['add', 'keyPeriodSpend', 'k1|all', 250],
      ['add', 'keyPeriodSpend', 'k1|d:2026-11-24', 250],
      ['add', 'keyPeriodSpend', 'k1|w:2026-11-23', 250],
      ['add', 'keyPeriodSpend', 'k1|m:2026-11', 250],
    ]);
  });

  it('notes only the last use of a request that charged nothing', () => {
    expect(writesOf(keysFold, 'ReservationSettled', settled(0))).toEqual([['raise', 'keyLastUsed', 'k1', NOV_24 + 1_000]]);
    expect(writesOf(keysFold, 'ReservationReleased', released)).toEqual([['raise', 'keyLastUsed', 'k1', NOV_24 + 2]]);
    expect(writesOf(keysFold, 'ReservationExpired', expired)).toEqual([['raise', 'keyLastUsed', 'k1', NOV_24 + 900_000]]);
    expect(writesOf(keysFold, 'RequestRefused', refused)).toEqual([['raise', 'keyLastUsed', 'k1', NOV_24 + 3]]);
  });
});

describe('the organizations fold: records, default rate limits, members', () => {
  it('stores a created organization’s record', () => {
    expect(writesOf(organizationsFold, 'OrganizationCreated', { orgId: 'o1', name: 'Acme', createdAt: 1 })).toEqual([
      ['set', 'organization', 'profile', { orgId: 'o1', name: 'Acme', createdAt: 1 }],
    ]);
  });

  it('sets its keys’ default rate limits beside it, or clears them', () => {
    const limits = { requestsPerMinute: 10 };
    expect(writesOf(organizationsFold, 'OrganizationRateLimitsSet', { orgId: 'o1', rateLimits: limits, setAt: 2 })).toEqual([
      ['set', 'organization', 'rateLimits', limits],
    ]);
    expect(writesOf(organizationsFold, 'OrganizationRateLimitsSet', { orgId: 'o1', rateLimits: null, setAt: 2 })).toEqual([
      ['set', 'organization', 'rateLimits', undefined],
    ]);
  });

  it('adds a member (an email or none; allowed to manage keys or not) and the organization to the user’s', () => {
    const added = { orgId: 'o1', userId: 'u1', role: 'member', addedAt: 3, email: 'ann@example.com', manageKeys: true };
    expect(writesOf(organizationsFold, 'MemberAdded', added)).toEqual([
      ['set', 'members', 'u1', { userId: 'u1', email: 'ann@example.com', role: 'member', addedAt: 3 }],
      ['set', 'keyManagers', 'u1', true],
      ['include', 'userOrganizations', 'u1', 'o1'],
    ]);
    expect(writesOf(organizationsFold, 'MemberAdded', { orgId: 'o1', userId: 'u2', role: 'owner', addedAt: 4 })).toEqual([
      ['set', 'members', 'u2', { userId: 'u2', email: null, role: 'owner', addedAt: 4 }],
      ['set', 'keyManagers', 'u2', undefined],
      ['include', 'userOrganizations', 'u2', 'o1'],
    ]);
  });

  it('removes a member everywhere, and sets whether a member may manage keys', () => {
    expect(writesOf(organizationsFold, 'MemberRemoved', { orgId: 'o1', userId: 'u1', removedAt: 5 })).toEqual([
      ['set', 'members', 'u1', undefined],
      ['set', 'keyManagers', 'u1', undefined],
      ['exclude', 'userOrganizations', 'u1', 'o1'],
    ]);
    expect(writesOf(organizationsFold, 'MemberKeyAccessSet', { orgId: 'o1', userId: 'u1', manageKeys: false, setAt: 6 })).toEqual(
      [['set', 'keyManagers', 'u1', undefined]],
    );
  });
});

describe('the request log fold', () => {
  it('logs a settlement with its tokens (cache writes of both durations together) and its charge', () => {
    expect(writesOf(requestLogFold, 'ReservationSettled', settled(250))).toEqual([
      [
        'push',
        {
          requestId: 'q1',
          reservationId: 'r1',
          time: NOV_24 + 1_000,
          surface: 'messages',
          model: 'vendor/m',
          host: 'h',
          keyId: 'k1',
          inputTokens: 10,
          cacheReadTokens: 20,
          cacheWriteTokens: 7,
          outputTokens: 5,
          cost: 250,
          latencyMs: 80,
          status: 'ok',
        },
      ],
    ]);
  });

  it('logs a release, an expiry and a refusal with no tokens and no charge', () => {
    const nothing = { inputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, outputTokens: 0, cost: 0 };
    expect(writesOf(requestLogFold, 'ReservationReleased', released)).toEqual([
      [
        'push',
        expect.objectContaining({ ...nothing, reservationId: 'r1', host: null, status: 'provider_error', time: NOV_24 + 2 }),
      ],
    ]);
    expect(writesOf(requestLogFold, 'ReservationExpired', expired)).toEqual([
      ['push', expect.objectContaining({ ...nothing, reservationId: 'r1', status: 'expired', latencyMs: null })],
    ]);
    expect(writesOf(requestLogFold, 'RequestRefused', refused)).toEqual([
      ['push', expect.objectContaining({ ...nothing, reservationId: null, status: 'insufficient_credits', latencyMs: 1 })],
    ]);
  });
  it('logs the hosted tools left out of the call with the request, however it ended; absent when none', () => {
    const omittedTools = ['web_search', 'image_generation'];
    for (const [type, data] of [
      ['ReservationSettled', settled(250)],
      ['ReservationReleased', released],
      ['ReservationExpired', expired],
    ] as const) {
      expect(writesOf(requestLogFold, type, { ...data, omittedTools })).toEqual([
        ['push', expect.objectContaining({ omittedTools })],
      ]);
      expect(writesOf(requestLogFold, type, data)[0][1]).not.toHaveProperty('omittedTools');
    }
  });
});

describe('the request log fold, given attempts', () => {
  const attempts = [
    { host: 'h0', credential: 'KEY_A', status: 503, reason: 'server_error', durationMs: 12 },
    { host: 'h', credential: null, status: null, reason: 'ok', durationMs: 80 },
  ];

  it('logs a settlement’s and a release’s attempts; absent from events written before them', () => {
    for (const [type, data] of [
      ['ReservationSettled', settled(250)],
      ['ReservationReleased', released],
    ] as const) {
      expect(writesOf(requestLogFold, type, { ...data, attempts })).toEqual([['push', expect.objectContaining({ attempts })]]);
      expect(writesOf(requestLogFold, type, data)[0][1]).not.toHaveProperty('attempts');
    }
  });
});

describe('the daily spend fold', () => {
  it('adds a charge to its UTC day; a settlement of nothing adds nothing', () => {
    expect(writesOf(dailySpendFold, 'ReservationSettled', settled(250))).toEqual([['add', 'daily', '2026-11-24', 250]]);
    expect(writesOf(dailySpendFold, 'ReservationSettled', settled(0))).toEqual([]);
    expect(writesOf(dailySpendFold, 'ReservationReleased', released)).toEqual([]);
  });
});

describe('an event through every slice', () => {
  it('passes the guard of its organization once, then writes what each slice that reads it asks', () => {
    const writes = new RecordedWrites();
    foldEvent(recorded('ReservationSettled', settled(250), 12), writes);
    expect(writes.writes[0]).toEqual(['begin', 'o1', 12, false]);
    expect(writes.writes.filter(([write]) => write === 'begin')).toHaveLength(1);
    expect(writes.writes.map(([write, table]) => `${write as string} ${table as string}`)).toEqual(
      expect.arrayContaining(['add ledger', 'raise keyLastUsed', 'add daily']),
    );
    expect(writes.writes.filter(([write]) => write === 'push')).toHaveLength(1);
  });

  it('says when the event creates its organization', () => {
    const writes = new RecordedWrites();
    foldEvent(recorded('OrganizationCreated', { orgId: 'o1', name: 'A', createdAt: 1 }, 1), writes);
    expect(writes.writes[0]).toEqual(['begin', 'o1', 1, true]);
  });

  it('writes nothing more for an event the organization has already', () => {
    const writes = new RecordedWrites(true);
    foldEvent(recorded('ReservationSettled', settled(250)), writes);
    expect(writes.writes).toEqual([['begin', 'o1', 7, false]]);
  });

  it('writes nothing for an event no read model reads', () => {
    const writes = new RecordedWrites();
    foldEvent(recorded('UserRegistered', { userId: 'u', email: 'e', passwordHash: 'x', registeredAt: 1 }), writes);
    expect(writes.writes).toEqual([]);
  });
});

describe('credit notes, folded', () => {
  const note = (kind: 'refund' | 'adjustment', amount: number) => ({
    orgId: 'o1',
    creditNoteId: 'cn1',
    idempotencyKey: 'k',
    kind,
    reservationId: kind === 'refund' ? 'r1' : null,
    keyId: kind === 'refund' ? 'k1' : null,
    amount,
    reason: 'dispute',
    issuedBy: 'cli',
    issuedAt: NOV_24,
  });

  it('a refund comes off what was spent, its key’s spend (all time, and a limit that never resets), and counts for its generation', () => {
    expect(writesOf(ledgerFold, 'CreditNoteIssued', note('refund', 40))).toEqual([['add', 'ledger', 'spent', -40]]);
    expect(writesOf(keysFold, 'CreditNoteIssued', note('refund', 40))).toEqual([
      ['add', 'keySpend', 'k1', -40],
      ['add', 'keyPeriodSpend', 'k1|all', -40],
    ]);
    expect(writesOf(refundsFold, 'CreditNoteIssued', note('refund', 40))).toEqual([['add', 'refunded', 'r1', 40]]);
  });

  it('an adjustment moves what was granted, signed, and nothing of any key', () => {
    expect(writesOf(ledgerFold, 'CreditNoteIssued', note('adjustment', -7))).toEqual([['add', 'ledger', 'granted', -7]]);
    expect(writesOf(keysFold, 'CreditNoteIssued', note('adjustment', -7))).toEqual([]);
    expect(writesOf(refundsFold, 'CreditNoteIssued', note('adjustment', 7))).toEqual([]);
    expect(writesOf(dailySpendFold, 'CreditNoteIssued', note('adjustment', -7))).toEqual([]);
  });

  it('a refund comes off the spend of the UTC day it was issued, as it comes off what was spent', () => {
    const later = { ...note('refund', 40), issuedAt: Date.parse('2026-11-30T23:59:59Z') };
    expect(writesOf(dailySpendFold, 'CreditNoteIssued', later)).toEqual([['add', 'daily', '2026-11-30', -40]]);
  });
});
