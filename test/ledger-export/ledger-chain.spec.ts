import Database from 'better-sqlite3';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteEventStore } from '../../src/eventstore/sqlite-event-store';
import { ChainFollower, LEDGER_CHAIN, orgChainHead } from '../../src/ledger/ledger-chain';
import { exportLedger } from '../../src/ledger-export/ledger-export';
import { ExportVerifier } from '../../src/ledger-export/ledger-verify';
import { operatorTool as cli, operatorToolJson as json } from '../support/operator-tool';
import { fundedOrganization, openTestRuntime } from '../support/runtime';
import { tempDir } from '../support/temp';

const prices = {
  input: 3_000_000_000,
  cacheRead: 300_000_000,
  cacheWrite: 3_750_000_000,
  cacheWrite1h: 6_000_000_000,
  output: 15_000_000_000,
};
const HELD = 50_000_000;

/** A request of `orgId` by key `keyId`: its reservation, then (a later append) its settlement at 1,000 in + `output` out. */
function request(orgId: string, id: string, keyId: string, output: number) {
  const facts = { requestId: `q-${id}`, keyId, surface: 'chat', model: 'm', reservationId: id, orgId };
  // 1,000 × $3/M + output × $15/M
  const amount = 3_000_000 + output * 15_000;
  return {
    reserved: { type: 'CreditsReserved', data: { ...facts, amount: HELD, reservedAt: 1, expiresAt: 9e12 } },
    settled: {
      type: 'ReservationSettled',
      data: {
        ...facts,
        host: 'h',
        hostModel: 'hm',
        status: 'ok',
        latencyMs: 7,
        inputTokens: 1_000,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        cacheWrite1hTokens: 0,
        outputTokens: output,
        prices,
        amount,
        held: HELD,
        settledAt: 2,
      },
    },
  };
}

type Line = Record<string, any>;

describe('the ledger hash chain, its export and the standalone verifier', () => {
  const dir = tempDir('ledger-chain');
  let env: Record<string, string>;
  let orgId: string;
  let exported: string;
  let lines: Line[];
  let logFile: string;

  beforeAll(async () => {
    const t = await openTestRuntime();
    env = t.env;
    const { runtime } = t;
    orgId = await fundedOrganization(runtime, 1_000_000_000);
    const other = await fundedOrganization(runtime, 500_000_000);
    // Requests of two organizations appended concurrently on their own streams, as gateway instances do.
    const requests = Array.from({ length: 12 }, (_, i) =>
      request(i % 3 === 2 ? other : orgId, `r${i}`, `k${i % 2}`, 100 * (i + 1)),
    );
    await Promise.all(requests.map((r, i) => runtime.events.append(`reservation-r${i}`, [r.reserved], 'no_stream')));
    await Promise.all(requests.map((r, i) => runtime.events.append(`reservation-r${i}`, [r.settled], 0)));
    await runtime.ledger.grant(orgId, 250_000_000, 'top-up');
    await runtime.projector.catchUp();
    const head = await orgChainHead(runtime.events, orgId);
    expect(head.events).toBe(1 + 8 * 2 + 1);
    await runtime.projections.reset();
    await runtime.close();
    logFile = join(env.DATA_DIR, 'events.sqlite');
    exported = join(dir.path, 'export.ndjson');
    const run = await cli(env, ['ledger', 'export', '--org', orgId, '--output', exported]);
    expect(run).toMatchObject({ code: 0 });
    lines = readFileSync(exported, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines[lines.length - 1]).toMatchObject({ kind: 'end', head: head.head, events: head.events });
  });
  afterAll(() => dir.cleanup());

  it('stamps one chain per organization across concurrent streams, and ledger audit finds it whole', async () => {
    const audit = await json(env, ['ledger', 'audit']);
    expect(audit).toMatchObject({ clean: true, chains: { stamped: true } });
    expect(audit.chains.heads.map((h: { orgId: string }) => h.orgId)).toContain(orgId);
  });

  it('verifies the untouched export with nothing but the file: chain, charges, balance and key spend', async () => {
    const run = await cli({ PATH: process.env.PATH ?? '' }, ['--json', 'ledger', 'verify', exported]);
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout);
    // 1 + 0.25 credits granted; 8 requests of 1,000 in at $3/M and 100·(i+1) out at $15/M.
    const outputs = [0, 1, 3, 4, 6, 7, 9, 10].map((i) => 100 * (i + 1));
    const charged = outputs.reduce((sum, out) => sum + 3_000_000 + out * 15_000, 0);
    expect(report).toMatchObject({
      verified: true,
      events: 18,
      figures: { granted: 1_250_000_000, charged, balance: 1_250_000_000 - charged, reserved: 0 },
    });
  });

  it('exports a period as one stretch of the chain that verifies from the link and figures its header states', async () => {
    const store = new SqliteEventStore(logFile, { chain: LEDGER_CHAIN });
    try {
      // The settlements were appended after the reservations and the grants: a period from the first of them on.
      const from = lines.find((l) => l.type === 'ReservationSettled')!.recordedAt as number;
      const period: string[] = [];
      for await (const line of exportLedger(store, orgId, { from })) period.push(line);
      const header = JSON.parse(period[0]);
      expect(header.eventsBefore).toBeGreaterThan(0);
      expect(header.opening.openReservations).not.toEqual({});
      const verifier = new ExportVerifier({ head: lines[lines.length - 1].head });
      for (const line of period) verifier.line(line);
      expect(verifier.finish()).toMatchObject({ differences: [], events: 18 - header.eventsBefore });
      // Up to a time before the settlements: the reservations are still open at its end.
      const upTo: string[] = [];
      for await (const line of exportLedger(store, orgId, { to: from })) upTo.push(line);
      const end = JSON.parse(upTo[upTo.length - 1]);
      expect(end).toMatchObject({ events: header.eventsBefore, head: header.previousLink, closing: header.opening });
    } finally {
      await store.close();
    }
  });

  it('ledger verify refuses forged opening figures on the genesis link, even at the published head', async () => {
    const end = lines[lines.length - 1];
    const forged = lines.map((l) => ({ ...l }));
    forged[0] = { ...forged[0], eventsBefore: 1, opening: { ...forged[0].opening, charged: 5e9, balance: -5e9 } };
    forged[forged.length - 1] = {
      ...end,
      closing: { ...end.closing, charged: end.closing.charged + 5e9, balance: end.closing.balance - 5e9 },
    };
    const file = join(dir.path, 'forged-opening.ndjson');
    writeFileSync(file, `${forged.map((l) => JSON.stringify(l)).join('\n')}\n`);
    const run = await cli({ PATH: process.env.PATH ?? '' }, ['ledger', 'verify', file, '--head', end.head]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(
      /FIRST DIFFERENCE line 1: eventsBefore expected "0 \(the first event follows the genesis\)", found 1/,
    );
  });

  it('ledger verify checks the published count, and vouches for a period’s opening only with the export before it', async () => {
    const { head, events } = lines[lines.length - 1];
    const from = new Date(lines.find((l) => l.type === 'ReservationSettled')!.recordedAt as number).toISOString();
    const earlier = join(dir.path, 'earlier.ndjson');
    const later = join(dir.path, 'later.ndjson');
    expect(await cli(env, ['ledger', 'export', '--org', orgId, '--to', from, '--output', earlier])).toMatchObject({ code: 0 });
    expect(await cli(env, ['ledger', 'export', '--org', orgId, '--from', from, '--output', later])).toMatchObject({ code: 0 });
    const bare = { PATH: process.env.PATH ?? '' };
    const alone = await cli(bare, ['ledger', 'verify', later, '--head', head, '--events', String(events)]);
    expect(alone.code).toBe(0);
    expect(alone.stdout).toMatch(
      /verified .*; its opening \(\d+ events before it, its figures and link\) is only its header's word/,
    );
    const miscounted = await cli(bare, ['ledger', 'verify', later, '--head', head, '--events', String(events + 1)]);
    expect(miscounted.code).toBe(1);
    expect(miscounted.stdout).toMatch(
      new RegExp(`FIRST DIFFERENCE line \\d+: events expected ${events + 1}, found "${events} \\(`),
    );
    const vouched = await cli(bare, [
      '--json',
      'ledger',
      'verify',
      later,
      '--head',
      head,
      '--events',
      String(events),
      '--previous',
      earlier,
    ]);
    expect(vouched.code).toBe(0);
    expect(JSON.parse(vouched.stdout)).toMatchObject({ verified: true, openingVouchedBy: 'previous export', differences: [] });
    // The later period against an export that is not the one before it (the later one itself).
    const wrong = await cli(bare, ['ledger', 'verify', later, '--previous', later]);
    expect(wrong.code).toBe(1);
    expect(wrong.stdout).toMatch(/FIRST DIFFERENCE line 1: previousLink expected "\w+ \(the previous export's head\)"/);
    // A previous export that does not verify is named, and nothing after it is taken on its word.
    const broken = join(dir.path, 'broken-earlier.ndjson');
    writeFileSync(broken, readFileSync(earlier, 'utf8').split('\n').slice(0, -2).join('\n'));
    const after = await cli(bare, ['ledger', 'verify', later, '--previous', broken]);
    expect(after.code).toBe(1);
    expect(after.stdout).toMatch(/FIRST DIFFERENCE in .*broken-earlier\.ndjson, line \d+: end expected "an end line"/);
  });

  const settlementAt = () => lines.findIndex((l) => l.type === 'ReservationSettled');
  const tampers: Array<[string, (ls: Line[]) => Line[], RegExp]> = [
    [
      'an edited event (its model)',
      (ls) => ls.map((l, i) => (i === settlementAt() ? { ...l, data: { ...l.data, model: 'cheaper' } } : l)),
      /ReservationSettled: link expected/,
    ],
    ['a deleted event', (ls) => ls.filter((_, i) => i !== 3), /link expected/],
    [
      'an inserted event (a grant, linked after the one before it)',
      (ls) => [
        ...ls.slice(0, 4),
        { ...ls[1], position: ls[3].position + 0.5, data: { ...ls[1].data, grantId: 'forged' } },
        ...ls.slice(4),
      ],
      /(position|link) expected/,
    ],
    ['two events swapped', (ls) => [ls[0], ls[2], ls[1], ...ls.slice(3)], /(position|link) expected/],
    [
      'a price changed',
      (ls) =>
        ls.map((l, i) =>
          i === settlementAt() ? { ...l, data: { ...l.data, prices: { ...prices, output: 1_500_000_000 } } } : l,
        ),
      /ReservationSettled: data.amount expected \d+, found \d+/,
    ],
    [
      'a token count changed',
      (ls) => ls.map((l, i) => (i === settlementAt() ? { ...l, data: { ...l.data, outputTokens: 1 } } : l)),
      /ReservationSettled: data.amount expected 3015000, found \d+/,
    ],
  ];

  it.each(tampers)('ledger verify names the first difference of an export with %s, and exits 1', async (_, tamper, first) => {
    const file = join(dir.path, 'tampered.ndjson');
    writeFileSync(
      file,
      `${tamper(lines)
        .map((l) => JSON.stringify(l))
        .join('\n')}\n`,
    );
    const run = await cli({ PATH: process.env.PATH ?? '' }, ['ledger', 'verify', file]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(new RegExp(`FIRST DIFFERENCE line \\d+, event .*${first.source}`));
  });

  const settlementRow =
    "(SELECT MIN(position) FROM events WHERE type = 'ReservationSettled' AND json_extract(data, '$.orgId') = @org)";
  const logTampers: Array<[string, string]> = [
    ['an edited event', `UPDATE events SET data = json_set(data, '$.model', 'cheaper') WHERE position = ${settlementRow}`],
    ['a deleted event', `DELETE FROM events WHERE position = ${settlementRow}`],
    [
      'an inserted event',
      `INSERT INTO events (stream_id, revision, type, data, recorded_at, chain_id, chain_link)
       SELECT stream_id, 99, type, json_set(data, '$.grantId', 'forged'), recorded_at, chain_id, chain_link FROM events
       WHERE type = 'CreditsGranted' AND chain_id = @org LIMIT 1`,
    ],
    [
      'two events swapped',
      `UPDATE events SET data = CASE position WHEN a THEN (SELECT data FROM events WHERE position = b) ELSE (SELECT data FROM events WHERE position = a) END
       FROM (SELECT MIN(position) AS a, MAX(position) AS b FROM events WHERE type = 'CreditsReserved' AND chain_id = @org) AS pair
       WHERE position IN (pair.a, pair.b)`,
    ],
    [
      'a price changed',
      `UPDATE events SET data = json_set(data, '$.prices.output', 1500000000) WHERE position = ${settlementRow}`,
    ],
    ['a token count changed', `UPDATE events SET data = json_set(data, '$.outputTokens', 1) WHERE position = ${settlementRow}`],
  ];

  it.each(logTampers)('ledger audit finds %s in the SQLite log itself, and exits 1', async (_, sql) => {
    const copy = tempDir('ledger-chain-log');
    try {
      copyFileSync(logFile, join(copy.path, 'events.sqlite'));
      const db = new Database(join(copy.path, 'events.sqlite'));
      const changed = db.prepare(sql).run({ org: orgId }).changes;
      db.close();
      expect(changed).toBeGreaterThan(0);
      const run = await cli({ ...env, DATA_DIR: copy.path }, ['--json', 'ledger', 'audit', '--org', orgId]);
      expect(run.code).toBe(1);
      expect(JSON.parse(run.stdout).differences).toContainEqual(
        expect.stringMatching(/chain of organization .*: (link|no link)/),
      );
    } finally {
      copy.cleanup();
    }
  });

  it('stamps a log written before chains from each chain’s genesis when first opened with the rule', async () => {
    const copy = tempDir('ledger-chain-old');
    try {
      const path = join(copy.path, 'events.sqlite');
      const before = new SqliteEventStore(path);
      const r = request('org-old', 'old1', 'k', 10);
      await before.append('reservation-old1', [r.reserved, r.settled], 'no_stream');
      await before.close();
      const after = new SqliteEventStore(path, { chain: LEDGER_CHAIN });
      try {
        const r2 = request('org-old', 'old2', 'k', 20);
        await after.append('reservation-old2', [r2.reserved, r2.settled], 'no_stream');
        const events = await after.readAll(0, 100);
        expect(events.every((e) => typeof e.chainLink === 'string')).toBe(true);
        // Each link recomputes from the genesis on: the old events' stamped at opening, the new ones' at commit.
        const follower = new ChainFollower();
        for (const event of events) expect(follower.follow(event, true)).toMatchObject({ difference: null });
        expect(await after.chainHead!('org-old')).toEqual({ head: follower.head('org-old').head, position: 4, events: 4 });
      } finally {
        await after.close();
      }
    } finally {
      copy.cleanup();
    }
  });
});
