import { createHash } from 'node:crypto';
import { canonicalJson, chainGenesis, chainLink } from '../../src/eventstore/event-chain';
import { EXPORT_FORMAT } from '../../src/ledger-export/ledger-export';
import { emptyFigures, type LedgerFigures, LedgerReplay } from '../../src/ledger-export/ledger-replay';
import { describeDifference, ExportVerifier, type VerifyExpectations } from '../../src/ledger-export/ledger-verify';

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

function verify(lines: string[], expected: VerifyExpectations = {}) {
  const verifier = new ExportVerifier(expected);
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
    expect(verify(lines, { head: 'f'.repeat(64) }).differences).toEqual([
      expect.objectContaining({ field: 'head', expected: 'f'.repeat(64) }),
    ]);
    expect(verify(lines.slice(0, -1)).differences).toEqual([expect.objectContaining({ field: 'end' })]);
  });
});

/** `events` exported as two periods, split before event `at`: each with the figures and links a gateway states. */
function periodsOf(events: Parameters<typeof exportOf>[0], at: number): [string[], string[]] {
  const whole = exportOf(events, emptyFigures()).map((l) => JSON.parse(l));
  const replay = new LedgerReplay();
  const figuresAfter: LedgerFigures[] = [structuredClone(replay.figures)];
  for (const event of whole.slice(1, -1)) {
    replay.apply(event);
    figuresAfter.push(structuredClone(replay.figures));
  }
  const period = (first: number, last: number): string[] => [
    JSON.stringify({
      ...whole[0],
      previousLink: first === 0 ? whole[0].genesis : whole[first].link,
      eventsBefore: first,
      opening: figuresAfter[first],
    }),
    ...whole.slice(first + 1, last + 1).map((l) => JSON.stringify(l)),
    JSON.stringify({
      kind: 'end',
      events: last - first,
      head: last === 0 ? whole[0].genesis : whole[last].link,
      closing: figuresAfter[last],
    }),
  ];
  return [period(0, at), period(at, events.length)];
}

describe('what vouches for an export’s opening', () => {
  const events = [...settledEvents, note(1, 10_000_000)];
  const whole = periodsOf(events, 0)[1];
  const head = JSON.parse(whole[whole.length - 1]).head as string;

  it('refuses a header that follows the genesis yet claims events and figures before it, whatever head it ends at', () => {
    // The review's forgery: 5 credits "charged before", on the genesis link, and the end line's figures shifted to match.
    const forged = whole.map((l) => JSON.parse(l));
    forged[0] = { ...forged[0], eventsBefore: 1, opening: { ...emptyFigures(), charged: 5e9, balance: -5e9 } };
    const end = forged[forged.length - 1];
    end.closing = { ...end.closing, charged: end.closing.charged + 5e9, balance: end.closing.balance - 5e9 };
    const report = verify(
      forged.map((l) => JSON.stringify(l)),
      { head },
    );
    expect(report.differences.map(describeDifference)).toEqual([
      'line 1: eventsBefore expected "0 (the first event follows the genesis)", found 1',
      expect.stringMatching(/^line 1: opening expected "zero \(no events before the genesis\)", found \{/),
    ]);
    expect(report.openingVouchedBy).toBe('genesis');
  });

  it('checks the published event count against the events before the file and in it', () => {
    expect(verify(whole, { head, events: 4 })).toMatchObject({ differences: [], openingVouchedBy: 'genesis' });
    expect(verify(whole, { head, events: 5 }).differences.map(describeDifference)).toEqual([
      'line 6: events expected 5, found "4 (0 before the file, 4 in it)"',
    ]);
    const [, second] = periodsOf(events, 2);
    expect(verify(second, { head, events: 4 }).differences).toEqual([]);
  });

  it('says a period’s opening is only its header’s word, unless the export before it closes on it', () => {
    const [first, second] = periodsOf(events, 2);
    expect(verify(second, { head, events: 4 })).toMatchObject({ differences: [], openingVouchedBy: null, eventsBefore: 2 });
    const previous = verify(first);
    expect(previous).toMatchObject({ differences: [], openingVouchedBy: 'genesis' });
    expect(verify(second, { head, events: 4, previous })).toMatchObject({ differences: [], openingVouchedBy: 'previous export' });
    // A forged opening (its end line shifted to match) verifies alone, and not after the export before it.
    const forged = second.map((l) => JSON.parse(l));
    forged[0].opening = {
      ...forged[0].opening,
      charged: forged[0].opening.charged + 5e9,
      balance: forged[0].opening.balance - 5e9,
    };
    const end = forged[forged.length - 1];
    end.closing = { ...end.closing, charged: end.closing.charged + 5e9, balance: end.closing.balance - 5e9 };
    const text = forged.map((l) => JSON.stringify(l));
    expect(verify(text, { head, events: 4 })).toMatchObject({ differences: [], openingVouchedBy: null });
    expect(verify(text, { head, events: 4, previous }).differences).toEqual([
      expect.objectContaining({ line: 1, field: 'opening', expected: previous.figures }),
    ]);
    // Alone, an opening must still add up among itself: its balance, and what its open reservations hold.
    const unbalanced = second.map((l) => JSON.parse(l));
    unbalanced[0].opening = { ...unbalanced[0].opening, balance: unbalanced[0].opening.balance + 1, reserved: 1 };
    expect(verify(unbalanced.map((l) => JSON.stringify(l))).differences.map((d) => d.field)).toEqual([
      'opening.balance',
      'opening.reserved',
      'closing.reserved',
    ]);
    // A previous export that is not the one just before: its head and count are not this file's start.
    const [earlier] = periodsOf(events, 1);
    expect(verify(second, { previous: verify(earlier) }).differences.map((d) => d.field)).toEqual([
      'previousLink',
      'eventsBefore',
      'opening',
    ]);
  });
});

describe('sums past 2^53 nano-credits', () => {
  // A lifetime's grants pass 2^53 while the balance stays small: 9,007,199.254740991 granted, 9,000,000 debited, then 3 and 1 nano.
  const grant = (revision: number, amount: number) => ({
    streamId: `credits-${org}`,
    revision,
    type: 'CreditsGranted',
    data: { orgId: org, grantId: `g${revision}`, amount, reason: 'r', grantedAt: 1 },
  });
  const events = [grant(0, Number.MAX_SAFE_INTEGER), note(1, -9_000_000_000_000_000, 'adjustment'), grant(2, 3), grant(3, 1)];
  const exact = BigInt(Number.MAX_SAFE_INTEGER) + 4n;

  it('adds them up exactly, carrying a sum past 2^53 as its decimal digits', () => {
    const replay = new LedgerReplay();
    for (const event of events) replay.apply(event);
    expect(replay.figures).toMatchObject({ granted: exact.toString(), credited: -9e15, balance: 7_199_254_740_995 });
    const closing = { ...emptyFigures(), granted: exact.toString(), credited: -9e15, balance: 7_199_254_740_995 };
    expect(verify(exportOf(events, closing))).toMatchObject({ differences: [], figures: { balance: 7_199_254_740_995 } });
  });

  it('names a stated sum that is not exact, or not a sum', () => {
    const rounded = { ...emptyFigures(), granted: Number(exact), credited: -9e15, balance: 7_199_254_740_996 };
    expect(verify(exportOf(events, rounded)).differences.map((d) => [d.field, d.expected, d.found])).toEqual([
      ['closing.granted', exact.toString(), Number(exact)],
      ['closing.balance', 7_199_254_740_995, 7_199_254_740_996],
    ]);
    const text = { ...emptyFigures(), granted: `${exact}.0`, credited: -9e15, balance: 7_199_254_740_995 };
    expect(verify(exportOf(events, text)).differences.map((d) => d.field)).toEqual(['closing.granted']);
  });
});

describe("the verifier checks the ledger's rules an export alone shows, as the audit does (ledger-rules.ts)", () => {
  /** A forgery consistent in every other way: links recomputed, the end line stating what the events add up to. */
  const forged = (events: Parameters<typeof exportOf>[0]) => {
    const replay = new LedgerReplay();
    for (const event of events) replay.apply(event);
    return verify(exportOf(events, replay.figures));
  };
  const grant = (revision: number, grantId: string, amount: number) => ({
    streamId: `credits-${org}`,
    revision,
    type: 'CreditsGranted',
    data: { orgId: org, grantId, amount, reason: 'r', grantedAt: 1 },
  });
  const noteWith = (revision: number, change: Record<string, unknown>) => {
    const n = note(revision, -1_000, 'adjustment');
    return { ...n, data: { ...n.data, ...change } };
  };

  it.each([
    ['a grant is a positive amount', [...settledEvents, grant(1, 'g-neg', -5_000)], 'data.amount', -5_000],
    ['a grant is a positive amount', [...settledEvents, grant(1, 'g-zero', 0)], 'data.amount', 0],
    ['a grant id grants once', [...settledEvents, grant(1, 'g', 1_000)], 'data.grantId', 'g'],
    [
      'an idempotency key issues one credit note',
      [...settledEvents, noteWith(1, { idempotencyKey: 'same' }), noteWith(2, { idempotencyKey: 'same' })],
      'data.idempotencyKey',
      'same',
    ],
    ["a credit note's reason is a known code", [...settledEvents, noteWith(1, { reason: 'because' })], 'data.reason', 'because'],
    ['an adjustment names no generation', [...settledEvents, noteWith(1, { reservationId: 'r1' })], 'data.reservationId', 'r1'],
  ])('refuses a forged export breaking "%s", naming the rule', (rule, events, field, found) => {
    const report = forged(events);
    expect(report.differences).toEqual([expect.objectContaining({ rule, field, found, line: events.length + 1 })]);
    expect(describeDifference(report.differences[0])).toMatch(
      new RegExp(`^line ${events.length + 1}, event .*: breaks the rule "${rule}": ${field.replace('.', '\\.')} expected`),
    );
  });

  it('finds the same export clean when it keeps the rules', () => {
    const events = [
      ...settledEvents,
      grant(1, 'g2', 1_000),
      noteWith(2, { idempotencyKey: 'a' }),
      noteWith(3, { idempotencyKey: 'b' }),
    ];
    expect(forged(events).differences).toEqual([]);
  });
});
