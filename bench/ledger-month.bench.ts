/**
 * A month of traffic, the books three ways: `npm run bench:month`.
 *
 * BENCH_REQUESTS (default 100,000) requests through the real ledger on a fresh SQLite log, spread by
 * the ledger's clock over October 2026 and the first day of November, across BENCH_ORGANIZATIONS
 * (default 3) organizations, with grants, refunds and adjustments among them (see
 * ledger-month/traffic.ts). Then, for the first three organizations: its monthly statements, its
 * export checked by the standalone verifier from the file alone, and the read models' balance —
 * which must agree to the nano-credit — and how long each took, statements and export read through
 * the organization's chain and, side by side, from the whole log (the same books, or the run fails).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/config';
import { formatNanoSum } from '../src/ledger/money';
import { openRuntime } from '../src/runtime/runtime';
import { booksDisagree, generateMonth, readBooks, wholeLogOf } from './ledger-month/traffic';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 100_000);
const ORGANIZATIONS = Number(process.env.BENCH_ORGANIZATIONS ?? 3);
/** Whose books are read: each read from the whole log takes as long as the log, whatever the organization. */
const BOOKS = 3;
const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'mg-month-'));
  const rt = await openRuntime(loadConfig({ DATA_DIR: dir, REDIS_URL: '', LOG_POLL_MS: '20' }), { sweep: false });
  try {
    const started = performance.now();
    const traffic = await generateMonth(rt, {
      requests: REQUESTS,
      from: Date.UTC(2026, 9, 1),
      to: Date.UTC(2026, 10, 2),
      organizations: ORGANIZATIONS,
    });
    const generateS = (performance.now() - started) / 1000;
    console.log(
      `${fmt(traffic.settled)} requests settled in ${fmt(generateS, 1)} s (${fmt(traffic.settled / generateS)}/s), ` +
        `${traffic.grants} grants, ${traffic.refunds} refunds, ${traffic.adjustments} adjustments; months ${traffic.months.join(', ')}; ` +
        `${fmt(traffic.orgIds.length)} organizations; log head ${fmt(await rt.events.headPosition())}`,
    );
    console.log(
      '\n| organization | events | export | statements: its chain / whole log | export: its chain / whole log | verify time | verify events/s | closing balance | agree |',
    );
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---|');
    let disagreements = 0;
    for (const orgId of traffic.orgIds.slice(0, BOOKS)) {
      const books = await readBooks(rt, orgId, traffic.months, join(dir, `${orgId}.ndjson`));
      const whole = await readBooks(rt, orgId, traffic.months, join(dir, `${orgId}.whole.ndjson`), wholeLogOf(rt.events));
      const found = [...booksDisagree(books), ...booksDisagree(whole)];
      if (JSON.stringify(whole.statements) !== JSON.stringify(books.statements)) found.push('statements differ by the way read');
      if (whole.exportBytes !== books.exportBytes) found.push('exports differ by the way read');
      disagreements += found.length;
      const ratio = (chain: number, all: number) => `${fmt(chain)} / ${fmt(all)} ms (×${fmt(chain / all, 3)})`;
      console.log(
        `| ${orgId.slice(0, 8)} | ${fmt(books.verified.events)} | ${fmt(books.exportBytes / 1e6, 1)} MB | ` +
          `${ratio(books.ms.statements, whole.ms.statements)} | ${ratio(books.ms.export, whole.ms.export)} | ` +
          `${fmt(books.ms.verify)} ms | ${fmt(books.verified.events / (books.ms.verify / 1000))} | ` +
          `${formatNanoSum(books.verified.figures?.balance ?? 0)} | ${found.length === 0 ? 'yes, to the nano-credit' : found.join('; ')} |`,
      );
    }
    if (disagreements > 0) process.exitCode = 1;
  } finally {
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
