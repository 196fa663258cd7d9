import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chainLink } from '../../src/eventstore/event-chain';
import { SqliteEventStore } from '../../src/eventstore/sqlite-event-store';
import { LEDGER_CHAIN } from '../../src/ledger/ledger-chain';
import { monthOf } from '../../src/statements/statement';
import { operatorTool as cli, operatorToolJson as json } from '../support/operator-tool';
import { tempDir } from '../support/temp';

/**
 * `ledger statement --export FILE`: an auditor holding only an export recomputes a month's statement
 * with the gateway's own fold, and gets the document `statements show` prints, byte for byte.
 */
describe('operator tool: a statement computed from an export', () => {
  const dir = tempDir('cli-ledger-statement');
  const env = { DATA_DIR: dir.path, REDIS_URL: '' };
  const file = join(dir.path, 'export.ndjson');
  let orgId: string;
  let month: string;
  let previousMonth: string;
  afterAll(() => dir.cleanup());

  beforeAll(async () => {
    ({ orgId } = await json(env, ['org', 'create', '--name', 'Audited']));
    await json(env, ['credits', 'grant', '--org', orgId, '--amount', '2.5', '--grant-id', 'invoice-1']);
    const { keyId } = await json(env, ['keys', 'create', '--org', orgId, '--name', 'k']);
    // Two generations, written as the service's log writes them (chained), one refunded in part.
    const store = new SqliteEventStore(join(dir.path, 'events.sqlite'), { chain: LEDGER_CHAIN });
    for (const [n, model, input, output] of [
      [1, 'vendor/a', 1_000, 250],
      [2, 'vendor/b', 333, 17],
    ] as const) {
      const facts = { requestId: `req-${n}`, keyId, surface: 'chat-completions', model, reservationId: `r-${n}`, orgId };
      const prices = { input: 3_000_000_000, cacheRead: 300_000_000, cacheWrite: 0, cacheWrite1h: 0, output: 15_000_000_000 };
      const amount = Math.ceil((input * prices.input + output * prices.output) / 1e6);
      const now = Date.now();
      await store.append(
        `reservation-r-${n}`,
        [{ type: 'CreditsReserved', data: { ...facts, amount: 100_000_000, reservedAt: now, expiresAt: now + 60_000 } }],
        'no_stream',
      );
      await store.append(
        `reservation-r-${n}`,
        [
          {
            type: 'ReservationSettled',
            data: {
              ...facts,
              host: 'h',
              hostModel: 'hm',
              inputTokens: input,
              cacheReadTokens: 0,
              cacheWriteTokens: 0,
              cacheWrite1hTokens: 0,
              outputTokens: output,
              prices,
              amount,
              held: 100_000_000,
              status: 'ok',
              latencyMs: 1,
              settledAt: Date.now(),
            },
          },
        ],
        0,
      );
    }
    await store.close();
    const note = ['--reason', 'goodwill', '--idempotency-key'];
    await json(env, ['credits', 'refund', '--org', orgId, '--generation', 'req-1', '--amount', '0.001', ...note, 'n-1']);
    await json(env, ['credits', 'adjust', '--org', orgId, '--amount', '-0.000000007', ...note, 'n-2']);
    month = monthOf(Date.now());
    const [year, m] = month.split('-').map(Number);
    previousMonth = monthOf(Date.UTC(year, m - 2, 1));
    const exported = await cli(env, ['ledger', 'export', '--org', orgId, '--output', file]);
    expect(exported.code).toBe(0);
  });

  const statement = (month: string, format: string) => ['--org', orgId, '--month', month, '--format', format];

  it.each(['json', 'csv', 'text', 'html'])("prints the service's statement (%s), byte for byte", async (format) => {
    for (const m of [month, previousMonth]) {
      const service = await cli(env, ['statements', 'show', ...statement(m, format)]);
      const computed = await cli(env, ['ledger', 'statement', '--export', file, ...statement(m, format)]);
      expect(service).toMatchObject({ code: 0, stderr: '' });
      expect(computed).toMatchObject({ code: 0, stderr: '' });
      expect(computed.stdout).toBe(service.stdout);
    }
  });

  it('computes the figures the ledger holds (and --json is the JSON document)', async () => {
    const computed = await cli(env, ['--json', 'ledger', 'statement', '--export', file, '--org', orgId, '--month', month]);
    expect(computed).toMatchObject({ code: 0, stderr: '' });
    const s = JSON.parse(computed.stdout);
    const { granted, spent } = await json(env, ['credits', 'show', '--org', orgId]);
    expect(s).toMatchObject({
      orgId,
      month,
      openingBalance: 0,
      grants: { count: 1, amount: 2_500_000_000 },
      charges: { requests: 2 },
      creditNotes: { refunds: 1_000_000, adjustments: -7 },
    });
    expect(s.closingBalance).toBe(2_500_000_000 - s.charges.amount + 1_000_000 - 7);
    expect(`${granted}|${spent}`).toBe(`${(2_500_000_000 - 7) / 1e9}|${(s.charges.amount - 1_000_000) / 1e9}`);
  });

  const refused = async (args: string[], message: RegExp, code = 1) => {
    const run = await cli(env, args);
    expect(run.code).toBe(code);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(message);
    expect(run.stderr).not.toMatch(/\n\s+at /); // no stack trace
  };

  it('refuses an export that does not verify, naming the first difference', async () => {
    const forged = join(dir.path, 'forged.ndjson');
    // One charge lowered by a nano-credit: its tokens and prices no longer give it.
    const lines = readFileSync(file, 'utf8').split('\n');
    const at = lines.findIndex((line) => line.includes('"ReservationSettled"'));
    const event = JSON.parse(lines[at]);
    event.data.amount -= 1;
    lines[at] = JSON.stringify(event);
    writeFileSync(forged, lines.join('\n'));
    await refused(
      ['ledger', 'statement', '--export', forged, '--org', orgId, '--month', month],
      new RegExp(
        `forged\\.ndjson does not verify .*so no statement is computed from it: first difference line ${at + 1}, event .*ReservationSettled: data\\.amount expected`,
      ),
    );
  });

  it('ledger verify refuses a forged export breaking a ledger rule, naming the rule (links recomputed, so only the rule is broken)', async () => {
    /** The export with one event changed and every link after it recomputed, as a forger who knows the chain would. */
    const forge = (type: string, change: (data: Record<string, unknown>) => void) => {
      const lines = readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      const at = lines.findIndex((line) => line.type === type);
      change(lines[at].data);
      let link = lines[0].previousLink;
      for (const line of lines.slice(1, -1)) line.link = link = chainLink(link, line);
      lines[lines.length - 1].head = link;
      const path = join(dir.path, `forged-${type}.ndjson`);
      writeFileSync(path, lines.map((line) => JSON.stringify(line)).join('\n') + '\n');
      return { path, line: at + 1 };
    };
    for (const [type, change, rule] of [
      ['CreditNoteIssued', (d: Record<string, unknown>) => (d.reason = 'because'), "a credit note's reason is a known code"],
      ['CreditsGranted', (d: Record<string, unknown>) => (d.amount = -2_500_000_000), 'a grant is a positive amount'],
    ] as const) {
      const { path, line } = forge(type, change);
      const run = await cli(env, ['ledger', 'verify', path]);
      expect(run.code).toBe(1);
      expect(run.stdout).toContain(`FIRST DIFFERENCE line ${line}, event `);
      expect(run.stdout).toContain(`${type}: breaks the rule "${rule}"`);
      expect(run.stderr).toBe('');
      await refused(
        ['ledger', 'statement', '--export', path, '--org', orgId, '--month', month],
        new RegExp(`breaks the rule "${rule}"`),
      );
    }
  });

  it("refuses another organization's export, a period's, one stopping before the month ends, and a missing file", async () => {
    const other = '00000000-0000-4000-8000-000000000000';
    await refused(
      ['ledger', 'statement', '--export', file, '--org', other, '--month', month],
      new RegExp(`is the export of organization ${orgId}, not of ${other}`),
    );
    const later = join(dir.path, 'later.ndjson');
    const now = new Date().toISOString();
    expect(await cli(env, ['ledger', 'export', '--org', orgId, '--from', now, '--output', later])).toMatchObject({ code: 0 });
    await refused(
      ['ledger', 'statement', '--export', later, '--org', orgId, '--month', month],
      /starts after its chain's genesis \(\d+ events before it, exported --from .*\): .*export the organization without --from/,
    );
    const cut = join(dir.path, 'cut.ndjson');
    expect(await cli(env, ['ledger', 'export', '--org', orgId, '--to', now, '--output', cut])).toMatchObject({ code: 0 });
    await refused(
      ['ledger', 'statement', '--export', cut, '--org', orgId, '--month', month],
      new RegExp(`stops before .* \\(exported --to\\), before ${month} ends`),
    );
    await refused(
      ['--json', 'ledger', 'statement', '--export', join(dir.path, 'none.ndjson'), '--org', orgId, '--month', month],
      /^\{"error":".*none\.ndjson: ENOENT/,
    );
    await refused(['ledger', 'statement', '--export', file, '--org', orgId, '--month', '2026-13'], /is not a month/, 2);
  });
});
