import { auditLedger } from '../../src/audit/ledger-audit';
import type { EventStore, RecordedEvent } from '../../src/eventstore/event-store';
import { exportLedger } from '../../src/ledger-export/ledger-export';
import { chainOrgOf, ledgerBatches } from '../../src/ledger/ledger-chain';
import { readStatement } from '../../src/statements/statement.query';
import { UsageExport } from '../../src/usage-export/usage-export';
import { booksDisagree, generateMonth, readBooks, wholeLogOf } from '../../bench/ledger-month/traffic';
import { openTestRuntime, type TestRuntime } from '../support/runtime';
import { tempDir } from '../support/temp';

/**
 * Traffic across a month's end through the real ledger (grants, refunds, adjustments among the
 * requests): each organization's statements, its export as the standalone verifier recomputes it,
 * and the read models agree to the nano-credit; `ledger audit` is clean. `npm run bench:month` runs
 * the same with 100,000 requests.
 */
describe.each([false, true])('a month of books (read models in Redis: %s)', (redis) => {
  let t: TestRuntime;
  const files = tempDir('month-books');
  beforeAll(async () => {
    t = await openTestRuntime({ redis, sweep: false });
  });
  afterAll(async () => {
    await t.cleanup();
    files.cleanup();
  });

  it('statements, export and read models agree; the audit is clean', async () => {
    const traffic = await generateMonth(t.runtime, { requests: 1_200, from: Date.UTC(2026, 9, 31), to: Date.UTC(2026, 10, 2) });
    expect(traffic.months).toEqual(['2026-10', '2026-11']);
    expect(traffic).toMatchObject({ settled: 1_200, refunds: 5 });
    expect(traffic.adjustments).toBe(1);
    for (const orgId of traffic.orgIds) {
      const books = await readBooks(t.runtime, orgId, traffic.months, `${files.path}/${orgId}.ndjson`);
      expect(booksDisagree(books)).toEqual([]);
      expect(books.statements.map((s) => s.charges.requests).reduce((a, b) => a + b)).toBe(400);
    }
    const audit = await auditLedger(t.runtime.events, t.runtime.projections);
    expect(audit.differences).toEqual([]);
  });

  it("reads the same books through each organization's chain as through the whole log", async () => {
    const events = t.runtime.events;
    expect(events.readChain).toBeDefined();
    const wholeLog = wholeLogOf(events);
    const traffic = await generateMonth(t.runtime, { requests: 300, from: Date.UTC(2026, 9, 31), to: Date.UTC(2026, 10, 2) });
    const lines = async (log: EventStore, orgId: string) => {
      const out: string[] = [];
      for await (const line of exportLedger(log, orgId)) out.push(line.replace(/"exportedAt":\d+/, ''));
      return out;
    };
    for (const orgId of traffic.orgIds) {
      for (const month of traffic.months) {
        expect(await readStatement(events, orgId, month)).toEqual(await readStatement(wholeLog, orgId, month));
      }
      const exported = await lines(events, orgId);
      expect(exported.length).toBeGreaterThan(100);
      expect(exported).toEqual(await lines(wholeLog, orgId));
      for (const grouping of ['request', 'day'] as const) {
        const ask = { grouping, from: null, to: null };
        const focus = await new UsageExport(events, t.runtime.projections).focus(orgId, ask);
        expect(focus).toEqual(await new UsageExport(wholeLog, t.runtime.projections).focus(orgId, ask));
      }
    }

    // Both ways stop at the head they were given: what is appended after is left for the next read.
    const orgId = traffic.orgIds[0];
    const head = await events.headPosition();
    await t.runtime.ledger.grant(orgId, 1_000, 'after the head');
    const read = async (log: EventStore) => {
      const out: RecordedEvent[] = [];
      for await (const batch of ledgerBatches(log, orgId, head, 7)) out.push(...batch);
      return out.filter((event) => chainOrgOf(event) === orgId);
    };
    const chained = await read(events);
    expect(chained.at(-1)!.position).toBeLessThanOrEqual(head);
    expect(chained).toEqual(await read(wholeLog));
    expect(chained.length).toBeGreaterThan(100);
  });

  it('names a disagreement: a statement that drops a charge no longer matches the export', async () => {
    const orgId = (await t.runtime.identity.createOrganization('Tampered books')).orgId;
    await t.runtime.ledger.grant(orgId, 1_000, 'grant');
    await t.runtime.projector.catchUp();
    const books = await readBooks(t.runtime, orgId, ['2026-11'], `${files.path}/${orgId}.ndjson`);
    expect(booksDisagree(books)).toEqual([]);
    books.statements[0].closingBalance = Number(books.statements[0].closingBalance) - 1;
    expect(booksDisagree(books)).toEqual([`statements closing vs export balance: 999 vs 1000`]);
  });
});
