import { createHash } from 'node:crypto';
import { canonicalJson, chainGenesis, chainLink } from '../../src/eventstore/event-chain';
import { EXPORT_FORMAT } from '../../src/ledger-export/ledger-export';
import { emptyFigures, type LedgerFigures } from '../../src/ledger-export/ledger-replay';
import { describeDifference, ExportVerifier } from '../../src/ledger-export/ledger-verify';

describe('canonical JSON (RFC 8785)', () => {
  it('sorts members by UTF-16 code units, writes numbers and strings as ECMAScript does, and adds no whitespace', () => {
    // RFC 8785 §3.2.3's sorting example: "\r", "1", "€", "😀" (a surrogate pair sorts before "\ufb33"), "דּ".
    const value = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    const order = ['\r', '1', '\u0080', '\u00f6', '\u20ac', '\ud83d\ude00', '\ufb33'] as const;
    expect(canonicalJson(value)).toBe(`{${order.map((k) => `${JSON.stringify(k)}:${JSON.stringify(value[k])}`).join(',')}}`);
    // §3.2.2.3's numbers (the first as the RFC writes it, parsed: it is the double nearest).
    expect(canonicalJson({ n: [Number('333333333.33333329'), 1e30, 4.5, 0.002, 1e-27, -0, 9007199254740991] })).toBe(
      '{"n":[333333333.3333333,1e+30,4.5,0.002,1e-27,0,9007199254740991]}',
    );
    expect(canonicalJson({ b: [true, null, 'a\u2028"\n'], a: { z: 1, y: undefined } })).toBe(
      '{"a":{"z":1},"b":[true,null,"a\u2028\\"\\n"]}',
    );
    expect(() => canonicalJson({ x: NaN })).toThrow(/no form/);
  });

  it('orders any set of member names as a sort by UTF-16 code units does, small sets and large', () => {
    // Deterministic pseudo-random names (a fixed LCG), ASCII and beyond, a few to past the in-place sort's bound.
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (const size of [0, 1, 2, 3, 17, 32, 33, 80]) {
      const value: Record<string, number> = {};
      while (Object.keys(value).length < size) {
        const name = Array.from({ length: 1 + (next() % 6) }, () =>
          String.fromCharCode(next() % 3 === 0 ? 0x80 + (next() % 0x2000) : 0x30 + (next() % 0x4b)),
        ).join('');
        value[name] = size;
      }
      const sorted = Object.keys(value).sort();
      expect(canonicalJson(value)).toBe(`{${sorted.map((k) => `${JSON.stringify(k)}:${size}`).join(',')}}`);
    }
  });

  it('links an event as SHA-256 of the RFC 8785 text of its predecessor’s link and its content', () => {
    const event = {
      streamId: 'credits-o',
      revision: 0,
      type: 'CreditsGranted',
      data: { orgId: 'o', amount: 5, reason: 'é"' },
      recordedAt: 7,
    };
    const text = canonicalJson({ prev: chainGenesis('o'), ...event });
    expect(chainLink(chainGenesis('o'), event)).toBe(createHash('sha256').update(text, 'utf8').digest('hex'));
    expect(text).toBe(
      `{"data":{"amount":5,"orgId":"o","reason":"é\\""},"prev":"${chainGenesis('o')}","recordedAt":7,"revision":0,"streamId":"credits-o","type":"CreditsGranted"}`,
    );
  });
});

const org = 'org-1';
const prices = { input: 3_000_000_000, output: 15_000_000_000 };

/** A well-formed export of `events` (each linked to the one before), with the closing figures the caller states. */
function exportOf(
  events: Array<{ streamId: string; revision: number; type: string; data: Record<string, unknown> }>,
  closing: LedgerFigures,
): string[] {
  let link = chainGenesis(org);
  const lines = [
    JSON.stringify({
      kind: 'header',
      format: EXPORT_FORMAT,
      version: 1,
      orgId: org,
      from: null,
      to: null,
      exportedAt: 0,
      genesis: link,
      previousLink: link,
      eventsBefore: 0,
      opening: emptyFigures(),
    }),
  ];
  events.forEach((event, i) => {
    const recorded = { ...event, recordedAt: 1000 + i };
    link = chainLink(link, recorded);
    lines.push(JSON.stringify({ kind: 'event', position: i + 1, ...recorded, link }));
  });
  lines.push(JSON.stringify({ kind: 'end', events: events.length, head: link, closing }));
  return lines;
}

const facts = (id: string) => ({ requestId: `q-${id}`, keyId: 'k1', surface: 'chat', model: 'm', reservationId: id, orgId: org });
const settledEvents = [
  {
    streamId: `credits-${org}`,
    revision: 0,
    type: 'CreditsGranted',
    data: { orgId: org, grantId: 'g', amount: 1_000_000_000, reason: 'r', grantedAt: 1 },
  },
  {
    streamId: 'reservation-r1',
    revision: 0,
    type: 'CreditsReserved',
    data: { ...facts('r1'), amount: 50_000_000, reservedAt: 1, expiresAt: 2 },
  },
  // 1,000 × $3/M + 2,000 × $15/M = 33,000,000 nano-credits
  {
    streamId: 'reservation-r1',
    revision: 1,
    type: 'ReservationSettled',
    data: {
      ...facts('r1'),
      host: 'h',
      hostModel: 'hm',
      status: 'ok',
      latencyMs: 1,
      inputTokens: 1_000,
      outputTokens: 2_000,
      prices,
      amount: 33_000_000,
      held: 50_000_000,
      settledAt: 2,
    },
  },
];
const note = (revision: number, amount: number, kind: 'refund' | 'adjustment' = 'refund') => ({
  streamId: `credits-${org}`,
  revision,
  type: 'CreditNoteIssued',
  data: {
    orgId: org,
    creditNoteId: `cn${revision}`,
    idempotencyKey: `i${revision}`,
    kind,
    reservationId: kind === 'refund' ? 'r1' : null,
    keyId: kind === 'refund' ? 'k1' : null,
    amount,
    reason: 'dispute',
    issuedBy: 'cli',
    issuedAt: 3,
  },
});

function verify(lines: string[], head?: string) {
  const verifier = new ExportVerifier(head);
  for (const line of lines) verifier.line(line);
  return verifier.finish();
}

describe('the standalone verifier', () => {
  it('replays credit notes as their contract says: refunds back to the balance and off the key, adjustments signed', () => {
    const events = [...settledEvents, note(1, 10_000_000), note(2, -5_000_000, 'adjustment')];
    const closing = {
      ...emptyFigures(),
      granted: 1_000_000_000,
      charged: 33_000_000,
      credited: 5_000_000,
      balance: 972_000_000,
      keys: { k1: 23_000_000 },
    };
    const report = verify(exportOf(events, closing));
    expect(report.differences).toEqual([]);
    expect(report.figures).toMatchObject({ balance: 972_000_000, keys: { k1: 23_000_000 } });
  });

  it('names a refund above what its generation was charged (with earlier refunds), and a stated key spend that differs', () => {
    const events = [...settledEvents, note(1, 30_000_000), note(2, 5_000_000)];
    const closing = {
      ...emptyFigures(),
      granted: 1_000_000_000,
      charged: 33_000_000,
      credited: 35_000_000,
      balance: 1_002_000_000,
      keys: { k1: 0 },
    };
    const report = verify(exportOf(events, closing));
    expect(report.differences.map(describeDifference)).toEqual([
      'line 6, event 5 credits-org-1@2 CreditNoteIssued: data.amount expected "at most 3000000 (charged 33000000, refunded 30000000)", found 5000000',
      'line 7: closing.keys.k1 expected -2000000, found 0',
    ]);
  });

  it('names a chain that ends elsewhere than the head published for it, and a file cut short', () => {
    const closing = {
      ...emptyFigures(),
      granted: 1_000_000_000,
      charged: 33_000_000,
      balance: 967_000_000,
      keys: { k1: 33_000_000 },
    };
    const lines = exportOf(settledEvents, closing);
    expect(verify(lines).differences).toEqual([]);
    expect(verify(lines, 'f'.repeat(64)).differences).toEqual([
      expect.objectContaining({ field: 'head', expected: 'f'.repeat(64) }),
    ]);
    expect(verify(lines.slice(0, -1)).differences).toEqual([expect.objectContaining({ field: 'end' })]);
  });
});
