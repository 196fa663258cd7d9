import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { EventStore } from '../../src/eventstore/event-store';
import { LedgerService } from '../../src/ledger/ledger.service';
import { chargeFor, type NanoSum, reservationFor, type TokenPrices, type TokenUsage } from '../../src/ledger/money';
import { exportLedger } from '../../src/ledger-export/ledger-export';
import { ExportVerifier, type VerifyReport } from '../../src/ledger-export/ledger-verify';
import type { Runtime } from '../../src/runtime/runtime';
import { monthOf, type Statement } from '../../src/statements/statement';
import { readStatement } from '../../src/statements/statement.query';

/**
 * A month of generated traffic through the real ledger (admissions, settlements, grants, refunds and
 * adjustments, on the runtime's log and read models), then the three views of each organization's
 * books side by side: its monthly statements, its export as `ledger verify` recomputes it, and the read
 * models. Used by `npm run bench:month` (100,000 requests) and by a test (a few hundred).
 */

const MODELS: { model: string; host: string; prices: TokenPrices }[] = [
  {
    model: 'anthropic/claude-sonnet',
    host: 'anthropic',
    prices: {
      input: 3_000_000_000,
      cacheRead: 300_000_000,
      cacheWrite: 3_750_000_000,
      cacheWrite1h: 6_000_000_000,
      output: 15_000_000_000,
    },
  },
  {
    model: 'openai/gpt-mini',
    host: 'openai',
    prices: {
      input: 150_000_000,
      cacheRead: 75_000_000,
      cacheWrite: 150_000_000,
      cacheWrite1h: 150_000_000,
      output: 600_000_000,
    },
  },
  {
    model: 'google/gemini-flash',
    host: 'gemini',
    prices: {
      input: 300_000_000,
      cacheRead: 30_000_000,
      cacheWrite: 300_000_000,
      cacheWrite1h: 300_000_000,
      output: 2_500_000_000,
    },
  },
];

/** A small seeded generator (mulberry32): the same seed, the same month. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface MonthTraffic {
  orgIds: string[];
  /** The months the traffic's clock went through, in order. */
  months: string[];
  settled: number;
  grants: number;
  refunds: number;
  adjustments: number;
}

/**
 * `requests` requests spread evenly from `from` to `to` (ms, the ledger's clock: its events carry
 * those times) over three organizations, `concurrency` at a time; each organization granted at the
 * start and topped up along the way, one request in 250 refunded (half its charge), one in 2,000
 * followed by an adjustment of the balance (a credit, or a small debit).
 */
export async function generateMonth(
  rt: Runtime,
  options: { requests: number; from: number; to: number; concurrency?: number; seed?: number; organizations?: number },
): Promise<MonthTraffic> {
  const next = random(options.seed ?? 20261126);
  let now = options.from;
  const step = (options.to - options.from) / options.requests;
  const ledger = new LedgerService(rt.events, rt.projections, { reservationTtlMs: 90 * 86_400_000, pendingHoldMs: 60_000 }, () =>
    Math.floor(now),
  );
  const orgIds: string[] = [];
  const names = ['Acme', 'Globex', 'Initech'];
  for (let i = 0; i < (options.organizations ?? names.length); i++)
    orgIds.push((await rt.identity.createOrganization(names[i] ?? `Organization ${i + 1}`)).orgId);
  const traffic: MonthTraffic = { orgIds, months: [], settled: 0, grants: 0, refunds: 0, adjustments: 0 };
  const topUp = async (orgId: string, i: number) => {
    await ledger.grant(orgId, 2_000_000_000_000, `invoice ${i}`, `inv-${orgId.slice(0, 8)}-${i}`);
    traffic.grants += 1;
  };
  for (const orgId of orgIds) await topUp(orgId, 0);
  await rt.projector.catchUp();

  let issued = 0;
  const worker = async () => {
    while (issued < options.requests) {
      const i = issued++;
      now = options.from + i * step;
      const orgId = orgIds[i % orgIds.length];
      if (i > 0 && i % 20_000 < orgIds.length) await topUp(orgId, i);
      const { model, host, prices } = MODELS[Math.floor(next() * MODELS.length)];
      const usage: TokenUsage = {
        inputTokens: 200 + Math.floor(next() * 8_000),
        cacheReadTokens: next() < 0.5 ? Math.floor(next() * 4_000) : 0,
        cacheWriteTokens: next() < 0.2 ? Math.floor(next() * 1_000) : 0,
        cacheWrite1hTokens: next() < 0.05 ? Math.floor(next() * 1_000) : 0,
        outputTokens: 20 + Math.floor(next() * 2_000),
      };
      const input = usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens + usage.cacheWrite1hTokens;
      const keyId = `${orgId.slice(0, 8)}-key-${i % 4}`;
      const admission = await ledger.admit({
        requestId: `req-${i}`,
        keyId,
        surface: 'chat-completions',
        model,
        orgId,
        amount: reservationFor(input, usage.outputTokens, prices),
      });
      if (!admission.admitted) throw new Error(`request ${i} of ${orgId} refused: its organization ran out of credit`);
      const resolution = await ledger.recordSettlement(admission.ticket, {
        usage,
        prices,
        host,
        hostModel: `${model}-2026`,
        status: 'ok',
        latencyMs: 300 + Math.floor(next() * 3_000),
      });
      traffic.settled += 1;
      const month = monthOf(Math.floor(now));
      if (!traffic.months.includes(month)) traffic.months.push(month);
      if (i % 250 === 7) {
        const charge = chargeFor(usage, prices);
        if ((resolution.event.data as { amount: number }).amount !== charge)
          throw new Error(`request ${i}: charged other than its usage`);
        await ledger.issueCreditNote({
          orgId,
          idempotencyKey: `refund-${i}`,
          kind: 'refund',
          reservationId: admission.ticket.reservationId,
          amount: Math.max(1, Math.floor(charge / 2)),
          reason: 'provider_outage',
          issuedBy: 'bench',
        });
        traffic.refunds += 1;
      }
      if (i % 2_000 === 11) {
        await ledger.issueCreditNote({
          orgId,
          idempotencyKey: `adjust-${i}`,
          kind: 'adjustment',
          reservationId: null,
          amount: i % 4_000 === 11 ? 5_000_000_000 : -1_000_000,
          reason: 'correction',
          issuedBy: 'bench',
        });
        traffic.adjustments += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 16 }, worker));
  await rt.projector.catchUp();
  traffic.months.sort();
  return traffic;
}

/** One organization's books three ways, and how long each took. */
export interface Books {
  orgId: string;
  statements: Statement[];
  verified: VerifyReport;
  /** The read models' balance: granted − spent (refunds taken off spent, adjustments added to granted). */
  projected: { balance: number; granted: number; spent: number };
  exportBytes: number;
  ms: { statements: number; export: number; verify: number };
}

/**
 * The same log without its chain index (`readChain`): statements and exports read it whole and keep
 * one organization's events, as they did before they read its chain alone.
 */
export const wholeLogOf = (events: EventStore): EventStore =>
  new Proxy(events, {
    get: (target, name) => (name === 'readChain' ? undefined : (Reflect.get(target, name, target) as unknown)),
  });

/**
 * Writes the organization's export to `file`, verifies it from the file alone, and reads its statements
 * for `months`, from `events` (the runtime's log unless given).
 */
export async function readBooks(
  rt: Runtime,
  orgId: string,
  months: string[],
  file: string,
  events: EventStore = rt.events,
): Promise<Books> {
  let started = performance.now();
  const statements: Statement[] = [];
  for (const month of months) statements.push((await readStatement(events, orgId, month)).statement);
  const statementsMs = performance.now() - started;

  started = performance.now();
  const out = createWriteStream(file);
  let exportBytes = 0;
  for await (const line of exportLedger(events, orgId)) {
    exportBytes += Buffer.byteLength(line) + 1;
    if (!out.write(`${line}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  const exportMs = performance.now() - started;

  started = performance.now();
  const verifier = new ExportVerifier();
  for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) verifier.line(line);
  const verified = verifier.finish();
  const verifyMs = performance.now() - started;

  const b = await rt.projections.balance(orgId);
  return {
    orgId,
    statements,
    verified,
    projected: { balance: b.granted - b.spent, granted: b.granted, spent: b.spent },
    exportBytes,
    ms: { statements: statementsMs, export: exportMs, verify: verifyMs },
  };
}

/** Where the three views disagree (empty: to the nano-credit, they agree). */
export function booksDisagree(books: Books): string[] {
  const found: string[] = [];
  const { statements, verified, projected } = books;
  const figures = verified.figures;
  if (verified.differences.length > 0) found.push(`ledger verify: ${JSON.stringify(verified.differences.slice(0, 3))}`);
  if (figures === null) return [...found, 'ledger verify: no figures'];
  for (let i = 1; i < statements.length; i++) {
    if (statements[i].openingBalance !== statements[i - 1].closingBalance)
      found.push(
        `${statements[i].month} opens at ${statements[i].openingBalance}, ${statements[i - 1].month} closed at ${statements[i - 1].closingBalance}`,
      );
  }
  // Sums of a lifetime pass 2^53: added and compared as bigint.
  const sum = (f: (s: Statement) => NanoSum | bigint) => statements.reduce((total, s) => total + BigInt(f(s)), 0n);
  const last = statements[statements.length - 1];
  const compare = (what: string, a: NanoSum | bigint, b: NanoSum | bigint) =>
    BigInt(a) !== BigInt(b) && found.push(`${what}: ${a} vs ${b}`);
  compare('statements opening (first month)', statements[0].openingBalance, 0);
  compare(
    'statements grants vs export',
    sum((s) => s.grants.amount),
    figures.granted,
  );
  compare(
    'statements charges vs export',
    sum((s) => s.charges.amount),
    figures.charged,
  );
  compare(
    'statements credit notes vs export',
    sum((s) => BigInt(s.creditNotes.refunds) + BigInt(s.creditNotes.adjustments)),
    figures.credited,
  );
  compare('statements closing vs export balance', last.closingBalance, figures.balance);
  compare('export balance vs read models', figures.balance, projected.balance);
  if (last.chain.head !== verified.head) found.push(`chain head: statement ${last.chain.head}, export ${verified.head}`);
  if (last.chain.events !== verified.events)
    found.push(`chain events: statement ${last.chain.events}, export ${verified.events}`);
  return found;
}
