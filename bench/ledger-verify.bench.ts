/**
 * The hash chain's cost and the verifier's throughput: `npm run bench:verify`.
 *
 *   1. Link cost per settlement, median over rounds: what the appender adds (RFC 8785 encoding instead of
 *      JSON.stringify), what the log's writer adds (SHA-256 of the link's text), and the whole link as a
 *      verifier computes it from a parsed line (JSON.parse + RFC 8785 + SHA-256).
 *   2. Appends with and without the chain, side by side in the same run: the same requests (reservation
 *      then settlement, concurrently on their own streams) into two fresh SQLite logs, 64 at once (the
 *      writer saturated: its throughput) and one at a time, alternating (what a request waits for its reservation).
 *   3. A log of BENCH_EVENTS ledger events (default 100,000; grants, requests and credit notes), exported
 *      with `exportLedger` and checked by the standalone verifier, read line by line from the file: events/s.
 */
import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { canonicalJson, chainGenesis, chainLink, chainLinkOf } from '../src/eventstore/event-chain';
import { SqliteEventStore } from '../src/eventstore/sqlite-event-store';
import { LEDGER_CHAIN } from '../src/ledger/ledger-chain';
import { exportLedger } from '../src/ledger-export/ledger-export';
import { ExportVerifier } from '../src/ledger-export/ledger-verify';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 100_000);
const ROUNDS = 5;
const ORG = '6f1c2a8e-0000-4000-8000-000000000001';
const prices = {
  input: 3_000_000_000,
  cacheRead: 300_000_000,
  cacheWrite: 3_750_000_000,
  cacheWrite1h: 6_000_000_000,
  output: 15_000_000_000,
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** One request's events: its reservation, then its settlement (as the pipeline appends them). */
function request(i: number) {
  const facts = {
    requestId: `q-${i}`,
    keyId: `k${i % 7}`,
    surface: 'chat',
    model: 'vendor/model',
    reservationId: `r-${i}`,
    orgId: ORG,
  };
  const output = 200 + (i % 900);
  return {
    reserved: { type: 'CreditsReserved', data: { ...facts, amount: 50_000_000, reservedAt: i, expiresAt: i + 600_000 } },
    settled: {
      type: 'ReservationSettled',
      data: {
        ...facts,
        host: 'vendor-direct',
        hostModel: 'model-2026-01-01',
        status: 'ok',
        latencyMs: 812,
        attempts: [{ host: 'vendor-direct', credential: 'primary', status: 200, reason: 'ok', durationMs: 810 }],
        inputTokens: 1_000,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        cacheWrite1hTokens: 0,
        outputTokens: output,
        prices,
        amount: 3_000_000 + output * 15_000,
        held: 50_000_000,
        settledAt: i + 800,
        upstreamId: `chatcmpl-${i}`,
      },
    },
  };
}

/** Per settlement, in µs (medians of rounds): what the appender and the writer each add, and the whole link as a verifier computes it. */
function linkCost(): { appender: number; writer: number; whole: number } {
  const data = Array.from({ length: 20_000 }, (_, i) => request(i).settled.data);
  const texts = data.map((d) => JSON.stringify(d));
  const canonical = data.map((d) => canonicalJson(d));
  const perEvent = (work: (i: number) => void): number => {
    const rounds: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const started = process.hrtime.bigint();
      for (let i = 0; i < data.length; i++) work(i);
      rounds.push(Number(process.hrtime.bigint() - started) / 1000 / data.length);
    }
    return median(rounds);
  };
  let sink = 0;
  const stringify = perEvent((i) => (sink += JSON.stringify(data[i]).length));
  const encode = perEvent((i) => (sink += canonicalJson(data[i]).length));
  let link = chainGenesis(ORG);
  const writer = perEvent((i) => (link = chainLinkOf(link, `reservation-r-${i}`, 1, 'ReservationSettled', canonical[i], i)));
  const whole = perEvent(
    (i) =>
      (link = chainLink(link, {
        streamId: `reservation-r-${i}`,
        revision: 1,
        type: 'ReservationSettled',
        data: JSON.parse(texts[i]),
        recordedAt: i,
      })),
  );
  if (sink === 0) throw new Error('nothing encoded');
  return { appender: encode - stringify, writer, whole };
}

/** Requests appended by `concurrency` callers at once, each its reservation then its settlement: events/s. */
async function appendRate(store: SqliteEventStore, requests: number, concurrency: number): Promise<number> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests) {
        const i = next++;
        const r = request(i);
        await store.append(`reservation-r-${i}`, [r.reserved], 'no_stream');
        await store.append(`reservation-r-${i}`, [r.settled], 0);
      }
    }),
  );
  return (requests * 2) / ((performance.now() - started) / 1000);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'mg-bench-verify-'));
  try {
    const cost = linkCost();
    console.log(
      `link of a settlement, median of ${ROUNDS} rounds: appender +${fmt(cost.appender, 2)} µs (RFC 8785 instead of JSON.stringify), writer ${fmt(cost.writer, 2)} µs (SHA-256 of the link's text); JSON.parse + RFC 8785 + SHA-256 as a verifier does it: ${fmt(cost.whole, 2)} µs`,
    );

    const plain: number[] = [];
    const chained: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (const [label, rates] of [
        ['plain', plain],
        ['chained', chained],
      ] as const) {
        const store = new SqliteEventStore(
          join(dir, `append-${label}-${round}.sqlite`),
          label === 'chained' ? { chain: LEDGER_CHAIN } : {},
        );
        rates.push(await appendRate(store, 5_000, 64));
        await store.close();
      }
    }
    console.log(
      `appends (5,000 requests, 64 at once, group commit), median of 3: without chain ${fmt(median(plain))} events/s, with chain ${fmt(median(chained))} events/s (${fmt((median(chained) / median(plain)) * 100, 1)} %)`,
    );

    // One request at a time, alternating between the two logs request by request (so both see the same
    // moments of a shared machine): what a request waits for its reservation's append, commit and fsync included.
    const stores = {
      plain: new SqliteEventStore(join(dir, 'sequential-plain.sqlite')),
      chained: new SqliteEventStore(join(dir, 'sequential-chained.sqlite'), { chain: LEDGER_CHAIN }),
    };
    const waits: Record<'plain' | 'chained', number[]> = { plain: [], chained: [] };
    for (let i = 0; i < 1_000; i++) {
      const r = request(i);
      for (const label of i % 2 === 0 ? (['plain', 'chained'] as const) : (['chained', 'plain'] as const)) {
        const started = performance.now();
        await stores[label].append(`reservation-r-${i}`, [r.reserved], 'no_stream');
        waits[label].push((performance.now() - started) * 1000);
        await stores[label].append(`reservation-r-${i}`, [r.settled], 0);
      }
    }
    await Promise.all([stores.plain.close(), stores.chained.close()]);
    console.log(
      `one request at a time (1,000, alternating): reservation append median ${fmt(median(waits.plain))} µs without chain, ${fmt(median(waits.chained))} µs with chain`,
    );

    const logPath = join(dir, 'log.sqlite');
    const log = new SqliteEventStore(logPath, { chain: LEDGER_CHAIN });
    let written = 0;
    let grants = 0;
    await log.append(
      `credits-${ORG}`,
      [{ type: 'CreditsGranted', data: { orgId: ORG, grantId: 'g0', amount: 9_000_000_000_000, reason: 'bench', grantedAt: 0 } }],
      'no_stream',
    );
    written += 1;
    for (let i = 0; written < EVENTS; i += 500) {
      await Promise.all(
        Array.from({ length: 500 }, async (_, j) => {
          const r = request(i + j);
          await log.append(`reservation-r-${i + j}`, [r.reserved, r.settled], 'no_stream');
        }),
      );
      written += 1000;
      // A refund of one generation in every batch, and a grant every 20: credit notes and grants among the requests.
      grants += 1;
      const refund = {
        type: 'CreditNoteIssued',
        data: {
          orgId: ORG,
          creditNoteId: `cn-${i}`,
          idempotencyKey: `cn-${i}`,
          kind: 'refund',
          reservationId: `r-${i}`,
          keyId: `k${i % 7}`,
          amount: 1_000_000,
          reason: 'goodwill',
          issuedBy: 'cli',
          issuedAt: i,
        },
      };
      const extra =
        grants % 20 === 0
          ? [
              refund,
              {
                type: 'CreditsGranted',
                data: { orgId: ORG, grantId: `g${grants}`, amount: 1_000_000_000, reason: 'bench', grantedAt: i },
              },
            ]
          : [refund];
      await log.append(`credits-${ORG}`, extra, 'any');
      written += extra.length;
    }
    const file = join(dir, 'export.ndjson');
    let started = performance.now();
    await pipeline(
      Readable.from(exportLedger(log, ORG), { objectMode: true }).map((line: string) => `${line}\n`),
      createWriteStream(file),
    );
    const exportSeconds = (performance.now() - started) / 1000;
    await log.close();

    const verifyRounds: number[] = [];
    let events = 0;
    for (let round = 0; round < 3; round++) {
      started = performance.now();
      const verifier = new ExportVerifier();
      for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) verifier.line(line);
      const report = verifier.finish();
      if (report.differences.length > 0)
        throw new Error(`the bench's own export does not verify: ${JSON.stringify(report.differences[0])}`);
      events = report.events;
      verifyRounds.push((performance.now() - started) / 1000);
    }
    const seconds = median(verifyRounds);
    console.log(
      `export: ${fmt(events)} events (${fmt(statSync(file).size / 1e6, 1)} MB) in ${fmt(exportSeconds, 2)} s; ledger verify, median of 3: ${fmt(seconds, 2)} s = ${fmt(events / seconds)} events/s`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

void main().catch((error) => {
  console.error(error);
  process.exit(1);
});
